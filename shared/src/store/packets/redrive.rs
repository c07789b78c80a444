//! Claim steps 2 to 4 of a pending claim (`claim.rs` runs step 1): the grabber's credit with its
//! received history entry (`lua/wallet_credit.lua`), the claim marked done
//! (`lua/claim_done.lua`), the credit record un-pinned (`lua/transfer_release.lua`). Run by
//! `POST /packets/{id}/claim` and by reclaim-cron for the claims a settlement finds pending.

use crate::domain::history::{year_of, ReceivedEntry};
use crate::domain::packets::{ClaimState, Share};
use crate::store::keys::Keys;
use crate::store::scripts::{script_call, Call, CLAIM_DONE};
use crate::store::wallet::{self, Credit};
use crate::store::{Error, Store};

script_call! {
    /// `lua/claim_done.lua`: claim step 3, mark the claim done.
    pub struct ClaimDoneCall<'a> for CLAIM_DONE {
        KEYS {
            /// The packet's claims hash.
            claims: &'a str,
        }
        ARGV {
            /// The claiming grabber.
            user_id: &'a str,
            /// `""` for a claim call, [`ClaimState::REDRIVEN_MARK`] for reclaim-cron's re-drive.
            mark: &'a str,
        }
    }
}

/// Claim step 2's transfer: `amount_cents` of `packet_id` into the grabber's wallet, with the
/// transfer id [`wallet::claim_transfer_id`] and the amount as fingerprint, and the grabber's
/// received history entry `history_entry`. Its record is pinned (`keep_ms` 0, never forgotten
/// while the claim can be re-driven) and it is never refused for the balance limit (the money
/// already exists; refusing would strand it).
pub fn claim_credit<'a>(
    packet_id: &'a str,
    transfer_id: &'a str,
    amount_cents: i64,
    fingerprint: &'a str,
    history_entry: &'a str,
) -> wallet::Transfer<'a> {
    wallet::Transfer {
        transfer_id,
        amount_cents,
        kind: wallet::EntryKind::ClaimCredit,
        reference: packet_id,
        fingerprint,
        keep_ms: 0,
        balance_limit_cents: 0,
        history_entry: Some(history_entry),
    }
}

/// Claim steps 2 to 4 for a pending claim of `share` of `packet_id` (sent by `sender_id`),
/// claimed by `user_id` at `claimed_at_ms`: credit the grabber once (record pinned) together
/// with their received history entry, mark the claim done (`redriven`: reclaim-cron completes a
/// claim left pending when the window closed, and the state records it as re-driven), un-pin
/// the record. Used by [`claim`](fn@super::claim) and by reclaim-cron.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; the claim stays pending and a later
/// call finishes it.
pub async fn redrive_claim(
    store: &Store,
    packet_id: &str,
    sender_id: &str,
    user_id: &str,
    share: &Share,
    claimed_at_ms: i64,
    redriven: bool,
) -> Result<Credit, Error> {
    let cfg = store.config();
    let amount_cents = share.amount_cents;
    let transfer_id = wallet::claim_transfer_id(packet_id);
    let fingerprint = amount_cents.to_string();
    let entry = ReceivedEntry {
        packet_id: packet_id.to_string(),
        sender_id: sender_id.to_string(),
        amount_cents,
        share_id: share.share_id,
        claimed_at_ms,
    }
    .member(year_of(&cfg.history.tz, claimed_at_ms));
    let mut credited = wallet::credit(
        store,
        user_id,
        &claim_credit(packet_id, &transfer_id, amount_cents, &fingerprint, &entry),
    )
    .await?;
    if credited.conflict {
        return Err(Error::Internal(format!(
            "transfer {transfer_id} for {user_id} conflicts"
        )));
    }
    let claims = Keys::new(&cfg.key_prefix).packet(packet_id).claims;
    let mut conn = store.conn().await?;
    let _: i64 = ClaimDoneCall {
        claims: &claims,
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
    credited.balance_cents = wallet::release_claim_record(store, user_id, packet_id).await?;
    Ok(credited)
}
