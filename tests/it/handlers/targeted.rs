//! Targeted packets: only their recipients grab, and see them, on a standalone server and on a
//! cluster. A packet's `count` may not exceed its recipients, and recipients must be distinct
//! valid user ids of at most 20 KiB together.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{self, call, event, snapshot, with_body, with_sub, Function};

/// The packet's recipients.
const RECIPIENTS: [&str; 3] = ["auth0|r1", "r2", "张三"];

/// `sender`'s create request with `body`.
fn create(body: Value) -> Value {
    with_sub(
        with_body(event("create-packet-lucky"), &body.to_string()),
        "sender",
    )
}

/// `who`'s request of the fixture `fixture` (`grab-grab`, `grab-view`, `claim-claim`) on `id`.
fn on(fixture: &str, id: &str, who: &str) -> Value {
    with_sub(with_packet(event(fixture), id), who)
}

/// A store where `sender` has 10,000 cents.
async fn funded(redis: &TestRedis) -> Arc<Store> {
    let store = common::store(redis, |_| {});
    assert_eq!(deposit(&store, "sender", 10_000, "seed").await.0, 201);
    store
}

/// `sender`'s packet of 300 cents in 3 shares for [`RECIPIENTS`]; returns its id.
async fn targeted(store: &Arc<Store>) -> String {
    let body = json!({"total_cents": 300, "count": 3, "recipients": RECIPIENTS});
    let (s, created, _) = call(store, Function::CreatePacket, &create(body)).await;
    assert_eq!(s, 201, "{created}");
    created["packet_id"].as_str().unwrap().to_string()
}

/// Test: a recipients list that is too short, repeats an id, is empty, holds a bad id, or is
/// over 500 ids or 20 KiB is refused 400 and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_recipients_list_is_refused_and_writes_nothing() {
    let many: Vec<String> = (0..501).map(|i| format!("u{i}")).collect();
    let heavy: Vec<String> = (0..100)
        .map(|i| format!("{i:03}{}", "字".repeat(252)))
        .collect();
    let refused = [
        (
            "more shares than recipients",
            json!({"count": 4, "recipients": RECIPIENTS}),
        ),
        (
            "repeated recipient",
            json!({"count": 2, "recipients": ["r2", "r2"]}),
        ),
        ("empty list", json!({"count": 1, "recipients": []})),
        (
            "bad user id",
            json!({"count": 1, "recipients": ["a\u{0007}"]}),
        ),
        ("501 recipients", json!({"count": 1, "recipients": many})),
        (
            "recipients over 20 KiB",
            json!({"count": 1, "recipients": heavy}),
        ),
    ];
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = funded(&redis).await;
        for (name, body) in &refused {
            let mut body = body.clone();
            body["total_cents"] = json!(300);
            let before = snapshot(&redis).await;

            let (s, b, _) = call(&store, Function::CreatePacket, &create(body)).await;

            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{name}: {b}"
            );
            assert_eq!(snapshot(&redis).await, before, "{backend:?} {name} wrote");
        }
    }
}

/// Test: an outsider's grab, and the sender's own, are 403 `not_a_recipient` and write
/// nothing (every key dumped before and after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_by_anyone_but_a_recipient_is_refused_and_writes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = funded(&redis).await;
        let id = targeted(&store).await;
        let before = snapshot(&redis).await;

        for who in ["outsider", "sender"] {
            let (s, b, _) = call(&store, Function::Grab, &on("grab-grab", &id, who)).await;

            assert_eq!(
                (s, b["error"].as_str()),
                (403, Some("not_a_recipient")),
                "{who}: {b}"
            );
        }
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused grab wrote"
        );
    }
}

/// Test: the sender and a recipient view the packet; an outsider is 403 `forbidden`, also
/// once every share is grabbed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_sender_and_the_recipients_view_it() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = funded(&redis).await;
        let id = targeted(&store).await;

        for who in ["sender", "r2"] {
            let (s, b, _) = call(&store, Function::Grab, &on("grab-view", &id, who)).await;
            assert_eq!(s, 200, "{backend:?} view by {who}: {b}");
        }
        for r in RECIPIENTS {
            assert_eq!(
                call(&store, Function::Grab, &on("grab-grab", &id, r))
                    .await
                    .0,
                200
            );
        }
        let (s, b, _) = call(&store, Function::Grab, &on("grab-view", &id, "outsider")).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("forbidden")),
            "{backend:?}: {b}"
        );
    }
}

/// Test: the three recipients grab the whole packet and each claims its share once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipients_grab_and_claim_every_share() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = funded(&redis).await;
        let id = targeted(&store).await;

        let mut total = 0;
        for r in RECIPIENTS {
            let (s, b, _) = call(&store, Function::Grab, &on("grab-grab", &id, r)).await;
            assert_eq!(s, 200, "{backend:?} grab by {r}: {b}");
            total += b["amount_cents"].as_i64().unwrap();
            let (s, b, _) = call(&store, Function::Claim, &on("claim-claim", &id, r)).await;
            assert_eq!((s, b["repeat"].as_bool()), (200, Some(false)), "{r}: {b}");
        }

        assert_eq!(total, 300);
        let (s, b, _) = call(&store, Function::Grab, &on("grab-view", &id, "张三")).await;
        assert_eq!((s, b["grabbed_count"].as_i64()), (200, Some(3)), "{b}");
    }
}

/// Test: a packet without recipients is anyone's to grab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untargeted_packet_is_anyones() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = funded(&redis).await;
    let body = json!({"total_cents": 100, "count": 1});
    let (s, open, _) = call(&store, Function::CreatePacket, &create(body)).await;
    assert_eq!(s, 201, "{open}");

    let grab = on("grab-grab", open["packet_id"].as_str().unwrap(), "outsider");
    let (s, b, _) = call(&store, Function::Grab, &grab).await;

    assert_eq!(s, 200, "{b}");
}
