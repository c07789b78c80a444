//! Daily order codes: `yyMMdd` of the business day plus a random-looking suffix that is unique
//! within the day (`POST /order-codes`, the next-order-code function; the design starts from
//! the source blog post on 11-digit daily order codes).
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
//! 3. **The permutation** ([`Permutation`](crate::domain::order_codes::Permutation)) runs in the function, not in Redis: a 10-round
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
//! where it changes ([`ZoneWindow`](crate::domain::order_codes::ZoneWindow), from the bundled IANA database (`domain::zone`), cached for the hour), plus the business
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
//! | `hb:{oc}:day:<yyyymmdd>` | hash | one field: the day's secret (32 hex digits) -> positions taken; no TTL: the start of a later day deletes it once it is older than yesterday ([`retired_days`]), so at most two exist |
//! | `hb:{oc}:quota:<yyyymmdd>:<user>` | string | codes the user took that day (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`); expires 2 days after the user's first code of the day. On `{oc}` so the quota is checked and counted in the script that takes the codes: a refused request writes nothing |
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
//! lose any other write. Day hashes and the high-water mark have no TTL, so no `volatile-*`
//! eviction policy can take them (an evicted day hash would stop the day); only the quota
//! counters have one, and an evicted counter lets its user take more codes that day, never a
//! code twice. Changing the zone or the width is safe at any time (a different width gives
//! codes of a different length; a zone change can at worst stop the day as above) but is
//! cleanest at a day boundary.

use std::sync::Mutex;

use chrono::{Datelike, NaiveDate};
use redis::{Script, Value};

pub use crate::domain::order_codes::{
    code_prefix, date_of_day, day_of_date, day_start, domain, new_day_secret, permutation,
    retired_days, window_of_hour, Outcome, MAX_BATCH, QUOTA_TTL_SECS,
};

use super::scripts::{self, int, text, Call, OrderCodeCall};
use super::{Error, Store};

/// The key of business day `date`'s hash (one field: the day's secret -> positions taken).
pub fn day_key(prefix: &str, date: NaiveDate) -> String {
    format!(
        "{prefix}:{{oc}}:day:{:04}{:02}{:02}",
        date.year(),
        date.month(),
        date.day()
    )
}

/// The key of `user_id`'s codes taken on business day `date` (a counter of
/// `lua/quota.lua` that expires with the day hash; `HONGBAO_ORDER_CODES_PER_USER_PER_DAY`).
pub fn quota_key(prefix: &str, date: NaiveDate, user_id: &str) -> String {
    format!(
        "{prefix}:{{oc}}:quota:{:04}{:02}{:02}:{}",
        date.year(),
        date.month(),
        date.day(),
        super::keys::user_key_part(user_id)
    )
}

/// The key of the high-water mark: the newest business day (days since 1970-01-01) that got
/// a day hash.
pub fn newest_day_key(prefix: &str) -> String {
    format!("{prefix}:{{oc}}:newest_day")
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

/// Deletes the day hashes that [`retired_days`] names once business day `day` has started
/// (`previous`: the newest day before it), in one `DEL` (every key is on the `{oc}` hash
/// slot). Safe to run twice or late: the high-water mark already stands at `day`, so no request
/// can start those days again. A failure is logged and otherwise ignored: the codes were taken,
/// and a missed deletion only leaves a hash of about 100 bytes, which the next day's start
/// deletes if the next day follows at once.
async fn retire_days(conn: &mut super::Conn, prefix: &str, day: i64, previous: Option<i64>) {
    let keys: Vec<String> = retired_days(day, previous)
        .into_iter()
        .filter_map(|d| date_of_day(d).ok())
        .map(|d| day_key(prefix, d))
        .collect();
    if keys.is_empty() {
        return;
    }
    let deleted: redis::RedisResult<u64> = redis::cmd("DEL").arg(&keys).query_async(conn).await;
    match deleted {
        Ok(n) => tracing::info!(
            day,
            deleted = n,
            "order-code day started; older day hashes deleted"
        ),
        Err(e) => {
            tracing::warn!(day, error = %e, "order-code day started; deleting older day hashes failed")
        }
    }
}

/// Takes `count` (`1..=100`) codes of the current business day (Redis `TIME` in
/// `HONGBAO_BUSINESS_TZ`) for `user_id`, all or none, within the user's daily quota
/// (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`, counted in the same script). One EVALSHA of
/// `lua/order_code.lua`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached or its clock is 5 hours or more from
/// this function's; [`Error::Internal`] for a `count` outside `1..=100`, or when the day's
/// hash vanished (see the module documentation).
pub async fn next_codes(store: &Store, user_id: &str, count: u32) -> Result<Outcome, Error> {
    next_codes_with(
        store,
        &scripts::ORDER_CODE,
        user_id,
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
    user_id: &str,
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
        &cfg.order_codes.tz,
        cfg.order_codes.digits,
        cfg.key_prefix.as_str(),
    );
    let window = window_of_hour(tz, around);
    let dates: Vec<NaiveDate> = window
        .days
        .iter()
        .map(|&d| date_of_day(d))
        .collect::<Result<_, _>>()?;
    let keys: Vec<String> = dates.iter().map(|&d| day_key(prefix, d)).collect();
    let quotas: Vec<String> = dates
        .iter()
        .map(|&d| quota_key(prefix, d, user_id))
        .collect();
    let guesses: Vec<String> = keys
        .iter()
        .map(|key| known_secret(&cfg.redis_url, key).unwrap_or_default())
        .collect();
    let days: Vec<(i64, &str)> = window
        .days
        .iter()
        .zip(&guesses)
        .map(|(&day, guess)| (day, guess.as_str()))
        .collect();
    let call = OrderCodeCall {
        day_hashes: &keys,
        newest_day: &newest_day_key(prefix),
        quotas: &quotas,
        count,
        positions_per_day: domain(digits),
        new_secret: &new_day_secret(),
        quota_ttl_secs: QUOTA_TTL_SECS,
        per_user_per_day: cfg.order_codes.per_user_per_day,
        window_start: window.start,
        window_end: window.end,
        days: &days,
        base_offset: window.base_offset,
        transitions: &window.transitions,
    };
    let mut conn = store.conn().await?;
    let reply = text(
        NAME,
        call.invocation_of(script)
            .invoke_async::<Value>(&mut conn)
            .await?,
    )?;
    let reply: Vec<String> = reply.split(':').map(str::to_string).collect();
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
            // A sixth field: this call started the day, and names the newest day before it.
            if let Some(previous) = reply.get(5) {
                let previous = match previous.as_str() {
                    "" => None,
                    _ => Some(int(NAME, Some(previous))?),
                };
                retire_days(&mut conn, prefix, day, previous).await;
            }
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
        Some("quota") => {
            let (day, now) = (int(NAME, reply.get(1))?, int(NAME, reply.get(2))?);
            let used = int(NAME, reply.get(3))?;
            let date = date_of_day(day)?;
            let next = date.succ_opt().map_or(now + 86_400, |d| day_start(tz, d));
            Ok(Outcome::QuotaExceeded {
                date,
                used: used.max(0) as u64,
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
