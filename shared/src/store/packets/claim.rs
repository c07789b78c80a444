//! `POST /packets/{id}/claim`'s store step: claim step 1 (`lua/claim.lua`, reserve the share on
//! the packet's slot), its reply parsed into [`ClaimReply`], then steps 2 to 4 (`redrive.rs`).

use redis::Value;

use crate::domain::packets::{parse_claim_state, ClaimOutcome, Share};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::packets::redrive::{redrive_claim, ClaimedPacket};
use crate::store::scripts::{script_call, texts, Call, CLAIM};
use crate::store::wallet;
use crate::store::{Error, Store};

script_call! {
    /// `lua/claim.lua`: claim step 1, reserve the share on the packet's slot.
    pub struct ClaimCall<'a> for CLAIM {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's grabs hash.
            grabs: &'a str,
            /// The packet's claims hash (user -> claim state).
            claims: &'a str,
        }
        ARGV {
            /// The claiming grabber.
            user_id: &'a str,
        }
    }
}

/// `claim.lua`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ClaimReply {
    /// `claimed <share record> <claim state> <sender id> <merchant id>`: the caller's share is
    /// reserved
    /// (now or by an earlier call).
    Reserved {
        /// The caller's share.
        share: Share,
        /// Whether steps 2 to 4 may still be due (`pending:<ms>`; `done:<ms>` once step 3 ran).
        pending: bool,
        /// When the claim was made, Unix ms.
        claimed_at_ms: i64,
        /// The packet's sender (for the received history entry; a merchant packet's sharer).
        sender_id: String,
        /// A merchant packet's merchant.
        merchant_id: Option<String>,
    },
    /// `not_found`, `no_share` or `expired`.
    Refused(ClaimOutcome),
}

impl ClaimCall<'_> {
    /// `claim.lua`'s reply as a [`ClaimReply`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn reply(reply: Value) -> Result<ClaimReply, Error> {
        let reply = texts("claim", reply)?;
        match reply.first().map(String::as_str) {
            Some("claimed") => {
                let share = Share::parse(reply.get(1).map(String::as_str).unwrap_or(""))?;
                let state = reply.get(2).cloned().unwrap_or_default();
                let sender_id = reply
                    .get(3)
                    .cloned()
                    .ok_or_else(|| Error::bad_reply("claim", "no sender"))?;
                let merchant_id = reply.get(4).filter(|m| !m.is_empty()).cloned();
                let (pending, claimed_at_ms) = parse_claim_state(&state)?;
                Ok(ClaimReply::Reserved {
                    share,
                    pending,
                    claimed_at_ms,
                    sender_id,
                    merchant_id,
                })
            }
            Some("not_found") => Ok(ClaimReply::Refused(ClaimOutcome::NotFound)),
            Some("no_share") => Ok(ClaimReply::Refused(ClaimOutcome::NoShare)),
            Some("expired") => Ok(ClaimReply::Refused(ClaimOutcome::Expired)),
            _ => Err(Error::bad_reply("claim", format!("{reply:?}"))),
        }
    }
}

/// Claims `user_id`'s share of `packet_id` into their wallet, exactly once.
///
/// Four idempotent steps: reserve on the packet's slot (`claim.lua`), credit the grabber's
/// wallet once per transfer id `claim:<packet_id>` (`wallet_credit.lua`, another slot; the
/// credit record is pinned, never forgotten while the claim is pending), mark done
/// (`claim_done.lua`), un-pin the credit record (`transfer_release.lua`). Any retry or
/// concurrent call re-drives the remaining steps.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying is safe.
pub async fn claim(store: &Store, packet_id: &str, user_id: &str) -> Result<ClaimOutcome, Error> {
    if !is_packet_id(packet_id) {
        return Ok(ClaimOutcome::NotFound);
    }
    let cfg = store.config();
    let pk = Keys::new(&cfg.key_prefix).packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = ClaimCall {
        meta: &pk.meta,
        grabs: &pk.grabs,
        claims: &pk.claims,
        user_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let (share, pending, claimed_at_ms, sender_id, merchant_id) = match ClaimCall::reply(reply)? {
        ClaimReply::Reserved {
            share,
            pending,
            claimed_at_ms,
            sender_id,
            merchant_id,
        } => (share, pending, claimed_at_ms, sender_id, merchant_id),
        ClaimReply::Refused(outcome) => return Ok(outcome),
    };
    let (balance_cents, repeat) = if pending {
        let packet = ClaimedPacket {
            packet_id,
            sender_id: &sender_id,
            merchant_id: merchant_id.as_deref(),
        };
        let credited = redrive_claim(store, packet, user_id, &share, claimed_at_ms, false).await?;
        (credited.balance_cents, !credited.applied)
    } else {
        // Done before: step 4 again (idempotent) in case the earlier call stopped before it.
        (
            wallet::release_claim_record(store, user_id, packet_id).await?,
            true,
        )
    };
    Ok(ClaimOutcome::Claimed {
        share,
        balance_cents,
        claimed_at_ms,
        repeat,
    })
}
