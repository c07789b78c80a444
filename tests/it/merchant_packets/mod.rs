//! Merchant packets (`POST /merchant-packets`, `merchant_create_packet.lua`; then the red
//! packets' own grab, claim and reclaim) through the routers, on standalone and on the
//! 3-master cluster: one packet per order however many creates race, seed 000's test (100
//! grabbers, 5 shares), claims paid once with the merchant's books moved in the same step,
//! expiry refunding the merchant and never the sharer, re-sent scripts answering as their
//! first run, and every refusal writing nothing. After each, wallets + merchant budgets +
//! packets = deposits − withdrawals, and the merchant's books close.

mod coupons;
mod expiry;
mod listing;
mod orders;
mod retries;
mod storm;
mod support;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{call, event, with_body, with_placeholder, with_sub, Function};
use hongbao::merchants::rules::Books;
use hongbao::store::audit;
use hongbao::store::keys::Keys;
use hongbao::Store;

/// The merchant of the fixtures (`events/merchant-*.json`).
pub(super) const SHOP: &str = "shop-1042";

/// The merchant's books as its hash holds them.
pub(super) async fn books(store: &Store, merchant: &str) -> Books {
    let mk = Keys::new(&store.config().key_prefix).merchant(merchant);
    let mut conn = store.conn().await.unwrap();
    let fields: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(&mk.merchant)
        .query_async(&mut conn)
        .await
        .unwrap();
    Books::from_fields(&fields).unwrap()
}

/// Deposits `cents` into `merchant`'s budget through the merchant route.
pub(super) async fn fund_merchant(store: &Arc<Store>, merchant: &str, cents: i64) {
    let mut v = event("merchant-deposit");
    let path = v["rawPath"].as_str().unwrap().replace(SHOP, merchant);
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["merchant_id"] = json!(merchant);
    let body = json!({"amount_cents": cents, "reference": format!("topup-{cents}")});
    let (s, b, _) = call(store, Function::Merchant, &with_body(v, &body.to_string())).await;
    assert_eq!(s, 201, "{b}");
}

/// A create body for `order` of `total` cents in `count` shares, paid out to wallets.
pub(super) fn order(order: &str, total: i64, count: u32) -> Value {
    json!({"merchant_id": SHOP, "order_reference": order, "sharer_id": "carol",
           "total_cents": total, "count": count, "payout": "wallet"})
}

/// Sends `POST /merchant-packets` with `body`; (status, answer).
pub(super) async fn create(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let ev = with_body(event("merchant-create-packet"), &body.to_string());
    let (s, b, _) = call(store, Function::Merchant, &ev).await;
    (s, b)
}

/// Sends the coupon route `fixture` (`coupon-hold`, `coupon-redeem`, `coupon-release`, IAM)
/// with `body`; (status, answer).
pub(super) async fn checkout(store: &Arc<Store>, fixture: &str, body: &Value) -> (u16, Value) {
    let v = with_body(event(fixture), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// Sends `user`'s call of the red packet route `fixture` (`grab-grab`, `claim-claim`,
/// `grab-view`, `create-packet-cancel`) on `packet_id` through `function`.
pub(super) async fn as_user(
    store: &Arc<Store>,
    function: Function,
    fixture: &str,
    packet_id: &str,
    user: &str,
) -> (u16, Value) {
    let ev = with_sub(
        with_placeholder(event(fixture), "PACKET_ID", packet_id),
        user,
    );
    let (s, b, _) = call(store, function, &ev).await;
    (s, b)
}

/// Asserts the merchant's books close and wallets + budget + packets = `net` cents.
pub(super) async fn assert_books(
    store: &Store,
    label: &str,
    users: &[String],
    packets: &[String],
    net: i64,
) {
    let b = books(store, SHOP).await;
    assert!(b.close(), "{label}: {b:?}");
    let t = audit::totals_of(store, users, &[SHOP.to_string()], packets)
        .await
        .unwrap();
    assert_eq!(t.total(), net, "{label}: {t:?}");
}
