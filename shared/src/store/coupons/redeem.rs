//! `POST /coupons/redeem`: redeem a coupon at checkout, at most once, by its code alone.
//!
//! The code names its campaign: a generated code carries the campaign number and its index
//! ([`parse`], then the campaign's key inverts the index, which must be below the campaign's
//! size: a guessed code fails here), an uploaded one is looked up in the directory. The pool
//! that issued it (by index range, or by the code's hash) runs `lua/coupon_redeem.lua`, which
//! answers `not_found` alike for an unknown code and a code issued to someone else.

use redis::Value;

use crate::domain::coupons::{campaign_id, campaign_no, parse, pool_of_code, pool_of_index};
use crate::store::conn::Conn;
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

use super::keys::{directory, PoolKeys};
use super::shape::shape;

use crate::store::scripts::{script_call, COUPON_REDEEM};

/// The script, as its errors name it.
const NAME: &str = "coupon_redeem";

script_call! {
    /// `lua/coupon_redeem.lua`: redeem an issued coupon once, on the pool that issued it.
    pub struct CouponRedeemCall<'a> for COUPON_REDEEM {
        KEYS {
            /// The issuing pool's hash.
            pool: &'a str,
            /// The issuing pool's issued codes (hash).
            issued: &'a str,
            /// The issuing pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// The code as the pool keys it: the uploaded code, or the generated index.
            code: &'a str,
            /// The user the checkout names.
            user_id: &'a str,
            /// The order redeeming the coupon.
            order_reference: &'a str,
            /// The campaign (journal entries name it).
            campaign_id: &'a str,
        }
    }
}

impl CouponRedeemCall<'_> {
    /// Parses the script's reply: `redeemed:<at_ms>:<repeat 0|1>`,
    /// `already_redeemed:<at_ms>:<order>`, `expired:<redeem_by_ms>` or `not_found`; a redemption
    /// is of campaign `campaign_id`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value, campaign_id: String) -> Result<RedeemOutcome, Error> {
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let mut parts = reply.splitn(3, ':');
        Ok(match (parts.next(), parts.next(), parts.next()) {
            (Some("redeemed"), Some(at), Some(repeat)) => RedeemOutcome::Redeemed {
                campaign_id,
                redeemed_at_ms: at.parse().map_err(|_| bad())?,
                repeat: repeat == "1",
            },
            (Some("already_redeemed"), Some(at), Some(order)) => RedeemOutcome::AlreadyRedeemed {
                order_reference: order.to_string(),
                redeemed_at_ms: at.parse().map_err(|_| bad())?,
            },
            (Some("expired"), Some(by), None) => RedeemOutcome::Expired {
                redeem_by_ms: by.parse().map_err(|_| bad())?,
            },
            (Some("not_found"), None, None) => RedeemOutcome::NotFound,
            _ => return Err(bad()),
        })
    }
}

/// The answer to a redeem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedeemOutcome {
    /// Redeemed for the order now (`repeat` false) or before (`repeat` true: the same order
    /// again).
    Redeemed {
        /// The coupon's campaign.
        campaign_id: String,
        /// When it was redeemed, Unix ms (Redis `TIME`).
        redeemed_at_ms: i64,
        /// Whether this order had redeemed it before.
        repeat: bool,
    },
    /// Another order redeemed it (409).
    AlreadyRedeemed {
        /// The order that redeemed it.
        order_reference: String,
        /// When, Unix ms.
        redeemed_at_ms: i64,
    },
    /// No such code, or not issued to this user (404, not told apart).
    NotFound,
    /// Past the campaign's `redeem_by` (410).
    Expired {
        /// The campaign's `redeem_by`, Unix ms.
        redeem_by_ms: i64,
    },
}

/// Where a code lives: (campaign id, campaign number, pool, the code as the pool keys it).
type Location = (String, u64, u32, String);

/// Finds the pool that issued `code`: `None` for a code of no campaign.
async fn locate(store: &Store, conn: &mut Conn, code: &str) -> Result<Option<Location>, Error> {
    if let Some(parsed) = parse(code) {
        let id = campaign_id(parsed.campaign_no);
        if let Some(s) = shape(store, conn, &id, parsed.campaign_no).await? {
            if let Some(key) = &s.key {
                let index = key.unpermute(parsed.value);
                if index < s.campaign_total {
                    let pool = pool_of_index(index, s.campaign_total, s.pools);
                    return Ok(Some((id, parsed.campaign_no, pool, index.to_string())));
                }
            }
        }
    }
    let owner: Option<String> = redis::cmd("HGET")
        .arg(directory(&store.config().key_prefix, code))
        .arg(code)
        .query_async(conn)
        .await?;
    // The owner is the campaign id, or `<campaign id>/<batch reference>` for an added batch.
    let id = owner.map(|o| o.split('/').next().unwrap_or_default().to_string());
    let Some((id, no)) = id.and_then(|id| campaign_no(&id).map(|no| (id, no))) else {
        return Ok(None);
    };
    let Some(s) = shape(store, conn, &id, no).await? else {
        return Ok(None);
    };
    let pool = pool_of_code(no, code, s.pools);
    Ok(Some((id, no, pool, code.to_string())))
}

/// Redeems `code` held by `user_id` for order `order_reference`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same redeem may be sent again: it
/// answers `repeat`); [`Error::Internal`] for a reply of the wrong shape.
pub async fn redeem(
    store: &Store,
    code: &str,
    user_id: &str,
    order_reference: &str,
) -> Result<RedeemOutcome, Error> {
    let mut conn = store.conn().await?;
    let Some((id, no, pool, keyed)) = locate(store, &mut conn, code).await? else {
        return Ok(RedeemOutcome::NotFound);
    };
    let pools = shape(store, &mut conn, &id, no)
        .await?
        .map_or(1, |s| s.pools);
    let keys = PoolKeys::new(&store.config().key_prefix, &id, no, pool, pools);
    let reply: Value = CouponRedeemCall {
        pool: &keys.pool,
        issued: &keys.issued,
        journal: &keys.journal,
        code: &keyed,
        user_id,
        order_reference,
        campaign_id: &id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    CouponRedeemCall::outcome(reply, id)
}
