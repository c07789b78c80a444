//! Merchants: a merchant packet, a budget's deposit and withdrawal.

use std::sync::Arc;

use hongbao::Store;
use serde_json::json;

use super::{assert_replayed, send_twice, store};
use crate::common::{call, event, with_body, Function};
use crate::handlers::snapshot_but_reclaim_index;

/// shop-1042's budget with 100,000 cents.
async fn fund_shop(store: &Arc<Store>) {
    let (s, b, _) = call(store, Function::Merchant, &event("merchant-deposit")).await;
    assert_eq!(s, 201, "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchant_packet_sent_again_is_a_replay() {
    let (_redis, store) = store();
    fund_shop(&store).await;

    let twice = send_twice(&store, Function::Merchant, &event("merchant-create-packet")).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchant_packet_of_the_same_order_with_another_body_is_refused() {
    let (redis, store) = store();
    fund_shop(&store).await;
    let v = event("merchant-create-packet");
    assert_eq!(call(&store, Function::Merchant, &v).await.0, 201);
    let before = snapshot_but_reclaim_index(&redis).await;
    let body = json!({"merchant_id": "shop-1042", "order_reference": "order-20261128-0042",
                      "sharer_id": "carol", "total_cents": 3000, "count": 6, "payout": "wallet"});

    let (s, e, _) = call(&store, Function::Merchant, &with_body(v, &body.to_string())).await;

    assert_eq!(
        (s, e["error"].as_str()),
        (409, Some("order_reference_reused"))
    );
    assert_eq!(snapshot_but_reclaim_index(&redis).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_deposit_sent_again_is_a_replay() {
    let (_redis, store) = store();

    let twice = send_twice(&store, Function::Merchant, &event("merchant-deposit")).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_withdrawal_sent_again_is_a_replay() {
    let (_redis, store) = store();
    fund_shop(&store).await;

    let twice = send_twice(&store, Function::Merchant, &event("merchant-withdrawal")).await;

    assert_replayed(twice);
}
