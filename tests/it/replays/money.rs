//! Red packets and wallets: create (with an `Idempotency-Key`), cancel, claim, deposit,
//! withdrawal.

use std::sync::Arc;

use hongbao::Store;
use serde_json::json;

use super::{assert_replayed, send_twice, store};
use crate::common::{call, event, with_body, with_header, with_placeholder, Function};
use crate::handlers::snapshot_but_reclaim_index;

/// alice's wallet with 100,000 cents.
async fn fund_alice(store: &Arc<Store>) {
    let (s, b, _) = call(store, Function::Wallet, &event("wallet-deposit")).await;
    assert_eq!(s, 201, "{b}");
}

/// alice's lucky packet; its id.
async fn packet(store: &Arc<Store>) -> String {
    fund_alice(store).await;
    let (s, b, _) = call(store, Function::CreatePacket, &event("create-packet-lucky")).await;
    assert_eq!(s, 201, "{b}");
    b["packet_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_sent_again_with_its_key_is_a_replay() {
    let (_redis, store) = store();
    fund_alice(&store).await;
    let v = with_header(event("create-packet-lucky"), "idempotency-key", "order-7");

    let twice = send_twice(&store, Function::CreatePacket, &v).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_with_its_key_and_another_body_is_refused() {
    let (redis, store) = store();
    fund_alice(&store).await;
    let v = with_header(event("create-packet-lucky"), "idempotency-key", "order-7");
    assert_eq!(call(&store, Function::CreatePacket, &v).await.0, 201);
    let before = snapshot_but_reclaim_index(&redis).await;
    let body = json!({"total_cents": 20_000, "count": 100, "mode": "lucky"}).to_string();

    let (s, e, _) = call(&store, Function::CreatePacket, &with_body(v, &body)).await;

    assert_eq!(
        (s, e["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    assert_eq!(snapshot_but_reclaim_index(&redis).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_again_is_a_replay() {
    let (_redis, store) = store();
    let id = packet(&store).await;
    let v = with_placeholder(event("create-packet-cancel"), "PACKET_ID", &id);

    let twice = send_twice(&store, Function::CreatePacket, &v).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_sent_again_is_a_replay() {
    let (_redis, store) = store();
    let id = packet(&store).await;
    let grab = with_placeholder(event("grab-grab"), "PACKET_ID", &id);
    assert_eq!(call(&store, Function::Grab, &grab).await.0, 200);
    let v = with_placeholder(event("claim-claim"), "PACKET_ID", &id);

    let twice = send_twice(&store, Function::Claim, &v).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposit_sent_again_is_a_replay() {
    let (_redis, store) = store();

    let twice = send_twice(&store, Function::Wallet, &event("wallet-deposit")).await;

    assert_replayed(twice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_sent_again_is_a_replay() {
    let (_redis, store) = store();
    fund_alice(&store).await;

    let twice = send_twice(&store, Function::Wallet, &event("wallet-withdrawal")).await;

    assert_replayed(twice);
}
