//! A user's sent and received red-packet history, on real servers (standalone and a
//! 3-master cluster): exactly-once entries under concurrency and re-drives, stable paging,
//! yearly totals that match the items and the wallet ledger, retention pruned by the scripts
//! that write history, and history that outlives the packets.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use harness::{Backend, TestRedis};
use hongbao::history::rules::{self as history, year_of};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome, Packet};
use hongbao::store::keys::Keys;
use hongbao::store::reclaim;
use hongbao::wallet;
use hongbao::wallet::rules::{Entry as LedgerEntry, EntryKind};
use hongbao::Store;

use crate::common::{
    self, call, create, event, fund, lucky, sleep_until_redis_ms, snapshot, store, Function,
};

/// `events/grab-history.json` as `user`, with query `query`.
fn history_event(user: &str, query: &str) -> Value {
    common::with_query(common::with_sub(event("grab-history"), user), query)
}

/// `events/grab-summary.json` as `user` for `year`.
fn summary_event(user: &str, query: &str) -> Value {
    let mut v = common::with_sub(event("grab-summary"), user);
    v["rawQueryString"] = json!(query);
    v["queryStringParameters"] = json!({});
    v
}

/// Every item of `user`'s list `role`, paging through `GET /packets` with `limit`; `between`
/// runs after each page (to add entries while paging).
async fn all_items(
    store: &Arc<Store>,
    user: &str,
    role: &str,
    limit: u32,
    mut between: impl FnMut(usize) -> Option<futures::future::BoxFuture<'static, ()>>,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        let mut query = format!("role={role}&limit={limit}");
        if let Some(c) = &cursor {
            query.push_str(&format!("&cursor={c}"));
        }
        let (s, b, _) = call(store, Function::Grab, &history_event(user, &query)).await;
        assert_eq!(s, 200, "{user} {role} page {page}: {b}");
        let got = b["items"].as_array().unwrap();
        assert!(got.len() <= limit as usize);
        items.extend(got.iter().cloned());
        match b["next_cursor"].as_str() {
            None => {
                assert!(b["next_cursor"].is_null());
                break;
            }
            Some(c) => {
                assert_eq!(got.len(), limit as usize, "a page before the last is full");
                cursor = Some(c.to_string());
            }
        }
        if let Some(f) = between(page) {
            f.await;
        }
    }
    items
}

async fn summary(store: &Arc<Store>, user: &str, year: i32) -> Value {
    let (s, b, _) = call(
        store,
        Function::Grab,
        &summary_event(user, &format!("year={year}")),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    b
}

/// The whole ledger of `user` (at most 1,000 entries are kept; these tests stay below).
async fn ledger(store: &Store, user: &str) -> Vec<LedgerEntry> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user);
    let items: Vec<String> = crate::common::list_items(store, &wk.ledger).await;
    assert!(
        items.len() < 1000,
        "ledger cap reached: the comparison would be partial"
    );
    items
        .iter()
        .map(|i| LedgerEntry::parse(i).unwrap())
        .collect()
}

async fn zcard(store: &Store, key: &str) -> i64 {
    let mut conn = store.conn().await.unwrap();
    redis::cmd("ZCARD")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap()
}

async fn grab_and_claim(store: &Store, packet_id: &str, user: &str) -> i64 {
    let GrabOutcome::Grabbed { share, .. } = packets::grab(store, packet_id, user).await.unwrap()
    else {
        panic!("{user} got no share of {packet_id}")
    };
    let ClaimOutcome::Claimed { repeat: false, .. } =
        packets::claim(store, packet_id, user).await.unwrap()
    else {
        panic!("claim")
    };
    share.amount_cents
}

fn this_year(store: &Store) -> i32 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    year_of(&store.config().history.tz, now)
}

/// 200 packets created concurrently by 10 overlapping users, each grabbed and claimed
/// concurrently by 2 others (400 claims), then every user's sent and received lists paged with
/// limit 7 while new packets arrive: each packet appears exactly once per role and user with
/// its fields, the yearly totals equal the sums of the items, and both equal the wallet
/// ledger's packet debits and claim credits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_history_pages_exactly_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        let users: Vec<String> = (0..10).map(|i| format!("user{i}")).collect();
        for u in &users {
            fund(&store, u, 1_000_000).await;
        }
        let (created, claims) = packets_claimed_by_two_others(&store, &users).await;
        let year = this_year(&store);
        for u in &users {
            let sent = sent_pages_once(&store, u, &created, backend).await;
            let received = received_pages_once(&store, u, &created, &claims, backend).await;
            totals_agree(&store, u, year, &sent, &received, backend).await;
        }
    }
}

/// A packet sent and what one user claimed of it: (user, packet id, cents).
type Claimed = (String, String, i64);

/// 200 packets, 20 from each user, created concurrently; packet i is grabbed and claimed by
/// the users 1 and 3 places after its sender, concurrently. Returns (sender, packet) of each
/// and the claims.
async fn packets_claimed_by_two_others(
    store: &Arc<Store>,
    users: &[String],
) -> (Vec<(String, Packet)>, Vec<Claimed>) {
    let created: Vec<(String, Packet)> = join_all((0..200).map(|i| {
        let store = store.clone();
        let sender = users[i % 10].clone();
        async move {
            let req = lucky(100 + i as i64 * 7, 2, 600);
            (sender.clone(), create(&store, &sender, &req).await)
        }
    }))
    .await;
    // Packet i is grabbed by the users 1 and 3 places after its sender.
    let claims: Vec<(String, String, i64)> =
        join_all(created.iter().enumerate().flat_map(|(i, (_, p))| {
            [1, 3].map(|k| {
                let store = store.clone();
                let user = users[(i + k) % 10].clone();
                let id = p.packet_id.clone();
                async move {
                    let amount = grab_and_claim(&store, &id, &user).await;
                    (user, id, amount)
                }
            })
        }))
        .await;
    (created, claims)
}

/// `u`'s sent list, paged by 7 while `u` sends a new packet after the first page: each of its
/// packets once, with its fields, newest first. Returns the items.
async fn sent_pages_once(
    store: &Arc<Store>,
    u: &String,
    created: &[(String, Packet)],
    backend: Backend,
) -> Vec<Value> {
    // Sent, paged by 7 while the user sends a new packet after the first page: the new
    // one is newer than the cursor, so it shifts nothing.
    let st = store.clone();
    let user = u.clone();
    let sent = all_items(store, u, "sent", 7, move |page| {
        let (st, user) = (st.clone(), user.clone());
        (page == 0).then(|| {
            Box::pin(async move {
                create(&st, &user, &lucky(5, 1, 600)).await;
            }) as futures::future::BoxFuture<'static, ()>
        })
    })
    .await;
    let mine: HashMap<&str, &Packet> = created
        .iter()
        .filter(|(s, _)| s == u)
        .map(|(_, p)| (p.packet_id.as_str(), p))
        .collect();
    let ids: Vec<&str> = sent
        .iter()
        .map(|i| i["packet_id"].as_str().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "{backend:?} {u}: a sent item repeats"
    );
    assert_eq!(
        unique,
        mine.keys().copied().collect(),
        "{backend:?} {u}: sent set"
    );
    for item in &sent {
        let p = mine[item["packet_id"].as_str().unwrap()];
        assert_eq!(item["total_cents"], p.total_cents, "{item}");
        assert_eq!(item["count"], p.count);
        assert_eq!(item["mode"], "lucky");
        assert_eq!(item["greeting"], "恭喜发财");
        assert!(item.get("refunded_cents").is_none(), "not settled: {item}");
        assert_eq!(item["created_at"], rfc3339(p.created_at_ms));
        assert_eq!(item["expires_at"], rfc3339(p.expires_at_ms));
    }
    let times: Vec<&str> = sent
        .iter()
        .map(|i| i["created_at"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "{backend:?} {u}: newest first"
    );
    sent
}

/// `u`'s received list, paged by 7: each of its claims once, with its sender and share.
/// Returns the items.
async fn received_pages_once(
    store: &Arc<Store>,
    u: &String,
    created: &[(String, Packet)],
    claims: &[Claimed],
    backend: Backend,
) -> Vec<Value> {
    let received = all_items(store, u, "received", 7, |_| None).await;
    let expected: HashMap<&str, i64> = claims
        .iter()
        .filter(|(who, _, _)| who == u)
        .map(|(_, id, amount)| (id.as_str(), *amount))
        .collect();
    let got: HashMap<&str, i64> = received
        .iter()
        .map(|i| {
            (
                i["packet_id"].as_str().unwrap(),
                i["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got.len(),
        received.len(),
        "{backend:?} {u}: a received item repeats"
    );
    assert_eq!(got, expected, "{backend:?} {u}: received");
    let senders: HashMap<&str, &str> = created
        .iter()
        .map(|(s, p)| (p.packet_id.as_str(), s.as_str()))
        .collect();
    for item in &received {
        assert_eq!(
            item["sender_id"],
            senders[item["packet_id"].as_str().unwrap()]
        );
        assert!(
            (1..=2).contains(&item["share_id"].as_u64().unwrap()),
            "{item}"
        );
    }
    received
}

/// Totals: the items, the yearly summary and the ledger agree (the packet sent while paging
/// is in the summary and the ledger, and in a fresh first page).
async fn totals_agree(
    store: &Arc<Store>,
    u: &String,
    year: i32,
    sent: &[Value],
    received: &[Value],
    backend: Backend,
) {
    let extra = 5;
    let sent_sum: i64 = sent
        .iter()
        .map(|i| i["total_cents"].as_i64().unwrap())
        .sum();
    let received_sum: i64 = received
        .iter()
        .map(|i| i["amount_cents"].as_i64().unwrap())
        .sum();
    let s = summary(store, u, year).await;
    assert_eq!(s["year"], year);
    assert_eq!(
        s["sent"],
        json!({"count": sent.len() + 1, "total_cents": sent_sum + extra}),
        "{backend:?} {u}"
    );
    assert_eq!(
        s["received"],
        json!({"count": received.len(), "total_cents": received_sum}),
        "{backend:?} {u}"
    );
    let ledger = ledger(store, u).await;
    let debits: i64 = ledger
        .iter()
        .filter(|e| e.kind == EntryKind::PacketDebit)
        .map(|e| -e.amount_cents)
        .sum();
    let credits: i64 = ledger
        .iter()
        .filter(|e| e.kind == EntryKind::ClaimCredit)
        .map(|e| e.amount_cents)
        .sum();
    assert_eq!(
        (debits, credits),
        (sent_sum + extra, received_sum),
        "{backend:?} {u}: ledger"
    );
    let again = all_items(store, u, "sent", 100, |_| None).await;
    assert_eq!(again.len(), sent.len() + 1);
    assert_eq!(again[0]["total_cents"], extra, "the newest first");
}

fn rfc3339(ms: i64) -> String {
    hongbao::api::error::rfc3339(ms)
}

/// A claim interrupted after its wallet credit (steps 1 and 2 only) and re-driven, by a retry of
/// the claim and by reclaim-cron, adds exactly one received item; so does a claim interrupted
/// before its credit. The sent item gets its refund once the packet is settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redriven_claims_add_one_item() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "alice", 10_000).await;
        let keys = Keys::new(&store.config().key_prefix);
        for (case, redrive_by_claim, credited) in [
            ("retried claim", true, true),
            ("reclaim-cron, after the credit", false, true),
            ("reclaim-cron, before the credit", false, false),
        ] {
            let user = format!("bob-{}", case.len());
            let p = create(&store, "alice", &lucky(300, 2, 2)).await;
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &p.packet_id, &user).await.unwrap()
            else {
                panic!()
            };
            let step_one = common::claim_step_one(&store, &p.packet_id, &user).await;
            let claimed_at: i64 = step_one[2]
                .strip_prefix("pending:")
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(step_one[3], "alice");
            if credited {
                let entry = history::ReceivedEntry {
                    packet_id: p.packet_id.clone(),
                    sender_id: "alice".into(),
                    amount_cents: share.amount_cents,
                    share_id: share.share_id,
                    claimed_at_ms: claimed_at,
                }
                .member(year_of(&store.config().history.tz, claimed_at));
                let transfer = wallet::claim_transfer_id(&p.packet_id);
                let fp = share.amount_cents.to_string();
                let c = wallet::credit(
                    &store,
                    &user,
                    &packets::claim_credit(
                        &p.packet_id,
                        &transfer,
                        share.amount_cents,
                        &fp,
                        &entry,
                    ),
                )
                .await
                .unwrap();
                assert!(c.applied);
            }
            if redrive_by_claim {
                for _ in 0..2 {
                    let ClaimOutcome::Claimed { .. } =
                        packets::claim(&store, &p.packet_id, &user).await.unwrap()
                    else {
                        panic!()
                    };
                }
            }
            sleep_until_redis_ms(&store, p.expires_at_ms).await;
            let s = reclaim::run(&store).await.unwrap();
            assert_eq!(
                s.redriven,
                u64::from(!redrive_by_claim),
                "{backend:?} {case}: {s:?}"
            );
            // Again: nothing left to do.
            packets::claim(&store, &p.packet_id, &user).await.unwrap();
            reclaim::run(&store).await.unwrap();

            let items = all_items(&store, &user, "received", 7, |_| None).await;
            assert_eq!(items.len(), 1, "{backend:?} {case}: {items:?}");
            assert_eq!(items[0]["amount_cents"], share.amount_cents);
            assert_eq!(items[0]["share_id"], share.share_id);
            assert_eq!(items[0]["claimed_at"], rfc3339(claimed_at));
            assert_eq!(zcard(&store, &keys.wallet(&user).received).await, 1);
            let year = year_of(&store.config().history.tz, claimed_at);
            assert_eq!(
                summary(&store, &user, year).await["received"],
                json!({"count": 1, "total_cents": share.amount_cents}),
                "{backend:?} {case}"
            );
            assert_eq!(
                wallet::balance(&store, &user).await.unwrap(),
                share.amount_cents
            );
            let sent = all_items(&store, "alice", "sent", 100, |_| None).await;
            let mine = sent
                .iter()
                .find(|i| i["packet_id"] == p.packet_id.as_str())
                .unwrap();
            assert_eq!(
                mine["refunded_cents"],
                300 - share.amount_cents,
                "{backend:?} {case}: {mine}"
            );
        }
    }
}

/// Entries older than `HONGBAO_HISTORY_RETENTION_DAYS` (3 s here) are hidden at once, and gone
/// with their totals when the user's history keys expire (the retention after their newest
/// entry) or at the user's next history write (a create, or a claim credit); the history
/// outlives the packet's own keys (settled, then expired after 1 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_and_packet_expiry() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| {
            c.history.retention_ms = 3_000;
            c.packets.retention_secs = 1;
            c.packets.idempotency_ttl_secs = 1;
        });
        let keys = Keys::new(&store.config().key_prefix);
        fund(&store, "alice", 10_000).await;
        fund(&store, "bob", 10_000).await;
        let a = create(&store, "alice", &lucky(500, 1, 1)).await;
        let won = grab_and_claim(&store, &a.packet_id, "bob").await;
        assert_eq!(won, 500);
        sleep_until_redis_ms(&store, a.expires_at_ms).await;
        assert_eq!(reclaim::run(&store).await.unwrap().settled, 1);
        // The packet's keys expire a second after settlement; its history stays.
        sleep_until_redis_ms(&store, a.expires_at_ms + 1_500).await;
        let pk = keys.packet(&a.packet_id);
        let mut conn = store.conn().await.unwrap();
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&pk.meta)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(exists, 0, "{backend:?}: the packet should be gone");
        let sent = all_items(&store, "alice", "sent", 7, |_| None).await;
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["refunded_cents"], 0);
        let received = all_items(&store, "bob", "received", 7, |_| None).await;
        assert_eq!(received.len(), 1);
        assert_eq!(received[0]["sender_id"], "alice");
        let year = year_of(&store.config().history.tz, a.created_at_ms);
        assert_eq!(summary(&store, "alice", year).await["sent"]["count"], 1);

        // Past the retention: hidden at once; alice's keys (her newest entry is this one) gone.
        sleep_until_redis_ms(&store, a.created_at_ms + 3_100).await;
        assert!(all_items(&store, "alice", "sent", 7, |_| None)
            .await
            .is_empty());
        assert!(all_items(&store, "bob", "received", 7, |_| None)
            .await
            .is_empty());
        let (alice, bob) = (keys.wallet("alice"), keys.wallet("bob"));
        assert_eq!(zcard(&store, &alice.sent).await, 0);
        assert_eq!(summary(&store, "alice", year).await["sent"]["count"], 0);

        // alice's next write (a create) prunes her list and her totals.
        let b = create(&store, "alice", &lucky(200, 1, 600)).await;
        assert_eq!(zcard(&store, &alice.sent).await, 1);
        let sent = all_items(&store, "alice", "sent", 7, |_| None).await;
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["packet_id"], b.packet_id.as_str());
        let y = year_of(&store.config().history.tz, b.created_at_ms);
        let s = summary(&store, "alice", y).await;
        assert_eq!(
            s["sent"],
            json!({"count": 1, "total_cents": 200}),
            "{backend:?}"
        );
        if y != year {
            assert_eq!(summary(&store, "alice", year).await["sent"]["count"], 0);
        }
        // bob's next write (a claim credit) prunes his received list.
        grab_and_claim(&store, &b.packet_id, "bob").await;
        assert_eq!(zcard(&store, &bob.received).await, 1);
        let received = all_items(&store, "bob", "received", 7, |_| None).await;
        assert_eq!(received[0]["packet_id"], b.packet_id.as_str());
        assert_eq!(
            summary(&store, "bob", y).await["received"],
            json!({"count": 1, "total_cents": 200})
        );
    }
}

/// A user's history keys (both lists and the totals) expire together, the retention after
/// their newest entry: a sender's at the create, a grabber's at the claim's credit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_keys_expire_the_retention_after_their_newest_entry() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |c| c.history.retention_ms = 60_000);
    let keys = Keys::new(&store.config().key_prefix);
    fund(&store, "alice", 1_000).await;

    let a = create(&store, "alice", &lucky(500, 1, 600)).await;
    grab_and_claim(&store, &a.packet_id, "bob").await;

    let mut conn = store.conn().await.unwrap();
    for user in ["alice", "bob"] {
        let w = keys.wallet(user);
        for key in [&w.sent, &w.received, &w.history_totals] {
            let exists: i64 = redis::cmd("EXISTS")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            let ttl: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(
                exists == 0 || (50_000..=60_000).contains(&ttl),
                "{key}: PTTL {ttl}"
            );
        }
        let sent_or_received = if user == "alice" {
            &w.sent
        } else {
            &w.received
        };
        assert_eq!(zcard(&store, sent_or_received).await, 1, "{user}");
    }
}

/// Bad `role`, `limit`, `cursor` or `year`: 400 `invalid_request`, nothing written (DUMP of
/// every key before and after); another user's cursor shows nothing of theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_history_queries_are_refused() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "alice", 10_000).await;
        for _ in 0..3 {
            create(&store, "alice", &lucky(100, 1, 600)).await;
        }
        let (s, first, _) = call(
            &store,
            Function::Grab,
            &history_event("alice", "role=sent&limit=1"),
        )
        .await;
        assert_eq!(s, 200);
        let cursor = first["next_cursor"].as_str().unwrap().to_string();
        let before = snapshot(&redis).await;
        for query in [
            String::new(),
            "limit=5".into(),
            "role=all".into(),
            "role=SENT".into(),
            "role=sent&role=received".into(),
            "role=sent&limit=0".into(),
            "role=sent&limit=101".into(),
            "role=sent&limit=1e2".into(),
            "role=sent&cursor=".into(),
            "role=sent&cursor=garbage".into(),
            format!("role=received&cursor={cursor}"),
            format!("role=sent&cursor={cursor}x"),
            "role=sent&offset=3".into(),
        ] {
            let (s, b, _) = call(&store, Function::Grab, &history_event("alice", &query)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{backend:?} {query:?}: {b}"
            );
        }
        for query in [
            "year=26",
            "year=1969",
            "year=10000",
            "year=2026&year=2025",
            "month=1",
            "year=%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96",
        ] {
            let (s, b, _) = call(&store, Function::Grab, &summary_event("alice", query)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{backend:?} {query:?}: {b}"
            );
        }
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused query wrote"
        );
        // Bob with alice's cursor reads his own (empty) list.
        let (s, b, _) = call(
            &store,
            Function::Grab,
            &history_event("bob", &format!("role=sent&cursor={cursor}")),
        )
        .await;
        assert_eq!((s, b["items"].as_array().unwrap().len()), (200, 0), "{b}");
        // No year: the current one.
        let (s, b, _) = call(&store, Function::Grab, &summary_event("alice", "")).await;
        assert_eq!(
            (s, b["year"].as_i64()),
            (200, Some(i64::from(this_year(&store)))),
            "{b}"
        );
        assert_eq!(b["sent"], json!({"count": 3, "total_cents": 300}));
    }
}
