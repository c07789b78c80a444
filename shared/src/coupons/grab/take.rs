//! Step 2 of a grab whose home pool is empty: a code of another pool for the caller's
//! reservation (`coupon_take.lua`), the pools tried one after another from the one after
//! the home pool. Each pool records its outcome for the reservation before answering, first
//! run wins, so every run of the same reservation (a re-sent call, a second request of the
//! user, reclaim-cron's re-drive) walks to the same code or to none. See
//! [`crate::coupons::grab::store`](mod@crate::coupons::grab::store).

use crate::store::scripts::CouponTakeCall;
use redis::Value;

use crate::coupons::store::Grabber;
use crate::store::scripts::{text, Call};
use crate::store::Conn;
use crate::store::{Error, Store};

/// How a reservation's walk over the other pools ended (step 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::coupons) enum TakeOutcome {
    /// A code of another pool, taken for it.
    Taken(Taken),
    /// No pool had a code for it, and every pool it passed was written: the campaign is sold
    /// out (a written pool only shrinks once the campaign has started).
    SoldOut,
    /// No pool had a code for it, and a pool it passed was not written yet (the campaign's
    /// creation still running): that pool may hold codes for the user's next grab.
    Opening,
}

/// What `coupon_take.lua` answers for one pool.
enum TakeReply {
    /// `taken:<item>:<grabbed_at_ms>`.
    Taken(Taken),
    /// `empty`: no code left, or the pool is closed.
    Empty,
    /// `unwritten`: the pool was not written yet.
    Unwritten,
}

/// A code taken for a reservation: the item as its pool keys it (`<pool>/<code or index>`)
/// and when it was issued, Unix ms (Redis `TIME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::coupons) struct Taken {
    /// `<pool>/<code or index>`.
    pub item: String,
    /// Unix ms.
    pub at_ms: i64,
}

impl CouponTakeCall<'_> {
    /// Parses the script's reply: `taken:<item>:<grabbed_at_ms>`, `empty` or `unwritten`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<TakeReply, Error> {
        const NAME: &str = "coupon_take";
        let reply = text(NAME, reply)?;
        match reply.as_str() {
            "empty" => return Ok(TakeReply::Empty),
            "unwritten" => return Ok(TakeReply::Unwritten),
            _ => {}
        }
        let bad = || Error::bad_reply(NAME, &reply);
        let (item, at) = reply
            .strip_prefix("taken:")
            .and_then(|rest| rest.rsplit_once(':'))
            .ok_or_else(bad)?;
        Ok(TakeReply::Taken(Taken {
            item: item.to_string(),
            at_ms: at.parse().map_err(|_| bad())?,
        }))
    }
}

/// Step 2 for reservation `reservation` of `grabber`: the code of the first other pool that
/// gives one for it, or none (now or at an earlier run), [`TakeOutcome::Opening`] when a pool it
/// passed was not written yet.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the walk may run again: it reads the
/// recorded outcomes); [`Error::Internal`] for a reply of the wrong facts.
pub(in crate::coupons) async fn take(
    store: &Store,
    conn: &mut Conn,
    grabber: &Grabber<'_>,
    reservation: &str,
) -> Result<TakeOutcome, Error> {
    let pools = grabber.facts.pools;
    let mut opening = false;
    for step in 1..pools {
        let k = (grabber.home + step) % pools;
        let keys = grabber.pool_keys(store, k);
        let reply = CouponTakeCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            issued_by_time: &keys.issued_by_time,
            loans: &keys.loans,
            journal: &keys.journal,
            user_id: grabber.user_id,
            reservation,
            pool_no: k,
            campaign_id: grabber.campaign_id,
        }
        .invocation()
        .invoke_async(conn)
        .await?;
        match CouponTakeCall::outcome(reply)? {
            TakeReply::Taken(taken) => return Ok(TakeOutcome::Taken(taken)),
            TakeReply::Empty => {}
            TakeReply::Unwritten => opening = true,
        }
    }
    Ok(if opening {
        TakeOutcome::Opening
    } else {
        TakeOutcome::SoldOut
    })
}
