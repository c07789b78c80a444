//! Expiry: the rest goes back to the merchant, never to the sharer, once.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use crate::common::{self, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::store::keys::Keys;
use hongbao::store::reclaim::Payer;
use hongbao::store::scripts::{Call, SettleCall};
use hongbao::store::{journal, reclaim};
use hongbao::wallet;
use hongbao::Store;

use super::*;

/// What [`half_claimed`] arranged.
struct HalfClaimed {
    packet_id: String,
    /// erin's and frank's shares, cents.
    shares: HashMap<&'static str, i64>,
    /// The packet's expiry, Unix ms.
    expires_at_ms: i64,
}

impl HalfClaimed {
    /// What erin's and frank's claims pay out, cents.
    fn paid(&self) -> i64 {
        self.shares["erin"] + self.shares["frank"]
    }
}

/// A `sharer_first` packet of `order-7` (30.00 in 6 shares, 6 s, shared by carol, who has
/// share 1 from the creation): erin and frank grab, erin claims, and frank's claim is left
/// half-done (step 1 only, as if the Lambda died).
async fn half_claimed(store: &Arc<Store>) -> HalfClaimed {
    fund_merchant(store, SHOP, 10_000).await;
    let mut body = order("order-7", 3_000, 6);
    body["sharer_first"] = json!(true);
    body["expires_in_secs"] = json!(6);
    let (s, created) = create(store, &body).await;
    assert_eq!(s, 201, "{created}");
    let packet_id = created["packet_id"].as_str().unwrap().to_string();
    let mut shares = HashMap::new();
    for u in ["erin", "frank"] {
        let (s, b) = as_user(store, Function::Grab, "grab-grab", &packet_id, u).await;
        assert_eq!(s, 200, "{b}");
        shares.insert(u, b["amount_cents"].as_i64().unwrap());
    }
    assert_eq!(
        as_user(store, Function::Claim, "claim-claim", &packet_id, "erin")
            .await
            .0,
        200
    );
    let step1 = common::claim_step_one(store, &packet_id, "frank").await;
    assert_eq!((step1[0].as_str(), step1[4].as_str()), ("claimed", SHOP));
    let meta = Keys::new(&store.config().key_prefix)
        .packet(&packet_id)
        .meta;
    let expires_at_ms: i64 = redis::cmd("HGET")
        .arg(&meta)
        .arg("expires_at")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
    HalfClaimed {
        packet_id,
        shares,
        expires_at_ms,
    }
}

/// [`half_claimed`], past its expiry, and reclaim-cron's first run then.
async fn expired(store: &Arc<Store>) -> (HalfClaimed, reclaim::ReclaimSummary) {
    let h = half_claimed(store).await;
    common::sleep_until_redis_ms(store, h.expires_at_ms).await;
    let first = reclaim::run(store).await.unwrap();
    (h, first)
}

/// Test: the sharer cannot cancel a merchant's packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sharer_cannot_cancel_it() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let h = half_claimed(&store).await;

    let (s, cancel) = as_user(
        &store,
        Function::CreatePacket,
        "create-packet-cancel",
        &h.packet_id,
        "carol",
    )
    .await;

    assert_eq!(
        (s, &cancel["error"]),
        (403, &json!("forbidden")),
        "{cancel}"
    );
}

/// Test: a `sharer_first` packet gives the sharer a share at creation: their grab is 409
/// `already_grabbed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sharer_has_a_share_from_the_creation() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let h = half_claimed(&store).await;

    let (s, again) = as_user(&store, Function::Grab, "grab-grab", &h.packet_id, "carol").await;

    assert_eq!(
        (s, &again["error"]),
        (409, &json!("already_grabbed")),
        "{again}"
    );
}

/// Test: at expiry reclaim-cron pays the pending claim and refunds the rest (the sharer's
/// unclaimed share, the 3 un-grabbed) to the budget's balance out of `reserved`: money goes
/// back to the merchant, never to the sharer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_expiry_the_pending_claim_is_paid_and_the_rest_goes_back_to_the_merchant() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (h, first) = expired(&store).await;

        let paid = h.paid();
        let run = (first.settled, first.redriven, first.refunded_cents);
        assert_eq!(run, (1, 1, 3_000 - paid), "{backend}: {first:?}");
        let b = books(&store, SHOP).await;
        let got = (b.balance_cents, b.reserved_cents, b.paid_cash_cents);
        assert_eq!(got, (10_000 - paid, 0, paid), "{backend}");
        assert_eq!(wallet::balance(&store, "carol").await.unwrap(), 0);
        assert_eq!(
            wallet::balance(&store, "frank").await.unwrap(),
            h.shares["frank"]
        );
        let users = ["carol", "erin", "frank"].map(String::from);
        let packets = std::slice::from_ref(&h.packet_id);
        assert_books(&store, &backend.to_string(), &users, packets, 10_000).await;
    }
}

/// Test: after the refund, a second run and a settle call sent again (a later pass that found
/// the entry again) refund nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_and_a_settle_sent_again_refund_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (h, _) = expired(&store).await;

        let second = reclaim::run(&store).await.unwrap();
        let keys = Keys::new(&store.config().key_prefix);
        let (pk, mk) = (keys.packet(&h.packet_id), Payer::merchant(&keys, SHOP));
        let resent: redis::Value = SettleCall::of(&pk, &mk, &h.packet_id, 60, 100, "5e771e99")
            .invocation()
            .invoke_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();

        assert_eq!((second.settled, second.refunded_cents), (0, 0), "{backend}");
        let resent = hongbao::store::scripts::texts("settle", resent).unwrap();
        assert_eq!(
            (resent[0].as_str(), resent[2].as_str()),
            ("settled", "0"),
            "{resent:?}"
        );
    }
}

/// Test: the merchant's journal holds the packet's debit, its refund and its settlement, and
/// the packet's other entries are claim credits, none the sharer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_holds_the_merchants_debit_refund_and_settlement() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (h, _) = expired(&store).await;

        let key = Keys::new(&store.config().key_prefix).merchant(SHOP).journal;
        let entries = journal::read(&store, &key, 100).await.unwrap();
        let of_packet = entries.iter().filter(|e| e.reference == h.packet_id);
        let merchant: Vec<(Kind, i64)> = of_packet
            .clone()
            .filter(|e| e.kind.is_merchant())
            .map(|e| (e.kind, e.amount_cents))
            .collect();
        let want = [
            (Kind::MerchantPacketDebit, -3_000),
            (Kind::MerchantRefund, 3_000 - h.paid()),
            (Kind::MerchantPacketSettled, 0),
        ];
        assert_eq!(merchant, want, "{backend}");
        let mut others = of_packet.filter(|e| !e.kind.is_merchant());
        assert!(
            others.all(|e| e.kind == Kind::ClaimCredit && e.user_id != "carol"),
            "{backend}"
        );
    }
}
