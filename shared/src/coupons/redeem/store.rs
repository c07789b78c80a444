//! `POST /coupons/redeem`: redeem a coupon at checkout, at most once, by its code alone.
//!
//! The code names its campaign (`store::coupons::locate`: from the code alone); the pool that issued it runs
//! `coupon_redeem.lua`, which answers `not_found` alike for an unknown code and a code
//! issued to someone else, commits a hold of the same order (`coupon_hold.lua`), and
//! refuses a coupon another order holds. With the order's total, the campaign's discount is
//! computed here ([`crate::coupons::rules::Discount`]) and recorded with the redemption.

use crate::store::scripts::CouponRedeemCall;
use redis::Value;

use crate::coupons::rules::Discount;
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, text, Call};
use crate::store::{Error, Store};

use crate::coupons::locate::{discount_arg, discount_of, locate, total_arg};

/// The script, as its errors name it.
const NAME: &str = "coupon_redeem";

impl CouponRedeemCall<'_> {
    /// Parses the script's reply: `redeemed:<at_ms>:<repeat 0|1>:<discount>`,
    /// `already_redeemed:<at_ms>:<order>`, `held:<until_ms>`, `expired:<redeem_by_ms>`,
    /// `below_minimum:<min_cents>`, `order_total_required:<min_cents>`,
    /// or `not_found`; a redemption is of campaign `campaign_id`,
    /// whose rule is `discount`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    pub fn outcome(
        reply: Value,
        campaign_id: String,
        discount: Option<Discount>,
    ) -> Result<RedeemOutcome, Error> {
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let int = |s: &str| s.parse::<i64>().map_err(|_| bad());
        let parts: Vec<&str> = reply.splitn(3, ':').collect();
        Ok(match parts[..] {
            ["redeemed", at, rest] => {
                let (repeat, d) = rest.split_once(':').ok_or_else(bad)?;
                RedeemOutcome::Redeemed {
                    campaign_id,
                    redeemed_at_ms: int(at)?,
                    repeat: repeat == "1",
                    discount,
                    discount_cents: discount_of(d).map_err(|()| bad())?,
                }
            }
            ["order_reference_reused", at, d] => RedeemOutcome::OrderReferenceReused {
                redeemed_at_ms: int(at)?,
                discount_cents: discount_of(d).map_err(|()| bad())?,
            },
            ["already_redeemed", at, order] => RedeemOutcome::AlreadyRedeemed {
                order_reference: order.to_string(),
                redeemed_at_ms: int(at)?,
            },
            ["held", until] => RedeemOutcome::Held {
                held_until_ms: int(until)?,
            },
            ["expired", by] => RedeemOutcome::Expired {
                redeem_by_ms: int(by)?,
            },
            ["below_minimum", min] => RedeemOutcome::BelowMinimum {
                min_order_cents: int(min)?,
            },
            ["order_total_required", min] => RedeemOutcome::OrderTotalRequired {
                min_order_cents: int(min)?,
            },
            ["not_found"] => RedeemOutcome::NotFound,
            _ => return Err(bad()),
        })
    }
}

/// The answer to a redeem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedeemOutcome {
    /// Redeemed for the order by this call (`repeat` false) or before (`repeat` true: the same
    /// order again).
    Redeemed {
        /// The coupon's campaign.
        campaign_id: String,
        /// When it was redeemed, Unix ms (Redis `TIME`).
        redeemed_at_ms: i64,
        /// Whether this order had redeemed it before.
        repeat: bool,
        /// The campaign's discount rule, if it has one.
        discount: Option<Discount>,
        /// The order's discount, cents, recorded with the redemption (from this call's order
        /// total, else from the order's hold); `None`: no total was given.
        discount_cents: Option<i64>,
    },
    /// This order redeemed it with another discount than this call's total gives (409
    /// `order_reference_reused`): another call under the order's key; nothing written.
    OrderReferenceReused {
        /// When the order redeemed it, Unix ms.
        redeemed_at_ms: i64,
        /// The discount recorded with the redemption, cents (`None`: none was).
        discount_cents: Option<i64>,
    },
    /// Another order redeemed it (409).
    AlreadyRedeemed {
        /// The order that redeemed it.
        order_reference: String,
        /// When, Unix ms.
        redeemed_at_ms: i64,
    },
    /// Another order holds it (409 `held`); nothing written.
    Held {
        /// When that hold lapses, Unix ms.
        held_until_ms: i64,
    },
    /// No such code, or not issued to this user (404, not told apart).
    NotFound,
    /// Past the campaign's `redeem_by` (410).
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

/// Redeems `code` held by `user_id` for order `order_reference`, whose total is
/// `order_total_cents` cents when given.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same redeem may be sent again: it
/// answers `repeat`); [`Error::Internal`] for a reply of the wrong facts.
pub async fn redeem(
    store: &Store,
    code: &str,
    user_id: &str,
    order_reference: &str,
    order_total_cents: Option<i64>,
) -> Result<RedeemOutcome, Error> {
    redeem_as(
        store,
        code,
        user_id,
        order_reference,
        order_total_cents,
        &call_id(),
    )
    .await
}

/// [`redeem`] under the call id `call` (16 hex digits): the same call sent again, at any later
/// moment, answers its first answer and writes nothing (its answer's key,
/// [`Keys::call_answer`]). A caller that
/// re-sends its own calls passes its own id; [`redeem`] takes a fresh one.
///
/// # Errors
/// As [`redeem`]'s.
pub async fn redeem_as(
    store: &Store,
    code: &str,
    user_id: &str,
    order_reference: &str,
    order_total_cents: Option<i64>,
    call: &str,
) -> Result<RedeemOutcome, Error> {
    let mut conn = store.conn().await?;
    let Some(at) = locate(store, &mut conn, code).await? else {
        return Ok(RedeemOutcome::NotFound);
    };
    let (books, grabs, _) = at.share_keys();
    let reply: Value = CouponRedeemCall {
        pool: &at.pool,
        issued: &at.issued,
        journal: &at.journal,
        books,
        grabs,
        call_answer: &Keys::call_answer(&at.issued, call),
        code: &at.keyed,
        user_id,
        order_reference,
        campaign_id: &at.campaign_id,
        order_total_cents: &total_arg(order_total_cents),
        discount_cents: &discount_arg(&at.facts, order_total_cents),
        call,
        share: at.share_arg(),
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    CouponRedeemCall::outcome(reply, at.shown_id(), at.facts.discount)
}
