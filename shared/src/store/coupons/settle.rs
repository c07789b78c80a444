//! Step 3 of a grab whose home pool is empty: the reservation closed in the home pool
//! (`lua/coupon_settle.lua`), its item the code step 2 took, or dropped when step 2 took none
//! (sold out, or opening: a pool it passed was not written yet).
//! The outcome is recorded under the reservation id, first run wins, and answered to every
//! later run. See [`super::grab`](mod@super::grab).

use crate::store::scripts::CouponSettleCall;
use redis::Value;

use super::take::{Taken, Walk};
use super::Holder;
use crate::store::conn::Conn;
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

/// A reservation closed: its one outcome and the user's items afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Settled {
    /// The code taken for it, or why none was.
    pub walk: Walk,
    /// The user's items in the campaign afterwards (`<pool>/<code or index>`, `?<id>` for a
    /// reservation still open), in the order issued.
    pub items: Vec<String>,
}

impl CouponSettleCall<'_> {
    /// Parses the script's reply: `settled:<outcome>\n<items>` (outcome
    /// `<item> <grabbed_at_ms>`, `-` or `~`).
    ///
    /// # Errors
    /// [`Error::Internal`] for `unknown` (no such reservation: a step out of order) and for
    /// any other reply.
    fn outcome(reply: Value) -> Result<Settled, Error> {
        const NAME: &str = "coupon_settle";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let (outcome, items) = reply
            .strip_prefix("settled:")
            .and_then(|rest| rest.split_once('\n'))
            .ok_or_else(bad)?;
        let walk = match outcome {
            "-" => Walk::SoldOut,
            "~" => Walk::Opening,
            _ => {
                let (item, at) = outcome.split_once(' ').ok_or_else(bad)?;
                Walk::Taken(Taken {
                    item: item.to_string(),
                    at_ms: at.parse().map_err(|_| bad())?,
                })
            }
        };
        Ok(Settled {
            walk,
            items: items.split_whitespace().map(str::to_string).collect(),
        })
    }
}

/// Step 3 for reservation `reservation` of `holder`, with how step 2 ended (`walk`): the
/// outcome recorded (this run's, or an earlier run's: the same).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the step may run again);
/// [`Error::Internal`] for a reply of the wrong shape or an unknown reservation.
pub(super) async fn settle(
    store: &Store,
    conn: &mut Conn,
    holder: &Holder<'_>,
    reservation: &str,
    walk: &Walk,
) -> Result<Settled, Error> {
    let keys = holder.pool_keys(store, holder.home);
    let (item, at) = match walk {
        Walk::Taken(t) => (t.item.as_str(), t.at_ms.to_string()),
        Walk::SoldOut => ("", String::new()),
        Walk::Opening => ("", "~".to_string()),
    };
    let reply = CouponSettleCall {
        holders: &keys.holders,
        pending: &keys.pending,
        user_id: holder.user_id,
        reservation,
        item,
        grabbed_at_ms: &at,
    }
    .invocation()
    .invoke_async(conn)
    .await?;
    CouponSettleCall::outcome(reply)
}
