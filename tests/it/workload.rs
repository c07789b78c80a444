//! A seeded random workload (deposits, creates, grabs, claims, reclaims, retried and
//! interrupted requests, run in concurrent batches) keeps money conserved at every checkpoint
//! and at the end, on a standalone server and on a cluster. ledger-export runs beside it
//! (EventBridge from moto in server mode), one of them killed between `PutEvents` and the
//! delete: the events the feed received, de-duplicated by `event_id`, are exactly the
//! movements the ledgers hold.
//!
//! What the test expects comes from the operations it generated, never from the answers of the
//! code under test: the deposits are summed from the generated deposit operations (each
//! (user, reference) once, whatever the answers and retries), and every wallet's full ledger
//! is compared with what the generated operations and the packets' final state imply.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::join_all;
use harness::moto::{LedgerFeed, MotoServer};
use harness::{Backend, TestRedis};
use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::lambda::ledger_export::{self, eventbridge::EventBridgeSink, ExportSummary};
use hongbao::packets::{self, CreateOutcome, NewPacket};
use hongbao::store::reclaim::ReclaimSummary;
use hongbao::store::scripts::{self, Call};
use hongbao::store::{journal, reclaim};
use hongbao::wallet;
use hongbao::wallet::{DepositOutcome, EntryKind};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::{assert_conserved, sleep_until_redis_ms, store};

/// One operation of the workload.
#[derive(Debug, Clone)]
enum Op {
    Deposit {
        user: String,
        cents: i64,
        reference: String,
    },
    Create {
        sender: String,
        req: NewPacket,
        key: Option<String>,
    },
    Grab {
        packet: usize,
        user: String,
    },
    Claim {
        packet: usize,
        user: String,
    },
    /// A grab, then claim step 1 only, as if the claim's Lambda died before crediting the
    /// wallet.
    InterruptedClaim {
        packet: usize,
        user: String,
    },
    Reclaim,
}

/// What one operation (and its retry) answered.
#[derive(Debug, Default)]
struct Done {
    /// The answers of the deposit calls, in call order.
    deposits: Vec<DepositOutcome>,
    /// Packets created (a retried create without an idempotency key rightly creates a second
    /// packet).
    created: Vec<String>,
    /// The summaries of the reclaim runs.
    reclaims: Vec<ReclaimSummary>,
    /// (packet id, user) whose claim step 1 answered a pending claim: interrupted claims,
    /// which must be credited exactly once later (by a claim or by reclaim-cron).
    interrupted: Option<(String, String)>,
}

/// Runs `op` (twice when `retry`, as a client retrying after a timeout would).
async fn run(store: &Store, packets_ids: &[String], op: Op, retry: bool) -> Done {
    let times = if retry { 2 } else { 1 };
    let mut done = Done::default();
    for _ in 0..times {
        match &op {
            Op::Deposit {
                user,
                cents,
                reference,
            } => done.deposits.push(
                wallet::deposit(store, user, *cents, reference)
                    .await
                    .unwrap(),
            ),
            Op::Create { sender, req, key } => {
                match packets::create(store, sender, req, key.as_deref())
                    .await
                    .unwrap()
                {
                    CreateOutcome::Created(p) => done.created.push(p.packet_id),
                    CreateOutcome::Repeat(p) => {
                        assert_eq!(done.created, std::slice::from_ref(&p.packet_id))
                    }
                    CreateOutcome::InsufficientFunds { .. } => {}
                    CreateOutcome::IdempotencyKeyReused => panic!("same body, same key"),
                    CreateOutcome::RateLimited { .. } => panic!("the quota is off here"),
                    CreateOutcome::TooManyOpen { .. } => panic!("the bound is off here"),
                }
            }
            Op::Grab { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    packets::grab(store, id, user).await.unwrap();
                }
            }
            Op::Claim { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    packets::claim(store, id, user).await.unwrap();
                }
            }
            Op::InterruptedClaim { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    packets::grab(store, id, user).await.unwrap();
                    let k = hongbao::store::keys::Keys::new("hb").packet(id);
                    let mut conn = store.conn().await.unwrap();
                    let reply: redis::Value = scripts::ClaimCall {
                        meta: &k.meta,
                        grabs: &k.grabs,
                        claims: &k.claims,
                        coupons: &k.coupons,
                        books: &k.meta,
                        journal: &k.meta,
                        user_id: user,
                        books_of: "",
                        call: "",
                    }
                    .invocation()
                    .invoke_async(&mut conn)
                    .await
                    .unwrap();
                    let reply = scripts::texts("claim", reply).unwrap();
                    if reply[0] == "claimed" && reply[2].starts_with("pending:") {
                        done.interrupted = Some((id.clone(), user.clone()));
                    }
                }
            }
            Op::Reclaim => {
                done.reclaims.push(reclaim::run(store).await.unwrap());
            }
        }
    }
    done
}

fn random_op(rng: &mut StdRng, users: &[String], n_packets: usize, step: usize) -> Op {
    let user = users[rng.random_range(0..users.len())].clone();
    let packet = if n_packets == 0 {
        0
    } else {
        rng.random_range(0..n_packets)
    };
    match rng.random_range(0..100) {
        0..=9 => Op::Deposit {
            user,
            cents: rng.random_range(1..5_000),
            reference: format!("ref-{step}"),
        },
        10..=24 => {
            let count = rng.random_range(1..=30);
            let mode = if rng.random_bool(0.3) {
                Mode::Fixed
            } else {
                Mode::Lucky
            };
            let total = match mode {
                Mode::Fixed => count as i64 * rng.random_range(1..=50),
                Mode::Lucky => rng.random_range(count as i64..=3_000),
            };
            Op::Create {
                sender: user,
                req: NewPacket {
                    total_cents: total,
                    count,
                    mode,
                    split: if rng.random_bool(0.5) {
                        LuckySplit::DoubleMean
                    } else {
                        LuckySplit::LineCut
                    },
                    expires_in_secs: rng.random_range(1..=3),
                    greeting: None,
                    recipients: Vec::new(),
                    opens_in_secs: 0,
                    cover: None,
                    password: None,
                    draw: None,
                },
                key: rng.random_bool(0.5).then(|| format!("idem-{step}")),
            }
        }
        25..=64 => Op::Grab { packet, user },
        65..=84 => Op::Claim { packet, user },
        85..=89 => Op::InterruptedClaim { packet, user },
        _ => Op::Reclaim,
    }
}

/// Adds `s` to `total`, checking that no run failed.
fn add_summary(total: &mut ReclaimSummary, s: &ReclaimSummary) {
    assert_eq!(s.failed, 0, "{s:?}");
    total.settled += s.settled;
    total.refunded_cents += s.refunded_cents;
    total.redriven += s.redriven;
}

/// (packets settled, cents refunded) as the packets' own state tells.
async fn settlement_state(store: &Store, packet_ids: &[String]) -> (u64, i64) {
    let (mut settled, mut refunded) = (0, 0);
    for id in packet_ids {
        let v = packets::view(store, id).await.unwrap().unwrap();
        if v.status == packets::Status::Settled {
            assert!(v.packet.settled);
            settled += 1;
            refunded += v.packet.refunded_cents;
        } else {
            assert_eq!(v.packet.refunded_cents, 0, "{id}");
        }
    }
    (settled, refunded)
}

/// (packet id, user) of every claim still pending (step 1 done, credit not yet marked done).
async fn pending_claims(store: &Store, packet_ids: &[String]) -> BTreeSet<(String, String)> {
    let mut conn = store.conn().await.unwrap();
    let mut out = BTreeSet::new();
    for id in packet_ids {
        let claims: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(hongbao::store::keys::Keys::new("hb").packet(id).claims)
            .query_async(&mut conn)
            .await
            .unwrap();
        for (user, state) in claims {
            if state.starts_with("pending:") {
                out.insert((id.clone(), user));
            } else {
                assert!(state.starts_with("done:"), "{id} {user}: {state}");
            }
        }
    }
    out
}

/// Every ledger entry of `user` (the ledger is capped at 1,000 entries; this workload writes
/// far fewer per user).
async fn full_ledger(store: &Store, user: &str) -> Vec<wallet::Entry> {
    let items: Vec<String> = crate::common::list_items(
        store,
        &hongbao::store::keys::Keys::new("hb").wallet(user).ledger,
    )
    .await;
    assert!(
        items.len() < hongbao::wallet::rules::LEDGER_CAP as usize,
        "{user}"
    );
    items
        .iter()
        .map(|i| wallet::Entry::parse(i).unwrap())
        .collect()
}

/// The pause between checkpoints, ms.
const PACE_MS: i64 = 300;

/// Redis `TIME`, Unix ms.
/// The money journal's entries as ledger-export delivered them (`events`: the feed's
/// EventBridge envelopes, duplicates included) are exactly the movements the ledgers hold
/// (`want`: (user, kind, reference) -> amounts), with one `packet_settled` entry per packet
/// (its refund and claims); a duplicate delivery carries an id already seen with the same
/// detail; per user the amounts add up to the balance.
async fn check_journal(
    store: &Store,
    users: &[String],
    packet_ids: &[String],
    want: &BTreeMap<(String, &'static str, String), Vec<i64>>,
    events: &[serde_json::Value],
) {
    let mut by_id: BTreeMap<&str, &serde_json::Value> = BTreeMap::new();
    for e in events {
        assert_eq!(e["source"], "hongbao");
        let d = &e["detail"];
        let id = d["event_id"].as_str().unwrap();
        if let Some(seen) = by_id.insert(id, d) {
            assert_eq!(seen, d, "a duplicate delivery differs");
        }
    }
    let mut got: BTreeMap<(String, &'static str, String), Vec<i64>> = BTreeMap::new();
    let mut settled: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut sums: BTreeMap<String, i64> = BTreeMap::new();
    for d in by_id.values() {
        let kind = journal::Kind::parse(d["kind"].as_str().unwrap()).unwrap();
        let user = d["user_id"].as_str().unwrap().to_string();
        let reference = d["reference"].as_str().unwrap().to_string();
        let amount = d["amount_cents"].as_i64().unwrap();
        *sums.entry(user.clone()).or_default() += amount;
        if kind == journal::Kind::PacketSettled {
            assert_eq!(amount, 0);
            let pair = (
                d["refunded_cents"].as_i64().unwrap(),
                d["claimed_cents"].as_i64().unwrap(),
            );
            let prev = settled.insert(reference.clone(), pair);
            assert!(prev.is_none(), "{reference} settled twice in the journal");
        } else {
            got.entry((user, kind.as_str(), reference))
                .or_default()
                .push(amount);
        }
    }
    for amounts in got.values_mut() {
        amounts.sort();
    }
    let mut want = want.clone();
    for amounts in want.values_mut() {
        amounts.sort();
    }
    assert_eq!(
        got, want,
        "the exported journal holds exactly the ledgers' movements"
    );
    assert_eq!(
        settled.len(),
        packet_ids.len(),
        "one packet_settled entry per packet"
    );
    for id in packet_ids {
        let v = packets::view(store, id).await.unwrap().unwrap();
        assert_eq!(
            settled[id],
            (v.packet.refunded_cents, v.packet.claimed_cents),
            "{id}"
        );
    }
    for u in users {
        let balance = wallet::balance(store, u).await.unwrap();
        assert_eq!(
            sums.get(u).copied().unwrap_or(0),
            balance,
            "{u}: events vs balance"
        );
    }
}

async fn redis_now_ms(store: &Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// What each ledger holds: (user, kind, reference) -> amounts, oldest first.
type Ledgers = BTreeMap<(String, &'static str, String), Vec<i64>>;

/// The workload's state: what it generated (the expectations) and what it saw.
struct Workload {
    rng: StdRng,
    users: Vec<String>,
    /// (user, reference) -> cents of every generated deposit: the expected money, whatever the
    /// code answers.
    generated_deposits: BTreeMap<(String, String), i64>,
    /// (user, reference) -> deposit calls that answered Applied.
    applied: BTreeMap<(String, String), usize>,
    retried_deposits: usize,
    interrupted: BTreeSet<(String, String)>,
    /// Sum of the mid-run reclaim runs' summaries.
    mid: ReclaimSummary,
    packet_ids: Vec<String>,
    step: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeded_random_workload_conserves_money() {
    let moto = MotoServer::start();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| {
            c.packets.grab_rate_limit = 0;
            // A run stops taking journals 5 s before its lock's end: 3 s of work per run.
            c.ledger_export.lock_ttl_ms = 8_000;
        });
        // ledger-export runs beside the workload, publishing to moto's EventBridge.
        let feed = LedgerFeed::create(&moto, &format!("hongbao-workload-{backend}")).await;
        let sink = EventBridgeSink::new(
            aws_sdk_eventbridge::Client::new(&moto.sdk_config()),
            feed.bus_name(),
        );
        let mut w = Workload::new();
        let mut exported = w.twelve_checkpoints(&store, &redis, &sink, backend).await;
        w.every_reference_applied_once(backend);
        // Nothing runs now: every claim still pending is one the workload interrupted.
        let pending = pending_claims(&store, &w.packet_ids).await;
        assert!(
            pending.is_subset(&w.interrupted),
            "{backend:?}: {pending:?} not in {:?}",
            w.interrupted
        );
        let fin = reclaim_after_every_expiry(&store, &w.packet_ids).await;
        w.every_packet_settled_once(&store, &pending, &fin, backend)
            .await;
        let want = w.expected_ledgers(&store, backend).await;
        w.ledgers_are_the_expected(&store, &want, backend).await;
        // Export what is left, then everything the feed received must be the movements.
        exported += export_the_rest(&store, &sink).await;
        let events = feed.drain().await;
        assert!(
            events.len() as u64 > exported,
            "{backend:?}: the killed run's events were delivered again ({} events, {exported} \
             exported by the runs that finished)",
            events.len()
        );
        check_journal(&store, &w.users, &w.packet_ids, &want, &events).await;
        eprintln!(
            "{backend:?}: {} packets, {} deposits ({} retried) = {} cents, {} interrupted \
             claims, {} pending at the end of the workload; mid-run reclaims {:?}; final \
             reclaims {fin:?}",
            w.packet_ids.len(),
            w.generated_deposits.len(),
            w.retried_deposits,
            w.expected_deposits(),
            w.interrupted.len(),
            pending.len(),
            w.mid,
        );
    }
}

impl Workload {
    fn new() -> Self {
        Workload {
            rng: StdRng::seed_from_u64(0x4842_2026),
            users: (0..12).map(|i| format!("w{i}")).collect(),
            generated_deposits: BTreeMap::new(),
            applied: BTreeMap::new(),
            retried_deposits: 0,
            interrupted: BTreeSet::new(),
            mid: ReclaimSummary::default(),
            packet_ids: Vec::new(),
            step: 0,
        }
    }

    /// The sum of the generated deposits, cents.
    fn expected_deposits(&self) -> i64 {
        self.generated_deposits.values().sum()
    }

    /// 12 checkpoints of 5 batches of 10 operations, money conserved and the mid-run reclaims'
    /// reports true at each; ledger-export beside them. Returns the entries the finished
    /// export runs exported.
    async fn twelve_checkpoints(
        &mut self,
        store: &Arc<Store>,
        redis: &TestRedis,
        sink: &EventBridgeSink,
        backend: Backend,
    ) -> u64 {
        let mut exported = 0;
        let mut export: Option<
            tokio::task::JoinHandle<Result<ExportSummary, hongbao::store::Error>>,
        > = None;
        for checkpoint in 0..12 {
            // Pace the checkpoints so packets (1 to 3 s to live) expire while the workload runs
            // and its reclaim operations have something to settle and re-drive.
            if checkpoint > 0 {
                sleep_until_redis_ms(store, redis_now_ms(store).await + PACE_MS).await;
            }
            // ledger-export beside the batches on odd checkpoints (awaited at the next one, so
            // it adds no time to the workload's pace); at checkpoint 5 a run is killed between
            // PutEvents and the delete.
            if let Some(export) = export.take() {
                let s: ExportSummary = export.await.unwrap().unwrap();
                assert_eq!(s.failed, 0, "{backend:?}: {s:?}");
                exported += s.exported;
            }
            export = (checkpoint % 2 == 1 && checkpoint != 5).then(|| {
                let (store, sink) = (store.clone(), sink.clone());
                tokio::spawn(async move {
                    let index = journal::JournalIndex::new("hb");
                    ledger_export::run_until(&store, &index, &sink, None).await
                })
            });
            if checkpoint == 5 {
                crate::common::export_killed_after_publish(store, redis, sink.clone()).await;
            }
            for _batch in 0..5 {
                self.batch(store, backend).await;
            }
            assert_conserved(
                store,
                &self.users,
                &self.packet_ids,
                self.expected_deposits(),
            )
            .await;
            // What the mid-run reclaims reported is what the packets say happened.
            assert_eq!(
                settlement_state(store, &self.packet_ids).await,
                (self.mid.settled, self.mid.refunded_cents),
                "{backend:?}: mid-run reclaim summaries {:?}",
                self.mid
            );
        }
        if let Some(export) = export.take() {
            let s: ExportSummary = export.await.unwrap().unwrap();
            exported += s.exported;
        }
        exported
    }

    /// 10 random operations (a fifth of them retried) at once; a deposit's first call
    /// credits, its retry is a repeat.
    async fn batch(&mut self, store: &Arc<Store>, backend: Backend) {
        let ops: Vec<(Op, bool)> = (0..10)
            .map(|_| {
                self.step += 1;
                (
                    random_op(&mut self.rng, &self.users, self.packet_ids.len(), self.step),
                    self.rng.random_bool(0.2),
                )
            })
            .collect();
        for (op, _) in &ops {
            if let Op::Deposit {
                user,
                cents,
                reference,
            } = op
            {
                let prev = self
                    .generated_deposits
                    .insert((user.clone(), reference.clone()), *cents);
                assert!(prev.is_none(), "references are unique per step");
            }
        }
        let ids = self.packet_ids.clone();
        let results = join_all(ops.clone().into_iter().map(|(op, retry)| {
            let (store, ids) = (store.clone(), ids.clone());
            async move { run(&store, &ids, op, retry).await }
        }))
        .await;
        for ((op, retry), done) in ops.into_iter().zip(results) {
            if let Op::Deposit {
                user, reference, ..
            } = &op
            {
                // The first call credits; a retry of the same reference is a repeat.
                assert_eq!(done.deposits.len(), if retry { 2 } else { 1 });
                assert!(
                    matches!(done.deposits[0], DepositOutcome::Applied { .. }),
                    "{backend:?} {op:?}: {:?}",
                    done.deposits
                );
                assert!(
                    done.deposits[1..]
                        .iter()
                        .all(|d| matches!(d, DepositOutcome::Repeat { .. })),
                    "{backend:?} {op:?}: a retried deposit must answer Repeat: {:?}",
                    done.deposits
                );
                self.retried_deposits += usize::from(retry);
                *self
                    .applied
                    .entry((user.clone(), reference.clone()))
                    .or_default() += done
                    .deposits
                    .iter()
                    .filter(|d| matches!(d, DepositOutcome::Applied { .. }))
                    .count();
            }
            for s in &done.reclaims {
                add_summary(&mut self.mid, s);
            }
            self.interrupted.extend(done.interrupted);
            self.packet_ids.extend(done.created);
        }
    }

    /// The run did what it should exercise (packets, retried deposits, mid-run settlements,
    /// interrupted claims), and each generated reference was applied exactly once.
    fn every_reference_applied_once(&self, backend: Backend) {
        assert!(
            self.packet_ids.len() >= 20,
            "{backend:?}: only {} packets",
            self.packet_ids.len()
        );
        assert!(self.expected_deposits() > 0);
        assert!(
            self.retried_deposits > 0,
            "{backend:?}: no deposit was retried"
        );
        assert_eq!(
            self.applied.keys().collect::<Vec<_>>(),
            self.generated_deposits.keys().collect::<Vec<_>>()
        );
        let not_once: Vec<_> = self.applied.iter().filter(|(_, n)| **n != 1).collect();
        assert!(
            not_once.is_empty(),
            "{backend:?}: each reference is applied exactly once: {not_once:?}"
        );
        // The mid-run reclaims did settle and refund expired packets.
        let mid = &self.mid;
        assert!(
            mid.settled > 0 && mid.refunded_cents > 0,
            "{backend:?}: mid-run reclaims did nothing: {mid:?}"
        );
        assert!(
            !self.interrupted.is_empty(),
            "{backend:?}: no claim was interrupted"
        );
    }

    /// The final runs re-drove exactly the claims left `pending`, and every packet was settled
    /// once over all runs, refunding what the packets say.
    async fn every_packet_settled_once(
        &self,
        store: &Store,
        pending: &BTreeSet<(String, String)>,
        fin: &ReclaimSummary,
        backend: Backend,
    ) {
        let mid = &self.mid;
        assert_eq!(
            fin.redriven,
            pending.len() as u64,
            "{backend:?}: {fin:?} {pending:?}"
        );
        // Which runs re-drive them (mid-run or final) depends on the machine's pace, not on
        // the code: that some were re-driven, and by the final runs exactly those still
        // pending (above), is what is checked.
        assert!(
            mid.redriven + fin.redriven > 0,
            "{backend:?}: reclaim re-drove no interrupted claim: {mid:?} {fin:?}"
        );
        assert!(pending_claims(store, &self.packet_ids).await.is_empty());
        assert_eq!(
            settlement_state(store, &self.packet_ids).await,
            (
                mid.settled + fin.settled,
                mid.refunded_cents + fin.refunded_cents
            ),
            "{backend:?}: {mid:?} {fin:?}"
        );
        assert_eq!(mid.settled + fin.settled, self.packet_ids.len() as u64);
    }

    /// What every ledger must hold, from the generated deposits and the packets' state; every
    /// packet is settled and holds nothing, and every interrupted claim ended claimed.
    async fn expected_ledgers(&self, store: &Store, backend: Backend) -> Ledgers {
        let mut want = Ledgers::new();
        for ((user, reference), cents) in &self.generated_deposits {
            want.entry((user.clone(), EntryKind::Deposit.as_str(), reference.clone()))
                .or_default()
                .push(*cents);
        }
        for id in &self.packet_ids {
            let v = packets::view(store, id).await.unwrap().unwrap();
            assert_eq!(v.status, packets::Status::Settled, "{id}");
            assert_eq!(
                v.packet.claimed_cents + v.packet.refunded_cents,
                v.packet.total_cents,
                "{id}"
            );
            assert_eq!(
                hongbao::store::audit::packet_holding(store, id)
                    .await
                    .unwrap(),
                0,
                "{id}"
            );
            let sender = v.packet.sender_id.clone();
            want.entry((sender.clone(), EntryKind::PacketDebit.as_str(), id.clone()))
                .or_default()
                .push(-v.packet.total_cents);
            if v.packet.refunded_cents > 0 {
                want.entry((sender, EntryKind::RefundCredit.as_str(), id.clone()))
                    .or_default()
                    .push(v.packet.refunded_cents);
            }
            let mut claimed = 0;
            for g in &v.grabs {
                if g.claimed {
                    claimed += g.share.amount_cents;
                    want.entry((
                        g.user_id.clone(),
                        EntryKind::ClaimCredit.as_str(),
                        id.clone(),
                    ))
                    .or_default()
                    .push(g.share.amount_cents);
                }
            }
            assert_eq!(claimed, v.packet.claimed_cents, "{id}");
        }
        // Every interrupted claim ended claimed (and so, by the ledger check, credited exactly
        // once).
        for (id, user) in &self.interrupted {
            assert!(
                want.contains_key(&(user.clone(), EntryKind::ClaimCredit.as_str(), id.clone())),
                "{backend:?}: interrupted claim {id} {user} never credited"
            );
        }
        want
    }

    /// Every wallet's full ledger adds up to its balance and is exactly `want`; after
    /// settlement all money is in wallets.
    async fn ledgers_are_the_expected(&self, store: &Store, want: &Ledgers, backend: Backend) {
        let mut got = Ledgers::new();
        let mut total_balance = 0;
        for u in &self.users {
            let ledger = full_ledger(store, u).await;
            let balance = wallet::balance(store, u).await.unwrap();
            assert_eq!(
                ledger.iter().map(|e| e.amount_cents).sum::<i64>(),
                balance,
                "{backend:?}: {u}'s ledger does not add up to the balance"
            );
            total_balance += balance;
            for e in ledger.into_iter().rev() {
                got.entry((u.clone(), e.kind.as_str(), e.reference))
                    .or_default()
                    .push(e.amount_cents);
            }
        }
        let keys: BTreeSet<_> = got.keys().chain(want.keys()).cloned().collect();
        let wrong: Vec<_> = keys
            .into_iter()
            .filter(|k| got.get(k) != want.get(k))
            .map(|k| {
                let (g, w) = (got.get(&k).cloned(), want.get(&k).cloned());
                (k, g, w)
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{backend:?}: ledger entries ((user, kind, reference), got, want): {wrong:?}"
        );
        let expected_deposits = self.expected_deposits();
        assert_conserved(store, &self.users, &self.packet_ids, expected_deposits).await;
        assert_eq!(
            total_balance, expected_deposits,
            "{backend:?}: after settlement all money is in wallets"
        );
    }
}

/// Lets every packet expire, then reclaims until nothing is due (at most 11 runs); returns
/// the final runs' summaries summed.
async fn reclaim_after_every_expiry(store: &Store, packet_ids: &[String]) -> ReclaimSummary {
    let mut last_expiry = 0;
    for id in packet_ids {
        last_expiry = last_expiry.max(
            packets::view(store, id)
                .await
                .unwrap()
                .unwrap()
                .packet
                .expires_at_ms,
        );
    }
    sleep_until_redis_ms(store, last_expiry).await;
    let mut fin = ReclaimSummary::default();
    let mut rounds = 0;
    loop {
        let s = reclaim::run(store).await.unwrap();
        add_summary(&mut fin, &s);
        rounds += 1;
        if s.remaining_due == 0 || rounds > 10 {
            break;
        }
    }
    fin
}

/// ledger-export runs until no journal is pending (at most 20); returns what they exported.
async fn export_the_rest(store: &Store, sink: &EventBridgeSink) -> u64 {
    let index = journal::JournalIndex::new("hb");
    let mut exported = 0;
    for _ in 0..20 {
        if journal::pending(store, &index).await.unwrap().is_empty() {
            break;
        }
        let s = ledger_export::run_until(store, &index, sink, None)
            .await
            .unwrap();
        exported += s.exported;
    }
    assert!(journal::pending(store, &index).await.unwrap().is_empty());
    exported
}
