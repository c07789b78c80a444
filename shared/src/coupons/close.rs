//! Closing ended coupon campaigns (reclaim-cron): each campaign's open reservations are
//! completed, then each pool is closed once (`coupon_close.lua`: counts, the storage of
//! un-issued uploaded codes released, the records kept until the last coupon's list
//! retention), pool 0 last, which reports the campaign's end in the journal
//! (`campaign_ended`, published by ledger-export as `CampaignEnded`).
//!
//! Every step is idempotent, so a run cut short, or two runs at once, close a campaign once:
//! the campaign leaves the index of ends (`<prefix>:{coupon}:ends`, written by
//! `coupon_create.lua`) only after pool 0 reported it.

use crate::store::scripts::CouponCloseCall;
use std::time::Instant;

use crate::coupons::rules::list::LIST_RETENTION_MS;
use crate::coupons::rules::{campaign_id, CampaignCounts};
use crate::store::scripts::{text, Call};
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::draw;
use crate::coupons::facts::facts;
use crate::coupons::grab::resolve::resolve_reservation;
use crate::coupons::grab::take::take;
use crate::coupons::keys::{ends, PoolKeys};
use crate::coupons::store::Grabber;

impl CouponCloseCall<'_> {
    /// Parses the script's reply on pool `k` of campaign `id`:
    /// `closed:<issued>:<redeemed>:<never_issued>`, the pool's counts.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: redis::Value, id: &str, k: u32) -> Result<[u64; 3], Error> {
        const NAME: &str = "coupon_close";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, format!("{reply} (campaign {id}, pool {k})"));
        let counts: Vec<u64> = match reply.strip_prefix("closed:") {
            Some(rest) => rest
                .split(':')
                .map(|n| n.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?,
            None => return Err(bad()),
        };
        <[u64; 3]>::try_from(counts).map_err(|_| bad())
    }
}

/// Campaigns one run reads from the index of ends at a time.
const BATCH: usize = 20;

/// What one run of [`close_ended`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClosedCampaigns {
    /// Campaigns closed (their end reported) by this run.
    pub closed: u64,
    /// Reservations completed before closing.
    pub redriven: u64,
    /// Campaigns that could not be closed (logged; the next run tries again).
    pub failed: u64,
}

/// Closes every campaign whose `ends_at` has passed (Redis `TIME`), oldest end first, until
/// none is left or `stop_at` passes.
///
/// # Errors
/// [`Error::Unavailable`] when the index of ends cannot be read; a campaign that fails to
/// close is counted in [`ClosedCampaigns::failed`] and left for the next run.
pub async fn close_ended(store: &Store, stop_at: Instant) -> Result<ClosedCampaigns, Error> {
    let prefix = store.config().key_prefix.clone();
    let mut conn = store.conn().await?;
    let mut done = ClosedCampaigns::default();
    let mut skip = 0usize;
    while Instant::now() < stop_at {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
        let now_ms = secs * 1000 + micros / 1000;
        let due: Vec<u64> = redis::cmd("ZRANGE")
            .arg(ends(&prefix))
            .arg("-inf")
            .arg(now_ms)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(skip)
            .arg(BATCH)
            .query_async(&mut conn)
            .await?;
        if due.is_empty() {
            break;
        }
        for no in due {
            match close(store, &mut conn, no).await {
                Ok(Some((_, redriven))) => {
                    done.closed += 1;
                    done.redriven += redriven;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, campaign = %campaign_id(no), "campaign not closed");
                    done.failed += 1;
                    skip += 1;
                }
            }
        }
    }
    Ok(done)
}

/// Closes campaign number `no` (which has ended) and removes it from the index of ends;
/// `Some((its counts, reservations completed))`, or `None` when it has no pools left.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a reply of
/// the wrong facts, or a pool that still has open reservations after they were completed.
pub async fn close(
    store: &Store,
    conn: &mut Conn,
    no: u64,
) -> Result<Option<(CampaignCounts, u64)>, Error> {
    let prefix = &store.config().key_prefix;
    let id = campaign_id(no);
    let Some(facts) = facts(store, conn, &id, no).await? else {
        let _: i64 = redis::cmd("ZREM")
            .arg(ends(prefix))
            .arg(no)
            .query_async(conn)
            .await?;
        return Ok(None);
    };
    // A draw nobody asked for is run now (its draw_at is before the end), so every draw is
    // journaled and revealed.
    if facts.draw.is_some() {
        draw::run(store, conn, &id, &facts).await?;
    }
    // Reservations made before the end are completed (a code taken, or none left).
    let mut redriven = 0;
    for k in 0..facts.pools {
        let keys = PoolKeys::new(prefix, &id, no, k, facts.pools);
        let open: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&keys.pending)
            .query_async(conn)
            .await?;
        for (reservation, record) in open {
            let user = record.split('\n').next().unwrap_or_default().to_string();
            let grabber = Grabber {
                campaign_id: &id,
                facts: &facts,
                home: k,
                user_id: &user,
            };
            let walk = take(store, conn, &grabber, &reservation).await?;
            resolve_reservation(store, conn, &grabber, &reservation, &walk).await?;
            redriven += 1;
        }
    }
    let keep_until = facts.redeem_by_ms.saturating_add(LIST_RETENTION_MS);
    let mut others = CampaignCounts {
        issued: 0,
        redeemed: 0,
        never_issued: 0,
    };
    for k in (1..facts.pools).chain([0]) {
        let keys = PoolKeys::new(prefix, &id, no, k, facts.pools);
        let totals = format!(
            "{}|{}|{}",
            others.issued, others.redeemed, others.never_issued
        );
        let reply = CouponCloseCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            issued_by_time: &keys.issued_by_time,
            holders: &keys.holders,
            pending: &keys.pending,
            loans: &keys.loans,
            batches: &keys.batches,
            journal: &keys.journal,
            tickets: &keys.tickets,
            keep_until_ms: keep_until,
            campaign_id: &id,
            report: if k == 0 { "1" } else { "" },
            others: &totals,
        }
        .invocation()
        .invoke_async(conn)
        .await?;
        let [issued, redeemed, never_issued] = CouponCloseCall::outcome(reply, &id, k)?;
        if k == 0 {
            let _: i64 = redis::cmd("ZREM")
                .arg(ends(prefix))
                .arg(no)
                .query_async(conn)
                .await?;
            return Ok(Some((
                CampaignCounts {
                    issued,
                    redeemed,
                    never_issued,
                },
                redriven,
            )));
        }
        others.issued += issued;
        others.redeemed += redeemed;
        others.never_issued += never_issued;
    }
    unreachable!("pool 0 is closed last")
}
