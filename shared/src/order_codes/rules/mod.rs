//! Order codes as pure rules: the settings, the suffix widths and the answer to a request.
//! A code is `yyMMdd` of the business day ([`code_prefix`]) and a suffix: the business day of
//! an instant in the business zone, and the zone window sent to `order_code.lua`, are
//! `day`'s job; turning a position of the day into its suffix is `permutation`'s (the day's
//! secret permutation). See [`crate::order_codes`] for how a code is taken.

use chrono::{Datelike, NaiveDate};

use crate::domain::settings::Setting;
use crate::domain::zone::{self, Zone};
use crate::domain::{ConfigError, Lookup};

mod day;
mod permutation;

pub use day::{
    date_of_day, day_of_date, day_start, local_day, utc_offset, window_of_hour, ZoneWindow,
    WINDOW_SECS,
};
pub use permutation::{new_day_secret, permutation, Permutation, ROUNDS};

/// `HONGBAO_ORDER_CODE_DIGITS`.
pub const ORDER_CODE_DIGITS: Setting = Setting {
    name: "HONGBAO_ORDER_CODE_DIGITS",
    default: "5",
    meaning: "order-code suffix width, 5..=7: 9 × 10^(digits−1) codes a day",
};

/// `HONGBAO_ORDER_CODES_PER_USER_PER_DAY`.
pub const ORDER_CODES_PER_USER_PER_DAY: Setting = Setting {
    name: "HONGBAO_ORDER_CODES_PER_USER_PER_DAY",
    default: "500",
    meaning: "order codes one user may take per business day (429 + `Retry-After` = seconds to the next business day beyond it, nothing taken; without it one user could take the day's 90,000 codes in a second); `0` disables",
};

/// The order-code settings, in the order of docs/configuration.md: first the business zone
/// and its earlier name ([`zone::BUSINESS_TZ`], [`zone::ORDER_CODE_TZ`]; the red-packet
/// history reads them too, and they are listed where the order-code zone's row was), then the
/// order codes' own.
pub const SETTINGS: &[Setting] = &[
    zone::BUSINESS_TZ,
    zone::ORDER_CODE_TZ,
    ORDER_CODE_DIGITS,
    ORDER_CODES_PER_USER_PER_DAY,
];

/// The configured order codes (the next-order-code function reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderCodeRules {
    /// IANA time zone of the business day (`HONGBAO_BUSINESS_TZ`, or its earlier name
    /// `HONGBAO_ORDER_CODE_TZ`: [`zone::business_zone`]).
    pub tz: Zone,
    /// Digits of a code's random suffix, in [`DIGITS`] (`HONGBAO_ORDER_CODE_DIGITS`).
    pub digits: u32,
    /// Codes one user may take per business day; 0 disables the quota
    /// (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`).
    pub per_user_per_day: u32,
}

impl Default for OrderCodeRules {
    fn default() -> Self {
        Self::from_lookup(&crate::domain::settings::defaults()).expect("the defaults are valid")
    }
}

impl OrderCodeRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or is out of range (for the
    /// zone, as [`zone::business_zone`]).
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let digits: u32 = lookup.get(&ORDER_CODE_DIGITS)?;
        if !DIGITS.contains(&digits) {
            return Err(ConfigError::new(
                &ORDER_CODE_DIGITS,
                digits,
                "must be 5, 6 or 7",
            ));
        }
        Ok(OrderCodeRules {
            tz: zone::business_zone(lookup)?,
            digits,
            per_user_per_day: lookup.get(&ORDER_CODES_PER_USER_PER_DAY)?,
        })
    }
}

/// The allowed suffix widths (`HONGBAO_ORDER_CODE_DIGITS`): 5 to 7 digits.
pub const DIGITS: std::ops::RangeInclusive<u32> = 5..=7;

/// The most codes one request may take (the contract's `count` is `1..=100`).
pub const MAX_BATCH: u32 = 100;

/// Lifetime of a caller's daily quota counter from their first code of the day, seconds: 2
/// days, so it outlives the business day (at most 25 hours) by at least 23 hours.
pub const QUOTA_TTL_SECS: u64 = 172_800;

/// The business days (local days since 1970-01-01) whose day hashes go once `day` has
/// started, `previous` being the newest day before it (`None`: none had started).
///
/// Day hashes have no TTL: a `volatile-*` eviction policy could otherwise evict the current
/// day's hash, and the high-water mark would then refuse the rest of the day rather than
/// restart its sequence. Instead, each new day deletes what is older than yesterday. The rule
/// keeps at most two hashes, `day` and `day - 1` (yesterday stays: a Redis clock a moment
/// behind, e.g. a replica just promoted at midnight, still takes yesterday's positions rather
/// than being refused): it deletes `previous` and `previous - 1` (the two that can exist when
/// every earlier start deleted its share) and, for a start whose deletion was missed (a lost
/// reply, a crashed function), `day - 3` and `day - 2`. Never `day` or `day - 1`. Ascending,
/// without repeats.
pub fn retired_days(day: i64, previous: Option<i64>) -> Vec<i64> {
    let mut days = vec![day - 3, day - 2];
    if let Some(p) = previous {
        days.extend([p - 1, p]);
    }
    days.retain(|&d| d < day - 1);
    days.sort_unstable();
    days.dedup();
    days
}

/// The number of codes of one day for `digits`-digit suffixes: `9 * 10^(digits - 1)`.
pub fn domain(digits: u32) -> u64 {
    9 * 10u64.pow(digits - 1)
}

/// The smallest suffix for `digits`: `10^(digits - 1)` (suffixes never start with 0).
pub fn first_suffix(digits: u32) -> u64 {
    10u64.pow(digits - 1)
}

/// The `yyMMdd` prefix of the codes of business day `date`.
pub fn code_prefix(date: NaiveDate) -> String {
    format!(
        "{:02}{:02}{:02}",
        date.year().rem_euclid(100),
        date.month(),
        date.day()
    )
}

/// The answer to a request for codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `codes` (6 + digits digits each, `yyMMdd` of `date` first), in the day's order.
    Issued {
        /// The business day.
        date: NaiveDate,
        /// The codes, as many as asked for.
        codes: Vec<String>,
    },
    /// Fewer codes are left today than asked for; none were taken.
    Exhausted {
        /// The business day.
        date: NaiveDate,
        /// Seconds until the next business day starts (Redis `TIME`), at least 1.
        retry_after_secs: u64,
    },
    /// The caller's codes of the day plus this request would pass
    /// `HONGBAO_ORDER_CODES_PER_USER_PER_DAY`; none were taken.
    QuotaExceeded {
        /// The business day.
        date: NaiveDate,
        /// Codes the caller already took today.
        used: u64,
        /// Seconds until the next business day starts (Redis `TIME`), at least 1.
        retry_after_secs: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> Zone {
        name.parse().unwrap()
    }

    #[test]
    fn settings() {
        let c = OrderCodeRules::default();
        assert_eq!((c.tz, c.digits), (zone("Asia/Shanghai"), 5));
        for zone_var in ["HONGBAO_BUSINESS_TZ", "HONGBAO_ORDER_CODE_TZ"] {
            let f = |n: &str| match n {
                n if n == zone_var => Some("America/New_York".into()),
                "HONGBAO_ORDER_CODE_DIGITS" => Some("7".into()),
                _ => None,
            };
            let c = OrderCodeRules::from_lookup(&Lookup::new(&f)).unwrap();
            assert_eq!(
                (c.tz, c.digits),
                (zone("America/New_York"), 7),
                "{zone_var}"
            );
        }
        for (name, value) in [
            ("HONGBAO_BUSINESS_TZ", "Mars/Olympus_Mons"),
            ("HONGBAO_ORDER_CODE_TZ", "Mars/Olympus_Mons"),
            ("HONGBAO_ORDER_CODE_TZ", "+08:00"),
            ("HONGBAO_ORDER_CODE_DIGITS", "4"),
            ("HONGBAO_ORDER_CODE_DIGITS", "8"),
        ] {
            let f = |n: &str| (n == name).then(|| value.to_string());
            let err = OrderCodeRules::from_lookup(&Lookup::new(&f)).unwrap_err();
            assert_eq!(err.name, name, "{value}");
        }
    }

    #[test]
    fn prefixes_and_domains() {
        let date = |s: &str| s.parse::<NaiveDate>().unwrap();
        assert_eq!(code_prefix(date("2026-11-21")), "261121");
        assert_eq!(code_prefix(date("2100-01-02")), "000102");
        assert_eq!(domain(5), 90_000);
        assert_eq!(first_suffix(7), 1_000_000);
    }

    #[test]
    fn retired_days_keep_today_and_yesterday() {
        // Every day has codes: the day before yesterday goes.
        assert_eq!(retired_days(100, Some(99)), [97, 98]);
        // A gap: the old newest day and its eve go too.
        assert_eq!(retired_days(100, Some(95)), [94, 95, 97, 98]);
        assert_eq!(retired_days(100, Some(98)), [97, 98]);
        // The first day ever.
        assert_eq!(retired_days(100, None), [97, 98]);
        // Never today or yesterday, whatever `previous` says.
        for p in 90..=101 {
            let gone = retired_days(100, Some(p));
            assert!(gone.iter().all(|&d| d < 99), "{p}: {gone:?}");
            assert!(gone.windows(2).all(|w| w[0] < w[1]), "{p}: {gone:?}");
        }
    }
}
