//! The support look-ups' shared store step: the unexported entries of a journal, read with a
//! bound.

use crate::domain::journal::Entry;
use crate::store::{journal, Error, Store};

/// Entries read from one journal at most (`XRANGE … COUNT`), so that a look-up's read of a
/// journal stays well under 1 ms of server time (a full ledger's 1,100 entries took 1.0 ms;
/// `cargo bench -p hongbao-tests --bench read_routes`). Ledger-export drains the journals
/// every minute, so a journal holds more only while the export is failing or behind: the
/// look-up then says it searched the oldest entries only (`journal_complete: false`).
pub const JOURNAL_READ_LIMIT: usize = 500;

/// Unexported entries of the journal `key` that `keep` selects, oldest first, and whether the
/// whole journal was read (`false`: it held more than [`JOURNAL_READ_LIMIT`] entries, and only
/// the oldest were searched).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub(crate) async fn unexported(
    store: &Store,
    key: &str,
    keep: impl Fn(&Entry) -> bool,
) -> Result<(Vec<Entry>, bool), Error> {
    let entries = journal::read(store, key, JOURNAL_READ_LIMIT).await?;
    let complete = entries.len() < JOURNAL_READ_LIMIT;
    Ok((entries.into_iter().filter(|e| keep(e)).collect(), complete))
}
