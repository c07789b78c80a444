//! Unclean failover of a primary + replica pair under a merchant's money: its budget and its
//! packets paid into wallets, and its packets paid out as coupons (a share issued as a
//! coupon, a coupon redeemed at checkout).

use std::sync::Arc;

use hongbao::coupons;
use hongbao::merchants;
use hongbao::merchants::rules::{MerchantPacketOutcome, MerchantPacketRequest, NewMerchantPacket};
use hongbao::packets::{self, ClaimOutcome};
use hongbao::wallet::DepositOutcome;
use hongbao::{Config, Store};

use super::{
    caught_up, claimed, conn_to, freeze_and_cut, grabbed, missing, pair_config, start_pair, Faulty,
    Movement, SHOP,
};

/// A merchant packet of `order`: `total_cents` in 3 fixed shares, paid out to wallets.
fn merchant_packet(order: &str, total_cents: i64) -> NewMerchantPacket {
    let req: MerchantPacketRequest = serde_json::from_value(serde_json::json!({
        "merchant_id": SHOP, "order_reference": order, "sharer_id": "carol",
        "total_cents": total_cents, "count": 3, "mode": "fixed", "payout": "wallet"
    }))
    .unwrap();
    req.check(&Config::default().packets).unwrap()
}

/// Creates a merchant packet that must be created now.
async fn merchant_created(store: &Store, req: &NewMerchantPacket) -> String {
    match merchants::create_packet(store, req).await.unwrap() {
        MerchantPacketOutcome::Created { packet, .. } => packet.packet_id,
        other => panic!("{other:?}"),
    }
}

/// Merchant packets across an unclean failover of a primary + replica pair: a merchant
/// deposit, a merchant packet's create and one of its claims are answered while the replica
/// is cut off, then the primary dies. With `REDIS_WAIT_REPLICAS=1` each is refused 503 and,
/// retried by the client on the promoted replica, lands once; the merchant's books close and
/// wallets + budget + packets = deposits. Without it, the three acknowledged movements are
/// lost (the test sees the loss).
async fn merchant_primary_replica(wait: bool) {
    let (mut primary, replica) = start_pair().await;
    let healthy = Arc::new(Store::new(Config {
        wait_timeout_ms: 5_000,
        ..pair_config(&primary.url(), wait)
    }));
    let store = Arc::new(Store::new(pair_config(&primary.url(), wait)));

    // Healthy: a funded budget, an order's packet, two grabs and one claim, replicated.
    let deposited = merchants::deposit(&healthy, SHOP, 10_000, "t1")
        .await
        .unwrap();
    assert!(
        matches!(deposited, DepositOutcome::Applied { .. }),
        "{deposited:?}"
    );
    let first = merchant_created(&healthy, &merchant_packet("order-1", 600)).await;
    for u in ["bob", "dave"] {
        grabbed(packets::grab(&healthy, &first, u).await.unwrap());
    }
    claimed(packets::claim(&healthy, &first, "bob").await.unwrap());

    // The replica stops receiving; the merchant's money keeps moving on the primary.
    caught_up(&primary.url(), &replica.url()).await;
    let sleeping = freeze_and_cut(&replica.url(), &primary.url()).await;
    let mut faulty = Faulty {
        acked: Vec::new(),
        refused: 0,
    };
    let dep = merchants::deposit(&store, SHOP, 500, "t2").await;
    faulty.note(dep, |_| Movement::MerchantDeposit {
        reference: "t2".into(),
    });
    let second = merchant_packet("order-2", 900);
    let created = merchants::create_packet(&store, &second).await;
    faulty.note(created, |c| match c {
        MerchantPacketOutcome::Created { packet, .. } => Movement::Create {
            packet_id: packet.packet_id.clone(),
        },
        other => panic!("{other:?}"),
    });
    let claim = packets::claim(&store, &first, "dave").await;
    faulty.note(claim, |_| Movement::Claim {
        packet_id: first.clone(),
        user: "dave".into(),
    });

    // Crash: the primary dies, the replica wakes up and is promoted.
    primary.stop();
    sleeping.assert_still_frozen();
    sleeping.wake().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut conn_to(&replica.url()).await)
        .await
        .unwrap();
    let after = Arc::new(Store::new(pair_config(&replica.url(), false)));

    let lost = missing(&after, &faulty.acked).await;
    if !wait {
        assert_eq!(faulty.refused, 0);
        assert_eq!(
            lost.len(),
            3,
            "without WAIT the unclean failover must lose the acknowledged movements: {lost:?}"
        );
        return;
    }
    assert_eq!(
        faulty.refused, 3,
        "every unreplicated write must be refused"
    );
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // The clients retry what was refused, with the same reference and body: each lands once.
    assert!(matches!(
        merchants::deposit(&after, SHOP, 500, "t2").await.unwrap(),
        DepositOutcome::Applied { .. }
    ));
    let second_id = merchant_created(&after, &second).await;
    match merchants::create_packet(&after, &second).await.unwrap() {
        MerchantPacketOutcome::Repeat(p) => assert_eq!(p.packet_id, second_id),
        other => panic!("{other:?}"),
    }
    claimed(packets::claim(&after, &first, "dave").await.unwrap());
    let books = merchants::get(&after, SHOP, 0).await.unwrap().books;
    assert!(books.close(), "{books:?}");
    assert_eq!(
        (
            books.balance_cents,
            books.reserved_cents,
            books.paid_cash_cents
        ),
        (10_500 - 600 - 900, 900 + 200, 400)
    );
    let users = ["bob", "carol", "dave"].map(String::from);
    let totals =
        hongbao::store::audit::totals_of(&after, &users, &[SHOP.into()], &[first, second_id])
            .await
            .unwrap();
    assert_eq!(totals.total(), 10_500, "{totals:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchant_packets_across_an_unclean_failover_with_wait() {
    merchant_primary_replica(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchant_packets_across_an_unclean_failover_without_wait_lose_money() {
    merchant_primary_replica(false).await;
}

/// A merchant packet of `order`: `total_cents` in 3 fixed shares, paid out as coupons
/// redeemable for an hour after it expires.
fn coupon_packet(order: &str, total_cents: i64) -> NewMerchantPacket {
    let req: MerchantPacketRequest = serde_json::from_value(serde_json::json!({
        "merchant_id": SHOP, "order_reference": order, "sharer_id": "carol",
        "total_cents": total_cents, "count": 3, "mode": "fixed", "payout": "coupon",
        "coupon": {"redeem_within_secs": 3_600}
    }))
    .unwrap();
    req.check(&Config::default().packets).unwrap()
}

/// The coupon a claim answered.
fn coupon_of(out: ClaimOutcome) -> String {
    match out {
        ClaimOutcome::Claimed {
            coupon: Some(c), ..
        } => c.code,
        other => panic!("{other:?}"),
    }
}

/// Coupon payouts across an unclean failover of a primary + replica pair: bob's share claimed
/// as a coupon while healthy; with the replica cut, dave's claim (his coupon issued, the books
/// moved) and bob's redemption at checkout are answered, then the primary dies. With
/// `REDIS_WAIT_REPLICAS=1` both are refused 503 and, retried by the client on the promoted
/// replica, land once; the books close and count both coupons. Without it, both acknowledged
/// steps are lost (the test sees the loss).
async fn merchant_coupons_primary_replica(wait: bool) {
    let (mut primary, replica) = start_pair().await;
    let healthy = Arc::new(Store::new(Config {
        wait_timeout_ms: 5_000,
        ..pair_config(&primary.url(), wait)
    }));
    let store = Arc::new(Store::new(pair_config(&primary.url(), wait)));
    merchants::deposit(&healthy, SHOP, 10_000, "t1")
        .await
        .unwrap();
    let first = merchant_created(&healthy, &coupon_packet("order-1", 600)).await;
    for u in ["bob", "dave"] {
        grabbed(packets::grab(&healthy, &first, u).await.unwrap());
    }
    let code = coupon_of(packets::claim(&healthy, &first, "bob").await.unwrap());

    // The replica stops receiving; the coupons keep moving on the primary.
    caught_up(&primary.url(), &replica.url()).await;
    let sleeping = freeze_and_cut(&replica.url(), &primary.url()).await;
    let mut faulty = Faulty {
        acked: Vec::new(),
        refused: 0,
    };
    let claim = packets::claim(&store, &first, "dave").await;
    faulty.note(claim, |_| Movement::CouponClaim {
        packet_id: first.clone(),
        user: "dave".into(),
    });
    let redeem = coupons::redeem(&store, &code, "bob", "order-77", None).await;
    faulty.note(redeem, |_| Movement::CouponRedeem { code: code.clone() });

    // Crash: the primary dies, the replica wakes up and is promoted.
    primary.stop();
    sleeping.assert_still_frozen();
    sleeping.wake().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut conn_to(&replica.url()).await)
        .await
        .unwrap();
    let after = Arc::new(Store::new(pair_config(&replica.url(), false)));

    let lost = missing(&after, &faulty.acked).await;
    if !wait {
        assert_eq!(faulty.refused, 0);
        assert_eq!(lost.len(), 2, "the loss must be visible: {lost:?}");
        return;
    }
    assert_eq!(
        faulty.refused, 2,
        "every unreplicated write must be refused"
    );
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // The clients retry what was refused: each lands once.
    let dave = coupon_of(packets::claim(&after, &first, "dave").await.unwrap());
    assert_ne!(dave, code);
    let redeemed = coupons::redeem(&after, &code, "bob", "order-77", None).await;
    assert!(
        matches!(redeemed, Ok(coupons::RedeemOutcome::Redeemed { .. })),
        "{redeemed:?}"
    );
    let books = merchants::get(&after, SHOP, 0).await.unwrap().books;
    assert!(books.close(), "{books:?}");
    assert_eq!(
        (
            books.balance_cents,
            books.reserved_cents,
            books.outstanding_coupon_cents,
            books.paid_coupon_cents
        ),
        (10_000 - 600, 200, 200, 200)
    );
    let users = ["bob", "carol", "dave"].map(String::from);
    let totals = hongbao::store::audit::totals_of(&after, &users, &[SHOP.into()], &[first])
        .await
        .unwrap();
    assert_eq!(totals.total(), 10_000, "{totals:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchant_coupons_across_an_unclean_failover_with_wait() {
    merchant_coupons_primary_replica(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchant_coupons_across_an_unclean_failover_without_wait_are_lost() {
    merchant_coupons_primary_replica(false).await;
}
