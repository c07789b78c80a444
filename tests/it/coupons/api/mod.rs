//! Coupon drops through the coupon function's router, as API Gateway events reach it
//! (`events/coupon-*.json`), on a standalone server and a 3-master cluster: a drop raced by
//! 300 users, idempotent creation, the merchant's batches, refusals that write nothing, the
//! campaign's times and the visit limit, and one redemption under 32 concurrent redeems.

//!
//! One file a topic: drops, refusals, times, the caller's coupons and the feed, the checkout.

mod checkout;
mod drop;
mod feed;
mod ids;
mod refusals;
mod times;

use std::sync::Arc;

use hongbao::api::error::rfc3339;
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{call, event, with_body, with_sub, Function};

/// The fixture `name` with the campaign `id` in its path.
pub(crate) fn at(name: &str, id: &str) -> Value {
    let mut v = event(name);
    let path = v["rawPath"].as_str().unwrap().replace("CAMPAIGN_ID", id);
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["id"] = json!(id);
    v
}

/// `POST /campaigns` with `body`, signed by the fixture's coupon principal.
pub(crate) async fn create(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let v = with_body(event("coupon-create-campaign"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /campaigns/{id}/grab` as `user`: (status, body, `Retry-After`).
pub(crate) async fn grab(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value, Option<String>) {
    call(
        store,
        Function::Coupon,
        &with_sub(at("coupon-grab", id), user),
    )
    .await
}

/// `GET /campaigns/{id}` as `user`.
pub(crate) async fn view(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value) {
    let (s, b, _) = call(
        store,
        Function::Coupon,
        &with_sub(at("coupon-view", id), user),
    )
    .await;
    (s, b)
}

/// `POST /coupons/redeem`.
async fn redeem(store: &Arc<Store>, code: &str, user: &str, order: &str) -> (u16, Value) {
    let body = json!({"code": code, "user_id": user, "order_reference": order});
    let v = with_body(event("coupon-redeem"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /campaigns/{id}/codes`.
async fn add_codes(
    store: &Arc<Store>,
    id: &str,
    codes: &[String],
    reference: &str,
) -> (u16, Value) {
    let body = json!({"codes": codes, "reference": reference});
    let v = with_body(at("coupon-add-codes", id), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// A campaign body of `codes` open now until `ends_in_ms` after `now`.
fn uploaded(now: i64, codes: &[String], ends_in_ms: i64, reference: &str) -> Value {
    json!({
        "title": "20 off 100",
        "codes": codes,
        "ends_at": rfc3339(now + ends_in_ms),
        "redeem_by": rfc3339(now + ends_in_ms + 3_600_000),
        "reference": reference,
    })
}
