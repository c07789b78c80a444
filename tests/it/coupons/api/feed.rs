//! The caller's coupons, a page at a time, and the feed.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::Store;
use serde_json::{json, Value};

use super::{create, grab, redeem, uploaded};
use crate::common::{call, event, with_sub, Function};
use crate::coupons::{coupon_store, redis_ms};

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
        let store = coupon_store(&redis, |c| c.ledger_export.lock_ttl_ms = 30_000);
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
