//! `GET /packets`'s store step: one page of a user's sent or received history
//! (`history_page.lua`, read only), its reply parsed into a [`Page`].

use crate::history::rules::{Cursor, Entry, Page, Role};
use crate::store::keys::Keys;
use crate::store::scripts::HistoryPageCall;
use crate::store::scripts::{texts, Call};
use crate::store::{Error, Store};

impl HistoryPageCall<'_> {
    /// `history_page.lua`'s reply, up to `limit + 1` members newest first (the call asks one
    /// more than the page: whether it exists tells if there is a next page), as the [`Page`]
    /// of the first `limit` entries of list `role`.
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape or an entry of another shape.
    fn page(reply: redis::Value, role: Role, limit: u32) -> Result<Page, Error> {
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
}

/// Up to `limit` entries of `user_id`'s list `role`, newest first, starting after `cursor`
/// (`None`: the newest). Entries older than the retention are left out. One script call
/// (`history_page.lua`) on the user's slot.
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
    HistoryPageCall::page(reply, role, limit)
}
