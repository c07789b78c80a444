//! Money under production faults, against real `redis-server` processes:
//! late claim re-drives, `volatile-*` eviction, `allkeys-*` refusal, exact integers and the
//! balance limit, reclaim that one failing packet cannot block, and index entries that a create
//! never removes. Records are aged by moving their "forget after" scores, never by sleeping.

use std::time::Duration;

use harness::{Backend, RawConn, TestRedis};
use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::history::rules as history;
use hongbao::order_codes;
use hongbao::packets::{self, ClaimOutcome, CreateOutcome, GrabOutcome, NewPacket};
use hongbao::store::keys::Keys;
use hongbao::store::reclaim;
use hongbao::store::scripts::{self, Call};
use hongbao::wallet::{self, DepositOutcome};
use hongbao::Store;

use crate::common::{self, assert_conserved, create, fund, lucky, sleep_until_redis_ms, store};

const DAY_MS: f64 = 86_400_000.0;

/// Ages every idempotency record of `user` by `days`: moves each finite "forget after" score
/// back (pinned records, `+inf`, stay pinned), as if that much time had passed.
async fn age_records(store: &Store, user: &str, days: f64) {
    let forget = Keys::new("hb").wallet(user).records_forget;
    let mut conn = store.conn().await.unwrap();
    let scores: Vec<(String, f64)> = crate::common::zset_with_scores(store, &forget).await;
    for (member, score) in scores {
        if score.is_finite() {
            let _: i64 = redis::cmd("ZADD")
                .arg(&forget)
                .arg("XX")
                .arg(score - days * DAY_MS)
                .arg(&member)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
}

/// Grabs the only share of `packet_id` for `user` and runs claim steps 1 and 2 (the production
/// transfer, [`packets::claim_credit`]), as if the Lambda died before step 3.
async fn claim_interrupted_after_credit(store: &Store, packet_id: &str, user: &str) -> i64 {
    let GrabOutcome::Grabbed { share, .. } = packets::grab(store, packet_id, user).await.unwrap()
    else {
        panic!("grab failed")
    };
    let step_one = common::claim_step_one(store, packet_id, user).await;
    let claimed_at_ms: i64 = step_one[2]
        .strip_prefix("pending:")
        .unwrap()
        .parse()
        .unwrap();
    let transfer_id = wallet::claim_transfer_id(packet_id);
    let fingerprint = share.amount_cents.to_string();
    let entry = history::ReceivedEntry {
        packet_id: packet_id.to_string(),
        sender_id: step_one[3].clone(),
        amount_cents: share.amount_cents,
        share_id: share.share_id,
        claimed_at_ms,
    }
    .member(history::year_of(&store.config().history.tz, claimed_at_ms));
    let c = wallet::credit(
        store,
        user,
        &packets::claim_credit(
            packet_id,
            &transfer_id,
            share.amount_cents,
            &fingerprint,
            &entry,
        ),
    )
    .await
    .unwrap();
    assert!(c.applied);
    share.amount_cents
}

/// A claim interrupted after its wallet credit and re-driven long after the old
/// 15-day record lifetime (and after the wallet's expired records were pruned) credits once;
/// once done, its record is un-pinned and pruned like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_redrive_credits_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 300).await;
        let p = create(&store, "sender", &lucky(300, 1, 600)).await;
        let share = claim_interrupted_after_credit(&store, &p.packet_id, "bob").await;
        assert_eq!(wallet::balance(&store, "bob").await.unwrap(), share);

        // 40 days pass (beyond the 30-day deposit window and the old 15-day claim TTL); bob's
        // next deposits prune every record whose time has come.
        fund(&store, "bob", 1).await;
        age_records(&store, "bob", 40.0).await;
        for _ in 0..3 {
            fund(&store, "bob", 1).await;
        }
        let w = Keys::new("hb").wallet("bob");
        let mut conn = store.conn().await.unwrap();
        let kept: Vec<String> = redis::cmd("HKEYS")
            .arg(&w.records)
            .query_async(&mut conn)
            .await
            .unwrap();
        let claim_id = wallet::claim_transfer_id(&p.packet_id);
        assert!(
            kept.contains(&claim_id),
            "{backend:?}: pinned claim record pruned: {kept:?}"
        );
        assert_eq!(
            kept.len(),
            4,
            "{backend:?}: aged deposit not pruned: {kept:?}"
        );

        // The re-drive (bob's retry) finds the credit: nothing is paid again.
        match packets::claim(&store, &p.packet_id, "bob").await.unwrap() {
            ClaimOutcome::Claimed {
                repeat,
                balance_cents,
                ..
            } => {
                assert!(repeat, "{backend:?}");
                assert_eq!(balance_cents, share + 4, "{backend:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(wallet::balance(&store, "bob").await.unwrap(), share + 4);
        let users = ["sender", "bob"].map(String::from);
        assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 304).await;

        // Done: the record is un-pinned, then forgotten once its time passes.
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(&w.records_forget)
            .arg(&claim_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(score.is_some_and(f64::is_finite), "{backend:?}: {score:?}");
        age_records(&store, "bob", 2.0).await;
        fund(&store, "bob", 1).await;
        let gone: bool = redis::cmd("HEXISTS")
            .arg(&w.records)
            .arg(&claim_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(!gone, "{backend:?}: done claim record kept for ever");
    }
}

/// `INFO memory` field `name` of a standalone server.
async fn info_field(conn: &mut RawConn, section: &str, name: &str) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// Writes `n` junk keys of 1 kB, each with a TTL (what a shared cache holds besides hongbao).
async fn junk(conn: &mut RawConn, from: usize, n: usize) {
    let value = "x".repeat(1000);
    for chunk in (from..from + n).collect::<Vec<_>>().chunks(500) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.cmd("SET")
                .arg(format!("junk:{i}"))
                .arg(&value)
                .arg("EX")
                .arg(3600)
                .ignore();
        }
        let _: () = pipe.query_async(conn).await.unwrap();
    }
}

/// With `maxmemory` + `volatile-lru` (what an ElastiCache Serverless cache does at its data
/// storage limit; elsewhere the functions refuse the policy) and memory churned by TTL'd junk
/// (tens of thousands of evictions), retried deposits, creates and claims never pay twice, the
/// money journal's unexported entries all survive, and the day's order codes go on (the day
/// hash has no TTL: evicted, it would stop the day with 500s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volatile_eviction_never_pays_twice() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let mut raw = redis.raw_conn().await;
    let used = info_field(&mut raw, "memory", "used_memory").await;
    for (k, v) in [
        ("maxmemory-policy", "volatile-lru".to_string()),
        ("maxmemory", (used + 8_000_000).to_string()),
    ] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    junk(&mut raw, 0, 10_000).await;

    let first = wallet::deposit(&store, "alice", 1_000, "pay-123")
        .await
        .unwrap();
    assert_eq!(
        first,
        DepositOutcome::Applied {
            balance_cents: 1_000
        }
    );
    let req = NewPacket {
        total_cents: 500,
        count: 1,
        mode: Mode::Fixed,
        split: LuckySplit::DoubleMean,
        expires_in_secs: 600,
        greeting: None,
        recipients: Vec::new(),
        opens_in_secs: 0,
        cover: None,
        password: None,
        draw: None,
    };
    let CreateOutcome::Created(p) = packets::create(&store, "alice", &req, Some("k-1"))
        .await
        .unwrap()
    else {
        panic!("create failed")
    };
    let share = claim_interrupted_after_credit(&store, &p.packet_id, "bob").await;
    // The money journal before the churn: unexported entries (deposit, packet debit, claim
    // credit) must all survive it.
    let index = hongbao::store::journal::JournalIndex::new("hb");
    let journal_entries = || async {
        let mut all = Vec::new();
        for key in hongbao::store::journal::pending(&store, &index)
            .await
            .unwrap()
        {
            all.extend(
                hongbao::store::journal::read(&store, &key, 1_000)
                    .await
                    .unwrap(),
            );
        }
        all
    };
    let journaled = journal_entries().await;
    assert_eq!(journaled.len(), 3, "{journaled:?}");
    let codes = |outcome: Result<order_codes::Outcome, hongbao::Error>| match outcome {
        Ok(order_codes::Outcome::Issued { codes, .. }) => codes,
        other => panic!("order codes stopped: {other:?}"),
    };
    let mut issued = codes(order_codes::next_codes(&store, "carol", 5).await);

    // Churn: 30 MB of TTL'd junk through an 8 MB budget.
    junk(&mut raw, 10_000, 30_000).await;
    let evicted = info_field(&mut raw, "stats", "evicted_keys").await;
    assert!(evicted > 20_000, "only {evicted} keys evicted");
    issued.extend(codes(order_codes::next_codes(&store, "carol", 5).await));
    issued.sort();
    issued.dedup();
    assert_eq!(issued.len(), 10, "{issued:?}");

    assert_eq!(
        wallet::deposit(&store, "alice", 1_000, "pay-123")
            .await
            .unwrap(),
        DepositOutcome::Repeat { balance_cents: 500 }
    );
    match packets::create(&store, "alice", &req, Some("k-1"))
        .await
        .unwrap()
    {
        CreateOutcome::Repeat(again) => assert_eq!(again.packet_id, p.packet_id),
        other => panic!("retried create paid again: {other:?}"),
    }
    match packets::claim(&store, &p.packet_id, "bob").await.unwrap() {
        ClaimOutcome::Claimed {
            repeat,
            balance_cents,
            ..
        } => assert_eq!((repeat, balance_cents), (true, share)),
        other => panic!("{other:?}"),
    }
    let users = ["alice", "bob"].map(String::from);
    assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 1_000).await;
    // Nothing unexported was evicted, and the repeats above journaled nothing new.
    assert_eq!(journal_entries().await, journaled);
}

/// An evicting policy (`allkeys-*`, `volatile-*`) refuses the cold start with the setting
/// named; `noeviction` starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicting_policies_refuse_cold_start() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        for (policy, refused) in [
            ("allkeys-lru", true),
            ("allkeys-lfu", true),
            ("volatile-lru", true),
            ("volatile-ttl", true),
            ("noeviction", false),
        ] {
            set_policy(&redis, policy).await;
            let verdict = hongbao::lambda::check_eviction(&store).await;
            assert_eq!(verdict.is_err(), refused, "{backend:?} {policy}");
            if let Err(e) = verdict {
                let text = e.to_string();
                assert!(
                    text.contains("maxmemory-policy")
                        && text.contains(policy)
                        && text.contains("noeviction"),
                    "{text}"
                );
            }
        }
    }
}

/// An ElastiCache Serverless cache (whose policy no one sets) reporting `volatile-lru` starts
/// with a warning; `allkeys-*` still refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serverless_cache_starts_with_volatile_eviction() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |c| {
        c.redis_auth.iam_target = hongbao::store::redis_auth::IamTarget::ElastiCacheServerless;
    });

    set_policy(&redis, "volatile-lru").await;
    let volatile = hongbao::lambda::check_eviction(&store).await;
    set_policy(&redis, "allkeys-lru").await;
    let allkeys = hongbao::lambda::check_eviction(&store).await;

    assert!(volatile.is_ok(), "{volatile:?}");
    assert!(allkeys.is_err());
}

async fn set_policy(redis: &TestRedis, policy: &str) {
    redis
        .on_every_node(
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("maxmemory-policy")
                .arg(policy)
                .clone(),
        )
        .await;
}

/// 1,001 deposits of 10^11 cents: exact up to the balance limit, then 409-style
/// `BalanceLimit` with nothing written; with the limit raised, exact balances, ledger entries,
/// a 10^14-cent packet debit and its refund (once written "1e+14").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_integers_and_the_balance_limit() {
    const BIG: i64 = 100_000_000_000;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let capped = store(&redis, |_| {});
        let (mut applied, mut limited) = (0, 0);
        for i in 0..1_001 {
            match wallet::deposit(&capped, "whale", BIG, &format!("d{i}"))
                .await
                .unwrap()
            {
                DepositOutcome::Applied { balance_cents } => {
                    applied += 1;
                    assert_eq!(balance_cents, applied * BIG);
                }
                DepositOutcome::BalanceLimit { balance_cents } => {
                    limited += 1;
                    assert_eq!(balance_cents, 10_000_000_000_000);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((applied, limited), (100, 901), "{backend:?}");
        let w = wallet::get(&capped, "whale").await.unwrap();
        assert_eq!(w.balance_cents, 10_000_000_000_000);
        assert!(w.entries.iter().all(|e| e.amount_cents == BIG));

        let open = store(&redis, |c| {
            c.wallet.max_balance_cents = 1_000_000_000_000_000;
            c.packets.max_total_cents = 100_000_000_000_000;
        });
        for i in 0..1_001 {
            let out = wallet::deposit(&open, "whale2", BIG, &format!("d{i}"))
                .await
                .unwrap();
            assert!(matches!(out, DepositOutcome::Applied { .. }), "{out:?}");
        }
        let total = 1_001 * BIG;
        assert_eq!(wallet::balance(&open, "whale2").await.unwrap(), total);
        let req = NewPacket {
            total_cents: 100_000_000_000_000,
            count: 1,
            mode: Mode::Fixed,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 1,
            greeting: None,
            recipients: Vec::new(),
            opens_in_secs: 0,
            cover: None,
            password: None,
            draw: None,
        };
        let p = create(&open, "whale2", &req).await;
        let w = wallet::get(&open, "whale2").await.unwrap();
        assert_eq!(w.balance_cents, total - 100_000_000_000_000);
        assert_eq!(w.entries[0].amount_cents, -100_000_000_000_000);
        sleep_until_redis_ms(&open, p.expires_at_ms).await;
        let s = reclaim::run(&open).await.unwrap();
        assert_eq!(s.refunded_cents, 100_000_000_000_000, "{s:?}");
        let w = wallet::get(&open, "whale2").await.unwrap();
        assert_eq!(w.balance_cents, total);
        assert_eq!(w.entries[0].amount_cents, 100_000_000_000_000);
        let mut conn = open.conn().await.unwrap();
        let meta: Vec<String> = redis::cmd("HMGET")
            .arg(Keys::new("hb").packet(&p.packet_id).meta)
            .arg("total_cents")
            .arg("refunded_cents")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(meta, ["100000000000000", "100000000000000"]);
    }
}

/// A packet whose settlement fails (a pending claim without its share
/// record) is skipped and retried with backoff while the other due packets are settled, and
/// `settle.lua` writes nothing before it fails; `due_add.lua` never moves an existing entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_packet_does_not_block_refunds() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| c.reclaim.batch = 2);
        let senders: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
        let mut ids = Vec::new();
        for s in &senders {
            fund(&store, s, 100).await;
            ids.push(create(&store, s, &lucky(100, 2, 1)).await);
        }
        // The first packet's claim is broken: its share record is gone.
        let bad = &ids[0];
        let share = claim_interrupted_after_credit(&store, &bad.packet_id, "bob").await;
        let pk = Keys::new("hb").packet(&bad.packet_id);
        let mut conn = store.conn().await.unwrap();
        let _: i64 = redis::cmd("HDEL")
            .arg(&pk.grabs)
            .arg("bob")
            .query_async(&mut conn)
            .await
            .unwrap();

        // An id drawn twice keeps its entry and due time.
        let due_key = Keys::new("hb").reclaim_due();
        let before: f64 = redis::cmd("ZSCORE")
            .arg(&due_key)
            .arg(&bad.packet_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        let (added, _indexed_at_ms): (i64, i64) = scripts::DueAddCall {
            due: &due_key,
            packet_id: &bad.packet_id,
            expires_in_secs: 600,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await
        .unwrap();
        let after: f64 = redis::cmd("ZSCORE")
            .arg(&due_key)
            .arg(&bad.packet_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!((added, after), (0, before), "{backend:?}");

        sleep_until_redis_ms(&store, ids.iter().map(|p| p.expires_at_ms).max().unwrap()).await;
        let s = reclaim::run(&store).await.unwrap();
        assert_eq!((s.settled, s.failed), (4, 1), "{backend:?} {s:?}");
        assert_eq!(s.refunded_cents, 400, "{s:?}");
        assert!(s.batches >= 3, "batches of 2 until nothing is due: {s:?}");
        assert_eq!(
            s.remaining_due, 0,
            "the failed packet waits for its backoff: {s:?}"
        );
        // Nothing of the failed settlement was written.
        assert_eq!(wallet::balance(&store, "s0").await.unwrap(), 0);
        let status: String = redis::cmd("HGET")
            .arg(&pk.meta)
            .arg("status")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(status, "open", "{backend:?}");
        let retry_at: f64 = redis::cmd("ZSCORE")
            .arg(&due_key)
            .arg(&bad.packet_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            retry_at > bad.expires_at_ms as f64 + 4_000.0,
            "backoff: {retry_at}"
        );
        for (i, p) in ids.iter().enumerate().skip(1) {
            assert_eq!(wallet::balance(&store, &senders[i]).await.unwrap(), 100);
            let indexed: Option<f64> = redis::cmd("ZSCORE")
                .arg(&due_key)
                .arg(&p.packet_id)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(indexed, None);
        }

        // Repaired (the share record restored) and its backoff over: settled once.
        let _: i64 = redis::cmd("HSET")
            .arg(&pk.grabs)
            .arg("bob")
            .arg(format!("1:{share}:0"))
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: i64 = redis::cmd("ZADD")
            .arg(&due_key)
            .arg("XX")
            .arg(0)
            .arg(&bad.packet_id)
            .query_async(&mut conn)
            .await
            .unwrap();
        let s = reclaim::run(&store).await.unwrap();
        assert_eq!((s.settled, s.failed, s.redriven), (1, 0, 1), "{s:?}");
        assert_eq!(wallet::balance(&store, "s0").await.unwrap(), 100 - share);
        assert_eq!(wallet::balance(&store, "bob").await.unwrap(), share);
        let mut users = senders.clone();
        users.push("bob".into());
        let packet_ids: Vec<String> = ids.iter().map(|p| p.packet_id.clone()).collect();
        assert_conserved(&store, &users, &packet_ids, 500).await;
    }
}

/// Sends SIGCONT to a frozen server when dropped (also when an assertion fails).
struct Thaw(i32);

impl Drop for Thaw {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.0, libc::SIGCONT);
        }
    }
}

/// The port of the master that serves `key`'s hash slot.
async fn master_port_of(conn: &mut RawConn, key: &str) -> u16 {
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap();
    let slots: redis::Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(conn)
        .await
        .unwrap();
    let redis::Value::Array(ranges) = slots else {
        panic!()
    };
    for r in ranges {
        let redis::Value::Array(r) = r else { panic!() };
        let (redis::Value::Int(lo), redis::Value::Int(hi), redis::Value::Array(master)) =
            (&r[0], &r[1], &r[2])
        else {
            panic!()
        };
        if (*lo..=*hi).contains(&slot) {
            let redis::Value::Int(port) = master[1] else {
                panic!()
            };
            return port as u16;
        }
    }
    panic!("slot {slot} not served")
}

/// On a cluster, with the master of a grabber's wallet frozen (SIGSTOP), reclaim
/// reports that packet `failed` while the other due packet is settled in the same run; after
/// the master returns, the next run settles it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_goes_on_while_a_wallet_master_is_down() {
    let redis = TestRedis::start(Backend::Cluster);
    let Some(cluster) = redis.cluster() else {
        return; // only the plain 3-master cluster (this test is not in `make replicas`)
    };
    redis
        .on_every_node(
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("cluster-require-full-coverage")
                .arg("no")
                .clone(),
        )
        .await;
    let store = store(&redis, |c| {
        c.connect_timeout = Duration::from_millis(300);
        c.response_timeout = Duration::from_millis(300);
    });
    let keys = Keys::new("hb");
    let mut raw = redis.raw_conn().await;
    let reclaim_port = master_port_of(&mut raw, &keys.reclaim_due()).await;
    // A victim whose wallet lives on a master other than the reclaim index's, and two senders
    // whose wallets (and so packets) live on neither.
    let mut victim_port = 0;
    let mut victim = String::new();
    for i in 0.. {
        let u = format!("victim{i}");
        let port = master_port_of(&mut raw, &keys.wallet(&u).wallet).await;
        if port != reclaim_port {
            (victim, victim_port) = (u, port);
            break;
        }
    }
    let mut senders = Vec::new();
    for i in 0.. {
        let u = format!("sender{i}");
        if master_port_of(&mut raw, &keys.wallet(&u).wallet).await != victim_port {
            senders.push(u);
            if senders.len() == 2 {
                break;
            }
        }
    }
    let mut packets_ = Vec::new();
    for s in &senders {
        fund(&store, s, 100).await;
        packets_.push(create(&store, s, &lucky(100, 1, 1)).await);
    }
    let share = claim_interrupted_after_credit(&store, &packets_[0].packet_id, &victim).await;
    sleep_until_redis_ms(
        &store,
        packets_[1].expires_at_ms.max(packets_[0].expires_at_ms),
    )
    .await;

    let node = cluster
        .nodes()
        .iter()
        .find(|n| n.port() == victim_port)
        .unwrap();
    let pid = node.pid().unwrap() as i32;
    let thaw = Thaw(pid);
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    let s = reclaim::run(&store).await.unwrap();
    drop(thaw);
    assert_eq!(s.failed, 1, "{s:?}");
    assert_eq!(
        s.settled, 2,
        "both refunds written (the first one's claim still pending): {s:?}"
    );
    assert_eq!(s.refunded_cents, 100, "{s:?}");
    assert_eq!(wallet::balance(&store, &senders[1]).await.unwrap(), 100);

    // The master is back and the backoff is over (moved, not slept): settled once.
    let mut conn = store.conn().await.unwrap();
    let _: i64 = redis::cmd("ZADD")
        .arg(keys.reclaim_due())
        .arg("XX")
        .arg(0)
        .arg(&packets_[0].packet_id)
        .query_async(&mut conn)
        .await
        .unwrap();
    let s = reclaim::run(&store).await.unwrap();
    assert_eq!((s.settled, s.failed, s.redriven), (0, 0, 1), "{s:?}");
    assert_eq!(wallet::balance(&store, &victim).await.unwrap(), share);
    let mut users = senders.clone();
    users.push(victim.clone());
    let ids: Vec<String> = packets_.iter().map(|p| p.packet_id.clone()).collect();
    assert_conserved(&store, &users, &ids, 200).await;
}

/// The audit reports a funded, expired packet that lost its reclaim-index entry
/// (money no run would ever refund), and not the ones the index still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_sees_stuck_money() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "s", 300).await;
        let lost = create(&store, "s", &lucky(100, 2, 1)).await;
        let fine = create(&store, "s", &lucky(100, 2, 1)).await;
        let open = create(&store, "s", &lucky(100, 2, 600)).await;
        let mut conn = store.conn().await.unwrap();
        for p in [&lost, &open] {
            let _: i64 = redis::cmd("ZREM")
                .arg(Keys::new("hb").reclaim_due())
                .arg(&p.packet_id)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        assert_eq!(
            hongbao::store::audit::stuck_packets(&store).await.unwrap(),
            vec![]
        );
        sleep_until_redis_ms(&store, lost.expires_at_ms.max(fine.expires_at_ms)).await;
        let stuck = hongbao::store::audit::stuck_packets(&store).await.unwrap();
        assert_eq!(
            stuck,
            vec![hongbao::store::audit::StuckPacket {
                packet_id: lost.packet_id.clone(),
                expires_at_ms: lost.expires_at_ms,
                held_cents: 100,
            }],
            "{backend:?}"
        );
        // Conservation alone cannot tell: the stuck packet still "holds" its money.
        let ids = [&lost, &fine, &open].map(|p| p.packet_id.clone());
        assert_conserved(&store, &["s".to_string()], &ids, 300).await;
    }
}
