//! Targeted packets: only their recipients grab, and see them.

use harness::{Backend, TestRedis};
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{self, call, event, snapshot, with_body, with_sub, Function};

/// A targeted packet for 3 recipients with 3 shares, standalone and cluster. A
/// fourth user's grab is 403 `not_a_recipient` and changes nothing (DUMP of every key before
/// and after); the view is 403 for that outsider and 200 for the sender and the recipients;
/// the 3 recipients grab and claim. A packet's `count` may not exceed its recipients, and
/// recipients must be distinct valid user ids of at most 20 KiB together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targeted_packets() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        assert_eq!(deposit(&store, "sender", 10_000, "seed").await.0, 201);
        let create = |body: Value| {
            with_sub(
                with_body(event("create-packet-lucky"), &body.to_string()),
                "sender",
            )
        };
        let recipients = ["auth0|r1", "r2", "张三"];
        for (name, body) in [
            (
                "more shares than recipients",
                json!({"total_cents": 300, "count": 4, "recipients": recipients}),
            ),
            (
                "repeated recipient",
                json!({"total_cents": 300, "count": 2, "recipients": ["r2", "r2"]}),
            ),
            (
                "empty list",
                json!({"total_cents": 300, "count": 1, "recipients": []}),
            ),
            (
                "bad user id",
                json!({"total_cents": 300, "count": 1, "recipients": ["a\u{0007}"]}),
            ),
            (
                "501 recipients",
                json!({"total_cents": 300, "count": 1, "recipients": (0..501).map(|i| format!("u{i}")).collect::<Vec<_>>()}),
            ),
            (
                "recipients over 20 KiB",
                json!({"total_cents": 300, "count": 1, "recipients": (0..100).map(|i| format!("{i:03}{}", "字".repeat(252))).collect::<Vec<_>>()}),
            ),
        ] {
            let before = snapshot(&redis).await;
            let (s, b, _) = call(&store, Function::CreatePacket, &create(body)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{backend:?} {name}: {b}"
            );
            assert_eq!(snapshot(&redis).await, before, "{backend:?} {name} wrote");
        }
        let (s, created, _) = call(
            &store,
            Function::CreatePacket,
            &create(json!({"total_cents": 300, "count": 3, "recipients": recipients})),
        )
        .await;
        assert_eq!(s, 201, "{backend:?}: {created}");
        let id = created["packet_id"].as_str().unwrap().to_string();
        let grab = |who: &str| with_sub(with_packet(event("grab-grab"), &id), who);
        let view = |who: &str| with_sub(with_packet(event("grab-view"), &id), who);

        let before = snapshot(&redis).await;
        for outsider in ["outsider", "sender"] {
            let (s, b, _) = call(&store, Function::Grab, &grab(outsider)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (403, Some("not_a_recipient")),
                "{backend:?} {outsider}: {b}"
            );
        }
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused grab wrote"
        );
        let (s, b, _) = call(&store, Function::Grab, &view("outsider")).await;
        assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        for who in ["sender", "r2"] {
            let (s, b, _) = call(&store, Function::Grab, &view(who)).await;
            assert_eq!(s, 200, "{backend:?} view by {who}: {b}");
        }
        let mut total = 0;
        for r in recipients {
            let (s, b, _) = call(&store, Function::Grab, &grab(r)).await;
            assert_eq!(s, 200, "{backend:?} grab by {r}: {b}");
            total += b["amount_cents"].as_i64().unwrap();
            let (s, b, _) = call(
                &store,
                Function::Claim,
                &with_sub(with_packet(event("claim-claim"), &id), r),
            )
            .await;
            assert_eq!(
                (s, b["repeat"].as_bool()),
                (200, Some(false)),
                "{backend:?} {r}: {b}"
            );
        }
        assert_eq!(total, 300);
        let (s, b, _) = call(&store, Function::Grab, &view("outsider")).await;
        assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        let (s, b, _) = call(&store, Function::Grab, &view("张三")).await;
        assert_eq!((s, b["grabbed_count"].as_i64()), (200, Some(3)), "{b}");
        // An untargeted packet is still anyone's.
        let (s, open, _) = call(
            &store,
            Function::CreatePacket,
            &create(json!({"total_cents": 100, "count": 1})),
        )
        .await;
        assert_eq!(s, 201, "{open}");
        let open_id = open["packet_id"].as_str().unwrap();
        let (s, b, _) = call(
            &store,
            Function::Grab,
            &with_sub(with_packet(event("grab-grab"), open_id), "outsider"),
        )
        .await;
        assert_eq!(s, 200, "{backend:?}: {b}");
    }
}
