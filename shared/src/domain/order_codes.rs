//! Order codes as pure rules: the suffix widths, the business day of an instant in an IANA
//! zone (and the zone window sent to `lua/order_code.lua`), and the day's secret permutation of
//! positions to suffixes. See [`crate::store::order_codes`] for how a code is taken.

use std::sync::{Arc, Mutex};

use chrono::{Datelike, NaiveDate};
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha1::Sha1;

use super::settings::Setting;
use super::zone::Zone;
use super::{BadRecord, ConfigError, Lookup};

/// `HONGBAO_ORDER_CODE_TZ`.
pub const ORDER_CODE_TZ: Setting = Setting {
    name: "HONGBAO_ORDER_CODE_TZ",
    default: "Asia/Shanghai",
    meaning: "IANA zone whose local date (from Redis `TIME`) is the order codes' business day; its years are the red-packet history's (`GET /packets/summary`)",
};
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

/// The order-code settings, in README order.
pub const SETTINGS: &[Setting] = &[
    ORDER_CODE_TZ,
    ORDER_CODE_DIGITS,
    ORDER_CODES_PER_USER_PER_DAY,
];

/// The configured order codes (the next-order-code function reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderCodeRules {
    /// IANA time zone of the business day (`HONGBAO_ORDER_CODE_TZ`).
    pub tz: Zone,
    /// Digits of a code's random suffix, in [`DIGITS`] (`HONGBAO_ORDER_CODE_DIGITS`).
    pub digits: u32,
    /// Codes one user may take per business day; 0 disables the quota
    /// (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`).
    pub per_user_per_day: u32,
}

impl Default for OrderCodeRules {
    fn default() -> Self {
        Self::from_lookup(&super::settings::defaults()).expect("the defaults are valid")
    }
}

impl OrderCodeRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or is out of range.
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
            tz: lookup.get(&ORDER_CODE_TZ)?,
            digits,
            per_user_per_day: lookup.get(&ORDER_CODES_PER_USER_PER_DAY)?,
        })
    }
}

/// The allowed suffix widths (`HONGBAO_ORDER_CODE_DIGITS`): 5 to 7 digits.
pub const DIGITS: std::ops::RangeInclusive<u32> = 5..=7;

/// The most codes one request may take (the contract's `count` is `1..=100`).
pub const MAX_BATCH: u32 = 100;

/// Feistel rounds: 10, as in NIST SP 800-38G FF1.
pub const ROUNDS: usize = 10;

/// Lifetime of a day hash from the day's first code, seconds: 2 days, so it outlives the
/// business day (at most 25 hours) by at least 23 hours.
pub const DAY_TTL_SECS: u64 = 172_800;

/// Half-width of the time window the function sends zone data for, seconds: 6 hours on each
/// side of the start of the hour of its own clock.
pub const WINDOW_SECS: i64 = 6 * 3600;

/// Step of the scan for UTC-offset changes, seconds. Real zones never change their offset
/// twice within an hour; each change found is pinned to the second by bisection.
const SCAN_STEP_SECS: i64 = 3600;

/// Days from 0001-01-01 (day 1 of the common era in chrono's count) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i64 = 719_163;

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

/// A new day secret: 128 bits from the thread CSPRNG (ChaCha, OS-seeded) as 32 lowercase hex
/// digits. Sent with every call; stored only by the first call of a day.
pub fn new_day_secret() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// The date of business day `day` (days since 1970-01-01).
///
/// # Errors
/// [`BadRecord`] when `day` is outside chrono's range.
pub fn date_of_day(day: i64) -> Result<NaiveDate, BadRecord> {
    i32::try_from(day + UNIX_EPOCH_DAYS_FROM_CE)
        .ok()
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| BadRecord(format!("business day {day} is out of range")))
}

/// The number of `date` in days since 1970-01-01.
pub fn day_of_date(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - UNIX_EPOCH_DAYS_FROM_CE
}

/// The UTC offset of `tz` at Unix second `unix_s`, seconds east of UTC (Shanghai: 28,800).
pub fn utc_offset(tz: &Zone, unix_s: i64) -> i32 {
    tz.offset_at(unix_s)
}

/// The business day (local date in `tz`, as days since 1970-01-01) at Unix second `unix_s`.
pub fn local_day(tz: &Zone, unix_s: i64) -> i64 {
    (unix_s + i64::from(utc_offset(tz, unix_s))).div_euclid(86_400)
}

/// The first Unix second of business day `date` in `tz`: local midnight, or, when midnight
/// falls into a gap (a DST change at 24:00, a skipped day), the first local time after it
/// ([`Zone::day_start`]).
pub fn day_start(tz: &Zone, date: NaiveDate) -> i64 {
    tz.day_start(date)
}

/// The zone data the script needs to decide the business day from Redis `TIME` anywhere in
/// `[start, end)`: the UTC offset at `start`, every later change, and the business days
/// (local dates) the window touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneWindow {
    /// First Unix second the data is valid for.
    pub start: i64,
    /// First Unix second past the window.
    pub end: i64,
    /// UTC offset at `start`, seconds east of UTC.
    pub base_offset: i32,
    /// `(instant, offset)`: from Unix second `instant` on, the offset is `offset`; ascending.
    pub transitions: Vec<(i64, i32)>,
    /// The business days (days since 1970-01-01) of the window, ascending, 1 to 3 of them.
    pub days: Vec<i64>,
}

impl ZoneWindow {
    /// The window `[around - 6 h, around + 6 h)` of `tz`, `around` being the function's clock
    /// (Unix seconds). Costs about a dozen zone lookups.
    pub fn around(tz: &Zone, around: i64) -> Self {
        let (start, end) = (around - WINDOW_SECS, around + WINDOW_SECS);
        let base_offset = utc_offset(tz, start);
        let mut transitions = Vec::new();
        let (mut t, mut current) = (start, base_offset);
        while t < end - 1 {
            let next = (t + SCAN_STEP_SECS).min(end - 1);
            if utc_offset(tz, next) == current {
                t = next;
                continue;
            }
            // The offset changes in (t, next]: find the first second of the new offset.
            let (mut lo, mut hi) = (t, next);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if utc_offset(tz, mid) == current {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            current = utc_offset(tz, hi);
            transitions.push((hi, current));
            t = hi;
        }
        let mut window = ZoneWindow {
            start,
            end,
            base_offset,
            transitions,
            days: Vec::new(),
        };
        // Within a stretch of constant offset the local day only grows, so its extremes are at
        // the stretches' ends.
        let mut edges = vec![start, end - 1];
        for &(at, _) in &window.transitions {
            edges.extend([at - 1, at]);
        }
        let days: Vec<i64> = edges.iter().map(|&s| window.day_at(s)).collect();
        let (lo, hi) = (days.iter().min().copied(), days.iter().max().copied());
        window.days = (lo.unwrap_or(0)..=hi.unwrap_or(-1)).collect();
        window
    }

    /// The UTC offset at Unix second `unix_s` by this window's data, as the script picks it.
    pub fn offset_at(&self, unix_s: i64) -> i32 {
        self.transitions
            .iter()
            .rev()
            .find(|(at, _)| unix_s >= *at)
            .map_or(self.base_offset, |&(_, offset)| offset)
    }

    /// The business day at Unix second `unix_s` by this window's data, as the script decides it.
    pub fn day_at(&self, unix_s: i64) -> i64 {
        (unix_s + i64::from(self.offset_at(unix_s))).div_euclid(86_400)
    }
}

/// The zone window around the start of the hour containing `around` (so at least 5 hours
/// either side of `around`), computed once an hour per sandbox and zone.
pub fn window_of_hour(tz: &Zone, around: i64) -> Arc<ZoneWindow> {
    static LAST: Mutex<Option<(Zone, i64, Arc<ZoneWindow>)>> = Mutex::new(None);
    let hour = around.div_euclid(3600) * 3600;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((z, h, w)) if z == tz && *h == hour => w.clone(),
        _ => {
            let w = Arc::new(ZoneWindow::around(tz, hour));
            *last = Some((tz.clone(), hour, w.clone()));
            w
        }
    }
}

/// The secret permutation of one day's positions: a keyed balanced Feistel network over
/// `[0, a^2)`, `a = ceil(sqrt(domain))`, with cycle-walking into `[0, domain)`,
/// `domain = 9 * 10^(digits - 1)`.
///
/// Round `r` maps `(L, R)` to `(R, (L + F_r(R)) mod a)` with
/// `F_r(v) = HMAC-SHA-1(secret, [r] || v as u32 big-endian)`, its first 8 bytes as a big-endian
/// integer, mod `a` (bias below `a / 2^64`). Each round is a bijection of `[0, a)^2`, so the
/// network is one; cycle-walking (re-encrypting until the value falls below `domain`)
/// restricts a bijection of a superset to a bijection of `domain`. `F_r` is tabulated: `10 * a`
/// entries of `u32` (12 KB for 5 digits, 120 KB for 7). `Debug` shows neither the secret nor
/// the tables.
#[derive(Clone)]
pub struct Permutation {
    digits: u32,
    domain: u64,
    half: u64,
    secret: String,
    table: Vec<u32>,
}

impl std::fmt::Debug for Permutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permutation")
            .field("digits", &self.digits)
            .field("domain", &self.domain)
            .finish()
    }
}

impl Permutation {
    /// The permutation of `digits`-digit suffixes (5..=7) keyed by `secret` (any bytes; the
    /// day's 32 hex digits).
    ///
    /// # Panics
    /// When `digits` is outside [`DIGITS`] (the configuration refuses such values).
    pub fn new(digits: u32, secret: &str) -> Self {
        assert!(
            DIGITS.contains(&digits),
            "order-code digits must be 5..=7, got {digits}"
        );
        let domain = domain(digits);
        let mut half = (domain as f64).sqrt() as u64;
        while half * half < domain {
            half += 1;
        }
        // HMAC-SHA-1 (RFC 2104) with the key absorbed once; each message starts from a clone.
        let keyed = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
        let mut table = Vec::with_capacity(ROUNDS * half as usize);
        for round in 0..ROUNDS {
            for v in 0..half {
                let mut msg = [0u8; 5];
                msg[0] = round as u8;
                msg[1..].copy_from_slice(&(v as u32).to_be_bytes());
                let mac = keyed.clone().chain_update(msg).finalize().into_bytes();
                let word = u64::from_be_bytes(mac[..8].try_into().expect("8 bytes"));
                table.push((word % half) as u32);
            }
        }
        Permutation {
            digits,
            domain,
            half,
            secret: secret.to_string(),
            table,
        }
    }

    /// The number of positions (and suffixes) of a day: `9 * 10^(digits - 1)`.
    pub fn domain(&self) -> u64 {
        self.domain
    }

    /// The suffix width.
    pub fn digits(&self) -> u32 {
        self.digits
    }

    /// Where position `p` (`0..domain`) goes, in `0..domain`.
    ///
    /// # Panics
    /// When `p >= domain`.
    pub fn permute(&self, p: u64) -> u64 {
        assert!(
            p < self.domain,
            "position {p} is outside the day's {} positions",
            self.domain
        );
        let a = self.half;
        let mut x = p;
        loop {
            let (mut l, mut r) = (x / a, x % a);
            for round in 0..ROUNDS {
                let f = u64::from(self.table[round * a as usize + r as usize]);
                (l, r) = (r, (l + f) % a);
            }
            x = l * a + r;
            if x < self.domain {
                return x;
            }
        }
    }

    /// The suffix of position `p`: `10^(digits - 1) + permute(p)`, exactly `digits` digits,
    /// never starting with 0.
    pub fn suffix(&self, p: u64) -> u64 {
        first_suffix(self.digits) + self.permute(p)
    }
}

/// The permutations of the last few days seen by this sandbox (usually today's, plus
/// yesterday's around midnight), so the round tables are built once per day.
static PERMUTATIONS: Mutex<Vec<Arc<Permutation>>> = Mutex::new(Vec::new());

/// How many permutations [`permutation`] keeps.
const CACHED_PERMUTATIONS: usize = 4;

/// The permutation for `digits` and `secret`, from the sandbox's cache or built (and cached).
pub fn permutation(digits: u32, secret: &str) -> Arc<Permutation> {
    let find = |cache: &Vec<Arc<Permutation>>| {
        cache
            .iter()
            .find(|p| p.digits == digits && p.secret == secret)
            .cloned()
    };
    if let Some(p) = find(&PERMUTATIONS.lock().unwrap_or_else(|e| e.into_inner())) {
        return p;
    }
    let built = Arc::new(Permutation::new(digits, secret));
    let mut cache = PERMUTATIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = find(&cache) {
        return p;
    }
    if cache.len() >= CACHED_PERMUTATIONS {
        cache.remove(0);
    }
    cache.push(built.clone());
    built
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

    fn utc(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp()
    }

    fn zone(name: &str) -> Zone {
        name.parse().unwrap()
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    /// Every position maps to a distinct suffix of the right width: a bijection of the day.
    fn assert_bijection(digits: u32) {
        let perm = Permutation::new(digits, "00112233445566778899aabbccddeeff");
        let n = perm.domain();
        let mut seen = vec![false; n as usize];
        for p in 0..n {
            let s = perm.suffix(p);
            assert_eq!(s.to_string().len(), digits as usize, "{p} -> {s}");
            let i = (s - first_suffix(digits)) as usize;
            assert!(!seen[i], "{digits} digits: suffix {s} twice");
            seen[i] = true;
        }
    }

    #[test]
    fn five_and_six_digit_permutations_are_bijections() {
        assert_bijection(5);
        assert_bijection(6); // a = 949, a^2 = 900,601: exercises cycle-walking
    }

    #[test]
    fn seven_digit_permutation_samples() {
        // The full 9,000,000-position check takes too long in debug builds; the construction is
        // the same as for 5 and 6 digits (a = 3,000, a^2 = 9,000,000 exactly: no walking).
        let perm = Permutation::new(7, "k");
        let suffixes: std::collections::HashSet<u64> =
            (0..20_000).map(|p| perm.suffix(p)).collect();
        assert_eq!(suffixes.len(), 20_000);
        assert!(suffixes.iter().all(|s| (1_000_000..=9_999_999).contains(s)));
    }

    #[test]
    fn secrets_give_different_orders() {
        let (a, b) = (
            Permutation::new(5, &new_day_secret()),
            Permutation::new(5, &new_day_secret()),
        );
        let same = (0..10_000)
            .filter(|&p| a.permute(p) == b.permute(p))
            .count();
        assert!(same < 10, "{same} of 10,000 positions agree");
        // The same secret gives the same order (every sandbox computes the same codes).
        let c = Permutation::new(5, &a.secret);
        assert!((0..1000).all(|p| a.permute(p) == c.permute(p)));
        assert!(Arc::ptr_eq(&permutation(5, "x"), &permutation(5, "x")));
    }

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        let mac = |key: &[u8], msg: &[u8]| -> String {
            let m = Hmac::<Sha1>::new_from_slice(key).unwrap().chain_update(msg);
            m.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        assert_eq!(
            mac(b"Jefe", b"what do ya want for nothing?"),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            mac(
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112"
        );
    }

    #[test]
    fn settings() {
        let c = OrderCodeRules::default();
        assert_eq!((c.tz, c.digits), (zone("Asia/Shanghai"), 5));
        let f = |n: &str| match n {
            "HONGBAO_ORDER_CODE_TZ" => Some("America/New_York".into()),
            "HONGBAO_ORDER_CODE_DIGITS" => Some("7".into()),
            _ => None,
        };
        let c = OrderCodeRules::from_lookup(&Lookup::new(&f)).unwrap();
        assert_eq!((c.tz, c.digits), (zone("America/New_York"), 7));
        for (name, value) in [
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
    fn days_and_dates() {
        assert_eq!(date_of_day(0).unwrap(), date("1970-01-01"));
        assert_eq!(day_of_date(date("2026-11-21")), 20_778);
        assert_eq!(date_of_day(20_778).unwrap(), date("2026-11-21"));
        assert_eq!(code_prefix(date("2026-11-21")), "261121");
        assert_eq!(code_prefix(date("2100-01-02")), "000102");
        assert_eq!(domain(5), 90_000);
        assert_eq!(first_suffix(7), 1_000_000);
    }

    #[test]
    fn shanghai_has_no_transitions() {
        let tz = &zone("Asia/Shanghai");
        // 2026-11-21 12:00 +08:00.
        let w = ZoneWindow::around(tz, utc("2026-11-21T04:00:00Z"));
        assert_eq!((w.base_offset, w.transitions.clone()), (28_800, vec![]));
        assert_eq!(w.days, vec![day_of_date(date("2026-11-21"))]);
        // Around midnight both days are candidates.
        let w = ZoneWindow::around(tz, utc("2026-11-21T15:59:59Z"));
        assert_eq!(
            w.days,
            vec![
                day_of_date(date("2026-11-21")),
                day_of_date(date("2026-11-22"))
            ]
        );
        assert_eq!(
            w.day_at(utc("2026-11-21T15:59:59Z")),
            day_of_date(date("2026-11-21"))
        );
        assert_eq!(
            w.day_at(utc("2026-11-21T16:00:00Z")),
            day_of_date(date("2026-11-22"))
        );
        assert_eq!(
            day_start(tz, date("2026-11-22")),
            utc("2026-11-21T16:00:00Z")
        );
    }

    #[test]
    fn dst_transitions_are_found_to_the_second() {
        // New York: EDT ends 2026-11-01 02:00 local = 06:00Z.
        let tz = &zone("America/New_York");
        let w = ZoneWindow::around(tz, utc("2026-11-01T05:10:00Z"));
        assert_eq!(w.base_offset, -4 * 3600);
        assert_eq!(
            w.transitions,
            vec![(utc("2026-11-01T06:00:00Z"), -5 * 3600)]
        );
        assert_eq!(w.offset_at(utc("2026-11-01T05:59:59Z")), -4 * 3600);
        assert_eq!(w.offset_at(utc("2026-11-01T06:00:00Z")), -5 * 3600);
        // Santiago: DST ends at 24:00 on 2026-04-04 (03:00Z), back to 23:00; the business day
        // 2026-04-04 lasts 25 hours, until 04:00Z.
        let tz = &zone("America/Santiago");
        let w = ZoneWindow::around(tz, utc("2026-04-05T02:59:00Z"));
        assert_eq!(
            w.transitions,
            vec![(utc("2026-04-05T03:00:00Z"), -4 * 3600)]
        );
        assert_eq!(
            w.day_at(utc("2026-04-05T03:30:00Z")),
            day_of_date(date("2026-04-04"))
        );
        assert_eq!(
            w.day_at(utc("2026-04-05T04:00:00Z")),
            day_of_date(date("2026-04-05"))
        );
        assert_eq!(
            day_start(tz, date("2026-04-05")),
            utc("2026-04-05T04:00:00Z")
        );
        // Santiago: DST starts at 24:00 on 2026-09-05 (04:00Z): midnight does not exist, the
        // day starts at 01:00 local.
        assert_eq!(
            day_start(tz, date("2026-09-06")),
            utc("2026-09-06T04:00:00Z")
        );
        // Lord Howe: a half-hour change (02:00 -> 01:30 local on 2026-04-05, 15:00Z).
        let tz = &zone("Australia/Lord_Howe");
        let w = ZoneWindow::around(tz, utc("2026-04-04T14:00:00Z"));
        assert_eq!(w.base_offset, 11 * 3600);
        assert_eq!(
            w.transitions,
            vec![(utc("2026-04-04T15:00:00Z"), 10 * 3600 + 1800)]
        );
    }

    #[test]
    fn window_days_match_chrono_everywhere() {
        // Zones with DST, half- and quarter-hour offsets, one window every 5 hours over a
        // year: the window's decision equals the zone's local date about once an hour across
        // the whole window.
        let start = utc("2026-01-01T00:00:00Z");
        for tz in &[
            zone("Asia/Shanghai"),
            zone("America/Santiago"),
            zone("America/New_York"),
            zone("Europe/London"),
            zone("Australia/Lord_Howe"),
            zone("Pacific/Chatham"),
            zone("Asia/Kathmandu"),
        ] {
            for k in 0..(365 * 24 / 5) {
                let around = start + k * 5 * 3600;
                let w = ZoneWindow::around(tz, around);
                for s in (w.start..w.end).step_by(3607) {
                    assert_eq!(w.day_at(s), local_day(tz, s), "{tz} at {s}");
                    assert!(w.days.contains(&w.day_at(s)), "{tz} at {s}");
                }
            }
        }
    }
}
