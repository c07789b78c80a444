//! The deletion of day hashes that a new business day retires.

use crate::order_codes::keys::day_key;
use crate::order_codes::rules::{date_of_day, retired_days};
use crate::store::Conn;

/// Deletes the day hashes that [`retired_days`] names once business day `day` has started
/// (`previous`: the newest day before it), in one `DEL` (every key is on the `{oc}` hash
/// slot). Safe to run twice or late: the high-water mark already stands at `day`, so no request
/// can start those days again. A failure is logged and otherwise ignored: the codes were taken,
/// and a missed deletion only leaves a hash of about 100 bytes, which the next day's start
/// deletes if the next day follows at once.
pub(super) async fn retire_days(conn: &mut Conn, prefix: &str, day: i64, previous: Option<i64>) {
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
