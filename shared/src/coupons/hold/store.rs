//! `POST /coupons/hold`: hold an issued coupon for one order at checkout, on the pool that
//! issued it (`coupon_hold.lua`), until the order is paid (a redeem of the same order
//! commits it), fails (a release), or the hold lapses by itself (Redis `TIME` in the scripts:
//! no job frees it).
//!
//! The code names its campaign (`store::coupons::locate`: from the code alone). With the order's total, the campaign's
//! discount is computed here ([`crate::coupons::rules::Discount`]) and kept with the hold;
//! the script refuses a total below the campaign's minimum before writing anything.

use crate::store::scripts::CouponHoldCall;
use redis::Value;

use crate::coupons::rules::Discount;
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, text, Call};
use crate::store::{Error, Store};

use crate::coupons::locate::{discount_arg, discount_of, locate, total_arg};

/// The script, as its errors name it.
const NAME: &str = "coupon_hold";

/// The answer to a hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldOutcome {
    /// Held for the order until `held_until_ms` (taken now, or the order's hold extended).
    Held {
        /// The coupon's campaign.
        campaign_id: String,
        /// The hold lapses at this instant (exclusive), Unix ms: at most the campaign's
        /// `redeem_by`.
        held_until_ms: i64,
        /// The campaign's discount rule, if it has one.
        discount: Option<Discount>,
        /// The order's discount, cents, when a total was given (by this call or an earlier
        /// one of the hold).
        discount_cents: Option<i64>,
        /// The order held it, unlapsed, before this call: a hold sent again (extended).
        extended: bool,
    },
    /// Another order holds it (409 `held`); nothing written.
    HeldByOther {
        /// When that hold lapses, Unix ms.
        held_until_ms: i64,
    },
    /// An order redeemed it (409 `already_redeemed`; this order too: a redeemed coupon is
    /// not held again); nothing written.
    AlreadyRedeemed {
        /// The order that redeemed it.
        order_reference: String,
        /// When, Unix ms.
        redeemed_at_ms: i64,
    },
    /// No such code, or not issued to this user (404, not told apart).
    NotFound,
    /// Past the campaign's `redeem_by` (410); nothing written.
    Expired {
        /// The campaign's `redeem_by`, Unix ms.
        redeem_by_ms: i64,
    },
    /// The order's total is below the campaign's minimum (422); nothing written.
    BelowMinimum {
        /// The campaign's minimum order total, cents.
        min_order_cents: i64,
    },
    /// The campaign has a minimum order and no total was given (400); nothing written.
    OrderTotalRequired {
        /// The campaign's minimum order total, cents.
        min_order_cents: i64,
    },
}

impl CouponHoldCall<'_> {
    /// Parses the script's reply: `held:<until_ms>:<discount>`, `held_by_other:<until_ms>`,
    /// `already_redeemed:<at_ms>:<order>`, `expired:<redeem_by_ms>`,
    /// `below_minimum:<min_cents>`, `order_total_required:<min_cents>`,
    /// or `not_found`; a hold is of campaign `campaign_id`, whose
    /// rule is `discount`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    pub fn outcome(
        reply: Value,
        campaign_id: String,
        discount: Option<Discount>,
    ) -> Result<HoldOutcome, Error> {
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let int = |s: &str| s.parse::<i64>().map_err(|_| bad());
        // An order reference (the last part of `already_redeemed`) may hold ':'.
        let fields = if reply.starts_with("held:") { 4 } else { 3 };
        let parts: Vec<&str> = reply.splitn(fields, ':').collect();
        Ok(match parts[..] {
            // An answer recorded before holds said whether they were extended has three parts.
            ["held", until, d] | ["held", until, d, _] => HoldOutcome::Held {
                campaign_id,
                held_until_ms: int(until)?,
                discount,
                discount_cents: discount_of(d).map_err(|()| bad())?,
                extended: parts.get(3) == Some(&"1"),
            },
            ["held_by_other", until] => HoldOutcome::HeldByOther {
                held_until_ms: int(until)?,
            },
            ["already_redeemed", at, order] => HoldOutcome::AlreadyRedeemed {
                order_reference: order.to_string(),
                redeemed_at_ms: int(at)?,
            },
            ["expired", by] => HoldOutcome::Expired {
                redeem_by_ms: int(by)?,
            },
            ["below_minimum", min] => HoldOutcome::BelowMinimum {
                min_order_cents: int(min)?,
            },
            ["order_total_required", min] => HoldOutcome::OrderTotalRequired {
                min_order_cents: int(min)?,
            },
            ["not_found"] => HoldOutcome::NotFound,
            _ => return Err(bad()),
        })
    }
}

/// Holds `code`, issued to `user_id`, for order `order_reference` for `hold_ms` ms from Redis
/// `TIME` (at most until the campaign's `redeem_by`); the order's total is
/// `order_total_cents` cents when given.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same hold may be sent again: it
/// answers the order's hold); [`Error::Internal`] for a reply of the wrong facts.
pub async fn hold(
    store: &Store,
    code: &str,
    user_id: &str,
    order_reference: &str,
    hold_ms: u64,
    order_total_cents: Option<i64>,
) -> Result<HoldOutcome, Error> {
    hold_as(
        store,
        code,
        user_id,
        order_reference,
        hold_ms,
        order_total_cents,
        &call_id(),
    )
    .await
}

/// [`hold`] under the call id `call` (16 hex digits): the same call sent again, at any later
/// moment, answers its first answer and writes nothing (its answer's key,
/// [`Keys::call_answer`]). A caller that
/// re-sends its own calls passes its own id; [`hold`] takes a fresh one.
///
/// # Errors
/// As [`hold`]'s.
pub async fn hold_as(
    store: &Store,
    code: &str,
    user_id: &str,
    order_reference: &str,
    hold_ms: u64,
    order_total_cents: Option<i64>,
    call: &str,
) -> Result<HoldOutcome, Error> {
    let mut conn = store.conn().await?;
    let Some(at) = locate(store, &mut conn, code).await? else {
        return Ok(HoldOutcome::NotFound);
    };
    let reply: Value = CouponHoldCall {
        pool: &at.pool,
        issued: &at.issued,
        call_answer: &Keys::call_answer(&at.issued, call),
        code: &at.keyed,
        user_id,
        order_reference,
        hold_ms: hold_ms.max(1),
        order_total_cents: &total_arg(order_total_cents),
        discount_cents: &discount_arg(&at.facts, order_total_cents),
        call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    CouponHoldCall::outcome(reply, at.shown_id(), at.facts.discount)
}
