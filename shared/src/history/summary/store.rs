//! `GET /packets/summary`'s store step: a user's totals of one business year (one `HMGET`).

use crate::history::rules::{totals_fields, Summary, Totals};
use crate::store::keys::Keys;
use crate::store::{Error, Store};

/// `user_id`'s totals of business year `year`: one `HMGET` of the totals hash, which the
/// history scripts keep equal to the sums of the entries kept.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a total that is
/// not an integer.
pub async fn summary(store: &Store, user_id: &str, year: i32) -> Result<Summary, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let values: Vec<Option<i64>> = redis::cmd("HMGET")
        .arg(&wk.history_totals)
        .arg(&totals_fields(year)[..])
        .query_async(&mut conn)
        .await?;
    let v = |i: usize| values.get(i).copied().flatten().unwrap_or(0);
    Ok(Summary {
        year,
        sent: Totals {
            count: v(0).max(0) as u64,
            total_cents: v(1),
        },
        received: Totals {
            count: v(2).max(0) as u64,
            total_cents: v(3),
        },
    })
}
