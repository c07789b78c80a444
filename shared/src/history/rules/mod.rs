//! A user's red-packet history as pure rules: the retention and page-size settings and the
//! checks of a request's `limit` and `year`. The entries of the "sent" and "received" lists
//! and their paging cursors are `entries`'s job, the business years of the yearly summary
//! `years`'s. The atomic steps are `lua/history.lua` (prepended to `create_packet.lua` and
//! `lua/wallet_credit.lua`), `lua/settle.lua` (a sent entry's refund) and
//! `list/history_page.lua`, called by [`crate::history`].

use crate::domain::settings::Setting;
use crate::domain::zone::{self, Zone};
use crate::domain::{ConfigError, Invalid, Lookup};

mod entries;
mod years;

pub use entries::{member_prefix, Cursor, Entry, Page, ReceivedEntry, Role, SentEntry};
pub use years::{totals_fields, year_of, year_start_ms, Summary, Totals, YearBounds};

/// `HONGBAO_HISTORY_RETENTION_DAYS`.
pub const HISTORY_RETENTION_DAYS: Setting = Setting {
    name: "HONGBAO_HISTORY_RETENTION_DAYS",
    default: "400",
    meaning: "days a user's sent and received red-packet history is kept (1..=36500); older entries are pruned by the scripts that write history, and the yearly summary counts the entries kept",
};

/// The history settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[HISTORY_RETENTION_DAYS];

/// The longest retention accepted, days (100 years).
pub const MAX_RETENTION_DAYS: u64 = 36_500;

/// Items per page when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 20;

/// Most items per page.
pub const MAX_LIMIT: u32 = 100;

/// The years `GET /packets/summary` accepts.
pub const YEARS: std::ops::RangeInclusive<i32> = 1970..=9999;

/// The configured history (the create-packet, grab, claim and reclaim-cron functions read it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRules {
    /// How long an entry is kept, ms (`HONGBAO_HISTORY_RETENTION_DAYS` × 86,400,000).
    pub retention_ms: u64,
    /// The zone of the business year (`HONGBAO_BUSINESS_TZ`, or its earlier name
    /// `HONGBAO_ORDER_CODE_TZ`, shared with the order codes' business day:
    /// [`zone::business_zone`]).
    pub tz: Zone,
}

impl Default for HistoryRules {
    fn default() -> Self {
        Self::from_lookup(&crate::domain::settings::defaults()).expect("the defaults are valid")
    }
}

impl HistoryRules {
    /// Reads [`SETTINGS`] and the business zone ([`zone::business_zone`]).
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or is out of range (for the
    /// zone, as [`zone::business_zone`]).
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let days: u64 = lookup.at_least(&HISTORY_RETENTION_DAYS, 1)?;
        if days > MAX_RETENTION_DAYS {
            return Err(ConfigError::new(
                &HISTORY_RETENTION_DAYS,
                days,
                format!("must be 1..={MAX_RETENTION_DAYS}"),
            ));
        }
        Ok(HistoryRules {
            retention_ms: days * 86_400_000,
            tz: zone::business_zone(lookup)?,
        })
    }
}

/// Checks a page size given as text: decimal digits, 1..=[`MAX_LIMIT`].
///
/// # Errors
/// [`Invalid`] naming `limit` and its range.
pub fn parse_limit(text: &str) -> Result<u32, Invalid> {
    (!text.is_empty() && text.len() <= 3 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<u32>().ok())
        .flatten()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| Invalid(format!("limit must be 1..={MAX_LIMIT}")))
}

/// Checks a year given as text: four decimal digits in [`YEARS`].
///
/// # Errors
/// [`Invalid`] naming `year` and its range.
pub fn parse_year(text: &str) -> Result<i32, Invalid> {
    (text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<i32>().ok())
        .flatten()
        .filter(|y| YEARS.contains(y))
        .ok_or_else(|| {
            Invalid(format!(
                "year must be {}..={} (four digits)",
                YEARS.start(),
                YEARS.end()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_and_zone() {
        let rules = HistoryRules::default();
        assert_eq!(rules.retention_ms, 400 * 86_400_000);
        assert_eq!(rules.tz, "Asia/Shanghai".parse::<Zone>().unwrap());
        for zone_var in ["HONGBAO_BUSINESS_TZ", "HONGBAO_ORDER_CODE_TZ"] {
            let f = |n: &str| (n == zone_var).then(|| "Europe/London".to_string());
            let rules = HistoryRules::from_lookup(&Lookup::new(&f)).unwrap();
            assert_eq!(rules.tz.name(), "Europe/London", "{zone_var}");
        }
        for (name, value) in [
            ("HONGBAO_HISTORY_RETENTION_DAYS", "0"),
            ("HONGBAO_HISTORY_RETENTION_DAYS", "36501"),
            ("HONGBAO_BUSINESS_TZ", "Nowhere/Land"),
            ("HONGBAO_ORDER_CODE_TZ", "Nowhere/Land"),
        ] {
            let f = |n: &str| (n == name).then(|| value.to_string());
            let err = HistoryRules::from_lookup(&Lookup::new(&f)).unwrap_err();
            assert_eq!(err.name, name, "{value}");
        }
    }

    #[test]
    fn limits_and_years() {
        assert_eq!(parse_limit("1"), Ok(1));
        assert_eq!(parse_limit("100"), Ok(100));
        for bad in [
            "",
            "0",
            "101",
            "-1",
            "+5",
            "1.0",
            "0100",
            " 5",
            "99999999999",
        ] {
            assert!(parse_limit(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_year("2026"), Ok(2026));
        for bad in ["", "1969", "10000", "026", "+2026", "２０２６"] {
            assert!(parse_year(bad).is_err(), "{bad:?}");
        }
    }
}
