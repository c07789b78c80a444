//! The money journal, ledger-export and reconcile-cron, on standalone and on the 3-master
//! cluster, with EventBridge and CloudWatch Logs from moto (`harness::moto`, a real server
//! process, never a fake).
//!
//! A scenario of every kind of movement (deposits, a withdrawal, a packet paid for, grabbed,
//! claimed and refunded at expiry, each step retried) leaves exactly one journal entry per
//! movement. ledger-export runs are then interleaved with a run killed between `PutEvents`
//! and the delete: the events that reached the feed, de-duplicated by `event_id`, are
//! exactly the journal's entries (none missing, none extra), every duplicate carries an id
//! already seen with the same detail, and per user they add up to the wallet's balance.
//! reconcile-cron's walk, across runs, finds no wallet the scripts moved and every wallet
//! moved outside them.

mod reconcile_cron;

use std::collections::{BTreeMap, BTreeSet};

use harness::moto::{LedgerFeed, MotoServer};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::{Entry, Kind};
use hongbao::domain::reconcile::Mismatch;
use hongbao::lambda::ledger_export;
use hongbao::lambda::ledger_export::eventbridge::EventBridgeSink;
use hongbao::lambda::reconcile as lambda_reconcile;
use hongbao::packets;
use hongbao::packets::rules::ClaimOutcome;
use hongbao::store::audit::{self, ExportedMovement};
use hongbao::store::journal::{self, JournalIndex};
use hongbao::store::keys::Keys;
use hongbao::store::{reclaim, reconcile};
use hongbao::wallet;
use hongbao::wallet::WithdrawalOutcome;
use hongbao::Store;
use serde_json::Value;

use crate::common::{self, create, lucky, sleep_until_redis_ms};

/// Every journal entry, oldest first per journal.
async fn all_entries(store: &Store, index: &JournalIndex) -> Vec<Entry> {
    let mut out = Vec::new();
    for key in journal::pending(store, index).await.unwrap() {
        out.extend(journal::read(store, &key, 100_000).await.unwrap());
    }
    out
}

/// (kind, user, signed cents, reference) of each entry, sorted.
fn movements(entries: &[Entry]) -> Vec<(Kind, String, i64, String)> {
    let mut m: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.kind,
                e.user_id.clone(),
                e.amount_cents,
                e.reference.clone(),
            )
        })
        .collect();
    m.sort();
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_movement_is_journaled_once_and_exported_at_least_once() {
    let moto = MotoServer::start();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| {
            c.ledger_export.lock_ttl_ms = 30_000;
            c.packets.grab_rate_limit = 0;
        });
        let index = JournalIndex::new("hb");
        assert!(journal::pending(&store, &index).await.unwrap().is_empty());
        let (packet_id, claimed) = every_movement_sent_twice(&store).await;
        let entries = all_entries(&store, &index).await;
        one_entry_per_movement(&entries, &packet_id, &claimed, backend);
        let ids: BTreeSet<&str> = entries.iter().map(|e| e.event_id.as_str()).collect();
        assert_eq!(ids.len(), entries.len());
        let events = export_killed_then_drained(&moto, &redis, &store, &index, &ids).await;
        the_feed_holds_every_entry(&events, &ids, backend);
        reconciled_per_user(&store, &entries, &events, ids.len(), &claimed, backend).await;
    }
}

/// Deposits, each sent twice; a withdrawal, sent twice, and one refused; a packet of 3 shares:
/// two grabbed and claimed (each claim sent twice), one left and refunded at expiry (reclaim
/// run twice). Returns the packet's id and each claimer's cents.
async fn every_movement_sent_twice(store: &Store) -> (String, BTreeMap<&'static str, i64>) {
    // Deposits, each sent twice.
    for (user, cents, reference) in [("alice", 10_000, "d-1"), ("bob", 500, "d-2")] {
        for _ in 0..2 {
            wallet::deposit(store, user, cents, reference)
                .await
                .unwrap();
        }
    }
    // A withdrawal, sent twice, and one refused.
    for _ in 0..2 {
        wallet::withdraw(store, "alice", 1_000, "wd-1")
            .await
            .unwrap();
    }
    let refused = wallet::withdraw(store, "bob", 501, "wd-2").await.unwrap();
    assert!(matches!(
        refused,
        WithdrawalOutcome::InsufficientFunds { .. }
    ));
    // A packet of 3 shares: two grabbed and claimed (each claim sent twice), one left.
    let p = create(store, "alice", &lucky(3_000, 3, 1)).await;
    let mut claimed = BTreeMap::new();
    for user in ["bob", "carol"] {
        packets::grab(store, &p.packet_id, user).await.unwrap();
        for _ in 0..2 {
            match packets::claim(store, &p.packet_id, user).await.unwrap() {
                ClaimOutcome::Claimed { share, .. } => {
                    claimed.insert(user, share.amount_cents);
                }
                other => panic!("{other:?}"),
            }
        }
    }
    sleep_until_redis_ms(store, p.expires_at_ms).await;
    reclaim::run(store).await.unwrap();
    reclaim::run(store).await.unwrap();
    (p.packet_id, claimed)
}

/// The journal holds one entry per movement (a retried step adds none), the settled entry
/// the refund and the claims.
fn one_entry_per_movement(
    entries: &[Entry],
    id: &str,
    claimed: &BTreeMap<&str, i64>,
    backend: Backend,
) {
    let refund = 3_000 - claimed.values().sum::<i64>();
    let mut want = vec![
        (Kind::Deposit, "alice".into(), 10_000, "d-1".into()),
        (Kind::Deposit, "bob".into(), 500, "d-2".into()),
        (Kind::Withdrawal, "alice".into(), -1_000, "wd-1".into()),
        (Kind::PacketDebit, "alice".into(), -3_000, id.to_string()),
        (
            Kind::ClaimCredit,
            "bob".into(),
            claimed["bob"],
            id.to_string(),
        ),
        (
            Kind::ClaimCredit,
            "carol".into(),
            claimed["carol"],
            id.to_string(),
        ),
        (Kind::RefundCredit, "alice".into(), refund, id.to_string()),
        (Kind::PacketSettled, "alice".into(), 0, id.to_string()),
    ];
    want.sort();
    assert_eq!(
        movements(entries),
        want,
        "{backend}: one entry per movement"
    );
    let settled = entries
        .iter()
        .find(|e| e.kind == Kind::PacketSettled)
        .unwrap();
    assert_eq!(
        (settled.refunded_cents, settled.claimed_cents),
        (Some(refund), Some(3_000 - refund))
    );
}

/// Export: one run killed once it published (stuck after PutEvents, before any delete;
/// common::KilledAfterPublish), then runs until drained, and an idle run; returns what reached
/// the feed.
async fn export_killed_then_drained(
    moto: &MotoServer,
    redis: &TestRedis,
    store: &Store,
    index: &JournalIndex,
    ids: &BTreeSet<&str>,
) -> Vec<Value> {
    let backend = redis.backend();
    let feed = LedgerFeed::create(moto, &format!("hongbao-ledger-{backend}")).await;
    let client = aws_sdk_eventbridge::Client::new(&moto.sdk_config());
    let sink = EventBridgeSink::new(client, feed.bus_name());
    common::export_killed_after_publish(store, redis, sink.clone()).await;
    // Published, not deleted: every entry is still in the journal.
    let left: BTreeSet<String> = all_entries(store, index)
        .await
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(
        left,
        ids.iter().map(|id| id.to_string()).collect::<BTreeSet<_>>(),
        "{backend}: the killed run deleted entries"
    );
    let run = ledger_export::run_until(store, index, &sink, None)
        .await
        .unwrap();
    assert_eq!(
        (run.exported, run.failed, run.lag_ms, run.skipped_locked),
        (ids.len() as u64, 0, 0, false),
        "{backend}: {run:?}"
    );
    assert!(journal::pending(store, index).await.unwrap().is_empty());
    let mut conn = store.conn().await.unwrap();
    for key in redis.all_keys().await {
        if key.ends_with(":journal") {
            let (len, ttl): (u64, i64) = redis::pipe()
                .cmd("XLEN")
                .arg(&key)
                .cmd("PTTL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(
                len == 0 && ttl > 0 && ttl <= 60_000,
                "{backend}: an exported journal is kept empty a minute at most ({key}: {len}, {ttl} ms)"
            );
        }
    }
    let idle = ledger_export::run_until(store, index, &sink, None)
        .await
        .unwrap();
    assert_eq!(
        (idle.exported, idle.passes, idle.lag_ms),
        (0, 1, 0),
        "{idle:?}"
    );

    feed.drain().await
}

/// What reached the feed: every entry, some twice, never anything else.
fn the_feed_holds_every_entry(events: &[Value], ids: &BTreeSet<&str>, backend: Backend) {
    let mut by_id: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in events {
        assert_eq!(e["source"], "hongbao", "{e}");
        let detail = e["detail"].clone();
        let kind = Kind::parse(detail["kind"].as_str().unwrap()).unwrap();
        assert_eq!(e["detail-type"], kind.detail_type(), "{e}");
        by_id
            .entry(detail["event_id"].as_str().unwrap().to_string())
            .or_default()
            .push(detail);
    }
    let got: BTreeSet<&str> = by_id.keys().map(String::as_str).collect();
    assert_eq!(
        &got, ids,
        "{backend}: the events are exactly the journal's entries"
    );
    let repeated = by_id.values().filter(|d| d.len() > 1).count();
    assert!(
        repeated > 0 && events.len() > ids.len(),
        "{backend}: the killed run's events were published again"
    );
    for details in by_id.values() {
        assert!(details.iter().all(|d| d == &details[0]), "{details:?}");
    }
}

/// Reconciliation (store::audit::reconcile, the `reconcile` example's check): per user, the
/// distinct events add up to the balance; a movement the feed lost shows as that user's gap.
async fn reconciled_per_user(
    store: &Store,
    entries: &[Entry],
    events: &[Value],
    distinct: usize,
    claimed: &BTreeMap<&str, i64>,
    backend: Backend,
) {
    // Reconciliation (store::audit::reconcile, the `reconcile` example's check): per
    // user, the distinct events add up to the balance.
    let exported: Vec<ExportedMovement> = events
        .iter()
        .map(|e| ExportedMovement {
            event_id: e["detail"]["event_id"].as_str().unwrap().into(),
            user_id: e["detail"]["user_id"].as_str().unwrap().into(),
            amount_cents: e["detail"]["amount_cents"].as_i64().unwrap(),
        })
        .collect();
    let r = audit::reconcile(store, &exported).await.unwrap();
    assert!(r.gaps().is_empty(), "{backend}: {r:?}");
    assert_eq!(r.duplicates, events.len() - distinct);
    let sums: Vec<(&str, i64)> = r
        .users
        .iter()
        .map(|u| (u.user_id.as_str(), u.events_cents))
        .collect();
    assert_eq!(sums.len(), 3, "{sums:?}");
    // A movement the feed lost shows as that user's gap: drop bob's claim credit.
    let lost_id = &entries
        .iter()
        .find(|e| e.kind == Kind::ClaimCredit && e.user_id == "bob")
        .unwrap()
        .event_id;
    let without: Vec<ExportedMovement> = exported
        .iter()
        .filter(|m| &m.event_id != lost_id)
        .cloned()
        .collect();
    let r = audit::reconcile(store, &without).await.unwrap();
    let gaps: Vec<(&str, i64)> = r
        .gaps()
        .iter()
        .map(|u| (u.user_id.as_str(), u.gap_cents()))
        .collect();
    assert_eq!(gaps, [("bob", claimed["bob"])], "{backend}");
}

/// Walks every wallet with reconcile-cron's store step, `per_run` wallets a run, until a pass
/// is over: the runs it took, the wallets it checked and those that did not reconcile (user ->
/// what was wrong).
async fn reconcile_pass(
    store: &Store,
    per_run: u64,
) -> (u32, u64, BTreeMap<String, Vec<Mismatch>>) {
    let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut runs, mut checked, mut found) = (0, 0, BTreeMap::new());
    loop {
        let (summary, unreconciled) = reconcile::run_until(store, far, per_run).await.unwrap();
        runs += 1;
        checked += summary.checked;
        for w in unreconciled {
            found.insert(w.id, w.mismatches);
        }
        if summary.pass_completed {
            return (runs, checked, found);
        }
        assert!(runs < 1_000, "a pass never ends");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reconcile_cron_finds_every_wallet_moved_outside_the_scripts_and_no_other() {
    for backend in Backend::all() {
        // Arrange: every kind of movement, each step sent twice, and 40 more funded wallets.
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| c.packets.grab_rate_limit = 0);
        every_movement_sent_twice(&store).await;
        for i in 0..40 {
            wallet::deposit(&store, &format!("u{i:02}"), 100, "d-u")
                .await
                .unwrap();
        }

        // Act and assert: a pass over runs of about 7 wallets (a `SCAN` step may return more
        // keys than it was asked for) checks all 43 and finds nothing.
        let (runs, checked, found) = reconcile_pass(&store, 7).await;
        assert!(runs > 1, "{backend:?}: the pass took {runs} run");
        assert!(checked >= 43, "{backend:?}: {checked} wallets checked");
        assert_eq!(found, BTreeMap::new(), "{backend:?}");

        // Arrange: money moved outside the scripts, in three wallets.
        let keys = Keys::new("hb");
        let mut conn = store.conn().await.unwrap();
        let created = keys.wallet("u03");
        let () = redis::cmd("HINCRBY")
            .arg(&created.wallet)
            .arg("balance")
            .arg(1)
            .query_async(&mut conn)
            .await
            .unwrap();
        let twice = keys.wallet("u17");
        let head: String = redis::cmd("LINDEX")
            .arg(&twice.ledger)
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap();
        let () = redis::pipe()
            .cmd("LPUSH")
            .arg(&twice.ledger)
            .arg(&head)
            .cmd("HINCRBY")
            .arg(&twice.wallet)
            .arg("balance")
            .arg(100)
            .query_async(&mut conn)
            .await
            .unwrap();
        let edited = keys.wallet("carol");
        let head: String = redis::cmd("LINDEX")
            .arg(&edited.ledger)
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap();
        let entry = hongbao::wallet::rules::Entry::parse(&head).unwrap();
        let changed = format!(
            "{}|{}|{}|{}",
            entry.kind.as_str(),
            entry.amount_cents + 1,
            entry.at_ms,
            entry.reference
        );
        let () = redis::pipe()
            .cmd("LSET")
            .arg(&edited.ledger)
            .arg(0)
            .arg(&changed)
            .cmd("HINCRBY")
            .arg(&edited.wallet)
            .arg("balance")
            .arg(1)
            .query_async(&mut conn)
            .await
            .unwrap();

        // Act: the next pass, and one run of the function's job.
        let (_, _, found) = reconcile_pass(&store, 7).await;
        let run = lambda_reconcile::run(&store, None).await.unwrap();

        // Assert: exactly the three wallets, each for what was done to it (the deposit's
        // journal entry, not exported yet, says the balance before the edit).
        let kinds: BTreeMap<&str, Vec<&str>> = found
            .iter()
            .map(|(user, ms)| {
                let kinds = ms
                    .iter()
                    .map(|m| match m {
                        Mismatch::LedgerSum { .. } => "sum",
                        Mismatch::Twice { .. } => "twice",
                        Mismatch::NotInLedger { .. } => "not in ledger",
                        Mismatch::JournalBalance { .. } => "journal balance",
                        other => panic!("{backend:?}: {user}: {other:?}"),
                    })
                    .collect();
                (user.as_str(), kinds)
            })
            .collect();
        let expected = BTreeMap::from([
            ("carol", vec!["not in ledger"]),
            ("u03", vec!["sum", "journal balance"]),
            ("u17", vec!["twice", "journal balance"]),
        ]);
        assert_eq!(kinds, expected, "{backend:?}");
        assert!(run.pass_completed, "{backend:?}: {run:?}");
        assert_eq!(run.mismatched, 3, "{backend:?}: {run:?}");
    }
}
