//! ledger-export in the soak: runs beside the clients on the sandboxes, under the same faults,
//! some killed (at a random point, or right after `PutEvents` answered and before the delete);
//! after healing, the journals are drained into the feed and the feed, de-duplicated by
//! `event_id`, is what the checker judges as the journal.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hongbao::domain::journal::{Entry, Kind};
use hongbao::lambda::ledger_export::{self, eventbridge::EventBridgeSink};
use hongbao::store::journal::{self, JournalIndex};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use super::Log;
use crate::common::KilledAfterPublish;

/// What the export runs during the faults did, for the report.
#[derive(Debug, Default)]
pub struct ExportStats {
    /// Runs that ended (a failed Redis call included).
    pub runs: u64,
    /// Entries those runs published and deleted.
    pub exported: u64,
    /// Runs that ended with a Redis error.
    pub errors: u64,
    /// Runs skipped because another held the export lock.
    pub skipped_locked: u64,
    /// Runs dropped at a random point.
    pub killed: u64,
    /// Runs dropped once `PutEvents` answered, before the delete.
    pub killed_after_publish: u64,
}

/// Export runs until `deadline`, one every 200-1,000 ms on a sandbox drawn from `seed`; one
/// in ten is killed when `PutEvents` answered, one in ten after 5-400 ms. A killed run's lock
/// is then removed, as its TTL would remove it later (so the runs after it get work done).
pub async fn run(
    sandboxes: Vec<Arc<Store>>,
    sink: EventBridgeSink,
    seed: u64,
    deadline: Instant,
    log: Log,
) -> ExportStats {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6578_706f_7274);
    let mut stats = ExportStats::default();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(rng.random_range(200..1_000))).await;
        let store = &sandboxes[rng.random_range(0..sandboxes.len())];
        let index = JournalIndex::new(&store.config().key_prefix);
        let roll = rng.random_range(0..100);
        if roll < 10 {
            let killer = KilledAfterPublish::new(sink.clone());
            tokio::select! {
                () = killer.published() => {
                    stats.killed_after_publish += 1;
                    log.note("export run killed after PutEvents, before the delete".into());
                    lapse_lock(store).await;
                }
                r = ledger_export::run_until(store, &index, &killer, None) => {
                    // Nothing to publish (or Redis failed first): it ended on its own.
                    tally(&mut stats, store, r).await;
                }
            }
        } else if roll < 20 {
            let after = Duration::from_millis(rng.random_range(5..400));
            match tokio::time::timeout(after, ledger_export::run_until(store, &index, &sink, None))
                .await
            {
                Ok(r) => tally(&mut stats, store, r).await,
                Err(_) => {
                    stats.killed += 1;
                    log.note(format!("export run killed after {after:?}"));
                    lapse_lock(store).await;
                }
            }
        } else {
            let r = ledger_export::run_until(store, &index, &sink, None).await;
            tally(&mut stats, store, r).await;
        }
    }
    stats
}

/// `DEL` of the export lock (`<prefix>:{export}:lock`), as its TTL would after a killed run;
/// retried while the cluster is faulted (the lock lapses on its own otherwise).
async fn lapse_lock(store: &Store) {
    let key = format!("{}:{{export}}:lock", store.config().key_prefix);
    for _ in 0..10 {
        if let Ok(mut conn) = store.conn().await {
            let done: redis::RedisResult<i64> =
                redis::cmd("DEL").arg(&key).query_async(&mut conn).await;
            if done.is_ok() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Counts a run that ended. After a Redis error the release of its lock may have failed too:
/// the lock is removed again (the run has ended, nothing of it goes on).
async fn tally(
    stats: &mut ExportStats,
    store: &Store,
    r: Result<ledger_export::ExportSummary, hongbao::store::Error>,
) {
    stats.runs += 1;
    match r {
        Ok(s) => {
            stats.exported += s.exported;
            stats.skipped_locked += u64::from(s.skipped_locked);
        }
        Err(_) => {
            stats.errors += 1;
            lapse_lock(store).await;
        }
    }
}

/// Export runs on the healed system until no journal holds an entry (a killed run's lock
/// lapses within its TTL first). Panics when 60 s pass without an entry exported.
pub async fn drain(store: &Store, sink: &EventBridgeSink) {
    let index = JournalIndex::new(&store.config().key_prefix);
    let mut progress = Instant::now();
    loop {
        let pending = journal::pending(store, &index)
            .await
            .expect("pending journals after healing");
        if pending.is_empty() {
            return;
        }
        assert!(
            progress.elapsed() < Duration::from_secs(60),
            "no journal entry exported for 60 s after healing; pending: {pending:?}"
        );
        match ledger_export::run_until(store, &index, sink, None).await {
            Ok(s) if s.exported > 0 => progress = Instant::now(),
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// The feed's events as journal entries, one per `event_id` (a duplicate delivery must carry
/// the same detail), and the violations found on the way: a malformed event, a duplicate that
/// differs, and, per user (or merchant), amounts that do not add up to the final balance
/// (`balances`, cents: wallets' and merchant budgets').
pub fn entries(events: &[Value], balances: &BTreeMap<String, i64>) -> (Vec<Entry>, Vec<String>) {
    let mut v = Vec::new();
    let mut by_id: BTreeMap<String, &Value> = BTreeMap::new();
    for e in events {
        let d = &e["detail"];
        let Some(id) = d["event_id"].as_str() else {
            v.push(format!("feed: an event without event_id: {e}"));
            continue;
        };
        if let Some(seen) = by_id.insert(id.to_string(), d) {
            if seen != d {
                v.push(format!(
                    "feed: event {id} delivered twice, differently: {seen} / {d}"
                ));
            }
        }
    }
    let mut out = Vec::with_capacity(by_id.len());
    let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
    for (id, d) in &by_id {
        let int = |k: &str| d[k].as_i64();
        let parsed = (|| {
            Some(Entry {
                stream_id: format!("feed:{id}"),
                event_id: id.clone(),
                kind: Kind::parse(d["kind"].as_str()?)?,
                // A merchant's movement names its merchant instead of a wallet's user.
                user_id: d["user_id"]
                    .as_str()
                    .or(d["merchant_id"].as_str())?
                    .to_string(),
                amount_cents: int("amount_cents")?,
                reference: d["reference"].as_str()?.to_string(),
                at_ms: int("at_ms")?,
                balance_cents: int("balance_cents")?,
                refunded_cents: int("refunded_cents"),
                claimed_cents: int("claimed_cents"),
                order_reference: d["order_reference"].as_str().map(str::to_string),
                discount_cents: int("discount_cents"),
                campaign_counts: None,
                code: d["code"].as_str().map(str::to_string),
                campaign_id: d["campaign_id"].as_str().map(str::to_string),
                draw: d["seed"]
                    .as_str()
                    .map(|seed| hongbao::domain::journal::DrawRunFigures {
                        entrants: d["entrants"].as_u64().unwrap_or_default(),
                        winners: d["winners"].as_u64().unwrap_or_default(),
                        seed: seed.to_string(),
                        commitment: d["commitment"].as_str().unwrap_or_default().to_string(),
                        threshold: d["threshold"].as_str().map(str::to_string),
                    }),
                ledger_trimmed_cents: int("ledger_trimmed_cents"),
                share_coupon: d["amount_off_cents"].as_i64().map(|a| {
                    hongbao::domain::journal::IssuedShare {
                        merchant_id: d["merchant_id"].as_str().unwrap_or_default().to_string(),
                        amount_off_cents: a,
                    }
                }),
            })
        })();
        match parsed {
            Some(e) => out.push(e),
            None => v.push(format!("feed: malformed event {id}: {d}")),
        }
    }
    for e in &out {
        *sums.entry(e.user_id.as_str()).or_default() += e.amount_cents;
    }
    for (user, balance) in balances {
        let sum = sums.get(user.as_str()).copied().unwrap_or(0);
        if sum != *balance {
            v.push(format!(
                "feed: {user}'s movements add up to {sum}, the wallet holds {balance}"
            ));
        }
    }
    (out, v)
}
