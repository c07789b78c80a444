//! The whole HTTP contract's happy path, through the fixtures of `events/`.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{self, call, event, with_sub, Function};

/// The whole HTTP contract's happy path, through the fixtures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixtures_through_the_handlers() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        deposit_twice(&store).await;
        let (id, created) = create_lucky_and_fixed(&store).await;
        let grabbed = grab_twice_and_view(&store, &id, &created).await;
        claim_twice_and_read_wallets(&store, &id, &grabbed).await;
        chat_packet(&store).await;
        draw_entries(&store).await;
        scheduled_event(&store).await;
    }
}

/// alice's deposit `dep-1`, and its repeat.
async fn deposit_twice(store: &Arc<Store>) {
    let (s, b) = deposit(store, "alice", 20_000, "dep-1").await;
    assert_eq!(
        (s, b["balance_cents"].clone(), b["repeat"].clone()),
        (201, json!(20_000), json!(false))
    );
    let (s, b) = deposit(store, "alice", 20_000, "dep-1").await;
    assert_eq!(
        (s, b["balance_cents"].clone(), b["repeat"].clone()),
        (201, json!(20_000), json!(true))
    );
}

/// The lucky and the fixed packet fixtures; returns the lucky one's id and answer.
async fn create_lucky_and_fixed(store: &Arc<Store>) -> (String, Value) {
    let (s, created, _) = call(store, Function::CreatePacket, &event("create-packet-lucky")).await;
    assert_eq!(s, 201, "{created}");
    let id = created["packet_id"].as_str().unwrap().to_string();
    assert_eq!(created["sender_id"], "alice");
    assert_eq!(created["total_cents"], 10_000);
    assert_eq!(created["count"], 100);
    assert_eq!(created["mode"], "lucky");
    assert_eq!(created["split"], "double_mean");
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    for key in ["greeting", "expires_at"] {
        assert!(created.get(key).is_some(), "{key}");
    }
    let (s, fixed, _) = call(store, Function::CreatePacket, &event("create-packet-fixed")).await;
    assert_eq!(
        (s, fixed["mode"].clone(), fixed["split"].clone()),
        (201, json!("fixed"), Value::Null)
    );
    (id, created)
}

/// bob's grab of packet `id`, his repeat, and the view; returns the grab's answer.
async fn grab_twice_and_view(store: &Arc<Store>, id: &str, created: &Value) -> Value {
    let (s, grabbed, _) = call(store, Function::Grab, &with_packet(event("grab-grab"), id)).await;
    assert_eq!(s, 200, "{grabbed}");
    assert_eq!(grabbed["packet_id"], id);
    assert_eq!(grabbed["share_id"], 1);
    assert!(grabbed["amount_cents"].as_i64().unwrap() >= 1);
    assert_eq!(grabbed["claim_by"], created["expires_at"]);
    let (s, again, _) = call(store, Function::Grab, &with_packet(event("grab-grab"), id)).await;
    assert_eq!((s, again["error"].clone()), (409, json!("already_grabbed")));
    assert_eq!(again["share"]["amount_cents"], grabbed["amount_cents"]);
    assert_eq!(again["share"]["share_id"], 1);

    let (s, view, _) = call(store, Function::Grab, &with_packet(event("grab-view"), id)).await;
    assert_eq!(s, 200);
    assert_eq!(view["status"], "open");
    assert_eq!(view["grabbed_count"], 1);
    assert_eq!(view["grabs"][0]["user_id"], "bob");
    assert_eq!(view["grabs"][0]["claimed"], false);
    assert_eq!(view["best_luck"], Value::Null);
    grabbed
}

/// bob's claim of his share of `id` and its repeat, then bob's and alice's wallets.
async fn claim_twice_and_read_wallets(store: &Arc<Store>, id: &str, grabbed: &Value) {
    let (s, c1, _) = call(
        store,
        Function::Claim,
        &with_packet(event("claim-claim"), id),
    )
    .await;
    assert_eq!(s, 200, "{c1}");
    assert_eq!(c1["repeat"], false);
    assert_eq!(c1["balance_cents"], grabbed["amount_cents"]);
    let (s, c2, _) = call(
        store,
        Function::Claim,
        &with_packet(event("claim-claim"), id),
    )
    .await;
    assert_eq!(
        (s, c2["repeat"].clone(), c2["balance_cents"].clone()),
        (200, json!(true), c1["balance_cents"].clone())
    );

    let (s, w, _) = call(
        store,
        Function::Wallet,
        &with_sub(event("wallet-get"), "bob"),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(w["user_id"], "bob");
    assert_eq!(w["entries"][0]["kind"], "claim_credit");
    assert_eq!(w["entries"][0]["reference"], id);
    let (_, w, _) = call(store, Function::Wallet, &event("wallet-get")).await;
    let kinds: Vec<&str> = w["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["packet_debit", "packet_debit", "deposit"]);
    assert_eq!(w["balance_cents"], 20_000 - 10_000 - 1_000);
}

/// The chat-packet fixtures: a password packet alice creates, bob grabs with its password, and
/// alice cancels (its two un-grabbed shares come back).
async fn chat_packet(store: &Arc<Store>) {
    let (s, pw, _) = call(
        store,
        Function::CreatePacket,
        &event("create-packet-password"),
    )
    .await;
    assert_eq!(
        (s, pw["password_protected"].as_bool()),
        (201, Some(true)),
        "{pw}"
    );
    let pw_id = pw["packet_id"].as_str().unwrap();
    let (s, g, _) = call(
        store,
        Function::Grab,
        &with_packet(event("grab-grab-password"), pw_id),
    )
    .await;
    assert_eq!(s, 200, "{g}");
    let (s, c, _) = call(
        store,
        Function::CreatePacket,
        &with_packet(event("create-packet-cancel"), pw_id),
    )
    .await;
    assert_eq!(
        (s, c["status"].as_str(), c["refunded_cents"].as_i64()),
        (
            200,
            Some("cancelled"),
            Some(600 - g["amount_cents"].as_i64().unwrap())
        ),
        "{c}"
    );
}

/// The draw fixtures: alice's draw packet and the merchant's draw campaign show their
/// commitments (never their seeds), and bob's grab of each enters him (202, `entered`).
async fn draw_entries(store: &Arc<Store>) {
    let (s, p, _) = call(store, Function::CreatePacket, &event("create-packet-draw")).await;
    assert_eq!((s, p["draw"]["seed"].is_null()), (201, true), "{p}");
    let id = p["packet_id"].as_str().unwrap();
    let (s, g, _) = call(
        store,
        Function::Grab,
        &with_sub(with_packet(event("grab-grab"), id), "bob"),
    )
    .await;
    assert_eq!((s, g["entered"].as_bool()), (202, Some(true)), "{g}");
    let (s, c, _) = call(
        store,
        Function::Coupon,
        &event("coupon-create-draw-campaign"),
    )
    .await;
    assert_eq!((s, c["status"].as_str()), (201, Some("entering")), "{c}");
    let grab = crate::coupons::api::at("coupon-grab", c["campaign_id"].as_str().unwrap());
    let (s, e, _) = call(store, Function::Coupon, &with_sub(grab, "bob")).await;
    assert_eq!((s, e["entered"].as_bool()), (202, Some(true)), "{e}");
}

/// The scheduled-event fixture is a valid EventBridge event for reclaim-cron.
async fn scheduled_event(store: &Arc<Store>) {
    let sched: aws_lambda_events::eventbridge::EventBridgeEvent<Value> =
        serde_json::from_value(event("reclaim-cron-scheduled")).unwrap();
    assert_eq!(sched.detail_type, "Scheduled Event");
    let summary = hongbao::lambda::reclaim::run(store, None).await.unwrap();
    assert_eq!(summary.packets.settled, 0);
}
