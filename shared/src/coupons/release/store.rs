//! `POST /coupons/release`: an order lets go of its coupon, on the pool that issued it
//! (`coupon_release.lua`): its hold is released, or its redemption reversed (the order
//! failed or was refunded; the coupon is issued again to the same user, the pool's `redeemed`
//! count goes down once, and the journal gets `coupon_released`). A repeat answers the same,
//! also after another order took the coupon since (the release's memory, beside the code).

use crate::store::scripts::CouponReleaseCall;
use redis::Value;

use crate::coupons::rules::Discount;
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, text, Call};
use crate::store::{Error, Store};

use crate::coupons::locate::locate;

/// The script, as its errors name it.
const NAME: &str = "coupon_release";

/// What a release let go of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The order's hold.
    Hold,
    /// The order's redemption (reversed: the coupon is redeemable again).
    Redemption,
}

impl Released {
    /// As the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Released::Hold => "hold",
            Released::Redemption => "redemption",
        }
    }
}

/// The answer to a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// Released by this call (`repeat` false) or by an earlier release of the order.
    Released {
        /// The coupon's campaign.
        campaign_id: String,
        /// What was let go of.
        released: Released,
        /// When, Unix ms (Redis `TIME`).
        released_at_ms: i64,
        /// Whether an earlier call of the order released it.
        repeat: bool,
        /// The campaign's discount rule, if it has one.
        discount: Option<Discount>,
    },
    /// Another order holds it (409 `held`); nothing written.
    HeldByOther {
        /// When that hold lapses, Unix ms.
        held_until_ms: i64,
    },
    /// Another order redeemed it (409 `already_redeemed`); nothing written.
    AlreadyRedeemed {
        /// The order that redeemed it.
        order_reference: String,
        /// When, Unix ms.
        redeemed_at_ms: i64,
    },
    /// No such code, or the order never held or redeemed it (404); nothing written.
    NotFound,
}

impl CouponReleaseCall<'_> {
    /// Parses the script's reply: `released:<hold|redemption>:<at_ms>:<repeat 0|1>`,
    /// `held:<until_ms>`, `already_redeemed:<at_ms>:<order>`, or `not_found`; a release is of
    /// campaign `campaign_id`, whose rule is `discount`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    pub fn outcome(
        reply: Value,
        campaign_id: String,
        discount: Option<Discount>,
    ) -> Result<ReleaseOutcome, Error> {
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let int = |s: &str| s.parse::<i64>().map_err(|_| bad());
        let parts: Vec<&str> = reply.splitn(3, ':').collect();
        Ok(match parts[..] {
            ["released", kind, rest] => {
                let (at, repeat) = rest.split_once(':').ok_or_else(bad)?;
                ReleaseOutcome::Released {
                    campaign_id,
                    released: match kind {
                        "hold" => Released::Hold,
                        "redemption" => Released::Redemption,
                        _ => return Err(bad()),
                    },
                    released_at_ms: int(at)?,
                    repeat: repeat == "1",
                    discount,
                }
            }
            ["held", until] => ReleaseOutcome::HeldByOther {
                held_until_ms: int(until)?,
            },
            ["already_redeemed", at, order] => ReleaseOutcome::AlreadyRedeemed {
                order_reference: order.to_string(),
                redeemed_at_ms: int(at)?,
            },
            ["not_found"] => ReleaseOutcome::NotFound,
            _ => return Err(bad()),
        })
    }
}

/// Releases the hold or reverses the redemption of `code` by order `order_reference`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same release may be sent again:
/// it answers the release, credited back once); [`Error::Internal`] for a reply of the wrong
/// facts.
pub async fn release(
    store: &Store,
    code: &str,
    order_reference: &str,
) -> Result<ReleaseOutcome, Error> {
    release_as(store, code, order_reference, &call_id()).await
}

/// [`release`] under the call id `call` (16 hex digits): the same call sent again, at any later
/// moment, answers its first answer and writes nothing (its answer's key,
/// [`Keys::call_answer`]). A caller that
/// re-sends its own calls passes its own id; [`release`] takes a fresh one.
///
/// # Errors
/// As [`release`]'s.
pub async fn release_as(
    store: &Store,
    code: &str,
    order_reference: &str,
    call: &str,
) -> Result<ReleaseOutcome, Error> {
    let mut conn = store.conn().await?;
    let Some(at) = locate(store, &mut conn, code).await? else {
        return Ok(ReleaseOutcome::NotFound);
    };
    let (books, grabs, ledger) = at.share_keys();
    let reply: Value = CouponReleaseCall {
        pool: &at.pool,
        issued: &at.issued,
        journal: &at.journal,
        books,
        grabs,
        ledger,
        call_answer: &Keys::call_answer(&at.issued, call),
        code: &at.keyed,
        order_reference,
        campaign_id: &at.campaign_id,
        call,
        share: at.share_arg(),
        ledger_cap: crate::wallet::rules::LEDGER_CAP,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    CouponReleaseCall::outcome(reply, at.shown_id(), at.facts.discount)
}
