//! Step 2 of a grab whose home pool is empty: a code of another pool for the caller's
//! reservation (`lua/coupon_take.lua`), the pools tried one after another from the one after
//! the home pool. Each pool records its outcome for the reservation before answering, first
//! run wins, so every run of the same reservation (a re-sent call, a second request of the
//! user, reclaim-cron's re-drive) walks to the same code or to none. See
//! [`super::grab`](mod@super::grab).

use redis::Value;

use super::Holder;
use crate::store::conn::Conn;
use crate::store::scripts::{script_call, text, Call, COUPON_TAKE};
use crate::store::{Error, Store};

script_call! {
    /// `lua/coupon_take.lua`: one code of another pool for a reservation, one outcome per
    /// reservation and pool.
    pub struct CouponTakeCall<'a> for COUPON_TAKE {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's issued codes (hash).
            issued: &'a str,
            /// The pool's outcomes for reservations (hash).
            loans: &'a str,
            /// The pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// The user the reservation is for.
            user_id: &'a str,
            /// The reservation id.
            reservation: &'a str,
            /// The pool's number.
            pool_no: u32,
            /// The campaign (journal entries name it).
            campaign_id: &'a str,
        }
    }
}

/// A code taken for a reservation: the item as its pool keys it (`<pool>/<code or index>`)
/// and when it was issued, Unix ms (Redis `TIME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Taken {
    /// `<pool>/<code or index>`.
    pub item: String,
    /// Unix ms.
    pub at_ms: i64,
}

impl CouponTakeCall<'_> {
    /// Parses the script's reply: `taken:<item>:<grabbed_at_ms>`, or `empty` (`None`).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<Option<Taken>, Error> {
        const NAME: &str = "coupon_take";
        let reply = text(NAME, reply)?;
        if reply == "empty" {
            return Ok(None);
        }
        let bad = || Error::bad_reply(NAME, &reply);
        let (item, at) = reply
            .strip_prefix("taken:")
            .and_then(|rest| rest.rsplit_once(':'))
            .ok_or_else(bad)?;
        Ok(Some(Taken {
            item: item.to_string(),
            at_ms: at.parse().map_err(|_| bad())?,
        }))
    }
}

/// Step 2 for reservation `reservation` of `holder`: the code of the first other pool that
/// gives one for it, or `None` when none does (now or at an earlier run).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the walk may run again: it reads the
/// recorded outcomes); [`Error::Internal`] for a reply of the wrong shape.
pub(super) async fn take(
    store: &Store,
    conn: &mut Conn,
    holder: &Holder<'_>,
    reservation: &str,
) -> Result<Option<Taken>, Error> {
    let pools = holder.shape.pools;
    for step in 1..pools {
        let k = (holder.home + step) % pools;
        let keys = holder.pool_keys(store, k);
        let reply = CouponTakeCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            loans: &keys.loans,
            journal: &keys.journal,
            user_id: holder.user_id,
            reservation,
            pool_no: k,
            campaign_id: holder.campaign_id,
        }
        .invocation()
        .invoke_async(conn)
        .await?;
        if let Some(taken) = CouponTakeCall::outcome(reply)? {
            return Ok(Some(taken));
        }
    }
    Ok(None)
}
