//! `POST /campaigns/{id}/grab`: a coupon code for the caller, at most the campaign's
//! `per_user`, taken from their home pool, or from another pool once theirs is empty.
//!
//! 1. `lua/coupon_grab.lua` on the caller's home pool
//!    ([`home_pool`]): the checks and, when the pool has a
//!    code, the win, in one round trip. When it has none and the campaign has other pools, the
//!    same call records a *reservation* (a random id) in the caller's items, counted toward
//!    `per_user` like a code.
//! 2. `lua/coupon_take.lua` on the other pools, one after another from the next: the first that
//!    has a code issues it to the caller under the reservation id (a second run of the same
//!    call, or a re-drive, gets the same code; `empty` is answered only when nothing was
//!    taken for the reservation).
//! 3. `lua/coupon_settle.lua` on the home pool: the reservation becomes the code taken, or is
//!    dropped when every pool was empty; only then is the campaign `sold_out`.
//!
//! A reservation left open by a sandbox that died between the steps is completed by the
//! caller's next grab (its items show it), which runs steps 2 and 3 again with the same id.
//! Once this sandbox has seen a campaign sold out or ended it answers the rest of the storm
//! with one `HGET` of the caller's items (both states are final: codes are added only before
//! the start).

use rand::Rng;
use redis::Value;

use crate::domain::coupons::{campaign_no, home_pool, parse, CodeKey, VisitLimit};

use super::list::remember;

use super::shape::{remember_gone, shape, Gone, Shape};
use crate::store::conn::Conn;
use crate::store::scripts::{text, Call, CouponGrabCall, CouponSettleCall, CouponTakeCall};
use crate::store::{Error, Store};

use super::keys::PoolKeys;

/// The answer to a grab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrabOutcome {
    /// A code is the caller's now.
    Grabbed {
        /// The code (uploaded, or generated: 18 characters).
        code: String,
        /// When it was issued, Unix ms (Redis `TIME`).
        grabbed_at_ms: i64,
        /// Until when it may be redeemed (exclusive), Unix ms.
        redeem_by_ms: i64,
    },
    /// The caller holds `per_user` codes already: these.
    AlreadyGrabbed {
        /// The caller's codes in the campaign, in the order issued.
        codes: Vec<String>,
    },
    /// No code is left in the whole campaign.
    SoldOut,
    /// The campaign ended (Redis `TIME` at or past `ends_at`).
    Ended,
    /// The campaign has not started.
    NotStarted {
        /// Milliseconds until it starts (at least 1).
        retry_after_ms: u64,
    },
    /// Over the visit limit.
    RateLimited {
        /// Milliseconds until the window closes (at least 1).
        retry_after_ms: u64,
    },
    /// No such campaign.
    NotFound,
}

/// The code an item names (`<pool>/<code or index>`); `None` for a reservation or a malformed
/// item.
fn code_of(item: &str, no: u64, key: Option<&CodeKey>) -> Option<String> {
    let (_, code) = item.split_once('/')?;
    match key {
        Some(key) => code.parse::<u64>().ok().map(|index| key.code(no, index)),
        None => Some(code.to_string()),
    }
}

/// Takes a code for `user_id` in campaign `campaign_id`, counting visits against `visits`
/// (see the module documentation).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the grab may be sent again: a repeat
/// answers the caller's codes, an open reservation is completed); [`Error::Internal`] for a
/// reply of the wrong shape.
pub async fn grab(
    store: &Store,
    campaign_id: &str,
    user_id: &str,
    visits: VisitLimit,
) -> Result<GrabOutcome, Error> {
    let Some(no) = campaign_no(campaign_id) else {
        return Ok(GrabOutcome::NotFound);
    };
    let cfg = store.config();
    let mut conn = store.conn().await?;
    let Some(shape) = shape(store, &mut conn, campaign_id, no).await? else {
        return Ok(GrabOutcome::NotFound);
    };
    let home = home_pool(no, user_id, shape.pools);
    let keys = PoolKeys::new(&cfg.key_prefix, campaign_id, no, home, shape.pools);
    let codes_of = |items: &str| -> Vec<String> {
        items
            .split(' ')
            .filter_map(|i| code_of(i, no, shape.key.as_ref()))
            .collect()
    };
    if let Some(gone) = shape.gone {
        // As the script: the end is answered first. A sandbox that saw the campaign sold out
        // tells the two final answers apart by its own clock: both are 410, final, and write
        // nothing; every deadline that decides a write is the script's Redis `TIME`.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        if gone == Gone::Ended || now_ms >= shape.ends_at_ms {
            return Ok(GrabOutcome::Ended);
        }
        let mine: Option<String> = redis::cmd("HGET")
            .arg(&keys.holders)
            .arg(user_id)
            .query_async(&mut conn)
            .await?;
        return Ok(match mine {
            Some(items) if !items.contains('?') => GrabOutcome::AlreadyGrabbed {
                codes: codes_of(&items),
            },
            Some(_) => {
                redrive_all(store, &mut conn, campaign_id, no, &shape, home, user_id).await?
            }
            None => GrabOutcome::SoldOut,
        });
    }

    const NAME: &str = "coupon_grab";
    let reservation = format!("{:016x}", rand::rng().random::<u64>());
    let reply: Value = CouponGrabCall {
        pool: &keys.pool,
        codes: &keys.codes,
        issued: &keys.issued,
        holders: &keys.holders,
        rate: &keys.visits(user_id),
        pending: &keys.pending,
        journal: &keys.journal,
        user_id,
        home,
        rate_limit: visits.per_window,
        rate_window_ms: visits.window_ms,
        reservation: &reservation,
        campaign_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let reply = text(NAME, reply)?;
    let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
    let bad = || Error::bad_reply(NAME, &reply);
    let outcome = match outcome {
        "grabbed" => {
            let mut parts = data.rsplitn(3, ':');
            let (redeem_by, at, item) = (parts.next(), parts.next(), parts.next());
            let (Some(redeem_by), Some(at), Some(item)) = (redeem_by, at, item) else {
                return Err(bad());
            };
            GrabOutcome::Grabbed {
                code: code_of(item, no, shape.key.as_ref()).ok_or_else(bad)?,
                grabbed_at_ms: at.parse().map_err(|_| bad())?,
                redeem_by_ms: redeem_by.parse().map_err(|_| bad())?,
            }
        }
        "already_grabbed" if data.contains('?') => {
            redrive_all(store, &mut conn, campaign_id, no, &shape, home, user_id).await?
        }
        "already_grabbed" => GrabOutcome::AlreadyGrabbed {
            codes: codes_of(data),
        },
        "reserved" => {
            let outcome = borrow(
                store,
                &mut conn,
                campaign_id,
                no,
                &shape,
                home,
                user_id,
                data,
            )
            .await?;
            if outcome == GrabOutcome::SoldOut {
                remember_gone(&cfg.redis_url, campaign_id, Gone::SoldOut);
            }
            outcome
        }
        "empty" => {
            remember_gone(&cfg.redis_url, campaign_id, Gone::SoldOut);
            GrabOutcome::SoldOut
        }
        "ended" => {
            remember_gone(&cfg.redis_url, campaign_id, Gone::Ended);
            GrabOutcome::Ended
        }
        "not_started" => {
            let (starts, now) = data.split_once(':').ok_or_else(bad)?;
            let (starts, now): (i64, i64) = (
                starts.parse().map_err(|_| bad())?,
                now.parse().map_err(|_| bad())?,
            );
            GrabOutcome::NotStarted {
                retry_after_ms: (starts - now).max(1) as u64,
            }
        }
        "rate_limited" => GrabOutcome::RateLimited {
            retry_after_ms: data.parse().map_err(|_| bad())?,
        },
        "not_found" => GrabOutcome::NotFound,
        _ => return Err(bad()),
    };
    if let GrabOutcome::Grabbed {
        code,
        grabbed_at_ms,
        redeem_by_ms,
    } = &outcome
    {
        // The user's coupon list is a view: a failure here leaves the win standing (the
        // journal's coupon_issued entry puts it in the list when ledger-export publishes it).
        let item = match (&shape.key, parse(code)) {
            (Some(key), Some(parsed)) => key.unpermute(parsed.value).to_string(),
            _ => code.clone(),
        };
        let member = format!("{campaign_id}/{item}");
        if let Err(e) = remember(
            store,
            &mut conn,
            user_id,
            &member,
            *grabbed_at_ms,
            *redeem_by_ms,
        )
        .await
        {
            tracing::warn!(error = %e, campaign_id, "coupon won, its user's list not written yet");
        }
    }
    Ok(outcome)
}

/// Steps 2 and 3 for reservation `reservation` of `user_id` (home pool `home`): a code from
/// the first other pool that has one, recorded in the home pool; `SoldOut` when none has.
#[allow(clippy::too_many_arguments)]
pub(super) async fn borrow(
    store: &Store,
    conn: &mut Conn,
    campaign_id: &str,
    no: u64,
    shape: &Shape,
    home: u32,
    user_id: &str,
    reservation: &str,
) -> Result<GrabOutcome, Error> {
    const TAKE: &str = "coupon_take";
    const SETTLE: &str = "coupon_settle";
    let prefix = &store.config().key_prefix;
    let mut taken: Option<(String, i64)> = None;
    for step in 1..shape.pools {
        let j = (home + step) % shape.pools;
        let keys = PoolKeys::new(prefix, campaign_id, no, j, shape.pools);
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
        let reply = text(TAKE, reply)?;
        if let Some(rest) = reply.strip_prefix("taken:") {
            let (item, at) = rest
                .rsplit_once(':')
                .ok_or_else(|| Error::bad_reply(TAKE, &reply))?;
            let at = at.parse().map_err(|_| Error::bad_reply(TAKE, &reply))?;
            taken = Some((item.to_string(), at));
            break;
        }
        if reply != "empty" && reply != "not_found" {
            return Err(Error::bad_reply(TAKE, &reply));
        }
    }
    let home_keys = PoolKeys::new(prefix, campaign_id, no, home, shape.pools);
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
    let reply = text(SETTLE, reply)?;
    if !reply.starts_with("settled:") {
        return Err(Error::bad_reply(SETTLE, &reply));
    }
    Ok(match taken {
        Some((item, at)) => GrabOutcome::Grabbed {
            code: code_of(&item, no, shape.key.as_ref())
                .ok_or_else(|| Error::bad_reply(TAKE, &item))?,
            grabbed_at_ms: at,
            redeem_by_ms: shape.redeem_by_ms,
        },
        None => GrabOutcome::SoldOut,
    })
}

/// Completes every open reservation in `user_id`'s items (left by a sandbox that stopped
/// between the steps), then answers their codes as `AlreadyGrabbed`, or as `Grabbed` for the
/// one code a single completed reservation brought.
async fn redrive_all(
    store: &Store,
    conn: &mut Conn,
    campaign_id: &str,
    no: u64,
    shape: &Shape,
    home: u32,
    user_id: &str,
) -> Result<GrabOutcome, Error> {
    let keys = PoolKeys::new(
        &store.config().key_prefix,
        campaign_id,
        no,
        home,
        shape.pools,
    );
    let mine: Option<String> = redis::cmd("HGET")
        .arg(&keys.holders)
        .arg(user_id)
        .query_async(conn)
        .await?;
    let items = mine.unwrap_or_default();
    for reservation in items.split(' ').filter_map(|i| i.strip_prefix('?')) {
        borrow(
            store,
            conn,
            campaign_id,
            no,
            shape,
            home,
            user_id,
            reservation,
        )
        .await?;
    }
    let mine: Option<String> = redis::cmd("HGET")
        .arg(&keys.holders)
        .arg(user_id)
        .query_async(conn)
        .await?;
    let codes: Vec<String> = mine
        .unwrap_or_default()
        .split(' ')
        .filter_map(|i| code_of(i, no, shape.key.as_ref()))
        .collect();
    Ok(if codes.is_empty() {
        GrabOutcome::SoldOut
    } else {
        GrabOutcome::AlreadyGrabbed { codes }
    })
}
