//! Step 3 of a grab whose home pool is empty: the reservation closed in the home pool
//! (`coupon_resolve.lua`), its item the code step 2 took, or dropped when step 2 took none
//! (sold out, or opening: a pool it passed was not written yet).
//! The outcome is recorded under the reservation id, first run wins, and answered to every
//! later run. See [`crate::coupons::grab::store`](mod@crate::coupons::grab::store).

use crate::store::scripts::CouponResolveCall;
use redis::Value;

use crate::coupons::grab::take::{TakeOutcome, Taken};
use crate::coupons::store::Grabber;
use crate::store::scripts::{text, Call};
use crate::store::Conn;
use crate::store::{Error, Store};

/// A reservation closed: its one outcome and the user's items afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::coupons) struct Resolved {
    /// The code taken for it, or why none was.
    pub walk: TakeOutcome,
    /// The user's items in the campaign afterwards (`<pool>/<code or index>`, `?<id>` for a
    /// reservation still open), in the order issued.
    pub items: Vec<String>,
}

impl CouponResolveCall<'_> {
    /// Parses the script's reply: `resolved:<outcome>\n<items>` (outcome
    /// `<item> <grabbed_at_ms>`, `-` or `~`).
    ///
    /// # Errors
    /// [`Error::Internal`] for `unknown` (no such reservation: a step out of order) and for
    /// any other reply.
    fn outcome(reply: Value) -> Result<Resolved, Error> {
        const NAME: &str = "coupon_resolve";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let (outcome, items) = reply
            .strip_prefix("resolved:")
            .and_then(|rest| rest.split_once('\n'))
            .ok_or_else(bad)?;
        let walk = match outcome {
            "-" => TakeOutcome::SoldOut,
            "~" => TakeOutcome::Opening,
            _ => {
                let (item, at) = outcome.split_once(' ').ok_or_else(bad)?;
                TakeOutcome::Taken(Taken {
                    item: item.to_string(),
                    at_ms: at.parse().map_err(|_| bad())?,
                })
            }
        };
        Ok(Resolved {
            walk,
            items: items.split_whitespace().map(str::to_string).collect(),
        })
    }
}

/// Step 3 for reservation `reservation` of `grabber`, with how step 2 ended (`walk`): the
/// outcome recorded (this run's, or an earlier run's: the same).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the step may run again);
/// [`Error::Internal`] for a reply of the wrong facts or an unknown reservation.
pub(in crate::coupons) async fn resolve_reservation(
    store: &Store,
    conn: &mut Conn,
    grabber: &Grabber<'_>,
    reservation: &str,
    walk: &TakeOutcome,
) -> Result<Resolved, Error> {
    let keys = grabber.pool_keys(store, grabber.home);
    let (item, at) = match walk {
        TakeOutcome::Taken(t) => (t.item.as_str(), t.at_ms.to_string()),
        TakeOutcome::SoldOut => ("", String::new()),
        TakeOutcome::Opening => ("", "~".to_string()),
    };
    let reply = CouponResolveCall {
        holders: &keys.holders,
        pending: &keys.pending,
        user_id: grabber.user_id,
        reservation,
        item,
        grabbed_at_ms: &at,
    }
    .invocation()
    .invoke_async(conn)
    .await?;
    CouponResolveCall::outcome(reply)
}
