//! The reclaim-cron function's job, run by an EventBridge schedule (no HTTP). Each run
//! refunds expired red packets, then closes ended coupon campaigns
//! ([`crate::coupons::close`]).

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::metrics;
use crate::coupons::close::{close_ended, ClosedCampaigns};
use crate::store::reclaim::{self, ReclaimSummary, STOP_MARGIN};
use crate::store::{Error, Store};

/// What one reclaim-cron run did: the red packets' [`ReclaimSummary`] fields, and the coupon
/// campaigns closed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CronSummary {
    /// Red packets settled, refunds, re-drives.
    #[serde(flatten)]
    pub packets: ReclaimSummary,
    /// Ended coupon campaigns closed (their end reported in the journal).
    pub campaigns_closed: u64,
    /// Reservations of ended campaigns completed before closing them.
    pub campaign_reservations_redriven: u64,
    /// Campaigns that could not be closed (the next run tries again).
    pub campaigns_failed: u64,
}

/// Runs one [`reclaim::run_until`] that takes no new batch within [`reclaim::STOP_MARGIN`] of
/// `deadline_ms` (the invocation's deadline, Unix ms, from the Lambda context; `None`: the
/// lock's time only), logs its summary and returns it (as JSON: `{"settled",
/// "refunded_cents", "redriven", "failed", "batches", "remaining_due", "skipped_locked"}`), and
/// counts it ([`metrics`]: `ReclaimSettled`, `ReclaimFailed`, `ClaimRedriven`, `RefundedCents`, and the gauge
/// `ReclaimRemainingDue` on every run; a run that fails counts one `ReclaimFailed`); then
/// closes the coupon campaigns that have ended, within the same deadline
/// ([`close_ended`]; the summary's `campaigns_*` fields).
///
/// # Errors
/// [`Error`] when the reclaim index is unavailable (the invocation fails; the next scheduled
/// run continues).
pub async fn run(store: &Store, deadline_ms: Option<u64>) -> Result<CronSummary, Error> {
    let deadline = super::scheduled::deadline(deadline_ms);
    let summary = match reclaim::run_until(store, deadline).await {
        Ok(summary) => summary,
        Err(e) => {
            metrics::count(metrics::RECLAIM_FAILED, 1);
            return Err(e);
        }
    };
    metrics::count(metrics::RECLAIM_SETTLED, summary.settled);
    metrics::count(metrics::RECLAIM_FAILED, summary.failed);
    metrics::count(metrics::CLAIM_REDRIVEN, summary.redriven);
    metrics::count(
        metrics::REFUNDED_CENTS,
        summary.refunded_cents.max(0) as u64,
    );
    // Every run, 0 included: the backlog alarm reads it.
    metrics::gauge(metrics::RECLAIM_REMAINING_DUE, summary.remaining_due as f64);
    tracing::info!(
        settled = summary.settled,
        refunded_cents = summary.refunded_cents,
        redriven = summary.redriven,
        failed = summary.failed,
        batches = summary.batches,
        remaining_due = summary.remaining_due,
        skipped_locked = summary.skipped_locked,
        "reclaim run finished"
    );
    let stop_at = deadline
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(30))
        .checked_sub(STOP_MARGIN)
        .unwrap_or_else(Instant::now);
    let campaigns = match close_ended(store, stop_at).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "ended coupon campaigns not closed this run");
            ClosedCampaigns {
                failed: 1,
                ..Default::default()
            }
        }
    };
    if campaigns != ClosedCampaigns::default() {
        tracing::info!(
            closed = campaigns.closed,
            redriven = campaigns.redriven,
            failed = campaigns.failed,
            "coupon campaigns closed"
        );
    }
    Ok(CronSummary {
        packets: summary,
        campaigns_closed: campaigns.closed,
        campaign_reservations_redriven: campaigns.redriven,
        campaigns_failed: campaigns.failed,
    })
}

/// Serves the reclaim-cron function: every EventBridge scheduled event runs [`run`] until the
/// invocation's deadline and returns the summary ([`super::scheduled::serve`]).
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve(store: std::sync::Arc<Store>) -> Result<(), lambda_runtime::Error> {
    super::scheduled::serve(|deadline_ms| {
        let store = store.clone();
        async move { run(&store, Some(deadline_ms)).await }
    })
    .await
}
