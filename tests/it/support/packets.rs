//! `GET /support/packets/{id}`: a packet in every state, read-only, no secret, refusals.

use std::sync::Arc;

use serde_json::json;

use super::{claim_until_credited, claims, journal, look_up_packet, look_up_packet_page, STRANGER};
use crate::common::{
    self, call, claim_step_one, create, event, fund, lucky, sleep_until_redis_ms, with_sub,
    Function,
};
use harness::{Backend, TestRedis};
use hongbao::packets;
use hongbao::packets::rules::{GrabOutcome, NewPacket};
use hongbao::store::reclaim;
use hongbao::Store;

fn s(v: &[(&str, &str, bool)]) -> Vec<(String, String, bool)> {
    v.iter()
        .map(|(u, c, k)| (u.to_string(), c.to_string(), *k))
        .collect()
}

/// Whether the look-up's refund is due within a second before the packet's `expires_at`:
/// create-packet writes the reclaim index entry before the packet, from its own clock, and
/// reclaim-cron moves an early entry to the packet's deadline.
fn due_near_expiry(body: &serde_json::Value) -> bool {
    let at = |v: &serde_json::Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_default())
            .map(|t| t.timestamp_millis())
            .ok()
    };
    match (
        at(&body["refund"]["due_at"]),
        at(&body["packet"]["expires_at"]),
    ) {
        (Some(due), Some(expires)) => (expires - 1_000..=expires).contains(&due),
        _ => false,
    }
}

/// Grabs a share of `packet_id` for each of `users`, in order; returns their amounts.
async fn grab_all(store: &hongbao::Store, packet_id: &str, users: &[&str]) -> Vec<i64> {
    let mut amounts = Vec::new();
    for u in users {
        match packets::grab(store, packet_id, u).await.unwrap() {
            GrabOutcome::Grabbed { share, .. } => amounts.push(share.amount_cents),
            other => panic!("{u}: {other:?}"),
        }
    }
    amounts
}

/// An open packet whose grabbers are at every claim step: done, pending before its credit,
/// pending after its credit, unclaimed. The look-up shows each, the refund not yet due, the
/// sender's debit and the two credits in the journal, and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_packet_shows_every_claim_step() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund(&store, "sender", 600).await;
        let p = create(&store, "sender", &lucky(600, 6, 600)).await;
        let pid = &p.packet_id;
        let amounts = grab_all(&store, pid, &["u1", "u2", "u3", "u4", "u5"]).await;
        packets::claim(&store, pid, "u1").await.unwrap();
        claim_step_one(&store, pid, "u2").await;
        claim_until_credited(&store, pid, "sender", "u3").await;

        let before = common::snapshot(&redis).await;
        let (status, b) = look_up_packet(&store, pid, None).await;
        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "{backend}: a look-up wrote"
        );
        assert_eq!(status, 200, "{backend}: {b}");
        assert_eq!(b["packet"]["packet_id"], json!(pid));
        assert_eq!(b["packet"]["status"], json!("open"));
        assert_eq!(b["packet"]["grabbed_count"], json!(5));
        assert_eq!(
            claims(&b),
            s(&[
                ("u1", "done", true),
                ("u2", "pending", false),
                ("u3", "pending", true),
                ("u4", "unclaimed", false),
                ("u5", "unclaimed", false),
            ]),
            "{backend}: {b}"
        );
        let shown: Vec<i64> = b["grabs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["amount_cents"].as_i64().unwrap())
            .collect();
        assert_eq!(shown, amounts, "{backend}");
        for (i, g) in b["grabs"].as_array().unwrap().iter().enumerate() {
            assert_eq!(g["share_id"], json!(i + 1));
            assert_eq!(g["claimed_at"].is_null(), i >= 3, "{backend}: {g}");
        }
        let refund = &b["refund"];
        assert_eq!(refund["refunded_cents"], json!(0));
        assert!(refund["settled_at"].is_null() && refund["cancelled_at"].is_null());
        assert!(due_near_expiry(&b), "{backend}: {b}");
        assert_eq!(
            journal(&b),
            vec![
                ("packet_debit".into(), "sender".into(), -600),
                ("claim_credit".into(), "u1".into(), amounts[0]),
                ("claim_credit".into(), "u3".into(), amounts[2]),
            ],
            "{backend}: {b}"
        );
        assert_eq!(b["journal_complete"], json!(true));
    }
}

/// Scheduled (no grab yet), sold out (the reveal shown, as to the sender), cancelled (the cancel's refund and its
/// journal entries), then a packet that expires with one claim pending: before reclaim-cron
/// the refund is due, after it the claim is `redriven`, the packet settled and the unclaimed
/// share refunded, all in the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scheduled_sold_out_cancelled_expired_and_settled_packets() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund(&store, "sender", 10_000).await;

        let scheduled = create(
            &store,
            "sender",
            &NewPacket {
                opens_in_secs: 600,
                ..lucky(100, 1, 600)
            },
        )
        .await;
        let (_, b) = look_up_packet(&store, &scheduled.packet_id, None).await;
        assert_eq!(b["packet"]["status"], json!("scheduled"), "{backend}: {b}");
        assert_eq!(
            (&b["grabs"], &b["refund"]["refunded_cents"]),
            (&json!([]), &json!(0))
        );

        let sold = create(&store, "sender", &lucky(200, 2, 600)).await;
        grab_all(&store, &sold.packet_id, &["a", "b"]).await;
        let (_, b) = look_up_packet(&store, &sold.packet_id, None).await;
        assert_eq!(b["packet"]["status"], json!("sold_out"), "{backend}: {b}");
        assert_eq!(
            b["packet"]["reveal"]["shares_cents"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert!(!b["packet"]["best_luck"].is_null());

        let cancelled = create(&store, "sender", &lucky(300, 3, 600)).await;
        let [kept] = grab_all(&store, &cancelled.packet_id, &["a"]).await[..] else {
            panic!()
        };
        packets::cancel(&store, &cancelled.packet_id, "sender")
            .await
            .unwrap();
        let (_, b) = look_up_packet(&store, &cancelled.packet_id, None).await;
        assert_eq!(b["packet"]["status"], json!("cancelled"), "{backend}: {b}");
        assert_eq!(b["refund"]["cancel_refunded_cents"], json!(300 - kept));
        assert_eq!(b["refund"]["refunded_cents"], json!(300 - kept));
        assert!(!b["refund"]["cancelled_at"].is_null());
        assert_eq!(
            journal(&b)[1..],
            [
                ("refund_credit".into(), "sender".into(), 300 - kept),
                ("packet_cancelled".into(), "sender".into(), 0),
            ],
            "{backend}: {b}"
        );

        let expiring = create(&store, "sender", &lucky(300, 3, 2)).await;
        let pid = &expiring.packet_id;
        let amounts = grab_all(&store, pid, &["x", "y", "z"]).await;
        packets::claim(&store, pid, "x").await.unwrap();
        claim_step_one(&store, pid, "y").await;
        sleep_until_redis_ms(&store, expiring.expires_at_ms).await;
        let (_, b) = look_up_packet(&store, pid, None).await;
        assert_eq!(b["packet"]["status"], json!("expired"), "{backend}: {b}");
        assert!(due_near_expiry(&b), "{backend}: {b}");
        assert!(b["refund"]["settled_at"].is_null());

        let run = reclaim::run(&store).await.unwrap();
        assert_eq!((run.settled, run.redriven), (1, 1), "{backend}: {run:?}");
        let (_, b) = look_up_packet(&store, pid, None).await;
        assert_eq!(b["packet"]["status"], json!("settled"), "{backend}: {b}");
        assert_eq!(
            claims(&b),
            s(&[
                ("x", "done", true),
                ("y", "redriven", true),
                ("z", "unclaimed", false)
            ]),
            "{backend}: {b}"
        );
        let refund = &b["refund"];
        assert_eq!(
            refund["refunded_cents"],
            json!(amounts[2]),
            "{backend}: {refund}"
        );
        assert!(!refund["settled_at"].is_null() && refund["due_at"].is_null());
        let kinds: Vec<(String, String, i64)> = journal(&b);
        for entry in [
            ("packet_debit".to_string(), "sender".to_string(), -300),
            ("claim_credit".into(), "x".into(), amounts[0]),
            ("claim_credit".into(), "y".into(), amounts[1]),
            ("refund_credit".into(), "sender".into(), amounts[2]),
            ("packet_settled".into(), "sender".into(), 0),
        ] {
            assert!(
                kinds.contains(&entry),
                "{backend}: {entry:?} not in {kinds:?}"
            );
        }
        assert_eq!(kinds.len(), 5, "{backend}: {kinds:?}");
    }
}

/// Alice's password packet, created through the create function: (packet id, its password).
async fn alices_password_packet(store: &Arc<Store>) -> (String, String) {
    fund(store, "alice", 10_000).await;
    let create_event = with_sub(event("create-packet-password"), "alice");
    let (s, created, _) = call(store, Function::CreatePacket, &create_event).await;
    assert_eq!(s, 201, "{created}");
    let body: serde_json::Value =
        serde_json::from_str(create_event["body"].as_str().unwrap()).unwrap();
    let id = created["packet_id"].as_str().unwrap().to_string();
    (id, body["password"].as_str().unwrap().to_string())
}

/// Test: a password packet's look-up shows `password_protected` and neither the password nor
/// its verifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_look_up_shows_no_password_and_no_verifier() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let (pid, password) = alices_password_packet(&store).await;
    let verifier: String = redis::cmd("HGET")
        .arg(hongbao::store::keys::Keys::new("hb").packet(&pid).meta)
        .arg("password")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();

    let (s, b) = look_up_packet(&store, &pid, None).await;

    assert_eq!(
        (s, &b["packet"]["password_protected"]),
        (200, &json!(true)),
        "{b}"
    );
    let text = b.to_string();
    assert!(
        !text.contains(&password) && !text.contains(&verifier),
        "{text}"
    );
}

/// Test: a caller outside `HONGBAO_SUPPORT_PRINCIPALS` and a JWT caller are 403, an unknown
/// or malformed id is 404, and none of them writes anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn look_up_refusals_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (pid, _) = alices_password_packet(&store).await;
        let path = format!("/support/packets/{pid}");
        let mut jwt = crate::common::with_placeholder(event("grab-view"), "PACKET_ID", &pid);
        jwt["rawPath"] = json!(path);
        jwt["requestContext"]["http"]["path"] = json!(path);
        let before = common::snapshot(&redis).await;

        let stranger = look_up_packet(&store, &pid, Some(STRANGER)).await;
        let (s, b, _) = call(&store, Function::Wallet, &jwt).await;
        let unknown = look_up_packet(&store, "000000000000000000000000", None).await;
        let malformed = look_up_packet(&store, "not-a-packet", None).await;

        let status =
            |(s, b): &(u16, serde_json::Value)| (*s, b["error"].as_str().map(String::from));
        let forbidden = (403, Some("forbidden".to_string()));
        let not_found = (404, Some("not_found".to_string()));
        assert_eq!(
            (status(&stranger), status(&(s, b))),
            (forbidden.clone(), forbidden)
        );
        assert_eq!(
            (status(&unknown), status(&malformed)),
            (not_found.clone(), not_found)
        );
        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "{backend}: a refusal wrote"
        );
    }
}

/// A look-up pages the grabs as the view does: 100 share positions a page, from the cursor the
/// previous page gave, and a cursor it did not give is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_look_up_pages_the_grabs_a_hundred_shares_at_a_time() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    fund(&store, "sender", 450).await;
    let p = create(&store, "sender", &lucky(450, 150, 600)).await;
    let users: Vec<String> = (0..150).map(|i| format!("user{i}")).collect();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    grab_all(&store, &p.packet_id, &users).await;

    let (s1, first) = look_up_packet(&store, &p.packet_id, None).await;
    let (s2, second) = look_up_packet_page(&store, &p.packet_id, "cursor=101", None).await;
    let (s3, bad) = look_up_packet_page(&store, &p.packet_id, "cursor=0", None).await;

    let ids = |b: &serde_json::Value| -> Vec<u64> {
        b["grabs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["share_id"].as_u64().unwrap())
            .collect()
    };
    assert_eq!((s1, s2, s3), (200, 200, 400), "{first} {second} {bad}");
    assert_eq!(ids(&first), (1..=100).collect::<Vec<_>>());
    assert_eq!(first["next_cursor"], json!("101"));
    assert_eq!(ids(&second), (101..=150).collect::<Vec<_>>());
    assert_eq!(second["next_cursor"], json!(null));
}
