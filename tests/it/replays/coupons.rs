//! Coupons: a campaign's creation and batch, and the checkout (hold, redeem, release).

use std::sync::Arc;

use hongbao::Store;
use serde_json::{json, Value};

use super::{assert_replayed, send_twice, store};
use crate::common::{call, event, snapshot, with_body, with_placeholder, with_sub, Function};

/// The fixture campaign (1,000 generated codes, open now), 15 % off up to 50.00; its id.
async fn campaign(store: &Arc<Store>) -> String {
    let v = event("coupon-create-campaign");
    let mut body: Value = serde_json::from_str(v["body"].as_str().unwrap()).unwrap();
    body["discount"] = json!({"percent_off": 15, "max_off_cents": 5000});
    let v = with_body(v, &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    assert_eq!(s, 201, "{b}");
    b["campaign_id"].as_str().unwrap().to_string()
}

/// bob's code of the fixture campaign.
async fn bobs_code(store: &Arc<Store>) -> String {
    let id = campaign(store).await;
    let grab = with_sub(
        with_placeholder(event("coupon-grab"), "CAMPAIGN_ID", &id),
        "bob",
    );
    let (s, b, _) = call(store, Function::Coupon, &grab).await;
    assert_eq!(s, 200, "{b}");
    b["code"].as_str().unwrap().to_string()
}

/// The checkout fixture `name` for bob's `code`, with `fields` over its body.
fn checkout(name: &str, code: &str, fields: Value) -> Value {
    let v = with_placeholder(event(name), "COUPON_CODE", code);
    let mut body: Value = serde_json::from_str(v["body"].as_str().unwrap()).unwrap();
    for (k, x) in fields.as_object().unwrap() {
        body[k] = x.clone();
    }
    with_body(v, &body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_sent_again_is_a_replay() {
    let (_redis, store) = store();

    let twice = send_twice(&store, Function::Coupon, &event("coupon-create-campaign")).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_sent_again_is_a_replay() {
    let (_redis, store) = store();
    let body = json!({"title": "uploaded", "codes": ["SPRING-0001"], "ends_at": "ENDS",
                      "per_user": 1, "reference": "uploaded-1",
                      "starts_at": hongbao::api::error::rfc3339(now_ms() + 3_600_000)});
    let create = event("coupon-create-campaign");
    let mut fields: Value = serde_json::from_str(create["body"].as_str().unwrap()).unwrap();
    fields.as_object_mut().unwrap().remove("generate");
    for (k, x) in body.as_object().unwrap() {
        if k != "ends_at" {
            fields[k] = x.clone();
        }
    }
    let (s, b, _) = call(
        &store,
        Function::Coupon,
        &with_body(create, &fields.to_string()),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let id = b["campaign_id"].as_str().unwrap();
    let v = with_placeholder(event("coupon-add-codes"), "CAMPAIGN_ID", id);

    let twice = send_twice(&store, Function::Coupon, &v).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_sent_again_is_a_replay_that_extends_it() {
    let (_redis, store) = store();
    let code = bobs_code(&store).await;
    let v = checkout("coupon-hold", &code, json!({}));

    let twice = send_twice(&store, Function::Coupon, &v).await;

    let (first, again) = (
        twice.first.1["held_until"].clone(),
        twice.again.1["held_until"].clone(),
    );
    assert!(twice.again.2, "replayed");
    assert!(again.as_str() >= first.as_str(), "{first} then {again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_sent_again_is_a_replay() {
    let (_redis, store) = store();
    let code = bobs_code(&store).await;
    let v = checkout("coupon-redeem", &code, json!({"order_total_cents": 15_000}));

    let twice = send_twice(&store, Function::Coupon, &v).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_of_the_same_order_with_another_total_is_refused() {
    let (redis, store) = store();
    let code = bobs_code(&store).await;
    let first = checkout("coupon-redeem", &code, json!({"order_total_cents": 15_000}));
    assert_eq!(call(&store, Function::Coupon, &first).await.0, 200);
    let before = snapshot(&redis).await;
    let changed = checkout("coupon-redeem", &code, json!({"order_total_cents": 99_999}));

    let (s, e, _) = call(&store, Function::Coupon, &changed).await;

    assert_eq!(
        (s, e["error"].as_str()),
        (409, Some("order_reference_reused")),
        "{e}"
    );
    let after = snapshot(&redis).await;
    assert_eq!(
        after.len(),
        before.len() + 1,
        "only the call's recorded answer is new"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_sent_again_is_a_replay() {
    let (_redis, store) = store();
    let code = bobs_code(&store).await;
    let hold = checkout("coupon-hold", &code, json!({}));
    assert_eq!(call(&store, Function::Coupon, &hold).await.0, 200);
    let v = checkout("coupon-release", &code, json!({}));

    let twice = send_twice(&store, Function::Coupon, &v).await;

    assert_replayed(twice);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
