//! Steps 2 and 3 of a grab whose home pool is empty: a code of another pool for the caller's
//! reservation (`lua/coupon_take.lua`), then the reservation closed in the home pool
//! (`lua/coupon_settle.lua`); also the re-drive of reservations a stopped sandbox left open.
//! See [`super::grab`](mod@super::grab).

use redis::Value;

use super::keys::PoolKeys;
use super::shape::{code_of, Shape};
use super::GrabOutcome;
use crate::store::conn::Conn;
use crate::store::scripts::{script_call, text, Call, COUPON_SETTLE, COUPON_TAKE};
use crate::store::{Error, Store};

script_call! {
    /// `lua/coupon_take.lua`: one code of another pool for a reservation, at most once.
    pub struct CouponTakeCall<'a> for COUPON_TAKE {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's issued codes (hash).
            issued: &'a str,
            /// The pool's codes taken for reservations (hash).
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

impl CouponTakeCall<'_> {
    /// Parses the script's reply: `taken:<item>:<grabbed_at_ms>` (the item, as the pool keys
    /// it, and when it was taken), or `empty` / `not_found` (none: `None`).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<Option<(String, i64)>, Error> {
        const NAME: &str = "coupon_take";
        let reply = text(NAME, reply)?;
        if let Some(rest) = reply.strip_prefix("taken:") {
            let (item, at) = rest
                .rsplit_once(':')
                .ok_or_else(|| Error::bad_reply(NAME, &reply))?;
            let at = at.parse().map_err(|_| Error::bad_reply(NAME, &reply))?;
            return Ok(Some((item.to_string(), at)));
        }
        if reply != "empty" && reply != "not_found" {
            return Err(Error::bad_reply(NAME, &reply));
        }
        Ok(None)
    }
}

script_call! {
    /// `lua/coupon_settle.lua`: close a reservation in the user's home pool.
    pub struct CouponSettleCall<'a> for COUPON_SETTLE {
        KEYS {
            /// The home pool's users and their items (hash).
            holders: &'a str,
            /// The home pool's open reservations (hash).
            pending: &'a str,
        }
        ARGV {
            /// The user the reservation is for.
            user_id: &'a str,
            /// The reservation id.
            reservation: &'a str,
            /// The item taken for it, or empty when no pool had a code left.
            item: &'a str,
            /// When the item was taken, Unix ms in decimal (empty with no item).
            grabbed_at_ms: &'a str,
        }
    }
}

impl CouponSettleCall<'_> {
    /// Checks the script's reply: `settled:...`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<(), Error> {
        const NAME: &str = "coupon_settle";
        let reply = text(NAME, reply)?;
        if !reply.starts_with("settled:") {
            return Err(Error::bad_reply(NAME, &reply));
        }
        Ok(())
    }
}

/// A user of a campaign, as the reservation steps need them: the campaign (id, number,
/// shape) and the user's home pool.
#[derive(Debug, Clone, Copy)]
pub(super) struct Holder<'a> {
    /// The campaign's id.
    pub campaign_id: &'a str,
    /// The campaign's number.
    pub no: u64,
    /// The campaign's pools and code key.
    pub shape: &'a Shape,
    /// The user's home pool.
    pub home: u32,
    /// The user.
    pub user_id: &'a str,
}

impl Holder<'_> {
    /// The keys of the campaign's pool `k`.
    fn pool_keys(&self, store: &Store, k: u32) -> PoolKeys {
        let prefix = &store.config().key_prefix;
        PoolKeys::new(prefix, self.campaign_id, self.no, k, self.shape.pools)
    }
}

/// Steps 2 and 3 for reservation `reservation` of `holder.user_id` (home pool
/// `holder.home`): a code from the first other pool that has one, recorded in the home pool;
/// `SoldOut` when none has.
pub(super) async fn borrow(
    store: &Store,
    conn: &mut Conn,
    holder: Holder<'_>,
    reservation: &str,
) -> Result<GrabOutcome, Error> {
    let Holder {
        campaign_id,
        no,
        shape,
        home,
        user_id,
    } = holder;
    let mut taken: Option<(String, i64)> = None;
    for step in 1..shape.pools {
        let j = (home + step) % shape.pools;
        let keys = holder.pool_keys(store, j);
        let reply = CouponTakeCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            loans: &keys.loans,
            journal: &keys.journal,
            user_id,
            reservation,
            pool_no: j,
            campaign_id,
        }
        .invocation()
        .invoke_async(conn)
        .await?;
        taken = CouponTakeCall::outcome(reply)?;
        if taken.is_some() {
            break;
        }
    }
    let home_keys = holder.pool_keys(store, home);
    let item = taken.as_ref().map_or("", |(item, _)| item.as_str());
    let at = taken
        .as_ref()
        .map(|(_, at)| at.to_string())
        .unwrap_or_default();
    let reply = CouponSettleCall {
        holders: &home_keys.holders,
        pending: &home_keys.pending,
        user_id,
        reservation,
        item,
        grabbed_at_ms: &at,
    }
    .invocation()
    .invoke_async(conn)
    .await?;
    CouponSettleCall::outcome(reply)?;
    Ok(match taken {
        Some((item, at)) => GrabOutcome::Grabbed {
            code: code_of(&item, no, shape.key.as_ref())
                .ok_or_else(|| Error::bad_reply("coupon_take", &item))?,
            grabbed_at_ms: at,
            redeem_by_ms: shape.redeem_by_ms,
        },
        None => GrabOutcome::SoldOut,
    })
}

/// Completes every open reservation in `user_id`'s items (left by a sandbox that stopped
/// between the steps), then answers their codes as `AlreadyGrabbed`, or as `Grabbed` for the
/// one code a single completed reservation brought.
pub(super) async fn redrive_all(
    store: &Store,
    conn: &mut Conn,
    holder: Holder<'_>,
) -> Result<GrabOutcome, Error> {
    let keys = holder.pool_keys(store, holder.home);
    let mine: Option<String> = redis::cmd("HGET")
        .arg(&keys.holders)
        .arg(holder.user_id)
        .query_async(conn)
        .await?;
    let items = mine.unwrap_or_default();
    for reservation in items.split(' ').filter_map(|i| i.strip_prefix('?')) {
        borrow(store, conn, holder, reservation).await?;
    }
    let mine: Option<String> = redis::cmd("HGET")
        .arg(&keys.holders)
        .arg(holder.user_id)
        .query_async(conn)
        .await?;
    let codes: Vec<String> = mine
        .unwrap_or_default()
        .split(' ')
        .filter_map(|i| code_of(i, holder.no, holder.shape.key.as_ref()))
        .collect();
    Ok(if codes.is_empty() {
        GrabOutcome::SoldOut
    } else {
        GrabOutcome::AlreadyGrabbed { codes }
    })
}
