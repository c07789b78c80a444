//! Merchant packets paid out as coupons (`payout: "coupon"`): a claimed share becomes the
//! grabber's coupon worth the share, listed in `GET /coupons`, redeemed once at checkout
//! through the coupon routes; the merchant's books move with each step, and what is never
//! claimed or never redeemed goes back to the merchant, once.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{self, call, event, with_sub, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::store::keys::Keys;
use hongbao::store::{journal, reclaim, Store};
use hongbao::wallet;

use super::*;

/// A create body for `order` of `total` cents in `count` shares, paid out as coupons
/// redeemable `within` seconds after the packet expires, on orders of 10.00 or more.
fn coupon_order(order_ref: &str, total: i64, count: u32, within: i64) -> Value {
    let mut body = order(order_ref, total, count);
    body["payout"] = json!("coupon");
    body["coupon"] = json!({"redeem_within_secs": within, "min_order_cents": 1_000});
    body
}

/// `GET /coupons` as `user`: its items.
async fn coupons_of(store: &Arc<Store>, user: &str) -> Vec<Value> {
    let (s, b, _) = call(
        store,
        Function::Coupon,
        &with_sub(event("coupon-list"), user),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    b["items"].as_array().unwrap().clone()
}

/// The packet's `field` (an integer of its meta hash).
async fn meta_int(store: &Store, packet_id: &str, field: &str) -> Option<i64> {
    let meta = Keys::new(&store.config().key_prefix).packet(packet_id).meta;
    redis::cmd("HGET")
        .arg(&meta)
        .arg(field)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
}

/// Grabs and claims `packet_id` as each of `users`; their claim answers.
async fn grab_and_claim(store: &Arc<Store>, packet_id: &str, users: &[&str]) -> Vec<Value> {
    let mut claims = Vec::new();
    for u in users {
        let (s, b) = as_user(store, Function::Grab, "grab-grab", packet_id, u).await;
        assert_eq!(s, 200, "{b}");
        let (s, b) = as_user(store, Function::Claim, "claim-claim", packet_id, u).await;
        assert_eq!(s, 200, "{b}");
        claims.push(b);
    }
    claims
}

/// The grabbers of [`claimed_coupons`]' packet.
const GRABBERS: [&str; 3] = ["ivy", "jack", "kim"];

/// What [`claimed_coupons`] arranged.
struct Claimed {
    /// The packet: order `order-c1` of 12.00 in 4 shares, coupons on orders of 10.00 or more.
    id: String,
    /// The claim answers of [`GRABBERS`], in order.
    claims: Vec<Value>,
    /// The cents of the coupons claimed.
    issued: i64,
}

impl Claimed {
    /// ivy's checkout call `fixture` for `order` of `total` cents (`None`: a release).
    async fn checkout(&self, store: &Arc<Store>, order: &str, total: Option<i64>) -> (u16, Value) {
        let code = &self.claims[0]["coupon"]["code"];
        match total {
            Some(total) => {
                let body = json!({"code": code, "user_id": "ivy", "order_reference": order,
                                  "order_total_cents": total});
                checkout(store, "coupon-redeem", &body).await
            }
            None => {
                let body = json!({"code": code, "order_reference": order});
                checkout(store, "coupon-release", &body).await
            }
        }
    }

    /// ivy's coupon's value, cents.
    fn value(&self) -> i64 {
        self.claims[0]["amount_cents"].as_i64().unwrap()
    }
}

/// [`SHOP`] funded with 50.00 pays a coupon packet of 12.00 in 4 shares for `order-c1`, and
/// [`GRABBERS`] grab and claim three of them.
async fn claimed_coupons(store: &Arc<Store>) -> Claimed {
    fund_merchant(store, SHOP, 5_000).await;
    let (s, made) = create(store, &coupon_order("order-c1", 1_200, 4, 3_600)).await;
    assert_eq!(
        (s, &made["coupon"]["min_order_cents"]),
        (201, &json!(1_000)),
        "{made}"
    );
    let id = made["packet_id"].as_str().unwrap().to_string();
    let claims = grab_and_claim(store, &id, &GRABBERS).await;
    let issued = claims
        .iter()
        .map(|c| c["amount_cents"].as_i64().unwrap())
        .sum();
    Claimed { id, claims, issued }
}

/// Test: a coupon packet's claim answers a coupon worth the share (code
/// `<packet_id>.<share_id>`) and credits no wallet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_answers_a_coupon_worth_the_share_and_credits_no_wallet() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let Claimed { id, claims, .. } = claimed_coupons(&store).await;

        for (u, c) in GRABBERS.iter().zip(&claims) {
            let code = format!("{id}.{}", c["share_id"]);
            let want = (
                json!(code),
                c["amount_cents"].clone(),
                json!(false),
                json!(0),
            );
            let coupon = &c["coupon"];
            let got = (
                coupon["code"].clone(),
                coupon["amount_off_cents"].clone(),
                c["repeat"].clone(),
                c["balance_cents"].clone(),
            );
            assert_eq!(got, want, "{backend}: {c}");
            assert_eq!(wallet::balance(&store, u).await.unwrap(), 0, "{backend}");
        }
    }
}

/// Test: `GET /coupons` lists each grabber's coupon, issued, with the packet's minimum order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_coupon_is_listed_with_its_discount() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let Claimed { id, claims, .. } = claimed_coupons(&store).await;

    for (u, c) in GRABBERS.iter().zip(&claims) {
        let listed = coupons_of(&store, u).await;

        let discount = json!({"amount_off_cents": c["amount_cents"], "min_order_cents": 1_000});
        let want = vec![(
            c["coupon"]["code"].clone(),
            json!("issued"),
            json!(id),
            discount,
        )];
        let got: Vec<_> = listed
            .iter()
            .map(|l| {
                (
                    l["code"].clone(),
                    l["state"].clone(),
                    l["campaign_id"].clone(),
                    l["discount"].clone(),
                )
            })
            .collect();
        assert_eq!(got, want, "{listed:?}");
    }
}

/// Test: a claim sent again answers `repeat: true` and the same coupon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_sent_again_answers_the_same_coupon() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let claimed = claimed_coupons(&store).await;

    let (s, again) = as_user(&store, Function::Claim, "claim-claim", &claimed.id, "ivy").await;

    assert_eq!(
        (s, &again["repeat"], &again["coupon"]),
        (200, &json!(true), &claimed.claims[0]["coupon"])
    );
}

/// Test: the claimed coupons move from `reserved` to `outstanding`; the books close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_coupons_move_from_reserved_to_outstanding() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let Claimed { issued, .. } = claimed_coupons(&store).await;

        let b = books(&store, SHOP).await;
        let got = (
            b.balance_cents,
            b.reserved_cents,
            b.outstanding_coupon_cents,
        );
        assert_eq!(got, (3_800, 1_200 - issued, issued), "{backend}: {b:?}");
        assert!(b.close(), "{backend}: {b:?}");
    }
}

/// Test: an order below the coupon's minimum is 422 `below_minimum`, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_below_the_minimum_is_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let claimed = claimed_coupons(&store).await;
    let before = common::snapshot(&redis).await;

    let (s, low) = claimed.checkout(&store, "shop-order-0", Some(999)).await;

    assert_eq!((s, &low["error"]), (422, &json!("below_minimum")), "{low}");
    assert_eq!(
        common::snapshot(&redis).await,
        before,
        "a refused redemption wrote"
    );
}

/// Test: redeemed for an order of 50.00, the coupon takes its value off once (the same order
/// again answers `repeat`) and moves it from `outstanding` to `paid_coupons`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redemption_moves_the_coupon_to_paid_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let claimed = claimed_coupons(&store).await;

        let first = claimed.checkout(&store, "shop-order-1", Some(5_000)).await;
        let repeat = claimed.checkout(&store, "shop-order-1", Some(5_000)).await;

        let (value, b) = (claimed.value(), books(&store, SHOP).await);
        let got = (
            first.0,
            &first.1["discount_cents"],
            &first.1["repeat"],
            &first.1["campaign_id"],
        );
        assert_eq!(
            got,
            (200, &json!(value), &json!(false), &json!(claimed.id)),
            "{first:?}"
        );
        assert_eq!(
            (repeat.0, &repeat.1["repeat"]),
            (200, &json!(true)),
            "{backend}"
        );
        let moved = (b.outstanding_coupon_cents, b.paid_coupon_cents);
        assert_eq!(moved, (claimed.issued - value, value), "{backend}: {b:?}");
        assert!(b.close(), "{backend}: {b:?}");
    }
}

/// Test: a released redemption is outstanding again, and another order redeems the coupon;
/// the books close and every cent is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_coupon_is_outstanding_again_and_redeemed_by_another_order() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let claimed = claimed_coupons(&store).await;
        let (value, issued) = (claimed.value(), claimed.issued);
        assert_eq!(
            claimed
                .checkout(&store, "shop-order-1", Some(5_000))
                .await
                .0,
            200
        );

        let released = claimed.checkout(&store, "shop-order-1", None).await;
        let after_release = books(&store, SHOP).await;
        let second = claimed.checkout(&store, "shop-order-2", Some(5_000)).await;

        assert_eq!(
            (released.0, &released.1["released"]),
            (200, &json!("redemption"))
        );
        let back = (
            after_release.outstanding_coupon_cents,
            after_release.paid_coupon_cents,
        );
        assert_eq!(back, (issued, 0), "{backend}: {after_release:?}");
        assert_eq!(second.0, 200, "{backend}: {second:?}");
        let end = books(&store, SHOP).await;
        assert_eq!(
            (end.outstanding_coupon_cents, end.paid_coupon_cents),
            (issued - value, value)
        );
        let open = meta_int(&store, &claimed.id, "coupon_open_cents").await;
        assert_eq!(open, Some(issued - value), "{backend}");
        let everyone: Vec<String> = GRABBERS.iter().map(|u| u.to_string()).collect();
        let packets = std::slice::from_ref(&claimed.id);
        assert_books(&store, &backend.to_string(), &everyone, packets, 5_000).await;
    }
}

/// A funded merchant's coupon packet of 30.00 in 6 shares living 6 s, its coupons redeemable
/// 4 s more: erin and frank claimed theirs, gus grabbed without claiming, and erin's coupon
/// was redeemed by order `shop-order-9`; (packet id, erin's and frank's claim answers).
async fn a_packet_with_one_coupon_redeemed(store: &Arc<Store>) -> (String, Vec<Value>) {
    fund_merchant(store, SHOP, 10_000).await;
    let mut body = coupon_order("order-c2", 3_000, 6, 4);
    body["expires_in_secs"] = json!(6);
    let (s, made) = create(store, &body).await;
    assert_eq!(s, 201, "{made}");
    let id = made["packet_id"].as_str().unwrap().to_string();
    let claims = grab_and_claim(store, &id, &["erin", "frank"]).await;
    let (s, b) = as_user(store, Function::Grab, "grab-grab", &id, "gus").await;
    assert_eq!(s, 200, "{b}");
    let (s, r) = checkout(
        store,
        "coupon-redeem",
        &json!({"code": claims[0]["coupon"]["code"], "user_id": "erin",
                "order_reference": "shop-order-9", "order_total_cents": 5_000}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    (id, claims)
}

/// [`a_packet_with_one_coupon_redeemed`] with what the tests read of it.
struct Expiring {
    id: String,
    claims: Vec<Value>,
    /// The cents of erin's and frank's coupons.
    issued: i64,
    /// erin's coupon (redeemed by `shop-order-9`): its code and value.
    code: String,
    value: i64,
    /// The packet's expiry and its coupons' `redeem_by`, Unix ms.
    expires_at: i64,
    redeem_by: i64,
}

async fn expiring(store: &Arc<Store>) -> Expiring {
    let (id, claims) = a_packet_with_one_coupon_redeemed(store).await;
    let issued = claims
        .iter()
        .map(|c| c["amount_cents"].as_i64().unwrap())
        .sum();
    Expiring {
        code: claims[0]["coupon"]["code"].as_str().unwrap().to_string(),
        value: claims[0]["amount_cents"].as_i64().unwrap(),
        expires_at: meta_int(store, &id, "expires_at").await.unwrap(),
        redeem_by: meta_int(store, &id, "redeem_by").await.unwrap(),
        id,
        claims,
        issued,
    }
}

/// reclaim-cron's runs at the packet's expiry and at its coupons' `redeem_by`.
async fn past_redeem_by(
    store: &Arc<Store>,
    e: &Expiring,
) -> (reclaim::ReclaimSummary, reclaim::ReclaimSummary) {
    common::sleep_until_redis_ms(store, e.expires_at).await;
    let at_expiry = reclaim::run(store).await.unwrap();
    common::sleep_until_redis_ms(store, e.redeem_by).await;
    (at_expiry, reclaim::run(store).await.unwrap())
}

/// Test: at the packet's expiry reclaim-cron refunds the un-grabbed and unclaimed shares to
/// the merchant but keeps the coupons' value outstanding, the packet due again at
/// `redeem_by` (4 s after the expiry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_expiry_the_shares_go_back_and_the_coupons_stay_outstanding() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let e = expiring(&store).await;
        common::sleep_until_redis_ms(&store, e.expires_at).await;

        let run = reclaim::run(&store).await.unwrap();

        assert_eq!(
            (run.settled, run.refunded_cents),
            (1, 3_000 - e.issued),
            "{backend}: {run:?}"
        );
        let due: Option<i64> = redis::cmd("ZSCORE")
            .arg(Keys::new(&store.config().key_prefix).reclaim_due())
            .arg(&e.id)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        assert_eq!(
            (due, e.redeem_by),
            (Some(e.redeem_by), e.expires_at + 4_000),
            "{backend}"
        );
        let b = books(&store, SHOP).await;
        let got = (
            b.balance_cents,
            b.reserved_cents,
            b.outstanding_coupon_cents,
            b.paid_coupon_cents,
        );
        assert_eq!(
            got,
            (10_000 - e.issued, 0, e.issued - e.value, e.value),
            "{backend}: {b:?}"
        );
    }
}

/// Test: at `redeem_by` reclaim-cron refunds the coupons never redeemed, once: a second run
/// refunds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_redeem_by_the_unredeemed_coupons_go_back_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let e = expiring(&store).await;

        let (_, at_redeem_by) = past_redeem_by(&store, &e).await;
        let later = reclaim::run(&store).await.unwrap();

        let refunded = (at_redeem_by.settled, at_redeem_by.refunded_cents);
        assert_eq!(
            refunded,
            (0, e.issued - e.value),
            "{backend}: {at_redeem_by:?}"
        );
        assert_eq!(
            (later.settled, later.refunded_cents),
            (0, 0),
            "{backend}: {later:?}"
        );
    }
}

/// Test: a redeem after `redeem_by` is 410 `expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_after_redeem_by_is_expired() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let e = expiring(&store).await;
    past_redeem_by(&store, &e).await;

    let body = json!({"code": e.claims[1]["coupon"]["code"], "user_id": "frank",
                      "order_reference": "shop-order-10"});
    let (s, late) = checkout(&store, "coupon-redeem", &body).await;

    assert_eq!((s, &late["error"]), (410, &json!("expired")), "{late}");
}

/// Test: a redemption reversed after `redeem_by` goes straight back to the merchant's balance,
/// once (sent again, it answers `repeat`); the sharer gets nothing, the journal holds each
/// refund once and the books close at 100.00 deposited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redemption_reversed_after_redeem_by_goes_back_to_the_merchant_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let e = expiring(&store).await;
        past_redeem_by(&store, &e).await;
        let release = json!({"code": e.code, "order_reference": "shop-order-9"});

        let first = checkout(&store, "coupon-release", &release).await;
        let again = checkout(&store, "coupon-release", &release).await;

        assert_eq!(
            (first.0, again.0, &again.1["repeat"]),
            (200, 200, &json!(true)),
            "{first:?}"
        );
        let end = books(&store, SHOP).await;
        let got = (
            end.balance_cents,
            end.reserved_cents,
            end.outstanding_coupon_cents,
            end.paid_coupon_cents,
        );
        assert_eq!(got, (10_000, 0, 0, 0), "{backend}: {end:?}");
        assert_eq!(wallet::balance(&store, "carol").await.unwrap(), 0);
        let key = Keys::new(&store.config().key_prefix).merchant(SHOP).journal;
        let entries = journal::read(&store, &key, 200).await.unwrap();
        let of_packet = |kinds: &[Kind]| -> Vec<(Kind, i64, String)> {
            entries
                .iter()
                .filter(|x| kinds.contains(&x.kind) && x.reference.starts_with(&e.id))
                .map(|x| (x.kind, x.amount_cents, x.reference.clone()))
                .collect()
        };
        let share = e.claims[0]["share_id"].as_u64().unwrap();
        let refunds = [
            (Kind::MerchantRefund, 3_000 - e.issued, e.id.clone()),
            (
                Kind::MerchantCouponRefund,
                e.issued - e.value,
                format!("{}/coupons", e.id),
            ),
            (
                Kind::MerchantCouponRefund,
                e.value,
                format!("{}/{share}", e.id),
            ),
        ];
        assert_eq!(
            of_packet(&[Kind::MerchantRefund, Kind::MerchantCouponRefund]),
            refunds
        );
        assert_eq!(of_packet(&[Kind::CouponIssued]).len(), 2, "{backend}");
        let users = ["carol", "erin", "frank", "gus"].map(String::from);
        assert_books(
            &store,
            &backend.to_string(),
            &users,
            std::slice::from_ref(&e.id),
            10_000,
        )
        .await;
    }
}

/// Test: a coupon packet first settled after its `redeem_by`, by one reclaim-cron call that
/// refunds its un-grabbed share and its unredeemed coupon, each worth 3.00, in the same
/// millisecond: two movements in the merchant's ledger, and its account reconciles with no
/// mismatch (no refund seen twice, every journal balance matched).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_and_coupons_refunded_in_one_settlement_reconcile() {
    // Arrange
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    fund_merchant(&store, SHOP, 5_000).await;
    let mut body = coupon_order("order-eq", 600, 2, 1);
    body["mode"] = json!("fixed");
    body["expires_in_secs"] = json!(2);
    let (s, made) = create(&store, &body).await;
    assert_eq!(s, 201, "{made}");
    let id = made["packet_id"].as_str().unwrap().to_string();
    grab_and_claim(&store, &id, &["dave"]).await;
    let redeem_by = meta_int(&store, &id, "redeem_by").await.unwrap();
    common::sleep_until_redis_ms(&store, redeem_by).await;

    // Act
    let run = reclaim::run(&store).await.unwrap();

    // Assert
    assert_eq!((run.settled, run.refunded_cents), (1, 600), "{run:?}");
    let b = books(&store, SHOP).await;
    assert_eq!(
        (b.balance_cents, b.outstanding_coupon_cents),
        (5_000, 0),
        "{b:?}"
    );
    let mismatches = hongbao::store::reconcile::check_account(
        &store,
        hongbao::domain::reconcile::LedgerOwner::Merchant,
        SHOP,
    )
    .await
    .unwrap();
    assert!(mismatches.is_empty(), "{mismatches:?}");
}
