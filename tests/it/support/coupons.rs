//! `GET /support/coupons/{code}`: a coupon at every checkout step, read-only, refusals.

use std::sync::Arc;

use serde_json::Value;

use super::{signed, STRANGER};
use crate::common::{self, call, event, with_placeholder, Function};
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{CodeSource, NewCampaign};
use hongbao::coupons::{self, CampaignCreateOutcome, CouponGrabOutcome};
use hongbao::Store;

/// `GET /support/coupons/{code}` as `arn` (`None`: the fixture's support role).
async fn look_up(store: &Arc<Store>, code: &str, arn: Option<&str>) -> (u16, Value) {
    let ev = signed(
        with_placeholder(event("wallet-support-coupon"), "COUPON_CODE", code),
        arn,
    );
    let (s, b, _) = call(store, Function::Wallet, &ev).await;
    (s, b)
}

/// A campaign of the uploaded codes `HELP-0001` and `HELP-0002`, one grabbed by bob: (bob's
/// code, the other one).
async fn bobs_coupon(store: &Arc<Store>) -> (String, String) {
    let mut conn = store.conn().await.unwrap();
    let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let now = secs * 1000;
    let codes = CodeSource::Uploaded(vec!["HELP-0001".into(), "HELP-0002".into()]);
    let req = NewCampaign {
        starts_at_ms: Some(now - 1_000),
        redeem_by_ms: now + 1_200_000,
        ..NewCampaign::new("20 off 100", codes, now + 600_000, "support")
    };
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(store, &req).await else {
        panic!("not created")
    };
    let visits = crate::coupons::NO_VISIT_LIMIT;
    let Ok(CouponGrabOutcome::Grabbed { code, .. }) =
        coupons::grab(store, &c.campaign_id, "bob", visits).await
    else {
        panic!("no coupon")
    };
    let other = if code == "HELP-0001" {
        "HELP-0002"
    } else {
        "HELP-0001"
    };
    (code, other.to_string())
}

/// bob's coupon `code` held by `order-1` for a minute.
async fn hold(store: &Arc<Store>, code: &str) {
    coupons::hold(store, code, "bob", "order-1", 60_000, None)
        .await
        .unwrap();
}

/// bob's coupon `code` held, then redeemed, by `order-1`.
async fn redeemed(store: &Arc<Store>, code: &str) {
    hold(store, code).await;
    coupons::redeem(store, code, "bob", "order-1", None)
        .await
        .unwrap();
}

/// A look-up's (state, order, releases).
fn step(b: &Value) -> (String, Option<String>, usize) {
    (
        b["state"].as_str().unwrap_or_default().to_string(),
        b["order_reference"].as_str().map(str::to_string),
        b["releases"].as_array().map_or(0, Vec::len),
    )
}

/// Test: a code of the campaign nobody grabbed is `unissued`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_nobody_grabbed_is_unissued() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (_, other) = bobs_coupon(&store).await;

        let (s, b) = look_up(&store, &other, None).await;

        assert_eq!(
            (s, step(&b)),
            (200, ("unissued".into(), None, 0)),
            "{backend}: {b}"
        );
    }
}

/// Test: a grabbed coupon is `issued` to its user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grabbed_coupon_is_issued_to_its_user() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (code, _) = bobs_coupon(&store).await;

        let (s, b) = look_up(&store, &code, None).await;

        assert_eq!(
            (s, step(&b), &b["user_id"]),
            (200, ("issued".into(), None, 0), &Value::from("bob"))
        );
    }
}

/// Test: a held coupon shows the order and the hold's end, and the look-up writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_coupon_shows_its_order_and_the_look_up_writes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (code, _) = bobs_coupon(&store).await;
        hold(&store, &code).await;
        let before = common::snapshot(&redis).await;

        let (s, b) = look_up(&store, &code, None).await;

        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "{backend}: a look-up wrote"
        );
        assert_eq!(
            (s, step(&b)),
            (200, ("held".into(), Some("order-1".into()), 0)),
            "{b}"
        );
        assert!(b["held_until"].is_string(), "{backend}: {b}");
    }
}

/// Test: a redeemed coupon shows the order and when it was redeemed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeemed_coupon_shows_its_order() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (code, _) = bobs_coupon(&store).await;
        redeemed(&store, &code).await;

        let (_, b) = look_up(&store, &code, None).await;

        assert_eq!(
            step(&b),
            ("redeemed".into(), Some("order-1".into()), 0),
            "{b}"
        );
        assert!(b["redeemed_at"].is_string(), "{backend}: {b}");
    }
}

/// Test: a released redemption shows the coupon issued again, the release remembered and the
/// coupon's journal entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_coupon_shows_its_release_and_journal() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (code, _) = bobs_coupon(&store).await;
        redeemed(&store, &code).await;
        coupons::release(&store, &code, "order-1").await.unwrap();

        let (_, b) = look_up(&store, &code, None).await;

        assert_eq!(step(&b), ("issued".into(), None, 1), "{backend}: {b}");
        let release = (
            &b["releases"][0]["order_reference"],
            &b["releases"][0]["released"],
        );
        assert_eq!(
            release,
            (&Value::from("order-1"), &Value::from("redemption")),
            "{b}"
        );
        let kinds: Vec<&str> = b["journal"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .collect();
        assert_eq!(
            kinds,
            ["coupon_issued", "coupon_redeemed", "coupon_released"],
            "{backend}"
        );
    }
}

/// Test: a code no campaign has is 404 `not_found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_code_is_not_found() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});

    let (s, b) = look_up(&store, "NO-SUCH-CODE", None).await;

    assert_eq!((s, b["error"].as_str()), (404, Some("not_found")), "{b}");
}

/// Test: a caller outside `HONGBAO_SUPPORT_PRINCIPALS` is 403 `forbidden`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_outside_the_support_principals_is_forbidden() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let (code, _) = bobs_coupon(&store).await;

    let (s, b) = look_up(&store, &code, Some(STRANGER)).await;

    assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
}
