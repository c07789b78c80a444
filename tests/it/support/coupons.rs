//! `GET /support/coupons/{code}`: a coupon at every checkout step, read-only, refusals.

use std::sync::Arc;

use serde_json::Value;

use super::{signed, STRANGER};
use crate::common::{self, call, event, with_placeholder, Function};
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{CodeSource, NewCampaign, VisitLimit};
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

/// Test: a coupon looked up when issued, held, redeemed and released: its state, the order,
/// the hold's end, the release remembered, its journal entries; each look-up writes nothing;
/// an unknown code is 404 and a caller outside `HONGBAO_SUPPORT_PRINCIPALS` 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coupon_at_every_checkout_step() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let mut conn = store.conn().await.unwrap();
        let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        let now = secs * 1000;
        let req = NewCampaign {
            starts_at_ms: Some(now - 1_000),
            redeem_by_ms: now + 1_200_000,
            ..NewCampaign::new(
                "20 off 100",
                CodeSource::Uploaded(vec!["HELP-0001".into(), "HELP-0002".into()]),
                now + 600_000,
                "support",
            )
        };
        let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(&store, &req).await else {
            panic!("{backend}: not created")
        };
        let visits = VisitLimit {
            per_window: 0,
            window_ms: 1_000,
        };
        let Ok(CouponGrabOutcome::Grabbed { code, .. }) =
            coupons::grab(&store, &c.campaign_id, "bob", visits).await
        else {
            panic!("{backend}: no coupon")
        };
        let unissued = if code == "HELP-0001" {
            "HELP-0002"
        } else {
            "HELP-0001"
        };
        let step = |b: &Value| {
            (
                b["state"].as_str().unwrap_or_default().to_string(),
                b["order_reference"].as_str().map(str::to_string),
                b["releases"].as_array().map_or(0, Vec::len),
            )
        };

        let (s, b) = look_up(&store, unissued, None).await;
        assert_eq!(
            (s, step(&b)),
            (200, ("unissued".into(), None, 0)),
            "{backend}: {b}"
        );
        let (s, b) = look_up(&store, &code, None).await;
        assert_eq!(
            (s, step(&b)),
            (200, ("issued".into(), None, 0)),
            "{backend}: {b}"
        );
        assert_eq!(b["user_id"], "bob");
        coupons::hold(&store, &code, "bob", "order-1", 60_000, None)
            .await
            .unwrap();
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
            "{backend}: {b}"
        );
        assert!(b["held_until"].is_string(), "{backend}: {b}");
        coupons::redeem(&store, &code, "bob", "order-1", None)
            .await
            .unwrap();
        let (_, b) = look_up(&store, &code, None).await;
        assert_eq!(
            step(&b),
            ("redeemed".into(), Some("order-1".into()), 0),
            "{b}"
        );
        assert!(b["redeemed_at"].is_string(), "{backend}: {b}");
        coupons::release(&store, &code, "order-1").await.unwrap();
        let (_, b) = look_up(&store, &code, None).await;
        assert_eq!(step(&b), ("issued".into(), None, 1), "{backend}: {b}");
        assert_eq!(
            (
                &b["releases"][0]["order_reference"],
                &b["releases"][0]["released"]
            ),
            (&Value::from("order-1"), &Value::from("redemption")),
            "{backend}: {b}"
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
            "{backend}: {b}"
        );

        let (s, b) = look_up(&store, "NO-SUCH-CODE", None).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (404, Some("not_found")),
            "{backend}"
        );
        let (s, b) = look_up(&store, &code, Some(STRANGER)).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("forbidden")),
            "{backend}"
        );
    }
}
