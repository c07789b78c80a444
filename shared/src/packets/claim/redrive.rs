//! Claim steps 2 to 4 of a pending claim (`claim.rs` runs step 1): the grabber's credit with its
//! received history entry (`lua/wallet_credit.lua`), the claim marked done
//! (`claim_done.lua`), the credit record un-pinned (`lua/transfer_release.lua`). Run by
//! `POST /packets/{id}/claim` and by reclaim-cron for the claims a settlement finds pending.

use crate::history::rules::{year_of, ReceivedEntry};
use crate::packets::rules::{ClaimState, Share};
use crate::store::keys::Keys;
use crate::store::scripts::Call;
use crate::store::scripts::ClaimDoneCall;
use crate::store::{Error, Store};
use crate::wallet::credit::{credit, Transfer};
use crate::wallet::release::release_claim_record;
use crate::wallet::rules::{claim_transfer_id, Credit};

/// Claim step 2's transfer: `amount_cents` of `packet_id` into the grabber's wallet, with the
/// transfer id [`claim_transfer_id`] and the amount as fingerprint, and the grabber's
/// received history entry `history_entry`. Its record is pinned (`keep_ms` 0, never forgotten
/// while the claim can be re-driven) and it is never refused for the balance limit (the money
/// already exists; refusing would strand it).
pub fn claim_credit<'a>(
    packet_id: &'a str,
    transfer_id: &'a str,
    amount_cents: i64,
    fingerprint: &'a str,
    history_entry: &'a str,
) -> Transfer<'a> {
    Transfer {
        transfer_id,
        amount_cents,
        reference: packet_id,
        fingerprint,
        keep_ms: 0,
        history_entry,
        call: "",
    }
}

/// The packet a claim is of: its id, its sender (a merchant packet's sharer) and a merchant
/// packet's merchant (`None` for a user's packet), as `claim.lua` and `lua/settle.lua`
/// name them.
#[derive(Debug, Clone, Copy)]
pub struct ClaimedPacket<'a> {
    /// The packet.
    pub packet_id: &'a str,
    /// Its sender: who the grabber's received history entry names.
    pub sender_id: &'a str,
    /// A merchant packet's merchant, whose books the claim's step 3 moves.
    pub merchant_id: Option<&'a str>,
}

/// Claim steps 2 to 4 for a pending claim of `share` of `packet`, claimed by `user_id` at
/// `claimed_at_ms`: credit the grabber once (record pinned) together with their received
/// history entry, mark the claim done (`redriven`: reclaim-cron completes a claim left pending
/// when the window closed, and the state records it as re-driven) and, for a merchant packet,
/// move the share from its merchant's `reserved` to `paid_cash` in that same step, un-pin the
/// record. Used by [`claim`](fn@super::store::claim) and by reclaim-cron. `call` is the claim call's
/// id (16 hex digits, fresh per call): the credit's record keeps it, so that call's re-sent credit
/// answers `applied` as its first run did (another call's answers it was not the one).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; the claim stays pending and a later
/// call finishes it.
pub async fn redrive_claim(
    store: &Store,
    packet: ClaimedPacket<'_>,
    user_id: &str,
    share: &Share,
    claimed_at_ms: i64,
    redriven: bool,
    call: &str,
) -> Result<Credit, Error> {
    let ClaimedPacket {
        packet_id,
        sender_id,
        merchant_id,
    } = packet;
    let cfg = store.config();
    let amount_cents = share.amount_cents;
    let transfer_id = claim_transfer_id(packet_id);
    let fingerprint = amount_cents.to_string();
    let entry = ReceivedEntry {
        packet_id: packet_id.to_string(),
        sender_id: sender_id.to_string(),
        amount_cents,
        share_id: share.share_id,
        claimed_at_ms,
    }
    .member(year_of(&cfg.history.tz, claimed_at_ms));
    let transfer = Transfer {
        call,
        ..claim_credit(packet_id, &transfer_id, amount_cents, &fingerprint, &entry)
    };
    let mut credited = credit(store, user_id, &transfer).await?;
    if credited.conflict {
        return Err(Error::Internal(format!(
            "transfer {transfer_id} for {user_id} conflicts"
        )));
    }
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(packet_id);
    let books = match merchant_id {
        Some(m) => keys.merchant(m).merchant,
        None => pk.claims.clone(),
    };
    let mut conn = store.conn().await?;
    let _: String = ClaimDoneCall {
        claims: &pk.claims,
        grabs: &pk.grabs,
        books: &books,
        merchant_id: merchant_id.unwrap_or(""),
        user_id,
        mark: if redriven {
            ClaimState::REDRIVEN_MARK
        } else {
            ""
        },
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    credited.balance_cents = release_claim_record(store, user_id, packet_id).await?;
    Ok(credited)
}
