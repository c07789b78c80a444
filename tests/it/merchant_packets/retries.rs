//! Lost replies: the create, a claim's step 3, a coupon packet's claim and its settlement at
//! `redeem_by` sent again answer as their first run, moving money once.

use crate::common::{self, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{Call, MerchantCreatePacketCall, SettleCall};
use hongbao::store::{journal, reclaim};
use hongbao::Store;

use super::*;

/// Test: the create script run twice with the same packet id (a cluster client re-sending a
/// command whose reply was lost) answers `created` both times and debits once; a claim's step
/// 3 run twice moves the share to `paid_cash` once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_sent_scripts_answer_as_their_first_run() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 5_000).await;
        let keys = Keys::new(&store.config().key_prefix);
        let mk = keys.merchant(SHOP);
        let packet_id = hongbao::store::keys::new_packet_id(SHOP);
        let pk = keys.packet(&packet_id);
        let mut conn = store.conn().await.unwrap();
        let now = now_ms(&store).await;
        let amounts = [700_i64, 300];
        let call = MerchantCreatePacketCall {
            merchant: &mk.merchant,
            ledger: &mk.ledger,
            records: &mk.records,
            records_forget: &mk.records_forget,
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            packets: &mk.packets,
            journal: &mk.journal,
            order: &pk.order,
            packet_id: &packet_id,
            merchant_id: SHOP,
            order_reference: "order-9",
            sharer_id: "carol",
            payout: "wallet",
            sharer_first: "",
            total_cents: 1_000,
            count: 2,
            mode: "lucky",
            split: "double_mean",
            greeting: "",
            cover: "",
            expires_in_secs: 600,
            fingerprint: "m1:test",
            order_keep_ms: 3_600_000,
            ledger_cap: 100,
            indexed_at_ms: now,
            delivery_window_ms: 60_000,
            salt: &"0".repeat(64),
            commitment: &"1".repeat(64),
            index_keep_ms: 3_600_000,
            min_order_cents: "",
            redeem_within_ms: "",
            share_amounts: &amounts,
        };

        // Act
        let mut replies = Vec::new();
        for _ in 0..2 {
            let reply: redis::Value = call.invocation().invoke_async(&mut conn).await.unwrap();
            replies.push(hongbao::store::scripts::texts("merchant_create_packet", reply).unwrap());
        }

        // Assert
        assert_eq!(replies[0], ["created", packet_id.as_str(), "4000"]);
        assert_eq!(replies[1], replies[0], "{backend}");
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents, b.close()),
            (4_000, 1_000, true)
        );

        // Act: a grab, then claim steps 1 and 3 twice each (step 2 between, once).
        let (s, grabbed) = as_user(&store, Function::Grab, "grab-grab", &packet_id, "gina").await;
        assert_eq!(s, 200, "{grabbed}");
        let share = grabbed["amount_cents"].as_i64().unwrap();
        let (s, _) = as_user(&store, Function::Claim, "claim-claim", &packet_id, "gina").await;
        assert_eq!(s, 200);
        let done = hongbao::store::scripts::ClaimDoneCall {
            claims: &pk.claims,
            grabs: &pk.grabs,
            books: &mk.merchant,
            user_id: "gina",
            mark: "",
            merchant_id: SHOP,
        };
        let again: String = done.invocation().invoke_async(&mut conn).await.unwrap();

        // Assert
        let state: String = redis::cmd("HGET")
            .arg(&pk.claims)
            .arg("gina")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(again.starts_with("done:"), "{backend}: {again}");
        assert_eq!(again, state, "{backend}: the re-run answers the done state");
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.reserved_cents, b.paid_cash_cents, b.close()),
            (1_000 - share, share, true),
            "{backend}"
        );
        assert_books(
            &store,
            &backend.to_string(),
            &["gina".into()],
            &[packet_id],
            5_000,
        )
        .await;
    }
}

/// Redis `TIME`, Unix ms.
async fn now_ms(store: &Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// Test: a coupon packet's scripts run twice (lost replies re-sent): the claim (its one step on
/// the merchant's slot) issues one coupon and moves the books once, the second run answering
/// exactly as the first (`issued` included; another call's claim is not the issuer); the settlement at `redeem_by` refunds
/// the coupons never redeemed once, the second run answering `settled` with nothing moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_sent_coupon_scripts_answer_as_their_first_run() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 5_000).await;
        let mut body = order("order-c", 1_000, 2);
        body["payout"] = serde_json::json!("coupon");
        body["coupon"] = serde_json::json!({"redeem_within_secs": 1});
        body["expires_in_secs"] = serde_json::json!(5);
        let (s, made) = create(&store, &body).await;
        assert_eq!(s, 201, "{made}");
        let packet_id = made["packet_id"].as_str().unwrap().to_string();
        let keys = Keys::new(&store.config().key_prefix);
        let (mk, pk) = (keys.merchant(SHOP), keys.packet(&packet_id));
        let (s, grabbed) = as_user(&store, Function::Grab, "grab-grab", &packet_id, "gina").await;
        assert_eq!(s, 200, "{grabbed}");
        let share = grabbed["amount_cents"].as_i64().unwrap();
        let claim = hongbao::store::scripts::ClaimCall {
            meta: &pk.meta,
            grabs: &pk.grabs,
            claims: &pk.claims,
            coupons: &pk.coupons,
            books: &mk.merchant,
            journal: &mk.journal,
            user_id: "gina",
            books_of: SHOP,
            call: "00000000000000c1",
        };
        let mut conn = store.conn().await.unwrap();

        // Act
        let mut replies = Vec::new();
        for _ in 0..2 {
            let reply: redis::Value = claim.invocation().invoke_async(&mut conn).await.unwrap();
            replies.push(hongbao::store::scripts::texts("claim", reply).unwrap());
        }

        // Assert
        assert_eq!(
            (replies[0][0].as_str(), replies[0][7].as_str()),
            ("claimed", "1")
        );
        assert_eq!(
            replies[1], replies[0],
            "{backend}: the re-run answers its first run"
        );
        let other = hongbao::store::scripts::ClaimCall {
            call: "00000000000000c2",
            ..claim
        };
        let reply: redis::Value = other.invocation().invoke_async(&mut conn).await.unwrap();
        let later = hongbao::store::scripts::texts("claim", reply).unwrap();
        assert_eq!(later[7], "", "{backend}: another call issued nothing");
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.reserved_cents, b.outstanding_coupon_cents, b.close()),
            (1_000 - share, share, true),
            "{backend}"
        );
        let issued = journal::read(&store, &mk.journal, 1_000).await.unwrap();
        let issued = issued
            .iter()
            .filter(|e| e.kind == Kind::CouponIssued)
            .count();
        assert_eq!(issued, 1, "{backend}");

        // Act: expiry (reclaim-cron), then the settlement at redeem_by run twice.
        let (expires_at, redeem_by): (i64, i64) = redis::cmd("HMGET")
            .arg(&pk.meta)
            .arg("expires_at")
            .arg("redeem_by")
            .query_async(&mut conn)
            .await
            .unwrap();
        common::sleep_until_redis_ms(&store, expires_at).await;
        assert_eq!(reclaim::run(&store).await.unwrap().settled, 1);
        common::sleep_until_redis_ms(&store, redeem_by).await;
        // Two settle calls (two cron passes), each with its own call id.
        let mut replies = Vec::new();
        let payer = reclaim::Payer::merchant(&keys, SHOP);
        for call_id in ["c0ffee01", "c0ffee02"] {
            let settle = SettleCall::of(&pk, &payer, &packet_id, 3_600, 100, call_id);
            let reply: redis::Value = settle.invocation().invoke_async(&mut conn).await.unwrap();
            replies.push(hongbao::store::scripts::texts("settle", reply).unwrap());
        }

        // Assert
        let refund = (1_000 - share).to_string();
        let share = share.to_string();
        assert_eq!(
            replies[0],
            ["settled", refund.as_str(), "0", share.as_str()]
        );
        assert_eq!(
            replies[1],
            ["settled", refund.as_str(), "0", "0"],
            "{backend}"
        );
        let b = books(&store, SHOP).await;
        assert_eq!(
            (
                b.balance_cents,
                b.reserved_cents,
                b.outstanding_coupon_cents,
                b.close()
            ),
            (5_000, 0, 0, true),
            "{backend}: {b:?}"
        );
        let refunds = journal::read(&store, &mk.journal, 1_000).await.unwrap();
        let refunds = refunds
            .iter()
            .filter(|e| e.kind == Kind::MerchantCouponRefund)
            .count();
        assert_eq!(refunds, 1, "{backend}");
    }
}
