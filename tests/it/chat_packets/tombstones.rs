//! What a cancelled packet keeps: its recipients dropped at once, and a packet nobody grabbed
//! settled by the cancel, every key of it expiring within the retention.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::packets::rules::MAX_RECIPIENTS_BYTES;
use hongbao::Store;
use serde_json::{json, Value};

use super::{balance, cancel, create, grab, journal_kinds, view, with_packet};
use crate::common::{self, call, event, with_sub, Function};

/// The retention the tests' stores keep a settled packet's keys, seconds.
async fn retention(store: &Arc<Store>) -> i64 {
    store.config().packets.retention_secs as i64
}

/// `GET /packets/{id}` as `user`: the status only.
async fn view_status(store: &Arc<Store>, id: &str, user: &str) -> u16 {
    let ev = with_sub(with_packet(event("grab-view"), id), user);
    call(store, Function::Grab, &ev).await.0
}

/// Recipient ids adding up to exactly [`MAX_RECIPIENTS_BYTES`] bytes (80 ids of 256 bytes,
/// four-byte characters among them).
fn largest_recipients() -> Vec<String> {
    (0..80)
        .map(|i| {
            let id = format!("r{i:03}-{}", "😀".repeat(62));
            format!("{id}{}", "x".repeat(256 - id.len()))
        })
        .collect()
}

/// Bytes every key of the server holds (`MEMORY USAGE`, summed).
async fn stored_bytes(redis: &TestRedis) -> i64 {
    let mut conn = redis.raw_conn().await;
    let mut total = 0;
    for key in redis.all_keys().await {
        let bytes: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        total += bytes.unwrap_or(0);
    }
    total
}

/// Alice's 1-cent targeted packet to the largest recipients accepted, cancelled before anyone
/// grabbed: its id.
async fn cancelled_before_any_grab(store: &Arc<Store>) -> String {
    common::fund(store, "alice", 1).await;
    let recipients = largest_recipients();
    assert_eq!(
        recipients.iter().map(String::len).sum::<usize>(),
        MAX_RECIPIENTS_BYTES
    );
    let body = json!({"total_cents": 1, "count": 1, "recipients": recipients});
    let (s, p) = create(store, "alice", &body).await;
    assert_eq!(s, 201, "{p}");
    let id = p["packet_id"].as_str().unwrap().to_string();
    let (s, answer) = cancel(store, &id, "alice").await;
    assert_eq!(s, 200, "{answer}");
    id
}

/// Test: a cancel before anyone grabbed settles the packet: status `settled`, one
/// `packet_settled` entry, the cent back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_nobody_grabbed_settles_the_packet() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});

    let id = cancelled_before_any_grab(&store).await;

    assert_eq!(view(&store, &id, "alice").await["status"], "settled");
    let kinds = journal_kinds(&store, "alice").await;
    assert_eq!(kinds.iter().filter(|k| *k == "packet_settled").count(), 1);
    assert_eq!(balance(&store, "alice").await, 1);
}

/// Test: a create and a cancel nobody grabbed keep at most 64 KiB, the recipients set is gone
/// and every key of the packet expires within the retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_nobody_grabbed_keeps_little_and_lets_it_expire() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let before = stored_bytes(&redis).await;

    let id = cancelled_before_any_grab(&store).await;

    let kept = stored_bytes(&redis).await - before;
    assert!(kept <= 64 * 1024, "a create + cancel keeps {kept} bytes");
    let keys: Vec<String> = redis
        .all_keys()
        .await
        .into_iter()
        .filter(|k| k.contains(&id))
        .collect();
    assert!(!keys.iter().any(|k| k.ends_with(":recipients")), "{keys:?}");
    let mut conn = redis.raw_conn().await;
    for key in &keys {
        let ttl: i64 = redis::cmd("TTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            (1..=retention(&store).await).contains(&ttl),
            "{key}: TTL {ttl}"
        );
    }
}

/// Test: a targeted packet cancelled after one of its two recipients grabbed: the grabber
/// still sees it (200), the other recipient's grab answers 410 `cancelled`, and neither that
/// recipient nor a stranger may view it (403).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grabber_still_sees_a_cancelled_targeted_packet() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    common::fund(&store, "alice", 1_000).await;
    let body = json!({"total_cents": 200, "count": 2, "recipients": ["bob", "carol"]});
    let (_, p) = create(&store, "alice", &body).await;
    let id = p["packet_id"].as_str().unwrap().to_string();
    assert_eq!(grab(&store, &id, "bob").await.0, 200);

    assert_eq!(cancel(&store, &id, "alice").await.0, 200);

    assert_eq!(view_status(&store, &id, "bob").await, 200);
    let (s, b, _) = grab(&store, &id, "carol").await;
    assert_eq!(
        (s, b["error"].clone()),
        (410, Value::from("cancelled")),
        "{b}"
    );
    assert_eq!(view_status(&store, &id, "carol").await, 403);
    assert_eq!(view_status(&store, &id, "dave").await, 403);
}
