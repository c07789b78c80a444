//! Daily order codes: `yyMMdd` of the business day plus a random-looking suffix that is unique
//! within the day (`POST /order-codes`, the next-order-code function; issue 4, seed
//! `001_d820f265aaf56045`).
//!
//! A code is 6 + `d` decimal digits (`d` = `HONGBAO_ORDER_CODE_DIGITS`, 5 to 7), e.g.
//! `26112184817` for the 5-digit default: the business day 2026-11-21 and the suffix `84817`.
//! A suffix never starts with 0: the suffixes of a day are `10^(d-1) ..= 10^d - 1`,
//! `9 * 10^(d-1)` of them (90,000 for `d = 5`). Within a day they come in a secret order that
//! differs every day, so two codes tell nothing about the number of orders between them.
//!
//! # How a code is made
//!
//! 1. **One script, one round trip** (`lua/order_code.lua`): it reads Redis `TIME`, finds the
//!    UTC offset of the configured IANA zone at that instant, hence the business day, and takes
//!    `count` consecutive *positions* `p .. p + count` of that day's counter, all or none: when
//!    `p + count` would pass the day's `9 * 10^(d-1)` positions it answers `exhausted` and takes
//!    nothing (the seed's counter wrapped back to its start here and handed out the day's codes
//!    a second time). The day and the positions are decided in the same atomic step, so a
//!    request at 23:59:59.999 gets the old day's date *and* the old day's positions.
//! 2. **The day's secret** is a 128-bit value from the thread CSPRNG (ChaCha, OS-seeded). Every
//!    call sends a fresh one; the script stores it only when the day has none yet (the first
//!    request of the day wins, however many race) and returns the stored one to everybody.
//!    The day hash's one field is named by the secret and counts the positions taken, so a
//!    sandbox that remembers the secret sends it as a guess and the script's whole work is
//!    `TIME` + `HINCRBY` (a wrong guess is undone in the same script and answered with the
//!    real secret: correctness never depends on the sandbox's memory).
//! 3. **The permutation** ([`Permutation`]) runs in the function, not in Redis: a 10-round
//!    balanced Feistel network over `[0, a^2)` with `a = ceil(sqrt(9 * 10^(d-1)))`, round
//!    functions HMAC-SHA-1(secret, round, half) mod `a`, and cycle-walking back into
//!    `[0, 9 * 10^(d-1))`. Suffix = `10^(d-1) + permutation(position)`. A bijection, so distinct
//!    positions give distinct codes; the positions are distinct because the counter never
//!    wraps.
//!
//! # Why a keyed permutation, not the seed's pre-shuffled pool
//!
//! | | per-day pool (seed) | keyed Feistel permutation (this module) |
//! | --- | --- | --- |
//! | Redis memory per day | `9 * 10^(d-1)` entries: 270 KB (5 digits, 3 bytes each) to 27 MB (7 digits) | one hash of one field: 104 bytes (`MEMORY USAGE`), plus 72 bytes for the high-water mark |
//! | creating a day | a shuffle of up to 9,000,000 values uploaded by one request; racing first requests wait for it or duplicate it | one 16-byte secret stored by whichever first request runs first (`HSET` of a missing hash inside the script) |
//! | Redis work per call | a counter step and a `GETRANGE` of the batch's entries | `TIME` + `HINCRBY`, whatever the batch size |
//! | function work per code | none | 10 table lookups (about 0.3 µs per code including formatting); the tables, `10 * a` HMACs, are built once per day per sandbox (about 2 ms for 5 digits, 17 ms for 7) and take 12 KB (5 digits) to 120 KB (7) |
//! | order | a uniformly random permutation | a pseudo-random permutation keyed by a 128-bit secret |
//!
//! The Redis side stays as cheap as an `INCR` with a clock read, which is what bounds every
//! request; the permutation runs where CPU scales (the functions). NIST FF1 / FF3-1 would be
//! the standard format-preserving ciphers, but SP 800-38G Rev. 1 requires a domain of at least
//! 10^6 (the 5-digit domain is 90,000), so this is a plain Feistel network with FF1's 10 rounds
//! and a cryptographic round function. Observers see codes, never positions, so reading the
//! volume between two codes means recovering the day's 128-bit secret, which never leaves
//! Redis and the functions.
//!
//! # Time zone
//!
//! The function computes, from its own clock, the zone's UTC offset over a 12-hour window
//! around the start of the current hour (at least 5 hours either side of now) and the instants
//! where it changes ([`ZoneWindow`], from `chrono-tz`, cached for the hour), plus the business
//! days that window touches, and passes them to the script with the keys of those days. The
//! script picks the offset for Redis `TIME`: the function's clock only chooses the candidates;
//! Redis `TIME` decides. A Redis clock outside the window (5 to 6 hours or more apart) is
//! refused ([`Error::Unavailable`]), never guessed.
//!
//! # Keys
//!
//! Every key carries the fixed hash tag `{oc}`, so the script can see the keys of two adjacent
//! days (around midnight) in one atomic call on a cluster.
//!
//! | key | type | contents |
//! | --- | --- | --- |
//! | `hb:{oc}:day:<yyyymmdd>` | hash | one field: the day's secret (32 hex digits) -> positions taken; expires 2 days after the day's first code |
//! | `hb:{oc}:newest_day` | string | the newest business day (days since 1970-01-01) that got a day hash; no expiry |
//!
//! The high-water mark refuses to create a day hash for a day at or before it: a day hash that
//! vanished (evicted, deleted) or a Redis clock that went back by days would otherwise restart
//! a day's sequence and repeat its codes. Those requests fail ([`Error::Internal`], 500)
//! instead.
//!
//! # Errors and limits
//!
//! Codes are unique as long as Redis keeps its writes: a failover that loses the last
//! acknowledged `HINCRBY` (asynchronous replication) can hand out positions again, as it could
//! lose any other write. The keys have TTLs, so a `volatile-*` eviction policy under memory
//! pressure could evict a day hash; the high-water mark then stops the day (500) rather than
//! repeat codes. Changing the zone or the width is safe at any time (a different width gives
//! codes of a different length; a zone change can at worst stop the day as above) but is
//! cleanest at a day boundary.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Datelike, NaiveDate, Offset, TimeZone};
use chrono_tz::Tz;
use rand::Rng;
use redis::{Script, Value};

use crate::error::Error;
use crate::scripts::{self, int, texts};
use crate::store::Store;

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

/// The key of business day `date`'s hash (one field: the day's secret -> positions taken).
pub fn day_key(prefix: &str, date: NaiveDate) -> String {
    format!(
        "{prefix}:{{oc}}:day:{:04}{:02}{:02}",
        date.year(),
        date.month(),
        date.day()
    )
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

/// The key of the high-water mark: the newest business day (days since 1970-01-01) that got
/// a day hash.
pub fn newest_day_key(prefix: &str) -> String {
    format!("{prefix}:{{oc}}:newest_day")
}

/// A new day secret: 128 bits from the thread CSPRNG (ChaCha, OS-seeded) as 32 lowercase hex
/// digits. Sent with every call; stored only by the first call of a day.
pub fn new_day_secret() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// The date of business day `day` (days since 1970-01-01).
///
/// # Errors
/// [`Error::Internal`] when `day` is outside chrono's range.
pub fn date_of_day(day: i64) -> Result<NaiveDate, Error> {
    i32::try_from(day + UNIX_EPOCH_DAYS_FROM_CE)
        .ok()
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| Error::Internal(format!("business day {day} is out of range")))
}

/// The number of `date` in days since 1970-01-01.
pub fn day_of_date(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - UNIX_EPOCH_DAYS_FROM_CE
}

/// The UTC offset of `tz` at Unix second `unix_s`, seconds east of UTC (Shanghai: 28,800).
pub fn utc_offset(tz: Tz, unix_s: i64) -> i32 {
    let utc = DateTime::from_timestamp(unix_s, 0)
        .unwrap_or_default()
        .naive_utc();
    tz.offset_from_utc_datetime(&utc).fix().local_minus_utc()
}

/// The business day (local date in `tz`, as days since 1970-01-01) at Unix second `unix_s`.
pub fn local_day(tz: Tz, unix_s: i64) -> i64 {
    (unix_s + i64::from(utc_offset(tz, unix_s))).div_euclid(86_400)
}

/// The first Unix second of business day `date` in `tz`: local midnight, or, when midnight
/// falls into a gap (a DST change at 24:00, a skipped day), the first local time after it.
pub fn day_start(tz: Tz, date: NaiveDate) -> i64 {
    let midnight = date.and_hms_opt(0, 0, 0).expect("midnight exists");
    (0..=26 * 4)
        .find_map(|quarter| {
            let local = midnight + chrono::Duration::minutes(15 * quarter);
            tz.from_local_datetime(&local)
                .earliest()
                .map(|t| t.timestamp())
        })
        .unwrap_or_else(|| {
            // No valid local time in 26 hours (no zone does this): fall back to the offset at
            // midnight read as UTC.
            let t = midnight.and_utc().timestamp();
            t - i64::from(utc_offset(tz, t))
        })
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
    pub fn around(tz: Tz, around: i64) -> Self {
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
fn window_of_hour(tz: Tz, around: i64) -> Arc<ZoneWindow> {
    static LAST: Mutex<Option<(Tz, i64, Arc<ZoneWindow>)>> = Mutex::new(None);
    let hour = around.div_euclid(3600) * 3600;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((z, h, w)) if *z == tz && *h == hour => w.clone(),
        _ => {
            let w = Arc::new(ZoneWindow::around(tz, hour));
            *last = Some((tz, hour, w.clone()));
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
        let hmac = HmacSha1::new(secret.as_bytes());
        let mut table = Vec::with_capacity(ROUNDS * half as usize);
        for round in 0..ROUNDS {
            for v in 0..half {
                let mut msg = [0u8; 5];
                msg[0] = round as u8;
                msg[1..].copy_from_slice(&(v as u32).to_be_bytes());
                let mac = hmac.mac(&msg);
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

/// HMAC-SHA-1 (RFC 2104) with the key absorbed once.
struct HmacSha1 {
    inner: sha1_smol::Sha1,
    outer: sha1_smol::Sha1,
}

impl HmacSha1 {
    fn new(key: &[u8]) -> Self {
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..20].copy_from_slice(&sha1_smol::Sha1::from(key).digest().bytes());
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| {
            let mut h = sha1_smol::Sha1::new();
            h.update(&block.map(|b| b ^ byte));
            h
        };
        HmacSha1 {
            inner: pad(0x36),
            outer: pad(0x5c),
        }
    }

    fn mac(&self, msg: &[u8]) -> [u8; 20] {
        let mut inner = self.inner.clone();
        inner.update(msg);
        let mut outer = self.outer.clone();
        outer.update(&inner.digest().bytes());
        outer.digest().bytes()
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

/// Day secrets this sandbox has seen, as `(Redis URL, day key, secret)`, newest last: sent as
/// guesses, so that a call costs Redis one `TIME` and one `HINCRBY`. A wrong guess (another
/// server behind the URL, a flushed database) only costs the script a second step, and the
/// script always answers with the real secret, which replaces the guess.
static SECRETS: Mutex<Vec<(String, String, String)>> = Mutex::new(Vec::new());

/// How many day secrets [`SECRETS`] keeps.
const CACHED_SECRETS: usize = 8;

fn known_secret(url: &str, key: &str) -> Option<String> {
    let cache = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .iter()
        .rev()
        .find(|(u, k, _)| u == url && k == key)
        .map(|(_, _, s)| s.clone())
}

fn remember_secret(url: &str, key: &str, secret: &str) {
    let mut cache = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = cache.iter().position(|(u, k, _)| u == url && k == key) {
        if cache[i].2 == secret {
            return;
        }
        cache.remove(i);
    }
    if cache.len() >= CACHED_SECRETS {
        cache.remove(0);
    }
    cache.push((url.to_string(), key.to_string(), secret.to_string()));
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
}

/// Takes `count` (`1..=100`) codes of the current business day (Redis `TIME` in
/// `HONGBAO_ORDER_CODE_TZ`), all or none. One EVALSHA of `lua/order_code.lua`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached or its clock is 5 hours or more from
/// this function's; [`Error::Internal`] for a `count` outside `1..=100`, or when the day's
/// hash vanished (see the module documentation).
pub async fn next_codes(store: &Store, count: u32) -> Result<Outcome, Error> {
    next_codes_with(
        store,
        &scripts::ORDER_CODE,
        count,
        chrono::Utc::now().timestamp(),
    )
    .await
}

/// [`next_codes`] with the script and the function-clock instant (Unix seconds) the zone
/// window is computed around given explicitly: the one code path behind [`next_codes`].
///
/// The production script has no clock input: it reads Redis `TIME`, and a wrong `around` only
/// makes it refuse (`clock`). The integration tests pass a copy of `lua/order_code.lua` whose
/// `redis.call('TIME')` is replaced by a literal instant, to drive day rollovers and DST
/// changes through the same script text.
///
/// # Errors
/// As [`next_codes`].
pub async fn next_codes_with(
    store: &Store,
    script: &Script,
    count: u32,
    around: i64,
) -> Result<Outcome, Error> {
    const NAME: &str = "order_code";
    if !(1..=MAX_BATCH).contains(&count) {
        return Err(Error::Internal(format!(
            "order-code count {count} is outside 1..={MAX_BATCH}"
        )));
    }
    let cfg = store.config();
    let (tz, digits, prefix) = (
        cfg.order_code_tz,
        cfg.order_code_digits,
        cfg.key_prefix.as_str(),
    );
    let window = window_of_hour(tz, around);
    let keys: Vec<String> = window
        .days
        .iter()
        .map(|&d| Ok(day_key(prefix, date_of_day(d)?)))
        .collect::<Result<_, Error>>()?;
    let mut inv = script.prepare_invoke();
    for key in &keys {
        inv.key(key);
    }
    inv.key(newest_day_key(prefix));
    inv.arg(count)
        .arg(domain(digits))
        .arg(new_day_secret())
        .arg(DAY_TTL_SECS)
        .arg(window.start)
        .arg(window.end);
    for (&day, key) in window.days.iter().zip(&keys) {
        inv.arg(day)
            .arg(known_secret(&cfg.redis_url, key).unwrap_or_default());
    }
    inv.arg(window.base_offset);
    for &(at, offset) in &window.transitions {
        inv.arg(at).arg(offset);
    }
    let mut conn = store.conn().await?;
    let reply = texts(NAME, inv.invoke_async::<Value>(&mut conn).await?)?;
    match reply.first().map(String::as_str) {
        Some("ok") => {
            let (day, first) = (int(NAME, reply.get(1))?, int(NAME, reply.get(3))?);
            let secret = reply.get(4).filter(|s| !s.is_empty());
            let (Some(secret), Ok(first)) = (secret, u64::try_from(first)) else {
                return Err(Error::bad_reply(NAME, format!("{reply:?}")));
            };
            if first + u64::from(count) > domain(digits) {
                return Err(Error::bad_reply(
                    NAME,
                    format!("positions past the day: {reply:?}"),
                ));
            }
            let date = date_of_day(day)?;
            remember_secret(&cfg.redis_url, &day_key(prefix, date), secret);
            let perm = permutation(digits, secret);
            let prefix = code_prefix(date);
            let codes = (first..first + u64::from(count))
                .map(|p| format!("{prefix}{}", perm.suffix(p)))
                .collect();
            Ok(Outcome::Issued { date, codes })
        }
        Some("exhausted") => {
            let (day, now) = (int(NAME, reply.get(1))?, int(NAME, reply.get(2))?);
            let date = date_of_day(day)?;
            let next = date.succ_opt().map_or(now + 86_400, |d| day_start(tz, d));
            Ok(Outcome::Exhausted {
                date,
                retry_after_secs: (next - now).max(1) as u64,
            })
        }
        Some("clock") => {
            let now = int(NAME, reply.get(1))?;
            Err(Error::Unavailable(format!(
                "the Redis clock ({now}) is outside [{}, {}), the zone window sent for this \
                 function's clock ({around})",
                window.start, window.end
            )))
        }
        Some("lost") => {
            let date = date_of_day(int(NAME, reply.get(1))?)?;
            Err(Error::Internal(format!(
                "the order-code hash of {date} is gone although that day or a later one had \
                 started (evicted, deleted, or the Redis clock went back); refusing to restart \
                 its sequence, which would repeat codes"
            )))
        }
        _ => Err(Error::bad_reply(NAME, format!("{reply:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp()
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
        let mac = HmacSha1::new(b"Jefe").mac(b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        let mac = HmacSha1::new(&[0xaa; 80])
            .mac(b"Test Using Larger Than Block-Size Key - Hash Key First");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "aa4ae5e15272d00e95705637ce8a3b55ed402112");
    }

    #[test]
    fn days_and_dates() {
        assert_eq!(date_of_day(0).unwrap(), date("1970-01-01"));
        assert_eq!(day_of_date(date("2026-11-21")), 20_778);
        assert_eq!(date_of_day(20_778).unwrap(), date("2026-11-21"));
        assert_eq!(day_key("hb", date("2026-11-21")), "hb:{oc}:day:20261121");
        assert_eq!(code_prefix(date("2026-11-21")), "261121");
        assert_eq!(code_prefix(date("2100-01-02")), "000102");
        assert_eq!(domain(5), 90_000);
        assert_eq!(first_suffix(7), 1_000_000);
    }

    #[test]
    fn shanghai_has_no_transitions() {
        let tz = chrono_tz::Asia::Shanghai;
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
        let tz = chrono_tz::America::New_York;
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
        let tz = chrono_tz::America::Santiago;
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
        let tz = chrono_tz::Australia::Lord_Howe;
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
        // year: the window's decision equals chrono-tz's local date about once an hour across
        // the whole window.
        let start = utc("2026-01-01T00:00:00Z");
        for tz in [
            chrono_tz::Asia::Shanghai,
            chrono_tz::America::Santiago,
            chrono_tz::America::New_York,
            chrono_tz::Europe::London,
            chrono_tz::Australia::Lord_Howe,
            chrono_tz::Pacific::Chatham,
            chrono_tz::Asia::Kathmandu,
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
