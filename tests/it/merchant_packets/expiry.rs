//! Expiry: the rest goes back to the merchant, never to the sharer, once.

use std::collections::HashMap;

use serde_json::json;

use crate::common::{self, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::store::keys::Keys;
use hongbao::store::reclaim::Payer;
use hongbao::store::scripts::{Call, SettleCall};
use hongbao::store::{journal, reclaim};
use hongbao::wallet;

use super::*;

/// Test: money goes back to the merchant, never to the sharer. A `sharer_first` packet of 6
/// shares gives the sharer share 1 at creation; two members grab, one claims, and one claim is
/// left half-done (step 1 only, as if the Lambda died). At expiry reclaim-cron pays the pending
/// claim, refunds the rest (the sharer's unclaimed share, the other grabber's, the 3
/// un-grabbed) to the budget's balance out of `reserved`, and journals it as the merchant's;
/// a second run refunds nothing. The sharer cannot cancel the packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_refunds_the_merchant_and_never_the_sharer() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 10_000).await;
        let mut body = order("order-7", 3_000, 6);
        body["sharer_first"] = json!(true);
        body["expires_in_secs"] = json!(6);
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{created}");
        let packet_id = created["packet_id"].as_str().unwrap().to_string();
        let (s, cancel) = as_user(
            &store,
            Function::CreatePacket,
            "create-packet-cancel",
            &packet_id,
            "carol",
        )
        .await;
        assert_eq!(
            (s, &cancel["error"]),
            (403, &json!("forbidden")),
            "{cancel}"
        );
        let (s, again) = as_user(&store, Function::Grab, "grab-grab", &packet_id, "carol").await;
        assert_eq!(
            (s, &again["error"]),
            (409, &json!("already_grabbed")),
            "{again}"
        );
        let mut shares = HashMap::new();
        for u in ["erin", "frank"] {
            let (s, b) = as_user(&store, Function::Grab, "grab-grab", &packet_id, u).await;
            assert_eq!(s, 200, "{b}");
            shares.insert(u, b["amount_cents"].as_i64().unwrap());
        }
        let (s, _) = as_user(&store, Function::Claim, "claim-claim", &packet_id, "erin").await;
        assert_eq!(s, 200);
        let step1 = common::claim_step_one(&store, &packet_id, "frank").await;
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
        common::sleep_until_redis_ms(&store, expires_at_ms).await;

        // Act
        let first = reclaim::run(&store).await.unwrap();
        let second = reclaim::run(&store).await.unwrap();
        // Another settle call (a later cron pass that found the entry again): it answers the
        // settled packet and refunds nothing more.
        let (pk, mk) = {
            let keys = Keys::new(&store.config().key_prefix);
            (keys.packet(&packet_id), Payer::merchant(&keys, SHOP))
        };
        let resent: redis::Value = SettleCall::of(&pk, &mk, &packet_id, 60, 100, "5e771e99")
            .invocation()
            .invoke_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        let resent = hongbao::store::scripts::texts("settle", resent).unwrap();

        // Assert
        let paid = shares["erin"] + shares["frank"];
        assert_eq!(resent[0], "settled", "{backend}: {resent:?}");
        assert_eq!(resent[2], "0", "{backend}: settled again: {resent:?}");
        assert_eq!(
            (first.settled, first.redriven),
            (1, 1),
            "{backend}: {first:?}"
        );
        assert_eq!(first.refunded_cents, 3_000 - paid, "{backend}");
        assert_eq!((second.settled, second.refunded_cents), (0, 0));
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents, b.paid_cash_cents),
            (10_000 - paid, 0, paid),
            "{backend}"
        );
        assert_eq!(wallet::balance(&store, "carol").await.unwrap(), 0);
        assert_eq!(
            wallet::balance(&store, "frank").await.unwrap(),
            shares["frank"]
        );
        let users = ["carol", "erin", "frank"].map(String::from);
        assert_books(
            &store,
            &backend.to_string(),
            &users,
            std::slice::from_ref(&packet_id),
            10_000,
        )
        .await;
        let key = Keys::new(&store.config().key_prefix).merchant(SHOP).journal;
        let entries = journal::read(&store, &key, 100).await.unwrap();
        let merchant: Vec<(Kind, i64)> = entries
            .iter()
            .filter(|e| e.kind.is_merchant() && e.reference == packet_id)
            .map(|e| (e.kind, e.amount_cents))
            .collect();
        assert_eq!(
            merchant,
            [
                (Kind::MerchantPacketDebit, -3_000),
                (Kind::MerchantRefund, 3_000 - paid),
                (Kind::MerchantPacketSettled, 0),
            ],
            "{backend}"
        );
        assert!(entries
            .iter()
            .filter(|e| e.reference == packet_id && !e.kind.is_merchant())
            .all(|e| e.kind == Kind::ClaimCredit && e.user_id != "carol"));
    }
}
