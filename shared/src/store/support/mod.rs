//! Support look-ups: what an operator needs to answer a ticket ("I grabbed 1.94 but never got
//! it"), read-only, without `redis-cli` or the key layout. One operation per file:
//!
//! | file | operation | reads |
//! | --- | --- | --- |
//! | `packet.rs` | [`packet()`] | `packet_view.lua` (the packet as its sender sees it, its claims), each pending claim's credit record on the grabber's slot, the reclaim index, the journals that can mention it |
//! | `coupon.rs` | [`coupon()`] | the code's campaign and issuing pool (generated codes by their number and index, uploaded codes by the directory), its record and release memories in that pool, the pool's tag journal |
//! | `wallet.rs` | [`wallet()`] | the balance, a ledger page, the pinned claim records with their packets' claim states, the wallet's tag journal |
//!
//! Nothing here writes, and nothing here returns a secret: a packet's password verifier and
//! the idempotency records' fingerprints stay in Redis (amounts come from the grab records).
//! The journals hold only the entries not yet exported (ledger-export deletes an entry once
//! EventBridge accepted it): exported movements are on the event bus and in its archive.

pub mod coupon;
pub mod packet;
pub mod wallet;

pub use coupon::{coupon, CouponLookup, ReleaseLookup};
pub use packet::{packet, GrabLookup, PacketLookup};
pub use wallet::{wallet, PendingTransfer, WalletLookup};

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
