//! The ledger-export function's job, run by an EventBridge schedule (no HTTP). Each run
//! publishes the money journal's entries ([`crate::store::journal`]) as EventBridge events and
//! deletes each entry only after `PutEvents` reported it accepted, so delivery is
//! at-least-once: a run that stops between `PutEvents` and the delete (a crash, a timeout, a
//! Redis error) leaves the entries, and the next run publishes them again with the same
//! `event_id`, which consumers use to drop duplicates.
//!
//! An event: `source` [`crate::domain::journal::EVENT_SOURCE`] (`hongbao`), `detail-type` per kind (`Deposit`,
//! `PacketDebit`, `ClaimCredit`, `RefundCredit`, `Withdrawal`, `PacketSettled`, `PacketCancelled`, and the coupon
//! drops' `CouponIssued`, `CouponRedeemed`, `CouponReleased`, `CampaignEnded`, and a
//! merchant's `MerchantDeposit`, `MerchantWithdrawal`, `MerchantPacketDebit`,
//! `MerchantRefund`, `MerchantPacketSettled`, `MerchantCouponRefund`, and a draw packet's
//! `DrawRun` with the draw's seed and figures), `time` the
//! movement's Redis time, and `detail` = [`EventDetail`]. Before a batch is published, its coupon entries get their
//! codes (a generated code's entry holds its index) and each issued coupon is put in its
//! user's coupon list (`GET /coupons`) again, which completes a grab whose function stopped
//! before writing it ([`crate::coupons::feed`]).
//!
//! Runs never overlap (a lock, `<prefix>:{export}:lock`, `HONGBAO_EXPORT_LOCK_TTL_MS`); a run
//! drains journal after journal until none holds entries or its time is up.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use serde::Serialize;

use crate::api::error::rfc3339;
use crate::api::metrics;
use crate::domain::journal::{Entry, Kind};
use crate::store::journal::{self, JournalIndex};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::lock::Lock;
use crate::store::{Error, Store};

#[cfg(feature = "eventbridge")]
pub mod eventbridge;

/// Entries one `PutEvents` carries (EventBridge's limit).
pub const PUT_EVENTS_MAX: usize = 10;

/// Entries read from one journal at a time.
const READ_BATCH: usize = 100;

/// Journals drained at once.
const JOURNALS_IN_FLIGHT: usize = 8;

/// Times a batch's refused entries are published again within one run.
const PUBLISH_ATTEMPTS: usize = 3;

/// A run takes no new journal this long before its deadline or its lock's end.
pub const STOP_MARGIN: Duration = Duration::from_secs(5);

/// The `detail` of an event: the journal entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventDetail {
    /// The movement's id (SHA-1 hex, fixed when the money moved): a duplicate delivery
    /// carries the same id.
    pub event_id: String,
    /// `deposit`, `packet_debit`, `claim_credit`, `refund_credit`, `withdrawal`,
    /// `packet_settled`, `packet_cancelled`, `coupon_issued`, `coupon_redeemed`,
    /// `coupon_released`, `campaign_ended`, `merchant_deposit`, `merchant_withdrawal`,
    /// `merchant_packet_debit`, `merchant_refund`, `merchant_packet_settled`,
    /// `merchant_coupon_refund` or `draw_run`.
    pub kind: &'static str,
    /// Whose wallet; absent for a merchant's movement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// A merchant's movement: whose budget; a `coupon_issued` of a merchant packet's share:
    /// the merchant whose books hold its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<String>,
    /// Signed amount, cents (debits negative; 0 for `packet_settled` and `packet_cancelled`).
    pub amount_cents: i64,
    /// The deposit or withdrawal reference, or the packet id; for a coupon event
    /// `<campaign_id>/<code or generated index>` (a merchant packet's share's coupon:
    /// `<packet_id>/<share_id>`), for `campaign_ended` the campaign id.
    pub reference: String,
    /// When the money moved, Unix ms (Redis `TIME`).
    pub at_ms: i64,
    /// When the money moved, RFC 3339.
    pub at: String,
    /// The wallet's (a merchant's movement: the budget's) balance after the movement, cents.
    pub balance_cents: i64,
    /// `packet_settled` (and `merchant_packet_settled`): cents refunded to the payer over the
    /// packet's life;
    /// `packet_cancelled`: cents refunded at the cancel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refunded_cents: Option<i64>,
    /// `packet_settled` and `merchant_packet_settled` only: cents claimed by grabbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_cents: Option<i64>,
    /// Coupon events only: the campaign (absent for a merchant packet's share's coupon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    /// Coupon events of a merchant packet's share's coupon only: the packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_id: Option<String>,
    /// `coupon_issued` of a merchant packet's share only: what the coupon takes off an
    /// order, cents (moved within the merchant's books, from reserved to outstanding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_off_cents: Option<i64>,
    /// `coupon_issued`, `coupon_redeemed` and `coupon_released` only: the coupon code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `coupon_redeemed`: the order that redeemed it; `coupon_released`: the order whose
    /// redemption was reversed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_reference: Option<String>,
    /// `coupon_redeemed` only, when the order's total was given: the order's discount, cents
    /// (`amount_cents` stays 0: a coupon moves no wallet's money).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discount_cents: Option<i64>,
    /// `campaign_ended` only: codes issued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes_issued: Option<u64>,
    /// `campaign_ended` only: issued codes redeemed by the close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes_redeemed: Option<u64>,
    /// `campaign_ended` only: codes never issued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes_never_issued: Option<u64>,
    /// `draw_run` only: how many entered the draw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrants: Option<u64>,
    /// `draw_run` only: how many won.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winners: Option<u64>,
    /// `draw_run` only: the draw's seed (64 lowercase hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// `draw_run` only: the commitment to the seed published at the packet's creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commitment: Option<String>,
    /// `draw_run` only: the largest winning ticket (absent when nobody entered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<String>,
    /// `ledger_baseline` and `merchant_ledger_baseline` only: the cents the ledger's one-time
    /// baseline takes its items trimmed before they were counted to add up to (the balance
    /// less the ledger's items, accepted as it was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_trimmed_cents: Option<i64>,
}

impl From<&Entry> for EventDetail {
    fn from(e: &Entry) -> Self {
        EventDetail {
            event_id: e.event_id.clone(),
            kind: e.kind.as_str(),
            user_id: (!e.kind.is_merchant()).then(|| e.user_id.clone()),
            merchant_id: if e.kind.is_merchant() {
                Some(e.user_id.clone())
            } else {
                e.share_coupon.as_ref().map(|s| s.merchant_id.clone())
            },
            amount_cents: e.amount_cents,
            reference: e.reference.clone(),
            at_ms: e.at_ms,
            at: rfc3339(e.at_ms),
            balance_cents: e.balance_cents,
            refunded_cents: e.refunded_cents,
            claimed_cents: e.claimed_cents,
            campaign_id: e.campaign_id.clone().or_else(|| {
                e.coupon_parts()
                    .filter(|(source, _)| !is_packet_id(source))
                    .map(|(campaign, _)| campaign.to_string())
                    .or_else(|| e.drawn().filter(|r| !is_packet_id(r)).map(str::to_string))
            }),
            packet_id: e
                .coupon_parts()
                .filter(|(source, _)| is_packet_id(source))
                .map(|(packet, _)| packet.to_string())
                .or_else(|| e.drawn().filter(|r| is_packet_id(r)).map(str::to_string)),
            amount_off_cents: e.share_coupon.as_ref().map(|s| s.amount_off_cents),
            code: e.code.clone(),
            order_reference: e.order_reference.clone(),
            discount_cents: e.discount_cents,
            codes_issued: e.campaign_counts.map(|c| c.issued),
            codes_redeemed: e.campaign_counts.map(|c| c.redeemed),
            codes_never_issued: e.campaign_counts.map(|c| c.never_issued),
            entrants: e.draw.as_ref().map(|d| d.entrants),
            winners: e.draw.as_ref().map(|d| d.winners),
            seed: e.draw.as_ref().map(|d| d.seed.clone()),
            commitment: e.draw.as_ref().map(|d| d.commitment.clone()),
            threshold: e.draw.as_ref().and_then(|d| d.threshold.clone()),
            ledger_trimmed_cents: e.ledger_trimmed_cents,
        }
    }
}

/// A boxed future of an [`EventSink`].
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<bool>, SinkError>> + Send + 'a>>;

/// Where events go: EventBridge's `PutEvents` (`eventbridge::EventBridgeSink`, feature
/// `eventbridge`), or a test's wrapper around it.
pub trait EventSink: Send + Sync {
    /// Publishes up to [`PUT_EVENTS_MAX`] entries as events (source `hongbao`); returns,
    /// per entry in order, whether it was accepted.
    ///
    /// # Errors
    /// [`SinkError`] when the call failed as a whole (nothing is known to be accepted).
    fn publish<'a>(&'a self, entries: &'a [Entry]) -> SinkFuture<'a>;
}

/// A `PutEvents` call that failed as a whole.
#[derive(Debug, Clone, thiserror::Error)]
#[error("publishing events failed: {0}")]
pub struct SinkError(pub String);

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExportSummary {
    /// Entries published and deleted.
    pub exported: u64,
    /// Entries EventBridge refused (or a failed call) after every attempt; they stay for the
    /// next run.
    pub failed: u64,
    /// Journals read.
    pub journals: u64,
    /// Passes over the journals (each starts with `JournalIndex::commands` `EXISTS`).
    pub passes: u64,
    /// Age of the oldest entry left unexported when the run ended, ms (0: none left).
    pub lag_ms: u64,
    /// `draw_run` entries among those published: draws completed (each journaled once, by
    /// the step that completed it).
    pub draws: u64,
    /// Another run held the lock: this one did nothing.
    pub skipped_locked: bool,
}

/// One run under the export lock that takes no new journal after `deadline` (the Lambda's
/// deadline) or the lock's lifetime, each less [`STOP_MARGIN`].
///
/// # Errors
/// [`Error`] when Redis cannot be reached (what was deleted stays deleted; what was published
/// and not deleted is published again by the next run).
pub async fn run_until(
    store: &Store,
    index: &JournalIndex,
    sink: &dyn EventSink,
    deadline: Option<Instant>,
) -> Result<ExportSummary, Error> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let started = Instant::now();
    let lock_ttl = cfg.ledger_export.lock_ttl_ms;
    let Some(lock) = Lock::try_acquire(store, &keys.export_lock(), lock_ttl).await? else {
        return Ok(ExportSummary {
            skipped_locked: true,
            ..Default::default()
        });
    };
    let lock_end = started + Duration::from_millis(lock_ttl);
    let stop_at = deadline
        .map_or(lock_end, |d| d.min(lock_end))
        .checked_sub(STOP_MARGIN)
        .unwrap_or(started);
    let result = run_locked(store, index, sink, stop_at).await;
    let released = lock.release(store).await;
    let summary = result?;
    released?;
    Ok(summary)
}

async fn run_locked(
    store: &Store,
    index: &JournalIndex,
    sink: &dyn EventSink,
    stop_at: Instant,
) -> Result<ExportSummary, Error> {
    let mut summary = ExportSummary::default();
    loop {
        let pending = journal::pending(store, index).await?;
        summary.passes += 1;
        if pending.is_empty() {
            return Ok(summary);
        }
        if Instant::now() >= stop_at {
            summary.lag_ms = lag_ms(store, &pending).await?;
            return Ok(summary);
        }
        let before = summary.exported;
        let results: Vec<Result<(u64, u64, u64), Error>> = stream::iter(0..pending.len())
            .map(|i| drain(store, &pending[i], sink, stop_at))
            .buffer_unordered(JOURNALS_IN_FLIGHT)
            .collect()
            .await;
        for r in results {
            let (exported, failed, draws) = r?;
            summary.exported += exported;
            summary.failed += failed;
            summary.draws += draws;
            summary.journals += 1;
        }
        if summary.exported == before {
            // Nothing accepted in a whole pass (EventBridge refusing): stop, the entries wait.
            summary.lag_ms = lag_ms(store, &pending).await?;
            return Ok(summary);
        }
    }
}

/// Publishes journal `key`'s entries until it is empty, `stop_at` passes, or a batch is
/// refused after [`PUBLISH_ATTEMPTS`]; returns (exported, failed, `draw_run` entries exported).
async fn drain(
    store: &Store,
    key: &str,
    sink: &dyn EventSink,
    stop_at: Instant,
) -> Result<(u64, u64, u64), Error> {
    let (mut exported, mut failed, mut draws) = (0, 0, 0);
    while Instant::now() < stop_at {
        let mut entries = journal::read(store, key, READ_BATCH).await?;
        if entries.is_empty() {
            break;
        }
        crate::coupons::feed::prepare(store, &mut entries).await?;
        let mut refused = 0;
        for batch in entries.chunks(PUT_EVENTS_MAX) {
            let accepted = publish(sink, batch).await;
            let ids: Vec<String> = batch
                .iter()
                .zip(&accepted)
                .filter(|(_, ok)| **ok)
                .map(|(e, _)| e.stream_id.clone())
                .collect();
            draws += batch
                .iter()
                .zip(&accepted)
                .filter(|(e, ok)| **ok && e.kind == Kind::DrawRun)
                .count() as u64;
            journal::ack(store, key, &ids).await?;
            exported += ids.len() as u64;
            refused += (batch.len() - ids.len()) as u64;
        }
        if refused > 0 {
            failed += refused;
            break;
        }
    }
    Ok((exported, failed, draws))
}

/// `batch` published, the refused entries again up to [`PUBLISH_ATTEMPTS`] times; which were
/// accepted, in order.
async fn publish(sink: &dyn EventSink, batch: &[Entry]) -> Vec<bool> {
    let mut accepted = vec![false; batch.len()];
    for attempt in 0..PUBLISH_ATTEMPTS {
        let todo: Vec<usize> = (0..batch.len()).filter(|&i| !accepted[i]).collect();
        if todo.is_empty() {
            break;
        }
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
        }
        let entries: Vec<Entry> = todo.iter().map(|&i| batch[i].clone()).collect();
        match sink.publish(&entries).await {
            Ok(ok) if ok.len() == entries.len() => {
                for (i, ok) in todo.iter().zip(ok) {
                    accepted[*i] = ok;
                }
            }
            Ok(ok) => tracing::error!(
                sent = entries.len(),
                answered = ok.len(),
                "PutEvents answered for another number of entries; none counted as accepted"
            ),
            Err(e) => tracing::warn!(error = %e, attempt, "PutEvents failed"),
        }
    }
    accepted
}

/// Redis `TIME` less the oldest entry's time among `keys`, ms (0 when they are empty).
async fn lag_ms(store: &Store, keys: &[String]) -> Result<u64, Error> {
    let Some(oldest) = journal::oldest_at_ms(store, keys).await? else {
        return Ok(0);
    };
    let mut conn = store.conn().await?;
    let (secs, micros): (i64, i64) = conn.query_on_slot_of(&keys[0], &redis::cmd("TIME")).await?;
    Ok((secs * 1000 + micros / 1000 - oldest).max(0) as u64)
}

/// Runs one [`run_until`] before `deadline_ms` (the invocation's deadline, Unix ms), logs and
/// counts it ([`metrics`]: `LedgerExported`, `DrawRun`, `LedgerExportFailed`, and the gauge
/// `LedgerExportLagMs` on every run that held the lock; a run that fails counts one
/// `LedgerExportFailed`), and returns its summary.
///
/// # Errors
/// [`Error`] when Redis cannot be reached (the invocation fails; the next run continues).
pub async fn run(
    store: &Store,
    index: &JournalIndex,
    sink: &dyn EventSink,
    deadline_ms: Option<u64>,
) -> Result<ExportSummary, Error> {
    let deadline = super::scheduled::deadline(deadline_ms);
    let summary = match run_until(store, index, sink, deadline).await {
        Ok(s) => s,
        Err(e) => {
            metrics::count(metrics::LEDGER_EXPORT_FAILED, 1);
            return Err(e);
        }
    };
    metrics::count(metrics::LEDGER_EXPORTED, summary.exported);
    metrics::count(metrics::DRAW_RUN, summary.draws);
    metrics::count(metrics::LEDGER_EXPORT_FAILED, summary.failed);
    if !summary.skipped_locked {
        metrics::gauge(metrics::LEDGER_EXPORT_LAG_MS, summary.lag_ms as f64);
    }
    tracing::info!(
        exported = summary.exported,
        failed = summary.failed,
        journals = summary.journals,
        passes = summary.passes,
        lag_ms = summary.lag_ms,
        skipped_locked = summary.skipped_locked,
        "ledger export run finished"
    );
    Ok(summary)
}

/// Serves the ledger-export function: every EventBridge scheduled event runs [`run`] until
/// the invocation's deadline and returns the summary ([`super::scheduled::serve`]).
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve(
    store: std::sync::Arc<Store>,
    sink: std::sync::Arc<dyn EventSink>,
) -> Result<(), lambda_runtime::Error> {
    // Once per sandbox: the 65,536 journal names, grouped on first use as the connection needs.
    let index = std::sync::Arc::new(JournalIndex::new(&store.config().key_prefix));
    super::scheduled::serve(|deadline_ms| {
        let (store, sink, index) = (store.clone(), sink.clone(), index.clone());
        async move { run(&store, &index, sink.as_ref(), Some(deadline_ms)).await }
    })
    .await
}
