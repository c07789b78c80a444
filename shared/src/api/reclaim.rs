//! The reclaim-cron function's handler: an EventBridge scheduled event, no HTTP.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::metrics;
use crate::store::reclaim::{self, ReclaimSummary};
use crate::store::{Error, Store};

/// Runs one [`reclaim::run_until`] that takes no new batch within [`reclaim::STOP_MARGIN`] of
/// `deadline_ms` (the invocation's deadline, Unix ms, from the Lambda context; `None`: the
/// lock's time only), logs its summary and returns it (as JSON: `{"settled",
/// "refunded_cents", "redriven", "failed", "batches", "remaining_due", "skipped_locked"}`), and
/// counts it ([`metrics`]: `ReclaimSettled`, `ReclaimFailed`, `RefundedCents`, and the gauge
/// `ReclaimRemainingDue` on every run; a run that fails counts one `ReclaimFailed`).
///
/// # Errors
/// [`Error`] when the reclaim index is unavailable (the invocation fails; the next scheduled
/// run continues).
pub async fn run(store: &Store, deadline_ms: Option<u64>) -> Result<ReclaimSummary, Error> {
    let deadline = deadline_ms.map(|ms| {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        Instant::now() + Duration::from_millis(ms.saturating_sub(now_ms))
    });
    let summary = match reclaim::run_until(store, deadline).await {
        Ok(summary) => summary,
        Err(e) => {
            metrics::count(metrics::RECLAIM_FAILED, 1);
            return Err(e);
        }
    };
    metrics::count(metrics::RECLAIM_SETTLED, summary.settled);
    metrics::count(metrics::RECLAIM_FAILED, summary.failed);
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
    Ok(summary)
}

/// Serves the reclaim-cron function: every EventBridge scheduled event runs [`run`] until the
/// invocation's deadline and returns the summary; the metrics are flushed as one EMF line after
/// each invocation ([`super::lambda::init_metrics`]).
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve(store: std::sync::Arc<Store>) -> Result<(), lambda_runtime::Error> {
    use aws_lambda_events::eventbridge::EventBridgeEvent;
    use lambda_runtime::{service_fn, LambdaEvent};
    let handler = service_fn(
        move |event: LambdaEvent<EventBridgeEvent<serde_json::Value>>| {
            let store = store.clone();
            async move {
                tracing::debug!(id = ?event.payload.id, "scheduled event");
                let summary = run(&store, Some(event.context.deadline)).await;
                super::lambda::flush_metrics(Some(&event.context.request_id));
                Ok::<_, lambda_runtime::Error>(summary?)
            }
        },
    );
    lambda_runtime::run(handler).await
}
