//! The reclaim-cron function's handler: an EventBridge scheduled event, no HTTP.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::store::reclaim::{self, ReclaimSummary};
use crate::store::{Error, Store};

/// Runs one [`reclaim::run_until`] that takes no new batch within [`reclaim::STOP_MARGIN`] of
/// `deadline_ms` (the invocation's deadline, Unix ms, from the Lambda context; `None`: the
/// lock's time only), logs its summary and returns it (as JSON: `{"settled",
/// "refunded_cents", "redriven", "failed", "batches", "remaining_due", "skipped_locked"}`).
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
    let summary = reclaim::run_until(store, deadline).await?;
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
