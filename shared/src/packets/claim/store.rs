//! `POST /packets/{id}/claim`'s store step: claim step 1 (`claim.lua`, reserve the share on
//! the packet's slot), its reply parsed into `ClaimReply`, then steps 2 to 4 (`redrive.rs`);
//! or, for a merchant packet paid out as coupons, the whole claim in `claim.lua` and the
//! coupon put in the grabber's list.

use crate::store::scripts::ClaimCall;
use redis::Value;

use super::redrive::{redrive_claim, ClaimedPacket};
use crate::coupons::list::store::remember as remember_coupon;
use crate::merchants::rules::{share_code, IssuedTerms, ShareCoupon};
use crate::packets::rules::{parse_claim_state, ClaimOutcome, Share};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::scripts::{call_id, texts, Call};
use crate::store::{Error, Store};
use crate::wallet::get::store::balance;
use crate::wallet::release::release_claim_record;

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
        /// A coupon packet's coupon terms.
        coupon: Option<IssuedTerms>,
        /// Whether this run issued the coupon.
        issued: bool,
    },
    /// `books <merchant_id>`: a coupon packet's claim needs that merchant's books; nothing
    /// written.
    Books(String),
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
                let field = |i: usize| reply.get(i).map(String::as_str).unwrap_or("");
                let number = |i: usize| {
                    field(i)
                        .parse::<i64>()
                        .map_err(|_| Error::bad_reply("claim", format!("{reply:?}")))
                };
                let coupon = match field(5) {
                    "" => None,
                    _ => Some(IssuedTerms {
                        redeem_by_ms: number(5)?,
                        min_order_cents: match field(6) {
                            "" => None,
                            _ => Some(number(6)?),
                        },
                    }),
                };
                Ok(ClaimReply::Reserved {
                    share,
                    pending,
                    claimed_at_ms,
                    sender_id,
                    merchant_id,
                    coupon,
                    issued: field(7) == "1",
                })
            }
            Some("books") => {
                Ok(ClaimReply::Books(reply.get(1).cloned().ok_or_else(
                    || Error::bad_reply("claim", "books without a merchant"),
                )?))
            }
            Some("not_found") => Ok(ClaimReply::Refused(ClaimOutcome::NotFound)),
            Some("no_share") => Ok(ClaimReply::Refused(ClaimOutcome::NoShare)),
            Some("expired") => Ok(ClaimReply::Refused(ClaimOutcome::Expired)),
            _ => Err(Error::bad_reply("claim", format!("{reply:?}"))),
        }
    }
}

/// Claims `user_id`'s share of `packet_id` into their wallet (or as their coupon), exactly
/// once.
///
/// A coupon packet's claim is one step on the packet's slot (`claim.lua` issues the coupon and
/// moves the merchant's books; the first call learns the merchant and is sent again with its
/// books), then the coupon is put in the grabber's list (idempotent, done by every call, and
/// by ledger-export from the `coupon_issued` entry). Otherwise four idempotent steps: reserve on the packet's slot (`claim.lua`), credit the grabber's
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
    let keys = Keys::new(&cfg.key_prefix);
    let pk = keys.packet(packet_id);
    let journal = keys.journal_of_tag(&packet_id[..4]);
    let mut conn = store.conn().await?;
    let mut books_of = String::new();
    let mut books = pk.meta.clone();
    let call = call_id();
    let reserved = loop {
        let reply: Value = ClaimCall {
            meta: &pk.meta,
            grabs: &pk.grabs,
            claims: &pk.claims,
            coupons: &pk.coupons,
            books: &books,
            journal: &journal,
            user_id,
            books_of: &books_of,
            call: &call,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        match ClaimCall::reply(reply)? {
            ClaimReply::Books(merchant) if books_of.is_empty() => {
                books = keys.merchant(&merchant).merchant;
                books_of = merchant;
            }
            ClaimReply::Books(merchant) => {
                return Err(Error::Internal(format!(
                    "claim of packet {packet_id}: its merchant is {merchant}, not {books_of}"
                )))
            }
            ClaimReply::Refused(outcome) => return Ok(outcome),
            reserved @ ClaimReply::Reserved { .. } => break reserved,
        }
    };
    let ClaimReply::Reserved {
        share,
        pending,
        claimed_at_ms,
        sender_id,
        merchant_id,
        coupon,
        issued,
    } = reserved
    else {
        unreachable!("the loop breaks with a reservation only");
    };
    if let Some(terms) = coupon {
        let code = share_code(packet_id, share.share_id);
        let member = format!("{packet_id}/{}", share.share_id);
        remember_coupon(
            store,
            &mut conn,
            user_id,
            &member,
            claimed_at_ms,
            terms.redeem_by_ms,
        )
        .await?;
        return Ok(ClaimOutcome::Claimed {
            balance_cents: balance(store, user_id).await?,
            coupon: Some(ShareCoupon {
                code,
                amount_off_cents: share.amount_cents,
                min_order_cents: terms.min_order_cents,
                redeem_by_ms: terms.redeem_by_ms,
            }),
            share,
            claimed_at_ms,
            // `issued` is this call's (its re-run's too): a later call is a repeat.
            repeat: !issued,
        });
    }
    let (balance_cents, repeat) = if pending {
        let packet = ClaimedPacket {
            packet_id,
            sender_id: &sender_id,
            merchant_id: merchant_id.as_deref(),
        };
        let credited =
            redrive_claim(store, packet, user_id, &share, claimed_at_ms, false, &call).await?;
        (credited.balance_cents, !credited.applied)
    } else {
        // Done before: step 4 again (idempotent) in case the earlier call stopped before it.
        (release_claim_record(store, user_id, packet_id).await?, true)
    };
    Ok(ClaimOutcome::Claimed {
        share,
        balance_cents,
        coupon: None,
        claimed_at_ms,
        repeat,
    })
}
