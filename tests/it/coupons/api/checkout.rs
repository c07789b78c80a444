//! The coupon checkout through the coupon function's router (`events/coupon-hold.json`,
//! `events/coupon-redeem.json`, `events/coupon-release.json`): a campaign worth a discount,
//! held, redeemed and released over HTTP and shown in the user's views, and every refusal of
//! the checkout routes, which writes nothing.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::Store;
use serde_json::{json, Value};

use super::{create, grab, view};
use crate::common::{call, event, iam_event, with_body, with_sub, without_auth, Function, TEAM};
use crate::coupons::{coupon_store, dump_all, redis_ms};

/// `POST /coupons/hold` with `body`: (status, body).
async fn hold(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let v = with_body(event("coupon-hold"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /coupons/redeem` with `body`.
async fn redeem(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let v = with_body(event("coupon-redeem"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /coupons/release` with `body`.
async fn release(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let v = with_body(event("coupon-release"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
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

/// The discount of the campaigns here: 15 % off, at most 20.00, on orders of 50.00 or more.
fn discount() -> Value {
    json!({"percent_off": 15, "max_off_cents": 2000, "min_order_cents": 5000})
}

/// A campaign of `codes` worth [`discount`] under `reference`, alice holding its first code;
/// (campaign id, alice's code).
async fn alices_coupon(store: &Arc<Store>, reference: &str, codes: &[&str]) -> (String, String) {
    let now = redis_ms(store).await;
    let body = json!({
        "title": "15 % off", "codes": codes, "ends_at": rfc3339(now + 600_000),
        "redeem_by": rfc3339(now + 3_600_000), "reference": reference, "discount": discount(),
    });
    let (s, created) = create(store, &body).await;
    assert_eq!((s, &created["discount"]), (201, &discount()), "{created}");
    let id = created["campaign_id"].as_str().unwrap().to_string();
    let (s, won, _) = grab(store, &id, "alice").await;
    assert_eq!(s, 200, "{won}");
    (id, won["code"].as_str().unwrap().to_string())
}

/// alice's order `order-1` of 99.99 for her coupon (`alices_coupon`).
fn alices_order(code: &str) -> Value {
    json!({"code": code, "user_id": "alice", "order_reference": "order-1",
           "order_total_cents": 9_999})
}

/// alice's coupon held for 10 minutes by [`alices_order`]: (campaign id, code, the hold's answer).
async fn alices_hold(store: &Arc<Store>, reference: &str) -> (String, String, Value) {
    let (id, code) = alices_coupon(store, reference, &["HTTP-1"]).await;
    let mut body = alices_order(&code);
    body["hold_secs"] = json!(600);
    let (s, held) = hold(store, &body).await;
    assert_eq!(s, 200, "{held}");
    (id, code, held)
}

/// Test: a hold over HTTP answers `held` with the order's discount (15 % of 99.99 rounded down:
/// 14.99) and the campaign's rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_answers_the_orders_discount() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});

    let (_, _, held) = alices_hold(&store, "http-1").await;

    let shown = (&held["state"], &held["discount_cents"], &held["discount"]);
    assert_eq!(shown, (&json!("held"), &json!(1_499), &discount()));
}

/// Test: a held coupon shows `held` with its `held_until` in `GET /coupons` and in
/// `GET /campaigns/{id}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_coupon_shows_held_in_the_users_views() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, held) = alices_hold(&store, "http-1").await;

        let items = coupons_of(&store, "alice").await;
        let (_, campaign) = view(&store, &id, "alice").await;

        let listed = (
            &items[0]["state"],
            &items[0]["held_until"],
            &items[0]["discount"],
        );
        assert_eq!(
            listed,
            (&json!("held"), &held["held_until"], &discount()),
            "{backend}"
        );
        let state = json!([{"code": code, "state": "held", "held_until": held["held_until"]}]);
        assert_eq!(campaign["coupon_states"], state, "{backend}");
    }
}

/// Test: the holding order's redeem commits the hold with the hold's discount, shown in
/// `GET /coupons`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holding_orders_redeem_keeps_the_holds_discount() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (_, code, _) = alices_hold(&store, "http-1").await;

    let (s, redeemed) = redeem(&store, &alices_order(&code)).await;

    assert_eq!(s, 200, "{redeemed}");
    let answer = (&redeemed["repeat"], &redeemed["discount_cents"]);
    assert_eq!(answer, (&json!(false), &json!(1_499)));
    assert_eq!(
        coupons_of(&store, "alice").await[0]["discount_cents"],
        1_499
    );
}

/// Test: the order's release reverses its redemption (`issued` again in both views) and, sent
/// again, answers `repeat: true` with the same `released_at`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_reverses_the_redemption_once() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, _) = alices_hold(&store, "http-1").await;
    assert_eq!(redeem(&store, &alices_order(&code)).await.0, 200);
    let released = json!({"code": code, "order_reference": "order-1"});

    let (s, first) = release(&store, &released).await;
    let (s2, again) = release(&store, &released).await;

    assert_eq!(
        (s, &first["released"], &first["repeat"]),
        (200, &json!("redemption"), &json!(false))
    );
    assert_eq!(
        (s2, &again["repeat"], &again["released_at"]),
        (200, &json!(true), &first["released_at"])
    );
    assert_eq!(coupons_of(&store, "alice").await[0]["state"], "issued");
    let (_, campaign) = view(&store, &id, "alice").await;
    assert_eq!(campaign["coupon_states"][0]["state"], "issued");
}

/// Every key as [`dump_all`] reads it, without the calls' answers (`<issued>:call:<call id>`,
/// `lua/records.lua`: call_answer_add), where a refusal by another order's hold or redemption
/// records its answer for its re-runs.
async fn coupons_as_they_are(
    redis: &TestRedis,
    store: &Store,
) -> std::collections::BTreeMap<String, (String, Vec<String>, bool)> {
    let mut all = dump_all(redis, store).await;
    all.retain(|key, _| !key.contains(":issued:call:"));
    all
}

/// Test: every refusal of the checkout routes writes nothing (every key compared before and
/// after, but for the key where a 409's answer is recorded): 403 for a call not signed by a coupon principal; 400 for `hold_secs` 29 or 3601, a
/// missing field, an unknown field, a negative total, a bad code or order; 404 for a code not
/// issued to the user or a code of no campaign; 422 below the minimum (with
/// `min_order_cents`); 409 `held` (with `held_until`) and `already_redeemed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_refusals_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, held_code) = alices_coupon(&store, "refuse-1", &["REFUSE-1"]).await;
        let (_, used_code) = alices_coupon(&store, "refuse-2", &["REFUSE-2"]).await;
        let mine = json!({"code": held_code, "user_id": "alice", "order_reference": "order-1",
                          "hold_secs": 600, "order_total_cents": 9_999});
        let (s, held) = hold(&store, &mine).await;
        assert_eq!(s, 200, "{held}");
        let used = json!({"code": used_code, "user_id": "alice", "order_reference": "order-1",
                          "order_total_cents": 9_999});
        assert_eq!(redeem(&store, &used).await.0, 200);

        let before = coupons_as_they_are(&redis, &store).await;
        unsigned_checkout_calls(&store, &mine).await;
        invalid_checkouts(&store, &mine).await;
        let answers = refused_checkouts(&store, &mine, &used_code).await;
        let answer = |what: &str| answers.iter().find(|a| a.0 == what).unwrap().1.clone();
        assert_eq!(answer("below the minimum")["min_order_cents"], 5_000);
        assert_eq!(
            answer("another order's hold")["held_until"],
            held["held_until"]
        );
        assert_eq!(answer("a redeemed coupon")["order_reference"], "order-1");
        assert_eq!(
            coupons_as_they_are(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );
    }
}

/// Bodies the checkout routes refuse with 400 `invalid_request`, around `mine` (alice's hold
/// of her code for `order-1`).
async fn invalid_checkouts(store: &Arc<Store>, mine: &Value) {
    use Route::{Hold, Release};
    let with = |k: &str, v: Value| {
        let mut b = mine.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = mine.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let code = mine["code"].clone();
    let cases: Vec<(&str, Route, Value)> = vec![
        ("hold_secs 29", Hold, with("hold_secs", json!(29))),
        ("hold_secs 3601", Hold, with("hold_secs", json!(3601))),
        ("hold_secs 1.5", Hold, with("hold_secs", json!(1.5))),
        ("no hold_secs", Hold, without("hold_secs")),
        ("no user_id", Hold, without("user_id")),
        ("an unknown field", Hold, with("coupon", json!(1))),
        (
            "a negative total",
            Hold,
            with("order_total_cents", json!(-1)),
        ),
        ("a bad code", Hold, with("code", json!("no!"))),
        ("a bad order", Hold, with("order_reference", json!("a b"))),
        ("release without order", Release, json!({"code": code})),
        (
            "release with user_id",
            Release,
            json!({"code": code, "order_reference": "order-1", "user_id": "alice"}),
        ),
    ];
    for (what, route, body) in cases {
        let (s, b) = match route {
            Hold => hold(store, &body).await,
            Release => release(store, &body).await,
            Route::Redeem => redeem(store, &body).await,
        };
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_request")),
            "{what}: {b}"
        );
    }
}

/// A checkout route.
enum Route {
    Hold,
    Redeem,
    Release,
}

/// The checkout calls refused by the store around `mine` (alice's hold of her code for `order-1`) and
/// `used_code` (redeemed by `order-1`), each checked for its status and code; (what, answer).
async fn refused_checkouts(
    store: &Arc<Store>,
    mine: &Value,
    used_code: &str,
) -> Vec<(&'static str, Value)> {
    use Route::{Hold, Redeem, Release};
    let with = |k: &str, v: Value| {
        let mut b = mine.clone();
        b[k] = v;
        b
    };
    let code = mine["code"].clone();
    let release_by = |code: &Value, order: &str| json!({"code": code, "order_reference": order});
    let held = "held";
    let cases: Vec<(&str, Route, Value, u16, &str)> = vec![
        (
            "bob's hold",
            Hold,
            with("user_id", json!("bob")),
            404,
            "not_found",
        ),
        (
            "a code of no campaign",
            Release,
            release_by(&json!("NOPE-1"), "order-1"),
            404,
            "not_found",
        ),
        (
            "below the minimum",
            Hold,
            with("order_total_cents", json!(4_999)),
            422,
            "below_minimum",
        ),
        (
            "another order's hold",
            Hold,
            with("order_reference", json!("order-2")),
            409,
            held,
        ),
        (
            "another order's redeem",
            Redeem,
            json!({"code": code, "user_id": "alice", "order_reference": "order-2"}),
            409,
            "held",
        ),
        (
            "another order's release",
            Release,
            release_by(&code, "order-2"),
            409,
            "held",
        ),
        (
            "a redeemed coupon",
            Hold,
            json!({"code": used_code, "user_id": "alice", "order_reference": "order-2",
                   "hold_secs": 60}),
            409,
            "already_redeemed",
        ),
        (
            "its release by another order",
            Release,
            release_by(&json!(used_code), "order-2"),
            409,
            "already_redeemed",
        ),
    ];
    let mut answers = Vec::new();
    for (what, route, body, status, error) in cases {
        let (s, b) = match route {
            Hold => hold(store, &body).await,
            Redeem => redeem(store, &body).await,
            Release => release(store, &body).await,
        };
        assert_eq!(
            (s, b["error"].as_str()),
            (status, Some(error)),
            "{what}: {b}"
        );
        answers.push((what, b));
    }
    answers
}

/// Hold, redeem and release unsigned, and signed by a principal outside
/// `HONGBAO_COUPON_PRINCIPALS`: 403 `forbidden` each.
async fn unsigned_checkout_calls(store: &Arc<Store>, body: &Value) {
    let stranger = |mut v: Value| {
        v["requestContext"]["authorizer"]["iam"]["userArn"] =
            json!("arn:aws:sts::123456789012:assumed-role/someone-else/x");
        v
    };
    for fixture in ["coupon-hold", "coupon-redeem", "coupon-release"] {
        let v = with_body(event(fixture), &body.to_string());
        for v in [without_auth(v.clone()), stranger(v)] {
            let (s, b, _) = call(store, Function::Coupon, &v).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (403, Some("forbidden")),
                "{fixture}: {b}"
            );
        }
    }
}

/// `GET /campaigns/{id}/coupons?<query>`, signed by the fixture's coupon principal.
async fn issued(store: &Arc<Store>, id: &str, query: &str) -> (u16, Value) {
    let op = &hongbao::coupons::issued::http::OPERATION;
    let v = iam_event(op, TEAM, &[("id", id)], query, None);
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// Test: the campaign's merchant sees every issued coupon with its state, newest first: one
/// issued, one held (with its order), one redeemed (with its order), one redeemed and then
/// released (`released`, with `released_at`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaigns_coupons_show_their_states_newest_first() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, alices) = alices_coupon(&store, "issued-1", &["IS-1", "IS-2", "IS-3", "IS-4"]).await;
    let mut codes = vec![alices];
    for user in ["bob", "carol", "dave"] {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        let (s, won, _) = grab(&store, &id, user).await;
        assert_eq!(s, 200, "{won}");
        codes.push(won["code"].as_str().unwrap().to_string());
    }
    let order = |i: usize, user: &str| {
        json!({"code": codes[i], "user_id": user, "order_reference": format!("order-{i}"),
               "order_total_cents": 9_999})
    };
    let mut bobs = order(1, "bob");
    bobs["hold_secs"] = json!(600);
    assert_eq!(hold(&store, &bobs).await.0, 200);
    assert_eq!(redeem(&store, &order(2, "carol")).await.0, 200);
    assert_eq!(redeem(&store, &order(3, "dave")).await.0, 200);
    let daves = json!({"code": codes[3], "order_reference": "order-3"});
    assert_eq!(release(&store, &daves).await.0, 200);

    let (s, page) = issued(&store, &id, "").await;

    assert_eq!(s, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    let shown: Vec<(&str, &str, &str, bool)> = items
        .iter()
        .map(|i| {
            let order = i["order_reference"].as_str().unwrap_or("");
            let released = i.get("released_at").is_some();
            (
                i["code"].as_str().unwrap(),
                i["state"].as_str().unwrap(),
                order,
                released,
            )
        })
        .collect();
    let expected = vec![
        (codes[3].as_str(), "released", "", true),
        (codes[2].as_str(), "redeemed", "order-2", false),
        (codes[1].as_str(), "held", "order-1", false),
        (codes[0].as_str(), "issued", "", false),
    ];
    assert_eq!(shown, expected);
    assert_eq!(page["next_cursor"], Value::Null);
}

/// Test: a campaign of 24 pools is paged newest first across its pools, 7 coupons a page,
/// on a standalone server and a cluster: every issued coupon once, none skipped, none
/// repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issued_coupons_page_across_pools_without_repeat_or_skip() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let body = json!({"title": "wide drop", "generate": 60_000, "reference": "issued-2",
                          "ends_at": rfc3339(now + 600_000)});
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{created}");
        let id = created["campaign_id"].as_str().unwrap().to_string();
        let mut won = std::collections::BTreeSet::new();
        for n in 0..30 {
            let (s, b, _) = grab(&store, &id, &format!("user-{n}")).await;
            assert_eq!(s, 200, "{b}");
            won.insert(b["code"].as_str().unwrap().to_string());
        }

        let (mut seen, mut times, mut query) = (Vec::new(), Vec::new(), "limit=7".to_string());
        loop {
            let (s, page) = issued(&store, &id, &query).await;
            assert_eq!(s, 200, "{page}");
            for item in page["items"].as_array().unwrap() {
                seen.push(item["code"].as_str().unwrap().to_string());
                times.push(item["grabbed_at"].as_str().unwrap().to_string());
            }
            match page["next_cursor"].as_str() {
                Some(cursor) => query = format!("limit=7&cursor={cursor}"),
                None => break,
            }
        }

        assert_eq!(seen.len(), 30, "{backend}: {seen:?}");
        assert_eq!(
            seen.iter()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            won
        );
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    }
}

/// Test: a page of a 24-pool campaign reads at most `limit + pools × chunk` coupons (`HMGET`s
/// counted by `INFO commandstats`), not every pool's `limit`: 100 issued coupons, a page of 10
/// reads at most 58.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reads_a_bounded_share_of_each_pool() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let body = json!({"title": "wide drop", "generate": 60_000, "reference": "issued-3",
                      "ends_at": rfc3339(now + 600_000)});
    let (s, created) = create(&store, &body).await;
    assert_eq!(s, 201, "{created}");
    let id = created["campaign_id"].as_str().unwrap().to_string();
    for n in 0..100 {
        assert_eq!(grab(&store, &id, &format!("user-{n}")).await.0, 200);
    }
    crate::common::reset_stats(&redis).await;

    let (s, page) = issued(&store, &id, "limit=10").await;

    assert_eq!(
        (s, page["items"].as_array().unwrap().len()),
        (200, 10),
        "{page}"
    );
    // 10 + 24 pools × (ceil(10 / 24) + 1).
    let read = crate::common::command_calls(&redis, "hmget").await;
    assert!(read <= 58, "{read} coupons read for a page of 10");
}
