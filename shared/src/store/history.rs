//! A user's red-packet history: pages of the sent and received lists, newest first,
//! and the yearly totals.
//!
//! The entries are written by the scripts that move the money they record, on the user's own
//! hash slot: `lua/create_packet.lua` adds the sender's sent entry with the debit,
//! `lua/wallet_credit.lua` the grabber's received entry with a claim's credit (once per
//! transfer id, so re-drives add nothing), and `lua/settle.lua` writes the refund into the sent
//! entry. Each list is a sorted set read with `ZREVRANGEBYLEX` (see
//! [`crate::domain::history`] for the members); nothing in it has a TTL, and entries older than
//! `HONGBAO_HISTORY_RETENTION_DAYS` are pruned by those scripts (`lua/history.lua`).

use crate::domain::history::totals_fields;
pub use crate::domain::history::{Cursor, Entry, Page, Role, Summary, Totals};

use super::keys::Keys;
use super::scripts::{texts, Call, HistoryPageCall};
use super::{Error, Store};

/// Up to `limit` entries of `user_id`'s list `role`, newest first, starting after `cursor`
/// (`None`: the newest). Entries older than the retention are left out. One script call
/// (`lua/history_page.lua`) on the user's slot.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for an entry of
/// another shape.
pub async fn page(
    store: &Store,
    user_id: &str,
    role: Role,
    limit: u32,
    cursor: Option<&Cursor>,
) -> Result<Page, Error> {
    let cfg = store.config();
    let wk = Keys::new(&cfg.key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let max = cursor.map_or_else(|| "+".to_string(), Cursor::lex_bound);
    // One more than asked: whether it exists tells if there is a next page.
    let reply: redis::Value = HistoryPageCall {
        list: wk.history(role),
        upper: &max,
        limit: limit + 1,
        retention_ms: cfg.history.retention_ms,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let members = texts("history_page", reply)?;
    let more = members.len() > limit as usize;
    let entries = members
        .iter()
        .take(limit as usize)
        .map(|m| Entry::parse(role, m))
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = if more {
        entries.last().map(Entry::cursor)
    } else {
        None
    };
    Ok(Page {
        entries,
        next_cursor,
    })
}

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
