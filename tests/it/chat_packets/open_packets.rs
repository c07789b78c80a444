//! What one sender may make: `HONGBAO_MAX_OPEN_PACKETS_PER_USER` bounds their open packets
//! (a cancel or an expiry frees a place), `HONGBAO_PACKETS_PER_DAY` their creates per day; a
//! repeat is answered at either bound.

use std::sync::Arc;
use std::time::Duration;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{balance, cancel, create};
use crate::common::{self, call, event, with_body, with_header, with_sub, Function};

/// A store whose senders may have 2 packets open.
fn bounded(redis: &TestRedis) -> Arc<Store> {
    common::store(redis, |c| c.packets.max_open_packets = 2)
}

/// `POST /packets` by alice with `body` and `Idempotency-Key` `key`: (status, answer).
async fn create_with_key(store: &Arc<Store>, body: &Value, key: &str) -> (u16, Value) {
    let ev = with_body(event("create-packet-lucky"), &body.to_string());
    let ev = with_header(with_sub(ev, "alice"), "idempotency-key", key);
    let (s, b, _) = call(store, Function::CreatePacket, &ev).await;
    (s, b)
}

/// alice funded with 1,000 cents and two packets of 100 created, the first with
/// `Idempotency-Key` `k-1`: the body they share and the first's answer.
async fn two_created(store: &Arc<Store>) -> (Value, Value) {
    common::fund(store, "alice", 1_000).await;
    let body = json!({"total_cents": 100, "count": 2});
    let (_, first) = create_with_key(store, &body, "k-1").await;
    assert_eq!(create(store, "alice", &body).await.0, 201);
    (body, first)
}

/// Test: with 2 packets open, a third create is 409 `too_many_open_packets` (+ the bound and
/// a `Retry-After`) and debits nothing; a repeat of an earlier create's key is still answered
/// 201; a cancel frees a place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_senders_open_packets_are_bounded() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = bounded(&redis);
    let (body, first) = two_created(&store).await;

    let ev = with_sub(
        with_body(event("create-packet-lucky"), &body.to_string()),
        "alice",
    );
    let (s, refused, headers) = call(&store, Function::CreatePacket, &ev).await;
    let repeat = create_with_key(&store, &body, "k-1").await;
    let id = first["packet_id"].as_str().unwrap();
    let cancelled = cancel(&store, id, "alice").await.0;
    let after_cancel = create(&store, "alice", &body).await.0;

    assert_eq!(s, 409, "{refused}");
    assert_eq!(refused["error"], "too_many_open_packets");
    assert_eq!(refused["max_open_packets"], 2);
    assert!(headers.is_some_and(|h| h.parse::<u64>().unwrap() > 0));
    assert_eq!((repeat.0, repeat.1["packet_id"].as_str()), (201, Some(id)));
    assert_eq!((cancelled, after_cancel), (200, 201));
    assert_eq!(balance(&store, "alice").await, 1_000 - 200);
}

/// Test: a packet that expired no longer counts: with 2 packets open, one of them expiring
/// in a second, a create after that second is 201.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_packet_frees_its_place() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = bounded(&redis);
    common::fund(&store, "alice", 1_000).await;
    let short = json!({"total_cents": 100, "count": 2, "expires_in_secs": 1});
    let body = json!({"total_cents": 100, "count": 2});
    assert_eq!(create(&store, "alice", &short).await.0, 201);
    assert_eq!(create(&store, "alice", &body).await.0, 201);
    assert_eq!(create(&store, "alice", &body).await.0, 409);

    tokio::time::sleep(Duration::from_millis(1_100)).await;

    assert_eq!(create(&store, "alice", &body).await.0, 201);
}

/// Test: with a quota of 2 creates a day, a third create is 429 `rate_limited` naming
/// `HONGBAO_PACKETS_PER_DAY`, with a `Retry-After` of about a day, and debits nothing; a
/// repeat of an earlier create's key is still answered 201.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_senders_creates_per_day_are_bounded() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |c| c.packets.packets_per_day = 2);
    let (body, first) = two_created(&store).await;

    let ev = with_sub(
        with_body(event("create-packet-lucky"), &body.to_string()),
        "alice",
    );
    let (s, refused, retry_after) = call(&store, Function::CreatePacket, &ev).await;
    let repeat = create_with_key(&store, &body, "k-1").await;

    assert_eq!(
        (s, refused["error"].as_str()),
        (429, Some("rate_limited")),
        "{refused}"
    );
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .contains("HONGBAO_PACKETS_PER_DAY"));
    let secs: u64 = retry_after.unwrap().parse().unwrap();
    assert!((86_000..=86_400).contains(&secs), "Retry-After {secs}");
    assert_eq!(repeat.1["packet_id"], first["packet_id"]);
    assert_eq!(balance(&store, "alice").await, 1_000 - 200);
}
