//! Any call may run twice: the cluster client re-sends a command whose reply was lost, and a
//! network may deliver the first copy late. Each money script answers a re-run of the same call
//! (same ids, same arguments) as its first run did, writing nothing; the Rust side never undoes
//! state on an answer a re-run could give; and a claim's credit record outlives every re-drive
//! that saw the claim pending.
//!
//! The re-run is sent here as the client would send it: the same script call again.

use harness::{Backend, TestRedis};
use hongbao::history::rules::{year_of, ReceivedEntry, YearBounds};
use hongbao::packets::{self, CreateOutcome};
use hongbao::store::journal;
use hongbao::store::keys::{new_packet_id, Keys};
use hongbao::store::reclaim::CREATE_WINDOW_MS;
use hongbao::store::scripts::{texts, Call, CreatePacketCall, DueAddCall};
use hongbao::wallet;
use hongbao::Store;

use crate::common::{claim_step_one, fund, lucky, store};

/// One create call of `total` cents in two fixed shares by `sender`, with `key` (if any), for
/// the packet id `packet_id` indexed at `indexed_at_ms`: the arguments `store::packets::create`
/// sends, so that the test can send the very same call twice.
async fn create_call(
    store: &Store,
    sender: &str,
    packet_id: &str,
    key: Option<&str>,
    total: i64,
    indexed_at_ms: i64,
) -> Vec<String> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let wk = keys.wallet(sender);
    let pk = keys.packet(packet_id);
    let record_id = key.map(|k| format!("create:{k}")).unwrap_or_default();
    let bounds = YearBounds::around(&cfg.history.tz, indexed_at_ms).arg();
    let shares = [total / 2, total - total / 2];
    let salt = "5a".repeat(32);
    let call = CreatePacketCall {
        wallet: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        meta: &pk.meta,
        shares: &pk.shares,
        creates: &wk.creates,
        recipients: &pk.recipients,
        sent: &wk.sent,
        received: &wk.received,
        history_totals: &wk.history_totals,
        journal: &wk.journal,
        open_packets: &wk.open_packets,
        creates_day: &wk.creates_day,
        packet_id,
        sender_id: sender,
        total_cents: total,
        count: 2,
        mode: "fixed",
        split: "",
        greeting: "",
        expires_in_secs: 60,
        fingerprint: "v2:resend",
        record_id: &record_id,
        record_keep_ms: 86_400_000,
        ledger_cap: 1000,
        packets_per_window: cfg.packets.packets_per_minute,
        window_ms: 60_000,
        recipient_ids: "",
        history_retention_ms: cfg.history.retention_ms,
        year_bounds: &bounds,
        indexed_at_ms,
        delivery_window_ms: CREATE_WINDOW_MS,
        opens_in_secs: 0,
        cover: "",
        salt: &salt,
        commitment: &hongbao::packets::rules::receipt::commitment(&salt, &shares),
        password: "",
        draw_entry_ms: "",
        draw_seed: "",
        draw_commitment: "",
        max_open_packets: cfg.packets.max_open_packets,
        packets_per_day: cfg.packets.packets_per_day,
        day_window_ms: 86_400_000,
        share_amounts: &shares,
    };
    let mut conn = store.conn().await.unwrap();
    texts(
        "create_packet",
        call.invocation().invoke_async(&mut conn).await.unwrap(),
    )
    .unwrap()
}

/// Indexes a fresh packet id of `sender` as `store::packets::create` does; returns the id and
/// the index's Redis TIME.
async fn indexed_id(store: &Store, sender: &str) -> (String, i64) {
    let id = new_packet_id(sender);
    let mut conn = store.conn().await.unwrap();
    let (added, at): (i64, i64) = DueAddCall {
        due: &Keys::new(&store.config().key_prefix).reclaim_due(),
        packet_id: &id,
        expires_in_secs: 60,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await
    .unwrap();
    assert_eq!(added, 1);
    (id, at)
}

/// Entries of `user`'s money journal.
async fn journal_len(store: &Store, user: &str) -> usize {
    let key = Keys::new(&store.config().key_prefix).wallet(user).journal;
    journal::read(store, &key, 1000).await.unwrap().len()
}

/// A create run twice answers `created` twice with one debit, one journal entry and one sent
/// history entry, with or without an Idempotency-Key, when the second run finds the balance
/// spent by the first (it answered `insufficient_funds`) or the sender's quota used up by it
/// (`rate_limited`); before, the keyed re-run answered `repeat` and the Rust side withdrew the
/// packet's reclaim entry, and the unkeyed one answered a refusal for a packet that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_run_twice_answers_as_its_first_run() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let quota = store(&redis, |c| c.packets.packets_per_minute = 1);
        for (case, key, store) in [
            ("unkeyed, balance spent", None, store(&redis, |_| {})),
            ("keyed", Some("k-1"), store(&redis, |_| {})),
            ("unkeyed, quota used", None, quota),
        ] {
            let sender = format!("s-{}", case.replace([' ', ','], "-"));
            fund(&store, &sender, 300).await;
            let (id, at) = indexed_id(&store, &sender).await;
            let first = create_call(&store, &sender, &id, key, 300, at).await;
            let again = create_call(&store, &sender, &id, key, 300, at).await;
            assert_eq!(first, ["created", id.as_str()], "{backend:?} {case}");
            assert_eq!(again, first, "{backend:?} {case}: the re-run's answer");
            assert_eq!(wallet::balance(&store, &sender).await.unwrap(), 0);
            assert_eq!(journal_len(&store, &sender).await, 2, "deposit + one debit");
            let view = packets::view(&store, &id).await.unwrap().unwrap();
            assert_eq!(view.packet.total_cents, 300, "{backend:?} {case}");
        }
    }
}

/// Another packet under the id is `id_taken`; a call delivered after its window creates
/// nothing (`late`), whatever the balance; a refused create keeps its reclaim index entry
/// (brought forward to the index time, for reclaim-cron to look at soon), never removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_and_foreign_runs_create_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "ann", 1_000).await;
        fund(&store, "bo", 1_000).await;
        let (id, at) = indexed_id(&store, "ann").await;
        assert_eq!(
            create_call(&store, "ann", &id, None, 300, at).await,
            ["created", id.as_str()]
        );
        // The same id with another total: another call.
        assert_eq!(
            create_call(&store, "ann", &id, None, 500, at).await,
            ["id_taken"],
            "{backend:?}"
        );
        // Indexed longer ago than the window: nothing created, nothing debited.
        let (late, at) = indexed_id(&store, "ann").await;
        let answer = create_call(&store, "ann", &late, None, 300, at - CREATE_WINDOW_MS - 1).await;
        assert_eq!(answer, ["late"], "{backend:?}");
        assert!(packets::view(&store, &late).await.unwrap().is_none());
        assert_eq!(wallet::balance(&store, "ann").await.unwrap(), 700);

        // Refused for funds through store::packets::create: the entry stays, due at once.
        let keys = Keys::new(&store.config().key_prefix);
        let before: Vec<String> = {
            let mut conn = store.conn().await.unwrap();
            redis::cmd("ZRANGE")
                .arg(keys.reclaim_due())
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap()
        };
        let out = packets::create(&store, "bo", &lucky(5_000, 2, 600), None)
            .await
            .unwrap();
        assert!(
            matches!(out, CreateOutcome::InsufficientFunds { .. }),
            "{out:?}"
        );
        let mut conn = store.conn().await.unwrap();
        let after: Vec<(String, f64)> =
            crate::common::zset_with_scores(&store, &keys.reclaim_due()).await;
        let new: Vec<&(String, f64)> = after.iter().filter(|(m, _)| !before.contains(m)).collect();
        assert_eq!(
            new.len(),
            1,
            "{backend:?}: the refused call's entry stays: {after:?}"
        );
        let now_ms = {
            let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
            s * 1000 + us / 1000
        };
        assert!(
            new[0].1 <= now_ms as f64,
            "{backend:?}: brought forward to the index time, not the packet's expiry: {new:?}"
        );
    }
}

/// A claim re-drive that read the claim as pending and reaches the grabber's wallet only after
/// the claim was finished by another request, its record un-pinned and the wallet's records
/// pruned by a later deposit, finds the record and credits nothing: the record is kept at
/// least `MIN_IDEMPOTENCY_TTL_SECS`, even for a rule set built with a 1-second TTL. (With the
/// record kept `HONGBAO_IDEMPOTENCY_TTL_SECS` = 1 s, as before, the share was paid twice.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_claim_redrive_pays_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| c.packets.idempotency_ttl_secs = 1);
        fund(&store, "alice", 1_000).await;
        let p = crate::common::create(&store, "alice", &lucky(400, 1, 600)).await;
        let id = p.packet_id.clone();
        let share = match packets::grab(&store, &id, "bob").await.unwrap() {
            packets::GrabOutcome::Grabbed { share, .. } => share,
            other => panic!("{other:?}"),
        };
        // The slow request: step 1 read the claim as pending, then it stalls.
        let step1 = claim_step_one(&store, &id, "bob").await;
        assert!(step1[2].starts_with("pending:"), "{step1:?}");
        // Another request finishes the claim (credit, done, record un-pinned).
        let done = packets::claim(&store, &id, "bob").await.unwrap();
        assert!(
            matches!(done, packets::ClaimOutcome::Claimed { .. }),
            "{done:?}"
        );
        assert_eq!(
            wallet::balance(&store, "bob").await.unwrap(),
            share.amount_cents
        );
        // Time passes; later credits to bob's wallet prune the records whose time is up.
        tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
        for _ in 0..3 {
            fund(&store, "bob", 1).await;
        }
        // The slow request goes on with step 2.
        let transfer_id = wallet::claim_transfer_id(&id);
        let fingerprint = share.amount_cents.to_string();
        let claimed_at_ms: i64 = step1[2]["pending:".len()..].parse().unwrap();
        let tz = &store.config().history.tz;
        let entry = ReceivedEntry {
            packet_id: id.clone(),
            sender_id: "alice".into(),
            amount_cents: share.amount_cents,
            share_id: share.share_id,
            claimed_at_ms,
        }
        .member(year_of(tz, claimed_at_ms));
        let credited = wallet::credit(
            &store,
            "bob",
            &packets::claim_credit(&id, &transfer_id, share.amount_cents, &fingerprint, &entry),
        )
        .await
        .unwrap();
        assert!(!credited.applied, "{backend:?}: the share was paid twice");
        assert_eq!(
            wallet::balance(&store, "bob").await.unwrap(),
            share.amount_cents + 3,
            "{backend:?}"
        );
    }
}

/// An article post run twice answers `posted` twice with the first run's time and score and
/// writes one article; an article under that id by anyone else is `id_taken` (before, the
/// re-run answered `id_taken` and the Rust side posted a second article under the next id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_article_post_run_twice_answers_as_its_first_run() {
    use hongbao::store::scripts::ArticlePostCall;
    use hongbao::voting::rules::{ArticleId, Order};
    use hongbao::voting::SiteKeys;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        let keys = SiteKeys::of(store.config());
        let id = ArticleId::new(7).unwrap();
        let post = |poster: &'static str| {
            let store = store.clone();
            let keys = keys.clone();
            async move {
                let mut conn = store.conn().await.unwrap();
                let reply = ArticlePostCall {
                    article: &keys.article(id),
                    voters: &keys.voters(id),
                    score: &keys.ranking(Order::Score),
                    time: &keys.ranking(Order::Time),
                    post_quota: &keys.post_quota(poster),
                    member: &id.member(),
                    poster,
                    title: "Re-sent",
                    link: "https://example.com/re-sent",
                    voting_window_secs: 604_800,
                    vote_score: 432,
                    ..Default::default()
                }
                .invocation()
                .invoke_async(&mut conn)
                .await
                .unwrap();
                texts("article_post", reply).unwrap()
            }
        };
        let first = post("ann").await;
        assert_eq!(first[0], "posted", "{backend:?}");
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        assert_eq!(post("ann").await, first, "{backend:?}: the re-run's answer");
        assert_eq!(post("bo").await, ["id_taken"], "{backend:?}");
        let mut conn = store.conn().await.unwrap();
        let ranked: u64 = redis::cmd("ZCARD")
            .arg(keys.ranking(Order::Time))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(ranked, 1, "{backend:?}");
    }
}

/// A grab run twice (the same call, as a cluster client re-sends it after a lost reply)
/// answers `grabbed` with the same share both times and takes one share; another call of the
/// same user is a repeat (`already_grabbed`), and so is a call without a call id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_run_twice_answers_as_its_first_run() {
    use hongbao::store::scripts::{text, GrabCall};
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1_000).await;
        let p = crate::common::create(&store, "sender", &lucky(300, 3, 600)).await;
        let keys = Keys::new(&store.config().key_prefix);
        let pk = keys.packet(&p.packet_id);
        let rate = keys.grab_rate(&p.packet_id, "bob");
        let call = |call_id: &'static str| GrabCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            rate: &rate,
            recipients: &pk.recipients,
            wrong_guesses: &pk.wrong_guesses,
            guesses: &pk.wrong_guesses,
            order: &pk.order,
            user_id: "bob",
            rate_limit: 10,
            rate_window_ms: 1_000,
            password: "",
            call_id,
            guess_budget: 100,
            guess_window_ms: 10_000,
            guesses_per_user: 0,
        };
        let mut conn = store.conn().await.unwrap();
        let mut run = async |call_id| {
            text(
                "grab",
                call(call_id)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await
                    .unwrap(),
            )
            .unwrap()
        };
        let first = run("0a1b2c3d").await;
        assert!(first.starts_with("grabbed:1:"), "{backend:?}: {first}");
        assert_eq!(run("0a1b2c3d").await, first, "{backend:?}: the re-run");
        assert!(run("99999999").await.starts_with("already_grabbed:1:"));
        assert!(run("").await.starts_with("already_grabbed:1:"));
        let v = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
        assert_eq!(v.packet.grabbed_count, 1, "{backend:?}");
    }
}

/// A settle run again after a later settle call (the reclaim cron's next pass) answers as its
/// first run did, `settled` by this call with its refund, and writes nothing: not the keys'
/// retention TTL either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settle_sent_again_after_a_later_settle_answers_its_first_run() {
    use hongbao::store::reclaim::Payer;
    use hongbao::store::scripts::SettleCall;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1_000).await;
        let p = crate::common::create(&store, "sender", &lucky(300, 3, 1)).await;
        crate::common::sleep_until_redis_ms(&store, p.expires_at_ms).await;
        let keys = Keys::new(&store.config().key_prefix);
        let (pk, payer) = (keys.packet(&p.packet_id), Payer::wallet(&keys, "sender"));
        let mut conn = store.conn().await.unwrap();
        let mut settle = async |call_id: &str| {
            let call = SettleCall::of(&pk, &payer, &p.packet_id, 3_600, 1_000, call_id);
            let reply = call.invocation().invoke_async(&mut conn).await.unwrap();
            texts("settle", reply).unwrap().join(":")
        };
        let first = settle("5e771e01").await;
        assert_eq!(settle("5e771e02").await, "settled:300:0:0", "{backend:?}");
        let expiry = async |store: &Store| -> i64 {
            let mut conn = store.conn().await.unwrap();
            redis::cmd("PEXPIRETIME")
                .arg(&pk.meta)
                .query_async(&mut conn)
                .await
                .unwrap()
        };
        let before = (crate::common::snapshot(&redis).await, expiry(&store).await);
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;

        let again = settle("5e771e01").await;

        assert_eq!(
            (first.as_str(), again.as_str()),
            ("settled:300:1:0", "settled:300:1:0")
        );
        let after = (crate::common::snapshot(&redis).await, expiry(&store).await);
        assert!(after == before, "{backend:?}: the re-run wrote");
    }
}
