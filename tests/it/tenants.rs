//! Tenants kept apart: a principal bound to merchants (`<principal>=<merchant>|…` in
//! `HONGBAO_MERCHANT_PRINCIPALS` and `HONGBAO_COUPON_PRINCIPALS`) acts for those only. Every
//! operation that declares a merchant tenant (`hongbao::api::operation::Tenant`) is called, as
//! a principal bound to `shop-b`, about `shop-a`'s budget, packets, campaign or coupons: 403
//! `forbidden`, nothing written. The operations come from the declarations, so a new merchant
//! or coupon route fails here until its request is added.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::api::operation::{Operation, Tenant};
use hongbao::wallet::rules::IamPrincipals;
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{
    self, call, event, iam_event as signed, with_sub, Function, DEPOSIT_PRINCIPALS, TEAM,
};

/// shop-b's backend, bound to shop-b.
const SHOP_B: &str = "arn:aws:sts::123456789012:assumed-role/shop-b/backend";

/// A store whose merchant and coupon principals are the team's (every merchant) and shop-b's
/// backend (bound to shop-b).
fn bound_store(redis: &TestRedis) -> Arc<Store> {
    let list = format!("{DEPOSIT_PRINCIPALS}, {SHOP_B}=shop-b");
    common::store(redis, |c| {
        c.merchants.principals = IamPrincipals::parse(&list).unwrap();
        c.coupons.principals = IamPrincipals::parse(&list).unwrap();
    })
}

/// The function that routes `op`.
fn function_of(op: &Operation) -> Function {
    *Function::ALL
        .iter()
        .find(|f| f.operations().iter().any(|o| o.event == op.event))
        .expect("routed")
}

/// Every operation with a merchant tenant.
fn merchant_operations() -> Vec<&'static Operation> {
    Function::ALL
        .iter()
        .flat_map(|f| f.operations())
        .filter(|op| matches!(op.tenant(), Some(Tenant::Merchant(_))))
        .collect()
}

/// shop-a's things, made by the team: a budget, a campaign, bob's coupon of it, and carol's
/// coupon of a merchant packet paid out as coupons.
struct ShopA {
    /// Redis `TIME` at the arrangement, Unix ms.
    now: i64,
    campaign: String,
    code: String,
    share_code: String,
}

async fn shop_a(store: &Arc<Store>) -> ShopA {
    let by_team = |op: &'static Operation, params: &[(&str, &str)], body: Value| {
        signed(op, TEAM, params, "", Some(&body))
    };
    let deposit = by_team(
        &hongbao::merchants::deposit::http::OPERATION,
        &[("merchant_id", "shop-a")],
        json!({"amount_cents": 100_000, "reference": "topup-1"}),
    );
    let (s, b, _) = call(store, Function::Merchant, &deposit).await;
    assert_eq!(s, 201, "{b}");
    let now = crate::coupons::redis_ms(store).await;
    let campaign = by_team(
        &hongbao::coupons::create::http::OPERATION,
        &[],
        json!({"title": "shop-a's drop", "generate": 10, "ends_at": rfc3339(now + 600_000),
               "per_user": 1, "redeem_by": rfc3339(now + 3_600_000), "reference": "shop-a-1",
               "merchant_id": "shop-a"}),
    );
    let (s, b, _) = call(store, Function::Coupon, &campaign).await;
    assert_eq!(s, 201, "{b}");
    let campaign = b["campaign_id"].as_str().unwrap().to_string();
    let (s, b, _) = crate::coupons::api::grab(store, &campaign, "bob").await;
    assert_eq!(s, 200, "{b}");
    let code = b["code"].as_str().unwrap().to_string();
    let packet = by_team(
        &hongbao::merchants::create_packet::http::OPERATION,
        &[],
        json!({"merchant_id": "shop-a", "order_reference": "order-1", "sharer_id": "carol",
               "total_cents": 2000, "count": 2, "payout": "coupon", "sharer_first": true,
               "coupon": {"redeem_within_secs": 86_400}}),
    );
    let (s, b, _) = call(store, Function::Merchant, &packet).await;
    assert_eq!(s, 201, "{b}");
    let id = b["packet_id"].as_str().unwrap();
    let claim = with_sub(
        common::with_placeholder(event("claim-claim"), "PACKET_ID", id),
        "carol",
    );
    let (s, b, _) = call(store, Function::Claim, &claim).await;
    assert_eq!(s, 200, "{b}");
    let share_code = b["coupon"]["code"].as_str().unwrap().to_string();
    ShopA {
        now,
        campaign,
        code,
        share_code,
    }
}

/// A read of `op` (a GET) about shop-a's things: each `{name}` of its path filled (`merchant_id`
/// shop-a, `id` shop-a's campaign), or, without one, the query `merchant_id=shop-a`.
fn read_about_shop_a(op: &'static Operation, a: &ShopA) -> Value {
    let params: Vec<(&str, &str)> = op
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| match name {
            "merchant_id" => (name, "shop-a"),
            "id" => (name, a.campaign.as_str()),
            other => panic!("{}: no shop-a value for {{{other}}}", op.event),
        })
        .collect();
    let query = if params.is_empty() {
        "merchant_id=shop-a"
    } else {
        ""
    };
    signed(op, SHOP_B, &params, query, None)
}

/// `op` as shop-b's backend would send it about shop-a's things: a GET derived from its path
/// ([`read_about_shop_a`]); a write's request written here (a new merchant write needs its
/// line).
fn about_shop_a(op: &'static Operation, a: &ShopA) -> Vec<Value> {
    if matches!(op.method, hongbao::api::operation::Method::Get) {
        return vec![read_about_shop_a(op, a)];
    }
    let shop = [("merchant_id", "shop-a")];
    let order =
        |code: &str, user: &str| json!({"code": code, "user_id": user, "order_reference": "o-9"});
    let coupons = [(&a.code, "bob"), (&a.share_code, "carol")];
    let sign = |params: &[(&str, &str)], query: &str, body: Option<Value>| {
        signed(op, SHOP_B, params, query, body.as_ref())
    };
    match op.event {
        "MerchantDeposit" | "MerchantWithdraw" => vec![sign(
            &shop,
            "",
            Some(json!({"amount_cents": 100, "reference": "r-9"})),
        )],
        "MerchantCreatePacket" => vec![sign(
            &[],
            "",
            Some(
                json!({"merchant_id": "shop-a", "order_reference": "order-9",
                        "sharer_id": "dave", "total_cents": 100, "count": 1, "payout": "wallet"}),
            ),
        )],
        "CreateCampaign" => ["shop-a", ""]
            .map(|m| {
                let mut body = json!({"title": "t", "generate": 10,
                                  "ends_at": rfc3339(a.now + 600_000), "per_user": 1,
                                  "redeem_by": rfc3339(a.now + 3_600_000), "reference": "b-1"});
                if !m.is_empty() {
                    body["merchant_id"] = json!(m);
                }
                sign(&[], "", Some(body))
            })
            .to_vec(),
        "AddCampaignCodes" => vec![sign(
            &[("id", &a.campaign)],
            "",
            Some(json!({"codes": ["X-0001"], "reference": "batch-9"})),
        )],
        "HoldCoupon" => coupons
            .map(|(c, user)| {
                let mut body = order(c, user);
                body["hold_secs"] = json!(600);
                sign(&[], "", Some(body))
            })
            .to_vec(),
        "RedeemCoupon" => coupons
            .map(|(c, user)| sign(&[], "", Some(order(c, user))))
            .to_vec(),
        "ReleaseCoupon" => coupons
            .map(|(c, _)| sign(&[], "", Some(json!({"code": c, "order_reference": "o-9"}))))
            .to_vec(),
        other => panic!("{other}: add shop-b's request about shop-a to about_shop_a"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_bound_to_one_merchant_is_refused_on_another() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = bound_store(&redis);
        let a = shop_a(&store).await;
        let before = common::snapshot_but_call_answers(&redis).await;

        let mut answers = Vec::new();
        for op in merchant_operations() {
            for request in about_shop_a(op, &a) {
                let (s, b, _) = call(&store, function_of(op), &request).await;
                answers.push((op.event, s, b["error"].clone()));
            }
        }

        let refused: Vec<_> = answers
            .iter()
            .filter(|(_, s, e)| *s != 403 || *e != json!("forbidden"))
            .collect();
        assert!(refused.is_empty(), "{backend:?}: not refused: {refused:?}");
        let called: Vec<_> = answers.iter().map(|(event, _, _)| *event).collect();
        let uncalled: Vec<_> = merchant_operations()
            .iter()
            .map(|op| op.event)
            .filter(|e| !called.contains(e))
            .collect();
        assert!(uncalled.is_empty(), "never called: {uncalled:?}");
        assert_eq!(
            common::snapshot_but_call_answers(&redis).await,
            before,
            "{backend:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_principal_acts_for_its_own_merchant() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = bound_store(&redis);
    let op = &hongbao::merchants::deposit::http::OPERATION;
    let deposit = signed(
        op,
        SHOP_B,
        &[("merchant_id", "shop-b")],
        "",
        Some(&json!({"amount_cents": 500, "reference": "topup-b"})),
    );

    let (s, b, _) = call(&store, Function::Merchant, &deposit).await;

    assert_eq!((s, b["balance_cents"].as_i64()), (201, Some(500)), "{b}");
}
