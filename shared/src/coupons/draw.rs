//! A draw campaign's entries and draw (`draws::rules`), on its pool 0.
//!
//! A grab of a draw campaign is first `coupon_draw_enter.lua` on pool 0 with the caller's
//! ticket (computed here from the campaign's seed, which this sandbox keeps with the
//! campaign's facts: one round trip per entry): until `draw_at` it enters them; from
//! `draw_at` it answers `draw_due` until the draw has run ([`run_draw`]: `coupon_draw_run.lua`,
//! one O(log n) step whoever calls it, however many at once), then `winner` or `not_drawn`. A
//! winner's grab then goes on as any grab (`crate::coupons::grab::store`), and the campaign holds a code for
//! each winner.

use crate::store::scripts::{CouponDrawEnterCall, CouponDrawRunCall};
use redis::Value;

use crate::draws::rules::{ticket, Draw, DrawResult};
use crate::store::scripts::{text, Call};
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::facts::{CampaignFacts, DrawFacts};
use crate::coupons::keys::PoolKeys;

/// What a draw campaign's grab is, before any code is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// The caller is an entrant (now or before); the draw is at `draw_at_ms`.
    Entered {
        /// When the draw happens, Unix ms.
        draw_at_ms: i64,
    },
    /// The draw has run and the caller won: grab their code.
    Winner,
    /// The draw has run and the caller did not win (or did not enter).
    NotDrawn,
    /// Before the campaign's start (a counted visit): retry after this many ms (≥ 1).
    NotStarted {
        /// Milliseconds until the start.
        retry_after_ms: u64,
    },
    /// A counted visit over the visit limit.
    RateLimited {
        /// Milliseconds until the window closes.
        retry_after_ms: u64,
    },
    /// Pool 0 is not written (no such campaign, or its creation is still running).
    NotFound,
}

impl CouponDrawEnterCall<'_> {
    /// The script's reply: `Ok(None)` for `draw_due` (run the draw, ask again).
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another facts.
    fn outcome(reply: Value) -> Result<Option<Entry>, Error> {
        const NAME: &str = "coupon_draw_enter";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
        Ok(Some(match outcome {
            "entered" => Entry::Entered {
                draw_at_ms: data.parse().map_err(|_| bad())?,
            },
            "winner" => Entry::Winner,
            "not_drawn" => Entry::NotDrawn,
            "not_started" => {
                let (starts, now) = data.split_once(':').ok_or_else(bad)?;
                let (starts, now): (i64, i64) = (
                    starts.parse().map_err(|_| bad())?,
                    now.parse().map_err(|_| bad())?,
                );
                Entry::NotStarted {
                    retry_after_ms: (starts - now).max(1) as u64,
                }
            }
            "rate_limited" => Entry::RateLimited {
                retry_after_ms: data.parse().map_err(|_| bad())?,
            },
            "not_found" => Entry::NotFound,
            "draw_due" => return Ok(None),
            _ => return Err(bad()),
        }))
    }
}

/// A draw campaign's draw once run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawn {
    /// How many won: `min(codes, entrants)`.
    pub winners: u64,
    /// How many entered.
    pub entrants: u64,
}

impl CouponDrawRunCall<'_> {
    /// The script's reply: `Ok(None)` for `not_due` or `not_found`.
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another facts.
    fn outcome(reply: Value) -> Result<Option<Drawn>, Error> {
        const NAME: &str = "coupon_draw_run";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, &reply);
        let parts: Vec<&str> = reply.split(':').collect();
        Ok(match parts[..] {
            ["drawn" | "drawn_now", winners, entrants] => Some(Drawn {
                winners: winners.parse().map_err(|_| bad())?,
                entrants: entrants.parse().map_err(|_| bad())?,
            }),
            ["not_due", _] | ["not_found"] => None,
            _ => return Err(bad()),
        })
    }
}

/// The caller's grab of draw campaign `campaign_id` (whose facts, pool 0 included, is
/// `facts`): their entry, or after the draw whether they won; a draw found due is run first
/// ([`run`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (an entry is idempotent: send it
/// again); [`Error::Internal`] for a malformed seed or reply.
pub(super) async fn enter(
    store: &Store,
    conn: &mut Conn,
    campaign_id: &str,
    facts: &CampaignFacts,
    draw: &DrawFacts,
    user_id: &str,
    visits: crate::coupons::rules::VisitLimit,
) -> Result<Entry, Error> {
    let keys = PoolKeys::new(
        &store.config().key_prefix,
        campaign_id,
        facts.no,
        0,
        facts.pools,
    );
    let ticket = ticket(&draw.seed, user_id).ok_or_else(|| {
        Error::Internal(format!(
            "coupon campaign {campaign_id}: a malformed draw seed"
        ))
    })?;
    let rate = keys.visits(user_id);
    // The draw runs at most once: a second pass finds it drawn.
    for _ in 0..2 {
        let reply: Value = CouponDrawEnterCall {
            pool: &keys.pool,
            tickets: &keys.tickets,
            rate: &rate,
            user_id,
            ticket: &ticket,
            rate_limit: visits.per_window,
            rate_window_ms: visits.window_ms,
        }
        .invocation()
        .invoke_async(conn)
        .await?;
        if let Some(entry) = CouponDrawEnterCall::outcome(reply)? {
            return Ok(entry);
        }
        run(store, conn, campaign_id, facts).await?;
    }
    Err(Error::Internal(format!(
        "coupon campaign {campaign_id}: its draw was due and ran, but is not drawn"
    )))
}

/// Runs draw campaign `campaign_id`'s draw if Redis `TIME` has reached its `draw_at`: the
/// winners are the first `min(codes, entrants)` tickets, the codes summed over every pool.
/// Any number of callers may run it at once; the first run's figures stand. `None`: not due
/// yet (or pool 0 not written).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (nothing is drawn until a run
/// succeeds: run it again); [`Error::Internal`] for a reply of the wrong facts.
pub(super) async fn run(
    store: &Store,
    conn: &mut Conn,
    campaign_id: &str,
    facts: &CampaignFacts,
) -> Result<Option<Drawn>, Error> {
    let prefix = &store.config().key_prefix;
    // Codes enter a pool only before the start, so after draw_at every caller sums the same.
    let mut codes = 0u64;
    for k in 0..facts.pools {
        let keys = PoolKeys::new(prefix, campaign_id, facts.no, k, facts.pools);
        let total: Option<u64> = redis::cmd("HGET")
            .arg(&keys.pool)
            .arg("total")
            .query_async(conn)
            .await?;
        // A pool its creation never wrote (cut short, not sent again) holds no code: the
        // winners stay within the codes there are.
        match total {
            Some(total) => codes += total,
            None => tracing::warn!(
                campaign_id,
                pool = k,
                "a draw campaign's pool is not written at its draw"
            ),
        }
    }
    let keys = PoolKeys::new(prefix, campaign_id, facts.no, 0, facts.pools);
    let reply: Value = CouponDrawRunCall {
        pool: &keys.pool,
        tickets: &keys.tickets,
        journal: &keys.journal,
        codes,
        campaign_id,
    }
    .invocation()
    .invoke_async(conn)
    .await?;
    CouponDrawRunCall::outcome(reply)
}

/// Draw campaign `campaign_id`'s draw as its view shows it at `now_ms` (Redis `TIME`): run
/// first when due and not run yet, so that any view from `draw_at` on reveals it.
///
/// # Errors
/// As [`run`]; [`Error::Internal`] for pool 0's draw fields of the wrong facts.
pub(super) async fn view(
    store: &Store,
    conn: &mut Conn,
    campaign_id: &str,
    facts: &CampaignFacts,
    draw: &DrawFacts,
    now_ms: i64,
) -> Result<Draw, Error> {
    let keys = PoolKeys::new(
        &store.config().key_prefix,
        campaign_id,
        facts.no,
        0,
        facts.pools,
    );
    let mut ran = false;
    loop {
        type Fields = (Option<i64>, Option<u64>, Option<u64>, Option<String>);
        let (drawn_at, entrants, winners, threshold): Fields = redis::cmd("HMGET")
            .arg(&keys.pool)
            .arg(&[
                "drawn_at",
                "draw_entrants",
                "draw_winners",
                "draw_threshold",
            ])
            .query_async(conn)
            .await?;
        let result = match (drawn_at, entrants, winners) {
            (Some(drawn_at_ms), Some(entrants), Some(winners)) => Some(DrawResult {
                entrants,
                winners,
                threshold: threshold.filter(|t| !t.is_empty()),
                drawn_at_ms,
            }),
            (None, _, _) if !ran && now_ms >= draw.draw_at_ms => {
                run(store, conn, campaign_id, facts).await?;
                ran = true;
                continue;
            }
            (None, _, _) => None,
            _ => {
                return Err(Error::Internal(format!(
                    "coupon campaign {campaign_id}: a draw without its figures"
                )))
            }
        };
        return Ok(Draw {
            draw_at_ms: draw.draw_at_ms,
            commitment: draw.commitment.clone(),
            seed: draw.seed.clone(),
            result,
        });
    }
}

/// Runs draw campaign `campaign_id`'s draw if it is due (`coupon_draw_run.lua`, with the
/// codes summed over every pool), for a caller that holds no facts: the figures once drawn
/// (now or before); `None` when it is not due yet, or there is no such draw campaign.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (nothing is drawn until a run
/// succeeds: run it again); [`Error::Internal`] for a reply of the wrong facts.
pub async fn run_draw(store: &Store, campaign_id: &str) -> Result<Option<Drawn>, Error> {
    let mut conn = store.conn().await?;
    let Some((id, _, facts)) =
        crate::coupons::facts::resolve(store, &mut conn, campaign_id).await?
    else {
        return Ok(None);
    };
    let campaign_id = id.as_str();
    if facts.draw.is_none() {
        return Ok(None);
    }
    run(store, &mut conn, campaign_id, &facts).await
}
