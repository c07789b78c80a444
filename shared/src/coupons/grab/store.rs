//! `POST /campaigns/{id}/grab`: a coupon code for the caller, at most the campaign's
//! `per_user`, taken from their home pool, or from another pool once theirs is empty. The
//! steps, each visited once, in order:
//!
//! 1. `coupon_grab.lua` on the caller's home pool ([`home_pool`]): the checks and, when
//!    the pool has a code, the win, in one round trip, recorded under the call's id (a fresh
//!    random id: a re-sent call answers its own code, whatever the user won since). When the
//!    pool has none and the campaign has other pools, the same call records a *reservation*
//!    under that id in the caller's items, counted toward `per_user` like a code.
//! 2. [`take`](mod@crate::coupons::grab::take): `coupon_take.lua` on the other pools, from the next one
//!    on; each records its outcome for the reservation, first run wins.
//! 3. [`resolve`](mod@crate::coupons::grab::resolve): `coupon_resolve.lua` on the home pool records the
//!    reservation's one outcome (the code taken, or none: `sold_out`; or none while a pool
//!    the walk passed was not written yet: `not_started`, retry after [`OPENING_RETRY_MS`]),
//!    first run wins, and the call's re-run (step 1) answers it.
//!
//! A reservation left open by a sandbox that died between the steps is completed by the
//! caller's next grab (its items show it) or by reclaim-cron's close, which run steps 2 and 3
//! again with the same id and reach the same outcome. Once this sandbox has seen a campaign
//! sold out or ended it answers the rest of the storm with one `HGET` of the caller's items:
//! both states are final, because codes enter a pool only before the start
//! (`coupon_add_codes.lua`) or with the pool itself (a creation still running), so after
//! the start every written pool only shrinks, and a walk that passed a pool not written yet is
//! not answered sold out.

use crate::store::scripts::CouponGrabCall;
use rand::Rng;
use redis::Value;

use crate::coupons::rules::{home_pool, parse, VisitLimit};

use crate::coupons::draw::{self, Entry};
use crate::coupons::facts::{remember_gone, resolve, Gone};
use crate::coupons::grab::resolve::resolve_reservation;
use crate::coupons::grab::take::{take, TakeOutcome};
use crate::coupons::list::store::remember;
use crate::coupons::store::CouponGrabOutcome;
use crate::coupons::store::Grabber;
use crate::store::scripts::{text, Call};
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::keys::PoolKeys;

/// The script, as its errors name it.
const NAME: &str = "coupon_grab";

/// When a reservation found no code while a pool it passed was not written yet (a campaign
/// that opens at once, its creation still writing its pools), the caller is answered
/// `not_started` and may grab again after this many ms: the creation writes every pool at
/// once, so the rest follow within milliseconds, or when the merchant sends the creation
/// again.
pub const OPENING_RETRY_MS: u64 = 1_000;

/// What `coupon_grab.lua` answers (one string, the outcome and its data joined by ':').
#[derive(Debug, PartialEq, Eq)]
enum GrabReply {
    /// `grabbed:<item>:<grabbed_at_ms>:<redeem_by_ms>`: the item as the pool keys it.
    Grabbed {
        item: String,
        grabbed_at_ms: i64,
        redeem_by_ms: i64,
    },
    /// `already_grabbed:<items>`: the caller's items, space-separated (`?<id>`: an open
    /// reservation).
    AlreadyGrabbed { items: String },
    /// `reserved:<reservation>`: the home pool is empty; the reservation is recorded.
    Reserved { reservation: String },
    /// `empty`: no code left and no other pool, or this call's reservation resolved with none.
    Empty,
    /// `opening:<items>`: this call's reservation resolved with none while a pool it passed was
    /// not written yet.
    Opening,
    /// `ended`.
    Ended,
    /// `not_started:<starts_at_ms>:<now_ms>`: ms until the start (at least 1).
    NotStarted { retry_after_ms: u64 },
    /// `rate_limited:<ms>`.
    RateLimited { retry_after_ms: u64 },
    /// `not_found`.
    NotFound,
}

impl CouponGrabCall<'_> {
    /// Parses the script's reply (see [`GrabReply`]).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<GrabReply, Error> {
        let reply = text(NAME, reply)?;
        let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
        let bad = || Error::bad_reply(NAME, &reply);
        Ok(match outcome {
            "grabbed" => {
                let mut parts = data.rsplitn(3, ':');
                let (redeem_by, at, item) = (parts.next(), parts.next(), parts.next());
                let (Some(redeem_by), Some(at), Some(item)) = (redeem_by, at, item) else {
                    return Err(bad());
                };
                GrabReply::Grabbed {
                    item: item.to_string(),
                    grabbed_at_ms: at.parse().map_err(|_| bad())?,
                    redeem_by_ms: redeem_by.parse().map_err(|_| bad())?,
                }
            }
            "already_grabbed" => GrabReply::AlreadyGrabbed {
                items: data.to_string(),
            },
            "reserved" => GrabReply::Reserved {
                reservation: data.to_string(),
            },
            "empty" => GrabReply::Empty,
            "opening" => GrabReply::Opening,
            "ended" => GrabReply::Ended,
            "not_started" => {
                let (starts, now) = data.split_once(':').ok_or_else(bad)?;
                let (starts, now): (i64, i64) = (
                    starts.parse().map_err(|_| bad())?,
                    now.parse().map_err(|_| bad())?,
                );
                GrabReply::NotStarted {
                    retry_after_ms: (starts - now).max(1) as u64,
                }
            }
            "rate_limited" => GrabReply::RateLimited {
                retry_after_ms: data.parse().map_err(|_| bad())?,
            },
            "not_found" => GrabReply::NotFound,
            _ => return Err(bad()),
        })
    }
}

/// Takes a code for `user_id` in campaign `campaign_id`, counting visits against `visits`
/// (see the module documentation).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the grab may be sent again: a repeat
/// answers the caller's codes, an open reservation is completed); [`Error::Internal`] for a
/// reply of the wrong facts.
pub async fn grab(
    store: &Store,
    campaign_id: &str,
    user_id: &str,
    visits: VisitLimit,
) -> Result<CouponGrabOutcome, Error> {
    let cfg = store.config();
    let mut conn = store.conn().await?;
    let Some((id, no, facts)) = resolve(store, &mut conn, campaign_id).await? else {
        return Ok(CouponGrabOutcome::NotFound);
    };
    let campaign_id = id.as_str();
    let home = home_pool(no, user_id, facts.pools);
    let keys = PoolKeys::new(&cfg.key_prefix, campaign_id, no, home, facts.pools);
    let grabber = Grabber {
        campaign_id,
        facts: &facts,
        home,
        user_id,
    };
    // A draw campaign: an entry until the draw, then only a winner goes on to a code.
    if let Some(draw) = &facts.draw {
        match draw::enter(store, &mut conn, campaign_id, &facts, draw, user_id, visits).await? {
            Entry::Winner => {}
            Entry::Entered { draw_at_ms } => return Ok(CouponGrabOutcome::Entered { draw_at_ms }),
            Entry::NotDrawn => return Ok(CouponGrabOutcome::NotDrawn),
            Entry::NotStarted { retry_after_ms } => {
                return Ok(CouponGrabOutcome::NotStarted { retry_after_ms })
            }
            Entry::RateLimited { retry_after_ms } => {
                return Ok(CouponGrabOutcome::RateLimited { retry_after_ms })
            }
            Entry::NotFound => return Ok(CouponGrabOutcome::NotFound),
        }
    }
    if let Some(gone) = facts.gone {
        // As the script: the end is answered first. A sandbox that saw the campaign sold out
        // tells the two final answers apart by its own clock: both are 410, final, and write
        // nothing; every deadline that decides a write is the script's Redis `TIME`.
        if gone == Gone::Ended || unix_ms() >= facts.ends_at_ms {
            return Ok(CouponGrabOutcome::Ended);
        }
        let mine: Option<String> = redis::cmd("HGET")
            .arg(&keys.holders)
            .arg(user_id)
            .query_async(&mut conn)
            .await?;
        return match mine {
            Some(items) => already_grabbed(store, &mut conn, &grabber, &items).await,
            None => Ok(CouponGrabOutcome::SoldOut),
        };
    }

    // Step 1.
    let call = format!("{:016x}", rand::rng().random::<u64>());
    let reply: Value = CouponGrabCall {
        pool: &keys.pool,
        codes: &keys.codes,
        issued: &keys.issued,
        issued_by_time: &keys.issued_by_time,
        holders: &keys.holders,
        rate: &keys.visits(user_id),
        pending: &keys.pending,
        journal: &keys.journal,
        user_id,
        home,
        rate_limit: visits.per_window,
        rate_window_ms: visits.window_ms,
        reservation: &call,
        campaign_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let outcome = match CouponGrabCall::outcome(reply)? {
        GrabReply::Grabbed {
            item,
            grabbed_at_ms,
            redeem_by_ms,
        } => CouponGrabOutcome::Grabbed {
            code: facts
                .code_of(&item)
                .ok_or_else(|| Error::bad_reply(NAME, format!("grabbed item {item}")))?,
            grabbed_at_ms,
            redeem_by_ms,
        },
        GrabReply::AlreadyGrabbed { items } => {
            already_grabbed(store, &mut conn, &grabber, &items).await?
        }
        GrabReply::Reserved { reservation } => {
            // Steps 2 and 3.
            let walk = take(store, &mut conn, &grabber, &reservation).await?;
            let resolved =
                resolve_reservation(store, &mut conn, &grabber, &reservation, &walk).await?;
            match resolved.walk {
                TakeOutcome::Taken(taken) => CouponGrabOutcome::Grabbed {
                    code: facts
                        .code_of(&taken.item)
                        .ok_or_else(|| Error::bad_reply("coupon_resolve", &taken.item))?,
                    grabbed_at_ms: taken.at_ms,
                    redeem_by_ms: facts.redeem_by_ms,
                },
                TakeOutcome::SoldOut => {
                    remember_gone(&cfg.redis_url, campaign_id, Gone::SoldOut);
                    CouponGrabOutcome::SoldOut
                }
                TakeOutcome::Opening => CouponGrabOutcome::NotStarted {
                    retry_after_ms: OPENING_RETRY_MS,
                },
            }
        }
        GrabReply::Opening => CouponGrabOutcome::NotStarted {
            retry_after_ms: OPENING_RETRY_MS,
        },
        GrabReply::Empty => {
            remember_gone(&cfg.redis_url, campaign_id, Gone::SoldOut);
            CouponGrabOutcome::SoldOut
        }
        GrabReply::Ended => {
            remember_gone(&cfg.redis_url, campaign_id, Gone::Ended);
            CouponGrabOutcome::Ended
        }
        GrabReply::NotStarted { retry_after_ms } => {
            CouponGrabOutcome::NotStarted { retry_after_ms }
        }
        GrabReply::RateLimited { retry_after_ms } => {
            CouponGrabOutcome::RateLimited { retry_after_ms }
        }
        // Pool 0 is written (the facts is read there), the caller's home pool not yet: the
        // campaign's creation is still writing its pools. (Past the end, by this sandbox's
        // clock, the pools may have expired after their retention: no such campaign.)
        GrabReply::NotFound if unix_ms() < facts.ends_at_ms => CouponGrabOutcome::NotStarted {
            retry_after_ms: OPENING_RETRY_MS,
        },
        GrabReply::NotFound => CouponGrabOutcome::NotFound,
    };
    if let CouponGrabOutcome::Grabbed {
        code,
        grabbed_at_ms,
        redeem_by_ms,
    } = &outcome
    {
        // The user's coupon list is a view: a failure here leaves the win standing (the
        // journal's coupon_issued entry puts it in the list when ledger-export publishes it).
        let item = match (&facts.key, parse(code)) {
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

/// The answer to a caller who holds `items` already (`per_user` of them, or any once the
/// campaign is sold out): their codes, after steps 2 and 3 of every reservation still open
/// among them (left by a sandbox that stopped between the steps); when no code is left among
/// them `SoldOut`, or `NotStarted` when one of those reservations found none while the
/// campaign was opening (the caller may grab again).
async fn already_grabbed(
    store: &Store,
    conn: &mut Conn,
    grabber: &Grabber<'_>,
    items: &str,
) -> Result<CouponGrabOutcome, Error> {
    let mut items: Vec<String> = items.split_whitespace().map(str::to_string).collect();
    let open: Vec<String> = items
        .iter()
        .filter_map(|i| i.strip_prefix('?').map(str::to_string))
        .collect();
    let mut opening = false;
    for reservation in &open {
        let walk = take(store, conn, grabber, reservation).await?;
        let resolved = resolve_reservation(store, conn, grabber, reservation, &walk).await?;
        opening |= resolved.walk == TakeOutcome::Opening;
        items = resolved.items;
    }
    let codes: Vec<String> = items
        .iter()
        .filter_map(|i| grabber.facts.code_of(i))
        .collect();
    Ok(match (codes.is_empty(), opening) {
        (false, _) => CouponGrabOutcome::AlreadyGrabbed { codes },
        (true, false) => CouponGrabOutcome::SoldOut,
        (true, true) => CouponGrabOutcome::NotStarted {
            retry_after_ms: OPENING_RETRY_MS,
        },
    })
}

/// This sandbox's clock, Unix ms: only to tell apart answers that write nothing.
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
