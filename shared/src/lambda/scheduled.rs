//! The one shell of the functions an EventBridge schedule runs (reclaim-cron, reconcile-cron,
//! ledger-export): every scheduled event runs the function's job until the invocation's
//! deadline, returns its summary as the invocation's result, and flushes the metrics as one EMF
//! line.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::{service_fn, LambdaEvent};
use serde::Serialize;

use super::emf::flush_metrics;
use crate::store::Error;

/// The instant of `deadline_ms` (Unix ms, the Lambda context's deadline) on this process's
/// monotonic clock; `None` stays `None` (no deadline but the job's own).
pub fn deadline(deadline_ms: Option<u64>) -> Option<Instant> {
    deadline_ms.map(|ms| {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        Instant::now() + Duration::from_millis(ms.saturating_sub(now_ms))
    })
}

/// Serves a scheduled function: for every EventBridge event, `job(deadline_ms)` (the
/// invocation's deadline, Unix ms) gives the summary the invocation returns (JSON); a job's
/// [`Error`] fails the invocation (the next scheduled run continues). The metrics recorded
/// during the job are flushed after it, with the Lambda request id.
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve<J, F, S>(job: J) -> Result<(), lambda_runtime::Error>
where
    J: Fn(u64) -> F,
    F: Future<Output = Result<S, Error>>,
    S: Serialize,
{
    let job = &job;
    let handler = service_fn(
        move |event: LambdaEvent<EventBridgeEvent<serde_json::Value>>| async move {
            tracing::debug!(id = ?event.payload.id, "scheduled event");
            let summary = job(event.context.deadline).await;
            flush_metrics(Some(&event.context.request_id));
            Ok::<_, lambda_runtime::Error>(summary?)
        },
    );
    lambda_runtime::run(handler).await
}
