//! Coupon drops through the coupon function's router, as API Gateway events reach it
//! (`events/coupon-*.json`), on a standalone server and a 3-master cluster: a drop raced by
//! 300 users, idempotent creation, the merchant's batches, refusals that write nothing, the
//! campaign's times and the visit limit, and one redemption under 32 concurrent redeems.

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use serde_json::{json, Value};

use super::{dump_all, redis_ms};
use crate::common::{self, call, event, with_body, with_sub, without_auth, Function};
use hongbao::Store;
use std::sync::Arc;

/// The fixture `name` with the campaign `id` in its path.
fn at(name: &str, id: &str) -> Value {
    let mut v = event(name);
    let path = v["rawPath"].as_str().unwrap().replace("CAMPAIGN_ID", id);
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["id"] = json!(id);
    v
}

/// `POST /campaigns` with `body`, signed by the fixture's coupon principal.
async fn create(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let v = with_body(event("coupon-create-campaign"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /campaigns/{id}/grab` as `user`: (status, body, `Retry-After`).
async fn grab(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value, Option<String>) {
    call(
        store,
        Function::Coupon,
        &with_sub(at("coupon-grab", id), user),
    )
    .await
}

/// `GET /campaigns/{id}` as `user`.
async fn view(store: &Arc<Store>, id: &str, user: &str) -> (u16, Value) {
    let (s, b, _) = call(
        store,
        Function::Coupon,
        &with_sub(at("coupon-view", id), user),
    )
    .await;
    (s, b)
}

/// `POST /coupons/redeem`.
async fn redeem(store: &Arc<Store>, code: &str, user: &str, order: &str) -> (u16, Value) {
    let body = json!({"code": code, "user_id": user, "order_reference": order});
    let v = with_body(event("coupon-redeem"), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// `POST /campaigns/{id}/codes`.
async fn add_codes(
    store: &Arc<Store>,
    id: &str,
    codes: &[String],
    reference: &str,
) -> (u16, Value) {
    let body = json!({"codes": codes, "reference": reference});
    let v = with_body(at("coupon-add-codes", id), &body.to_string());
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// A campaign body of `codes` open now until `ends_in_ms` after `now`.
fn uploaded(now: i64, codes: &[String], ends_in_ms: i64, reference: &str) -> Value {
    json!({
        "title": "20 off 100",
        "codes": codes,
        "ends_at": rfc3339(now + ends_in_ms),
        "redeem_by": rfc3339(now + ends_in_ms + 3_600_000),
        "reference": reference,
    })
}

/// Test: 100 uploaded codes, 300 users racing through the router, 60 of them pressing twice at
/// once: exactly 100 answers 200 with distinct codes, all from the upload; every repeat of a
/// winner is 409 `already_grabbed` with the winner's code; everyone else is 410 `sold_out`;
/// the campaign then shows `sold_out` with 0 of 100 left and the caller's code. Creating it
/// again with the same body and reference answers 200 and the same campaign; another body
/// under the reference is 409 `reference_reused`. 32 concurrent redeems of one code by one
/// order redeem it once; another order is 409 naming the first; someone else's or an
/// unknown code is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_of_a_hundred_codes_through_the_router() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = super::coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let upload: Vec<String> = (0..100).map(|i| format!("SAVE20-{i:03}")).collect();
        let body = uploaded(now, &upload, 600_000, "drop-1");
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{backend}: {created}");
        assert_eq!(created["status"], "open", "{created}");
        assert_eq!(
            (&created["codes_total"], &created["codes_left"]),
            (&json!(100), &json!(100))
        );
        assert!(created.get("coupons").is_none(), "{created}");
        let id = created["campaign_id"].as_str().unwrap().to_string();
        let (s, again) = create(&store, &body).await;
        assert_eq!((s, &again["campaign_id"]), (200, &json!(id)), "{again}");
        let mut other = body.clone();
        other["title"] = json!("30 off 100");
        let (s, e) = create(&store, &other).await;
        assert_eq!((s, e["error"].as_str()), (409, Some("reference_reused")));

        let users: Vec<String> = (0..300).map(|u| format!("user-{u}")).collect();
        let presses = users.iter().chain(users.iter().take(60)).cloned();
        let tasks = presses.map(|u| {
            let (store, id) = (store.clone(), id.clone());
            tokio::spawn(async move {
                let (s, b, _) = grab(&store, &id, &u).await;
                (u, s, b)
            })
        });
        let mut won: BTreeMap<String, String> = BTreeMap::new();
        let (mut sold_out, mut repeats) = (0, Vec::new());
        for r in join_all(tasks).await {
            let (user, status, b) = r.unwrap();
            match (status, b["error"].as_str()) {
                (200, None) => {
                    assert_eq!(b["campaign_id"], json!(id));
                    let code = b["code"].as_str().unwrap().to_string();
                    assert!(won.insert(user, code).is_none(), "{backend}: won twice");
                }
                (409, Some("already_grabbed")) => repeats.push((user, b["coupons"].clone())),
                (410, Some("sold_out")) => sold_out += 1,
                other => panic!("{backend}: {other:?} {b}"),
            }
        }
        assert_eq!(won.len(), 100, "{backend}");
        let codes: HashSet<&String> = won.values().collect();
        assert_eq!(codes.len(), 100, "{backend}: a code issued twice");
        assert!(codes.iter().all(|c| upload.contains(c)));
        for (user, coupons) in &repeats {
            assert_eq!(coupons, &json!([won[user]]), "{backend}: {user}'s repeat");
        }
        assert_eq!(won.len() + repeats.len() + sold_out, 360);
        let (winner, code) = won.iter().next().unwrap();
        let (s, v) = view(&store, &id, winner).await;
        assert_eq!(s, 200);
        assert_eq!(v["status"], "sold_out", "{v}");
        assert_eq!(
            (&v["codes_left"], &v["codes_total"]),
            (&json!(0), &json!(100))
        );
        assert_eq!(v["coupons"], json!([code]));
        let (_, v) = view(&store, &id, "user-299-never").await;
        assert_eq!(v["coupons"], json!([]));

        // One code, 32 redeems of one order at once: one redemption, 31 repeats.
        let tasks = (0..32).map(|_| {
            let (store, code, winner) = (store.clone(), code.clone(), winner.clone());
            tokio::spawn(async move { redeem(&store, &code, &winner, "order-1").await })
        });
        let mut firsts = 0;
        let mut times = HashSet::new();
        for r in join_all(tasks).await {
            let (s, b) = r.unwrap();
            assert_eq!(s, 200, "{backend}: {b}");
            assert_eq!(b["campaign_id"], json!(id));
            firsts += usize::from(b["repeat"] == json!(false));
            times.insert(b["redeemed_at"].as_str().unwrap().to_string());
        }
        assert_eq!((firsts, times.len()), (1, 1), "{backend}");
        let (s, b) = redeem(&store, code, winner, "order-2").await;
        assert_eq!((s, b["error"].as_str()), (409, Some("already_redeemed")));
        assert_eq!(b["order_reference"], "order-1");
        let before = dump_all(&redis, &store).await;
        let (someone_else, their_code) = won.iter().nth(1).unwrap();
        assert_ne!(someone_else, winner);
        for (code, user) in [
            (their_code.as_str(), winner.as_str()),
            ("SAVE20-999", winner.as_str()),
            ("0001C7K2M9QX4TZ8WD", winner.as_str()),
        ] {
            let (s, b) = redeem(&store, code, user, "order-3").await;
            assert_eq!((s, b["error"].as_str()), (404, Some("not_found")), "{code}");
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a 404 wrote"
        );
    }
}

/// Test: every refusal of the coupon routes writes nothing (every key's type, contents and
/// TTL compared before and after): 400 bodies (both sources, a bad time, `per_user` 11,
/// codes repeated in the request or held by another campaign, an array body), 403 (no
/// signature, a principal outside `HONGBAO_COUPON_PRINCIPALS`), 404 (unknown campaigns), 409
/// (`reference_reused`, `campaign_started`, `codes_generated`, and `already_grabbed` with the
/// visit limit off). Batches join a campaign before its start, once per reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = super::coupon_store(&redis, |c| c.coupons.visits.per_window = 0);
        let now = redis_ms(&store).await;
        let first: Vec<String> = (0..5).map(|i| format!("FIRST-{i}")).collect();
        let (s, open) = create(&store, &uploaded(now, &first, 600_000, "open-1")).await;
        assert_eq!(s, 201, "{open}");
        let open_id = open["campaign_id"].as_str().unwrap().to_string();
        let mut later = uploaded(now, &["LATER-0".to_string()], 600_000, "later-1");
        later["starts_at"] = json!(rfc3339(now + 300_000));
        let (s, sched) = create(&store, &later).await;
        assert_eq!((s, &sched["status"]), (201, &json!("scheduled")), "{sched}");
        let sched_id = sched["campaign_id"].as_str().unwrap().to_string();
        let generated = json!({
            "title": "generated", "generate": 10, "ends_at": rfc3339(now + 600_000),
            "reference": "gen-1",
        });
        let (s, gen) = create(&store, &generated).await;
        assert_eq!((s, &gen["codes_left"]), (201, &json!(10)), "{gen}");
        let gen_id = gen["campaign_id"].as_str().unwrap().to_string();

        // A batch joins the scheduled campaign, once.
        let batch: Vec<String> = (0..3).map(|i| format!("BATCH-{i}")).collect();
        let (s, b) = add_codes(&store, &sched_id, &batch, "b-1").await;
        assert_eq!(
            (s, &b["codes_total"], &b["repeat"]),
            (201, &json!(4), &json!(false))
        );
        let (s, b) = add_codes(&store, &sched_id, &batch, "b-1").await;
        assert_eq!(
            (s, &b["codes_total"], &b["repeat"]),
            (200, &json!(4), &json!(true))
        );
        let (s, _, _) = grab(&store, &open_id, "alice").await;
        assert_eq!(s, 200);

        let before = dump_all(&redis, &store).await;
        let mut bodies: Vec<(&str, Value, u16, &str)> = vec![
            (
                "both sources",
                json!({"title": "t", "codes": ["ABCD"], "generate": 5,
                       "ends_at": rfc3339(now + 60_000), "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "neither source",
                json!({"title": "t", "ends_at": rfc3339(now + 60_000), "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "a time that is not RFC 3339",
                json!({"title": "t", "generate": 5, "ends_at": "tomorrow", "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "per_user 11",
                json!({"title": "t", "generate": 5, "ends_at": rfc3339(now + 60_000),
                       "per_user": 11, "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "ends_at passed",
                json!({"title": "t", "generate": 5, "ends_at": rfc3339(now - 1_000),
                       "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "ends_at 91 days away without starts_at",
                json!({"title": "t", "generate": 5,
                       "ends_at": rfc3339(now + 91 * 86_400_000),
                       "reference": "x-1"}),
                400,
                "invalid_request",
            ),
            (
                "codes repeated in the request",
                uploaded(now, &["DUP-1".into(), "DUP-1".into()], 60_000, "x-1"),
                400,
                "duplicate_codes",
            ),
            (
                "a code of another campaign",
                uploaded(now, &["NEW-1".into(), "FIRST-3".into()], 60_000, "x-1"),
                400,
                "duplicate_codes",
            ),
            (
                "the reference of another body",
                uploaded(now, &["NEW-1".into()], 60_000, "open-1"),
                409,
                "reference_reused",
            ),
        ];
        bodies.push(("an array body", json!([1, 2]), 400, "invalid_request"));
        for (what, body, status, code) in &bodies {
            let (s, b) = create(&store, body).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (*status, Some(*code)),
                "{what}: {b}"
            );
            if *code == "duplicate_codes" {
                let listed = b["duplicates"].as_array().unwrap();
                assert_eq!(listed.len(), 1, "{what}: {b}");
            }
        }
        // Unsigned, or signed by someone else: 403 on every merchant route.
        let stranger = |mut v: Value| {
            v["requestContext"]["authorizer"]["iam"]["userArn"] =
                json!("arn:aws:sts::123456789012:assumed-role/someone-else/x");
            v
        };
        let merchant_events = [
            with_body(
                event("coupon-create-campaign"),
                &uploaded(now, &["NEW-2".into()], 60_000, "x-2").to_string(),
            ),
            with_body(
                at("coupon-add-codes", &sched_id),
                &json!({"codes": ["NEW-3"], "reference": "b-2"}).to_string(),
            ),
            with_body(
                event("coupon-redeem"),
                &json!({"code": "FIRST-0", "user_id": "alice", "order_reference": "o"}).to_string(),
            ),
        ];
        for v in merchant_events {
            for v in [without_auth(v.clone()), stranger(v)] {
                let (s, b, _) = call(&store, Function::Coupon, &v).await;
                assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
            }
        }
        let refusals: Vec<(u16, &str, (u16, Value))> = vec![
            (
                404,
                "not_found",
                add_codes(&store, "ZZZZZ", &batch, "b-9").await,
            ),
            (404, "not_found", view(&store, "ZZZZZ", "alice").await),
            (
                409,
                "reference_reused",
                add_codes(&store, &sched_id, &["OTHER-1".to_string()], "b-1").await,
            ),
            (
                400,
                "duplicate_codes",
                add_codes(&store, &sched_id, &["FIRST-1".to_string()], "b-3").await,
            ),
            (
                400,
                "invalid_request",
                add_codes(&store, &sched_id, &["no".to_string()], "b-3").await,
            ),
            (
                409,
                "campaign_started",
                add_codes(&store, &open_id, &["NEW-4".to_string()], "b-4").await,
            ),
            (
                409,
                "codes_generated",
                add_codes(&store, &gen_id, &["NEW-5".to_string()], "b-5").await,
            ),
            (
                400,
                "invalid_request",
                redeem(&store, "bad code!", "alice", "o-1").await,
            ),
            (
                400,
                "invalid_request",
                redeem(&store, "FIRST-0", "alice", "bad order").await,
            ),
        ];
        for (status, code, (s, b)) in refusals {
            assert_eq!((s, b["error"].as_str()), (status, Some(code)), "{b}");
        }
        for (id, user, status, code) in [
            ("ZZZZZ", "alice", 404, "not_found"),
            ("bad id", "alice", 404, "not_found"),
            (open_id.as_str(), "alice", 409, "already_grabbed"),
        ] {
            let (s, b, _) = grab(&store, id, user).await;
            assert_eq!((s, b["error"].as_str()), (status, Some(code)), "{id}: {b}");
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );
        let (_, v) = view(&store, &sched_id, "alice").await;
        assert_eq!(
            (&v["codes_total"], &v["codes_left"]),
            (&json!(4), &json!(4))
        );
    }
}

/// Test: before `starts_at` a grab is 425 `not_started` with `Retry-After` up to the start;
/// seed 004's visit limit turns the (N+1)th counted visit in a window into 429 with
/// `Retry-After`; at the start the grab wins; once every code is issued 410 `sold_out`; after
/// `ends_at` it is 410 `ended` (also where the campaign was seen sold out) and the campaign
/// shows `ended`. A coupon past `redeem_by` is 410 `expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_and_the_visit_limit() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = super::coupon_store(&redis, |c| {
            c.coupons.visits.per_window = 3;
            c.coupons.visits.window_ms = 60_000;
        });
        let now = redis_ms(&store).await;
        let starts = now + 2_500;
        let ends = now + 5_000;
        let body = json!({
            "title": "flash", "codes": ["FLASH-1", "FLASH-2"],
            "starts_at": rfc3339(starts), "ends_at": rfc3339(ends),
            "redeem_by": rfc3339(ends), "reference": "flash-1",
        });
        let (s, c) = create(&store, &body).await;
        assert_eq!((s, &c["status"]), (201, &json!("scheduled")), "{c}");
        let id = c["campaign_id"].as_str().unwrap().to_string();
        for _ in 0..3 {
            let (s, b, retry) = grab(&store, &id, "bob").await;
            assert_eq!((s, b["error"].as_str()), (425, Some("not_started")), "{b}");
            let secs: u64 = retry.unwrap().parse().unwrap();
            assert!((1..=3).contains(&secs), "Retry-After {secs}");
        }
        let (s, b, retry) = grab(&store, &id, "bob").await;
        assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
        let secs: u64 = retry.unwrap().parse().unwrap();
        assert!((1..=60).contains(&secs), "Retry-After {secs}");
        // Another user is not limited by bob's visits.
        common::sleep_until_redis_ms(&store, starts).await;
        let (s, b, _) = grab(&store, &id, "carol").await;
        assert_eq!(s, 200, "{b}");
        let code = b["code"].as_str().unwrap().to_string();
        let (_, v) = view(&store, &id, "carol").await;
        assert_eq!(
            (&v["status"], &v["codes_left"]),
            (&json!("open"), &json!(1))
        );
        let (s, _, _) = grab(&store, &id, "erin").await;
        assert_eq!(s, 200);
        let (s, b, _) = grab(&store, &id, "frank").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("sold_out")), "{b}");
        // After the end, also from a sandbox that has seen it sold out: 410 ended.
        common::sleep_until_redis_ms(&store, ends).await;
        let (s, b, _) = grab(&store, &id, "dave").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("ended")), "{b}");
        let (_, v) = view(&store, &id, "carol").await;
        assert_eq!(v["status"], "ended");
        let (s, b) = redeem(&store, &code, "carol", "late-order").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("expired")), "{b}");
        assert_eq!(b["redeem_by"], json!(rfc3339(ends)));
    }
}

/// `GET /coupons` as `user` with `query`.
async fn list(store: &Arc<Store>, user: &str, query: &str) -> (u16, Value) {
    let mut v = with_sub(event("coupon-list"), user);
    v["rawQueryString"] = json!(query);
    v.as_object_mut().unwrap().remove("queryStringParameters");
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// Test: the caller's coupons, newest first, a page at a time (a cursor never repeats or
/// skips one), generated codes shown as codes, a redeemed one `redeemed`; and the feed:
/// ledger-export publishes one `CouponIssued` per code issued (with the code, not a
/// generated index) and one `CouponRedeemed` naming the order, and puts every issued coupon
/// in its user's list again, so a list lost between the grab and its write (the key deleted
/// here) is whole once the journal is exported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_coupons_and_the_feed() {
    use harness::moto::{LedgerFeed, MotoServer};
    use hongbao::lambda::ledger_export;
    use hongbao::lambda::ledger_export::eventbridge::EventBridgeSink;
    use hongbao::store::journal::JournalIndex;

    let moto = MotoServer::start();
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = super::coupon_store(&redis, |c| c.ledger_export.lock_ttl_ms = 30_000);
        let now = redis_ms(&store).await;
        let generated = json!({
            "title": "generated drop", "generate": 5, "per_user": 3,
            "ends_at": rfc3339(now + 600_000), "reference": "gen-1",
        });
        let (_, gen) = create(&store, &generated).await;
        let gen_id = gen["campaign_id"].as_str().unwrap().to_string();
        let (_, up) = create(
            &store,
            &uploaded(now, &["UP-1".into(), "UP-2".into()], 600_000, "up-1"),
        )
        .await;
        let up_id = up["campaign_id"].as_str().unwrap().to_string();
        let mut won = Vec::new();
        for id in [&gen_id, &gen_id, &up_id, &gen_id] {
            let (s, b, _) = grab(&store, id, "alice").await;
            assert_eq!(s, 200, "{b}");
            won.push(b["code"].as_str().unwrap().to_string());
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let (s, b, _) = grab(&store, &up_id, "bob").await;
        assert_eq!(s, 200, "{b}");
        let bobs = b["code"].as_str().unwrap().to_string();
        let (s, r) = redeem(&store, &won[2], "alice", "order-9").await;
        assert_eq!(s, 200, "{r}");

        // Pages of 3 then 1, newest first.
        let mut seen = Vec::new();
        let mut query = "limit=3".to_string();
        loop {
            let (s, page) = list(&store, "alice", &query).await;
            assert_eq!(s, 200, "{page}");
            for item in page["items"].as_array().unwrap() {
                seen.push(item.clone());
            }
            match page["next_cursor"].as_str() {
                Some(c) => query = format!("limit=3&cursor={}", urlencode(c)),
                None => break,
            }
        }
        let codes: Vec<&str> = seen.iter().map(|i| i["code"].as_str().unwrap()).collect();
        let newest_first: Vec<&str> = won.iter().rev().map(String::as_str).collect();
        assert_eq!(codes, newest_first, "{backend}");
        let redeemed: Vec<&Value> = seen.iter().filter(|i| i["state"] == "redeemed").collect();
        assert_eq!(redeemed.len(), 1);
        assert_eq!(redeemed[0]["code"], json!(won[2]));
        assert_eq!(redeemed[0]["title"], "20 off 100");
        assert!(seen.iter().all(|i| i["state"] != "expired"));
        let (s, e) = list(&store, "alice", "limit=0").await;
        assert_eq!((s, e["error"].as_str()), (400, Some("invalid_request")));

        // The list lost (a function stopped after the grab): the feed puts it back.
        let mut conn = store.conn().await.unwrap();
        let key = hongbao::store::coupons::keys::user_coupons("hb", "alice");
        let _: i64 = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let (_, empty) = list(&store, "alice", "").await;
        assert_eq!(empty["items"], json!([]));
        let feed = LedgerFeed::create(&moto, &format!("hongbao-coupons-{backend}")).await;
        let client = aws_sdk_eventbridge::Client::new(&moto.sdk_config());
        let sink = EventBridgeSink::new(client, feed.bus_name());
        let index = JournalIndex::new("hb");
        let run = ledger_export::run_until(&store, &index, &sink, None)
            .await
            .unwrap();
        assert_eq!((run.exported, run.failed), (6, 0), "{backend}: {run:?}");
        let (_, back) = list(&store, "alice", "").await;
        let codes: Vec<&str> = back["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, newest_first, "{backend}: the list after the feed");

        let events = feed.drain().await;
        let mut issued: Vec<(String, String, String)> = Vec::new();
        let mut redeemed = Vec::new();
        for e in &events {
            let d = &e["detail"];
            match e["detail-type"].as_str().unwrap() {
                "CouponIssued" => issued.push((
                    d["user_id"].as_str().unwrap().into(),
                    d["campaign_id"].as_str().unwrap().into(),
                    d["code"].as_str().unwrap().into(),
                )),
                "CouponRedeemed" => redeemed.push(d.clone()),
                other => panic!("{backend}: {other} {e}"),
            }
            assert_eq!(d["amount_cents"], 0);
        }
        issued.sort();
        let mut expected: Vec<(String, String, String)> = won
            .iter()
            .zip([&gen_id, &gen_id, &up_id, &gen_id])
            .map(|(code, id)| ("alice".into(), id.to_string(), code.clone()))
            .chain([("bob".into(), up_id.clone(), bobs.clone())])
            .collect();
        expected.sort();
        assert_eq!(issued, expected, "{backend}");
        assert_eq!(redeemed.len(), 1);
        assert_eq!(
            (&redeemed[0]["code"], &redeemed[0]["order_reference"]),
            (&json!(won[2]), &json!("order-9"))
        );
    }
}

/// `text` percent-encoded for a query string.
fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Test: reclaim-cron closes each ended campaign once: nothing before its end; after it, the
/// campaign's counts reported once in the journal (`campaign_ended`: issued, redeemed, never
/// issued, summed over a 24-pool generated campaign's pools), the un-issued uploaded codes'
/// list released, every pool key given its expiry, the campaign still showing `codes_left` +
/// issued = `codes_total`, and an issued coupon still redeemable until `redeem_by`. A second
/// run closes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_campaigns_are_closed_once() {
    use hongbao::domain::journal::Kind;
    use hongbao::store::journal::{self, JournalIndex};

    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = super::coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let ends = now + 3_000;
        let codes: Vec<String> = (0..5).map(|i| format!("END-{i}")).collect();
        let mut up = uploaded(now, &codes, 3_000, "end-up");
        up["ends_at"] = json!(rfc3339(ends));
        let (_, up) = create(&store, &up).await;
        let up_id = up["campaign_id"].as_str().unwrap().to_string();
        let gen = json!({
            "title": "big", "generate": 60_000, "ends_at": rfc3339(ends),
            "redeem_by": rfc3339(ends + 600_000), "reference": "end-gen",
        });
        let (s, gen) = create(&store, &gen).await;
        assert_eq!(s, 201, "{gen}");
        let gen_id = gen["campaign_id"].as_str().unwrap().to_string();
        let mut up_won = Vec::new();
        for user in ["u1", "u2"] {
            let (s, b, _) = grab(&store, &up_id, user).await;
            assert_eq!(s, 200);
            up_won.push(b["code"].as_str().unwrap().to_string());
        }
        for user in ["g1", "g2", "g3"] {
            let (s, _, _) = grab(&store, &gen_id, user).await;
            assert_eq!(s, 200);
        }
        let (s, _) = redeem(&store, &up_won[0], "u1", "o-1").await;
        assert_eq!(s, 200);

        let early = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(
            early.campaigns_closed, 0,
            "{backend}: closed before the end"
        );
        common::sleep_until_redis_ms(&store, ends).await;
        let run = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(
            (run.campaigns_closed, run.campaigns_failed),
            (2, 0),
            "{backend}: {run:?}"
        );
        let again = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(again.campaigns_closed, 0, "{backend}: closed twice");
        // A close sent again (a run cut short after pool 0 reported, before the index let the
        // campaign go): the same counts, no second report.
        let mut conn = store.conn().await.unwrap();
        let no = hongbao::domain::coupons::campaign_no(&up_id).unwrap();
        let (counts, _) = hongbao::store::coupons::close::close(&store, &mut conn, no)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (counts.issued, counts.redeemed, counts.never_issued),
            (2, 1, 3)
        );

        let index = JournalIndex::new("hb");
        let mut ended = Vec::new();
        for key in journal::pending(&store, &index).await.unwrap() {
            for e in journal::read(&store, &key, 10_000).await.unwrap() {
                if e.kind == Kind::CampaignEnded {
                    let c = e.campaign_counts.unwrap();
                    ended.push((e.reference.clone(), c.issued, c.redeemed, c.never_issued));
                }
            }
        }
        ended.sort();
        let mut expected = vec![(up_id.clone(), 2, 1, 3), (gen_id.clone(), 3, 0, 59_997)];
        expected.sort();
        assert_eq!(ended, expected, "{backend}");

        for (id, total, issued) in [(&up_id, 5, 2), (&gen_id, 60_000, 3)] {
            let (_, v) = view(&store, id, "u1").await;
            assert_eq!(v["status"], "ended");
            assert_eq!(
                v["codes_left"].as_u64().unwrap() + issued,
                total,
                "{backend}: {v}"
            );
        }
        for key in redis.all_keys().await {
            if key.contains(&format!(":coupon:{up_id}:"))
                || key.contains(&format!(":coupon:{gen_id}:"))
            {
                assert!(!key.ends_with(":codes"), "{backend}: {key} not released");
                let ttl: i64 = redis::cmd("PTTL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                assert!(ttl > 0, "{backend}: {key} kept forever");
            }
        }
        let (s, b) = redeem(&store, &up_won[1], "u2", "o-2").await;
        assert_eq!(s, 200, "{backend}: {b}");
    }
}

/// Test: a large generated campaign on the 3-master cluster, through the router: its pools on
/// every master; `HONGBAO_TEST_COUPON_GRABS` grabs (default 600,000) from
/// `HONGBAO_TEST_COUPON_USERS` users (default 250,000; each presses once, then the grabs left
/// go to users pressing again) for `HONGBAO_TEST_COUPON_CODES` codes (default 200,000): every
/// code issued exactly once, no user twice, and `sold_out` answered only once no code was
/// left anywhere (each `sold_out` arrived after the last code was issued), although users'
/// home pools empty at different times and their grabs then borrow from the other pools.
/// The suites' second passes (`make replicas`, `make valkey`) run it at 60,000 codes (still 24
/// pools), 20,000 users and 25,000 grabs: the full size takes about 4 minutes here, and at
/// 150,000 grabs with every write acknowledged by a replica it starved the tests beside it past
/// their 1 s response timeout (sold out and borrowing are covered in those passes by
/// `a_planned_uploaded_campaign_spreads_over_every_master` and the soak).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_drop_on_the_cluster() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let second_pass = std::env::var_os(harness::engine::SERVER_ENV).is_some()
        || std::env::var(harness::REPLICAS_ENV).as_deref() == Ok("1");
    let (codes, users, grabs) = if second_pass {
        (60_000, 20_000, 25_000)
    } else {
        (200_000, 250_000, 600_000)
    };
    let codes = env("HONGBAO_TEST_COUPON_CODES", codes);
    let users = env("HONGBAO_TEST_COUPON_USERS", users);
    let grabs = env("HONGBAO_TEST_COUPON_GRABS", grabs).max(users);
    let redis = TestRedis::start(Backend::Cluster);
    let store = super::coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let body = json!({
        "title": "big drop", "generate": codes, "ends_at": rfc3339(now + 3_600_000),
        "reference": "big-1",
    });
    let (s, c) = create(&store, &body).await;
    assert_eq!(s, 201, "{c}");
    let id = c["campaign_id"].as_str().unwrap().to_string();
    let per_master: Vec<usize> = redis
        .on_every_node(redis::cmd("KEYS").arg("*:coupon:*").clone())
        .await
        .into_iter()
        .map(|v| match v {
            redis::Value::Array(keys) => keys.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        per_master.iter().all(|&n| n > 0),
        "pools per master {per_master:?}"
    );

    let next = Arc::new(AtomicUsize::new(0));
    let won: Arc<Mutex<Vec<(usize, String, i64)>>> = Arc::default();
    let sold_out_at: Arc<Mutex<Vec<i64>>> = Arc::default();
    let tasks = (0..64).map(|_| {
        let (store, id, next, won, sold_out_at) = (
            store.clone(),
            id.clone(),
            next.clone(),
            won.clone(),
            sold_out_at.clone(),
        );
        tokio::spawn(async move {
            let (mut repeats, mut other) = (0usize, Vec::new());
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= grabs {
                    return (repeats, other);
                }
                let user = i % users;
                let (s, b, _) = grab(&store, &id, &format!("big-{user}")).await;
                match (s, b["error"].as_str()) {
                    (200, None) => {
                        let at = chrono_ms(b["grabbed_at"].as_str().unwrap());
                        won.lock().unwrap().push((
                            user,
                            b["code"].as_str().unwrap().to_string(),
                            at,
                        ));
                    }
                    (409, Some("already_grabbed")) => repeats += 1,
                    (410, Some("sold_out")) => {
                        let local = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .unwrap()
                            .as_millis() as i64;
                        sold_out_at.lock().unwrap().push(local);
                    }
                    _ => other.push(format!("{s} {b}")),
                }
            }
        })
    });
    let mut repeats = 0;
    for r in join_all(tasks).await {
        let (n, other) = r.unwrap();
        assert!(
            other.is_empty(),
            "unexpected answers: {:?}",
            &other[..other.len().min(5)]
        );
        repeats += n;
    }
    let won = std::mem::take(&mut *won.lock().unwrap());
    assert_eq!(won.len(), codes.min(users), "codes issued");
    let distinct_codes: HashSet<&String> = won.iter().map(|(_, c, _)| c).collect();
    assert_eq!(distinct_codes.len(), won.len(), "a code issued twice");
    let distinct_users: HashSet<usize> = won.iter().map(|(u, _, _)| *u).collect();
    assert_eq!(distinct_users.len(), won.len(), "a user won twice");
    let last_issue = won.iter().map(|(_, _, at)| *at).max().unwrap();
    let sold_out_at = std::mem::take(&mut *sold_out_at.lock().unwrap());
    if codes < users {
        assert!(!sold_out_at.is_empty(), "nobody was told sold_out");
    }
    let early = sold_out_at.iter().filter(|&&t| t < last_issue).count();
    assert_eq!(
        early, 0,
        "sold_out answered before the last code was issued"
    );
    assert_eq!(won.len() + repeats + sold_out_at.len(), grabs);
    let (_, v) = view(&store, &id, "big-0").await;
    assert_eq!(
        (v["codes_total"].as_u64(), v["codes_left"].as_u64()),
        (Some(codes as u64), Some(codes.saturating_sub(users) as u64)),
        "{v}"
    );
}

/// Unix ms of an RFC 3339 time.
fn chrono_ms(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_millis()
}

/// Test: an uploaded campaign created with `codes_planned` above 50,000 is spread over 24
/// pools on every master of the 3-master cluster, although its creation brings 10 codes: the
/// batches added later spread over the pools, and 1,200 users racing for its 1,010 codes get
/// each code once, `sold_out` only once none is left anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_uploaded_campaign_spreads_over_every_master() {
    let redis = TestRedis::start(Backend::Cluster);
    let store = super::coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let first: Vec<String> = (0..10).map(|i| format!("PLAN-{i:04}")).collect();
    let mut body = uploaded(now, &first, 600_000, "planned-1");
    body["codes_planned"] = json!(200_000);
    body["starts_at"] = json!(rfc3339(now + 3_000));
    let (s, c) = create(&store, &body).await;
    assert_eq!(s, 201, "{c}");
    let id = c["campaign_id"].as_str().unwrap().to_string();
    let per_master: Vec<usize> = redis
        .on_every_node(redis::cmd("KEYS").arg(format!("*:coupon:{id}:*")).clone())
        .await
        .into_iter()
        .map(|v| match v {
            redis::Value::Array(keys) => keys.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        per_master.iter().all(|&n| n >= 8),
        "pool keys per master {per_master:?}"
    );
    let batch: Vec<String> = (10..1_010).map(|i| format!("PLAN-{i:04}")).collect();
    let (s, b) = add_codes(&store, &id, &batch, "batch-1").await;
    assert_eq!((s, &b["codes_total"]), (201, &json!(1_010)), "{b}");
    common::sleep_until_redis_ms(&store, now + 3_000).await;
    let tasks = (0..1_200).map(|u| {
        let (store, id) = (store.clone(), id.clone());
        tokio::spawn(async move { grab(&store, &id, &format!("p-{u}")).await })
    });
    let mut codes = HashSet::new();
    let mut sold_out = 0;
    for r in join_all(tasks).await {
        let (s, b, _) = r.unwrap();
        match s {
            200 => assert!(codes.insert(b["code"].as_str().unwrap().to_string())),
            410 => sold_out += 1,
            _ => panic!("{s} {b}"),
        }
    }
    assert_eq!((codes.len(), sold_out), (1_010, 190));
    let (_, v) = view(&store, &id, "p-0").await;
    assert_eq!(
        (&v["codes_left"], &v["status"]),
        (&json!(0), &json!("sold_out"))
    );
}
