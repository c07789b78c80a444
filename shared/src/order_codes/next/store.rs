//! `POST /order-codes`: take `count` codes of the current business day (`order_code.lua`).

use crate::store::scripts::OrderCodeCall;
use chrono::NaiveDate;
use redis::{Script, Value};

use super::retire::retire_days;
use super::secrets::{known_secret, remember_secret};
use crate::order_codes::keys::{day_key, newest_day_key, quota_key};
use crate::order_codes::rules::{
    code_prefix, date_of_day, day_start, domain, new_day_secret, permutation, window_of_hour,
    Outcome, MAX_BATCH, QUOTA_TTL_SECS,
};
use crate::store::scripts::{self, int, text, Call};
use crate::store::{Error, Store};

/// What `order_code.lua` answers (its fields joined by ':').
#[derive(Debug, PartialEq, Eq)]
enum OrderCodeReply {
    /// `ok:<day>:<now_s>:<first>:<secret>[:<previous>]`: positions `first..first + count` of
    /// business day `day` (days since 1970-01-01) are the caller's, under the day's secret;
    /// `started` (the sixth field) when this call started the day: the newest day before it, if
    /// any.
    Taken {
        day: i64,
        first: u64,
        secret: String,
        started: Option<Option<i64>>,
    },
    /// `exhausted:<day>:<now_s>:...`: fewer than `count` positions are left; none taken.
    Exhausted { day: i64, now: i64 },
    /// `quota:<day>:<now_s>:<used>`: the caller's daily quota would be passed; none taken.
    Quota { day: i64, now: i64, used: i64 },
    /// `clock:<now_s>`: Redis `TIME` is outside the zone window sent.
    Clock { now: i64 },
    /// `lost:<day>`: the day's hash is gone although that day or a later one had started.
    Lost { day: i64 },
}

impl OrderCodeCall<'_> {
    /// Parses the script's reply (see [`OrderCodeReply`]).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<OrderCodeReply, Error> {
        const NAME: &str = "order_code";
        let reply = text(NAME, reply)?;
        let reply: Vec<String> = reply.split(':').map(str::to_string).collect();
        let field = |i: usize| int(NAME, reply.get(i));
        Ok(match reply.first().map(String::as_str) {
            Some("ok") => {
                let (day, first) = (field(1)?, field(3)?);
                let secret = reply.get(4).filter(|s| !s.is_empty());
                let (Some(secret), Ok(first)) = (secret, u64::try_from(first)) else {
                    return Err(Error::bad_reply(NAME, format!("{reply:?}")));
                };
                let started = match reply.get(5).map(String::as_str) {
                    None => None,
                    Some("") => Some(None),
                    Some(_) => Some(Some(field(5)?)),
                };
                OrderCodeReply::Taken {
                    day,
                    first,
                    secret: secret.clone(),
                    started,
                }
            }
            Some("exhausted") => OrderCodeReply::Exhausted {
                day: field(1)?,
                now: field(2)?,
            },
            Some("quota") => OrderCodeReply::Quota {
                day: field(1)?,
                now: field(2)?,
                used: field(3)?,
            },
            Some("clock") => OrderCodeReply::Clock { now: field(1)? },
            Some("lost") => OrderCodeReply::Lost { day: field(1)? },
            _ => return Err(Error::bad_reply(NAME, format!("{reply:?}"))),
        })
    }
}

/// Takes `count` (`1..=100`) codes of the current business day (Redis `TIME` in
/// `HONGBAO_BUSINESS_TZ`) for `user_id`, all or none, within the user's daily quota
/// (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`, counted in the same script). One EVALSHA of
/// `order_code.lua`.
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
/// makes it refuse (`clock`). The integration tests pass a copy of `order_code.lua` whose
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
    // Seconds from `now` (Redis `TIME`) to the start of the business day after `date`.
    let until_next_day = |date: NaiveDate, now: i64| {
        let next = date.succ_opt().map_or(now + 86_400, |d| day_start(tz, d));
        (next - now).max(1) as u64
    };
    let mut conn = store.conn().await?;
    let reply = call
        .invocation_of(script)
        .invoke_async::<Value>(&mut conn)
        .await?;
    match OrderCodeCall::outcome(reply)? {
        OrderCodeReply::Taken {
            day,
            first,
            secret,
            started,
        } => {
            if first + u64::from(count) > domain(digits) {
                return Err(Error::bad_reply(
                    "order_code",
                    format!("positions past the day: ok:{day}:..:{first}:.."),
                ));
            }
            let date = date_of_day(day)?;
            remember_secret(&cfg.redis_url, &day_key(prefix, date), &secret);
            // This call started the day, and names the newest day before it.
            if let Some(previous) = started {
                retire_days(&mut conn, prefix, day, previous).await;
            }
            let perm = permutation(digits, &secret);
            let prefix = code_prefix(date);
            let codes = (first..first + u64::from(count))
                .map(|p| format!("{prefix}{}", perm.suffix(p)))
                .collect();
            Ok(Outcome::Issued { date, codes })
        }
        OrderCodeReply::Exhausted { day, now } => {
            let date = date_of_day(day)?;
            Ok(Outcome::Exhausted {
                date,
                retry_after_secs: until_next_day(date, now),
            })
        }
        OrderCodeReply::Quota { day, now, used } => {
            let date = date_of_day(day)?;
            Ok(Outcome::QuotaExceeded {
                date,
                used: used.max(0) as u64,
                retry_after_secs: until_next_day(date, now),
            })
        }
        OrderCodeReply::Clock { now } => Err(Error::Unavailable(format!(
            "the Redis clock ({now}) is outside [{}, {}), the zone window sent for this \
             function's clock ({around})",
            window.start, window.end
        ))),
        OrderCodeReply::Lost { day } => {
            let date = date_of_day(day)?;
            Err(Error::Internal(format!(
                "the order-code hash of {date} is gone although that day or a later one had \
                 started (evicted, deleted, or the Redis clock went back); refusing to restart \
                 its sequence, which would repeat codes"
            )))
        }
    }
}
