//! `GET /support/wallets/{user_id}`'s store step: the balance, one page of the ledger, the
//! claim credits still pinned (a claim between its credit and its `done` mark, or reclaim-cron
//! about to re-drive it) with their packets' claim states, and the wallet's unexported journal
//! entries.

pub mod http;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::domain::journal::Entry as JournalEntry;
use crate::packets::rules::{ClaimState, Share};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::{Error, Store};
use crate::wallet::rules::{Entry, LEDGER_PAGE};

/// Packets read at once for the pinned claim records.
const IN_FLIGHT: usize = 16;

/// Pinned claim records listed at most (a wallet has one per claim in flight).
pub const PENDING_LIMIT: usize = 1_000;

/// What support sees of one wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletLookup {
    /// Balance, cents.
    pub balance_cents: i64,
    /// The ledger page asked for, newest first ([`LEDGER_PAGE`] entries at most).
    pub ledger: Vec<Entry>,
    /// Entries the ledger keeps in all (at most 1,000, the newest).
    pub ledger_len: u64,
    /// The offset of the next (older) page, if any.
    pub next_offset: Option<u64>,
    /// Claim credits whose record is still pinned: the money is in this wallet, and the claim
    /// is not yet marked done (or its record not yet released).
    pub pending_transfers: Vec<PendingTransfer>,
    /// The wallet's unexported journal entries, oldest first.
    pub journal: Vec<JournalEntry>,
    /// Whether the wallet's journal was read whole (see [`crate::support::store::JOURNAL_READ_LIMIT`]).
    pub journal_complete: bool,
}

/// A claim credit in flight, seen from the grabber's wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTransfer {
    /// The transfer id, `claim:<packet id>`.
    pub transfer_id: String,
    /// The packet claimed.
    pub packet_id: String,
    /// The share, from the packet's grab record (`None` once the packet's keys expired).
    pub share: Option<Share>,
    /// The claim as the packet records it (`pending` until step 3 marks it done).
    pub claim: ClaimState,
}

/// The support look-up of `user_id`'s wallet, the ledger page starting `offset` entries from
/// the newest. Read-only; a wallet never used answers a zero balance and empty lists.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub async fn wallet(store: &Store, user_id: &str, offset: u64) -> Result<WalletLookup, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let wk = keys.wallet(user_id);
    let page = LEDGER_PAGE as u64;
    let mut conn = store.conn().await?;
    let (balance, items, ledger_len, pinned): (Option<i64>, Vec<String>, u64, Vec<String>) =
        redis::pipe()
            .cmd("HGET")
            .arg(&wk.wallet)
            .arg("balance")
            .cmd("LRANGE")
            .arg(&wk.ledger)
            .arg(offset)
            .arg(offset + page - 1)
            .cmd("LLEN")
            .arg(&wk.ledger)
            .cmd("ZRANGE")
            .arg(&wk.records_forget)
            .arg("+inf")
            .arg("+inf")
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(PENDING_LIMIT)
            .query_async(&mut conn)
            .await?;
    let ledger = items
        .iter()
        .map(|i| Entry::parse(i))
        .collect::<Result<Vec<_>, _>>()?;
    let pending_transfers: Vec<PendingTransfer> = stream::iter(
        pinned
            .into_iter()
            .filter_map(|id| {
                let packet_id = id.strip_prefix("claim:")?.to_string();
                is_packet_id(&packet_id).then_some((id, packet_id))
            })
            .map(|(transfer_id, packet_id)| {
                let keys = &keys;
                async move {
                    let pk = keys.packet(&packet_id);
                    let mut conn = store.conn().await?;
                    let (record, state): (Option<String>, Option<String>) = redis::pipe()
                        .cmd("HGET")
                        .arg(&pk.grabs)
                        .arg(user_id)
                        .cmd("HGET")
                        .arg(&pk.claims)
                        .arg(user_id)
                        .query_async(&mut conn)
                        .await?;
                    Ok::<_, Error>(PendingTransfer {
                        share: record.as_deref().map(Share::parse).transpose()?,
                        claim: ClaimState::parse(state.as_deref())?,
                        transfer_id,
                        packet_id,
                    })
                }
            }),
    )
    .buffered(IN_FLIGHT)
    .try_collect()
    .await?;
    let (journal, journal_complete) = crate::support::store::unexported(store, &wk.journal, |e| {
        e.user_id == user_id && !e.kind.is_merchant()
    })
    .await?;
    let next = offset + ledger.len() as u64;
    Ok(WalletLookup {
        balance_cents: balance.unwrap_or(0),
        next_offset: (next < ledger_len && !ledger.is_empty()).then_some(next),
        ledger,
        ledger_len,
        pending_transfers,
        journal,
        journal_complete,
    })
}
