//! The reconcile-cron function's job, run by an EventBridge schedule (no HTTP): each run
//! checks the next batch of wallets and merchants' budgets against their ledgers and the money
//! journal ([`crate::store::reconcile`]; the rules are [`crate::domain::reconcile`]'s) and
//! reports every account that does not reconcile. It moves no money and repairs nothing: it
//! writes only its cursor and, once per ledger trimmed before its trimmed cents were kept, that
//! ledger's journaled baseline ([`crate::store::reconcile::baseline`];
//! docs/operations.md#reconcilemismatchalarm).

use std::time::{Duration, Instant};

use crate::api::metrics;
use crate::store::reclaim::STOP_MARGIN;
use crate::store::reconcile::{self, ReconcileSummary};
use crate::store::{Error, Store};

/// Accounts (wallets and merchants' budgets) one run checks at most (a run also stops
/// [`STOP_MARGIN`] before its deadline). 20,000 a minute: a pass over 10 million accounts
/// takes about 8 hours.
pub const WALLETS_PER_RUN: u64 = 20_000;

/// Mismatches of one account its error line shows (the first ones; `mismatch_count` says how
/// many there are): a balance moved outside the scripts makes every later journal entry's
/// balance a mismatch too.
pub const MISMATCHES_LOGGED: usize = 10;

/// Runs one [`reconcile::run_until`], until [`WALLETS_PER_RUN`] accounts are checked or
/// [`STOP_MARGIN`] before `deadline_ms` (the invocation's deadline, Unix ms; `None`: 30 s);
/// logs each account that does not reconcile (an error line naming the wallet's user or the
/// merchant and what is wrong)
/// and the run's summary, counts `ReconcileChecked` and `ReconcileMismatch` ([`metrics`]; a
/// run that fails counts one `ReconcileFailed`), and returns the summary (as JSON: `{"checked", "mismatched", "scan_steps", "pass_completed"}`).
///
/// # Errors
/// [`Error`] when Redis cannot be reached (the invocation fails; the next run goes on from the
/// last step saved).
pub async fn run(store: &Store, deadline_ms: Option<u64>) -> Result<ReconcileSummary, Error> {
    let stop_at = super::scheduled::deadline(deadline_ms)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(30))
        .checked_sub(STOP_MARGIN)
        .unwrap_or_else(Instant::now);
    let (summary, unreconciled) = match reconcile::run_until(store, stop_at, WALLETS_PER_RUN).await
    {
        Ok(done) => done,
        Err(e) => {
            metrics::count(metrics::RECONCILE_FAILED, 1);
            return Err(e);
        }
    };
    for account in &unreconciled {
        let shown = &account.mismatches[..account.mismatches.len().min(MISMATCHES_LOGGED)];
        tracing::error!(
            holder = account.holder.as_str(),
            id = %account.id,
            mismatch_count = account.mismatches.len(),
            mismatches = ?shown,
            "account does not reconcile with its ledger and journal"
        );
    }
    metrics::count(metrics::RECONCILE_CHECKED, summary.checked);
    metrics::count(metrics::RECONCILE_MISMATCH, summary.mismatched);
    tracing::info!(
        checked = summary.checked,
        mismatched = summary.mismatched,
        scan_steps = summary.scan_steps,
        pass_completed = summary.pass_completed,
        "reconcile run finished"
    );
    Ok(summary)
}

/// Serves the reconcile-cron function: every EventBridge scheduled event runs [`run`] until
/// the invocation's deadline and returns the summary ([`super::scheduled::serve`]).
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
