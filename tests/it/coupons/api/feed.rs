//! The caller's coupons, a page at a time, and the feed; a merchant's campaigns, a page at a
//! time.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::Store;
use serde_json::{json, Value};

use super::{create, grab, redeem, uploaded};
use crate::common::{call, event, with_sub, without_auth, Function};
use crate::coupons::{coupon_store, dump_all, redis_ms};

/// `GET /coupons` as `user` with `query`.
async fn list(store: &Arc<Store>, user: &str, query: &str) -> (u16, Value) {
    let mut v = with_sub(event("coupon-list"), user);
    v["rawQueryString"] = json!(query);
    v.as_object_mut().unwrap().remove("queryStringParameters");
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// What [`alice_and_bob_grab`] arranged.
struct Grabs {
    /// The generated campaign and the uploaded one.
    gen_id: String,
    up_id: String,
    /// alice's codes in the order she grabbed them: generated, generated, uploaded (redeemed
    /// with `order-9`), generated.
    won: Vec<String>,
    /// bob's code of the uploaded campaign.
    bobs: String,
}

impl Grabs {
    /// alice's codes, newest first.
    fn newest_first(&self) -> Vec<&str> {
        self.won.iter().rev().map(String::as_str).collect()
    }
}

/// A generated campaign of 5 codes (3 a user) and an uploaded one of 2: alice grabs 3
/// generated codes and an uploaded one (2 ms apart), bob the other uploaded one, and alice
/// redeems her uploaded code with `order-9`.
async fn alice_and_bob_grab(store: &Arc<Store>) -> Grabs {
    let now = redis_ms(store).await;
    let generated = json!({
        "title": "generated drop", "generate": 5, "per_user": 3,
        "ends_at": rfc3339(now + 600_000), "reference": "gen-1",
    });
    let (_, gen) = create(store, &generated).await;
    let gen_id = gen["campaign_id"].as_str().unwrap().to_string();
    let codes = ["UP-1".into(), "UP-2".into()];
    let (_, up) = create(store, &uploaded(now, &codes, 600_000, "up-1")).await;
    let up_id = up["campaign_id"].as_str().unwrap().to_string();
    let mut won = Vec::new();
    for id in [&gen_id, &gen_id, &up_id, &gen_id] {
        let (s, b, _) = grab(store, id, "alice").await;
        assert_eq!(s, 200, "{b}");
        won.push(b["code"].as_str().unwrap().to_string());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let (s, b, _) = grab(store, &up_id, "bob").await;
    assert_eq!(s, 200, "{b}");
    let (s, r) = redeem(store, &won[2], "alice", "order-9").await;
    assert_eq!(s, 200, "{r}");
    Grabs {
        gen_id,
        up_id,
        won,
        bobs: b["code"].as_str().unwrap().to_string(),
    }
}

/// Every coupon of `user`'s list, following its cursors `limit` at a time.
async fn every_page(store: &Arc<Store>, user: &str, limit: u32) -> Vec<Value> {
    let (mut seen, mut query) = (Vec::new(), format!("limit={limit}"));
    loop {
        let (s, page) = list(store, user, &query).await;
        assert_eq!(s, 200, "{page}");
        seen.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => query = format!("limit={limit}&cursor={}", urlencode(c)),
            None => return seen,
        }
    }
}

/// The codes of a list's items.
fn codes(items: &[Value]) -> Vec<&str> {
    items.iter().map(|i| i["code"].as_str().unwrap()).collect()
}

/// ledger-export's run over the store's journals into a fresh bus of `moto`: the feed.
async fn export(
    store: &Arc<Store>,
    moto: &harness::moto::MotoServer,
    name: &str,
) -> harness::moto::LedgerFeed {
    use hongbao::lambda::ledger_export;
    use hongbao::lambda::ledger_export::eventbridge::EventBridgeSink;
    use hongbao::store::journal::JournalIndex;

    let feed = harness::moto::LedgerFeed::create(moto, name).await;
    let client = aws_sdk_eventbridge::Client::new(&moto.sdk_config());
    let sink = EventBridgeSink::new(client, feed.bus_name());
    let run = ledger_export::run_until(store, &JournalIndex::new("hb"), &sink, None)
        .await
        .unwrap();
    assert_eq!((run.exported, run.failed), (6, 0), "{run:?}");
    feed
}

/// Test: the caller's coupons come newest first, 3 a page, a cursor never repeating or
/// skipping one, generated codes shown as codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_coupons_come_newest_first_a_page_at_a_time() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let grabs = alice_and_bob_grab(&store).await;

        let seen = every_page(&store, "alice", 3).await;

        assert_eq!(codes(&seen), grabs.newest_first(), "{backend}");
        assert!(seen.iter().all(|i| i["state"] != "expired"), "{backend}");
    }
}

/// Test: the redeemed coupon is listed `redeemed` with its campaign's title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeemed_coupon_is_listed_redeemed() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let grabs = alice_and_bob_grab(&store).await;

    let seen = every_page(&store, "alice", 100).await;

    let redeemed: Vec<&Value> = seen.iter().filter(|i| i["state"] == "redeemed").collect();
    assert_eq!(redeemed.len(), 1);
    assert_eq!(
        (&redeemed[0]["code"], &redeemed[0]["title"]),
        (&json!(grabs.won[2]), &json!("20 off 100"))
    );
}

/// Test: a page size outside 1..=100 is refused 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_size_of_zero_is_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});

    let (s, e) = list(&store, "alice", "limit=0").await;

    assert_eq!(
        (s, e["error"].as_str()),
        (400, Some("invalid_request")),
        "{e}"
    );
}

/// Test: a list lost between the grab and its write (a function stopped; the key deleted
/// here) is whole again once ledger-export has published the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_puts_a_lost_list_back() {
    let moto = harness::moto::MotoServer::start();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |c| c.ledger_export.lock_ttl_ms = 30_000);
        let grabs = alice_and_bob_grab(&store).await;
        let mut conn = store.conn().await.unwrap();
        let key = hongbao::coupons::keys::user_coupons("hb", "alice");
        let _: i64 = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(list(&store, "alice", "").await.1["items"], json!([]));

        export(&store, &moto, &format!("hongbao-lost-{backend}")).await;

        let back = every_page(&store, "alice", 100).await;
        assert_eq!(
            codes(&back),
            grabs.newest_first(),
            "{backend}: the list after the feed"
        );
    }
}

/// Test: ledger-export publishes one `CouponIssued` per code issued (the code, not a
/// generated index; 0 cents) and one `CouponRedeemed` naming the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_publishes_every_issue_and_the_redemption() {
    let moto = harness::moto::MotoServer::start();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |c| c.ledger_export.lock_ttl_ms = 30_000);
        let g = alice_and_bob_grab(&store).await;

        let events = export(&store, &moto, &format!("hongbao-coupons-{backend}"))
            .await
            .drain()
            .await;

        let detail = |kind: &str, fields: &[&str]| -> Vec<Vec<String>> {
            let mut out: Vec<Vec<String>> = events
                .iter()
                .filter(|e| e["detail-type"] == kind && e["detail"]["amount_cents"] == 0)
                .map(|e| {
                    fields
                        .iter()
                        .map(|f| e["detail"][*f].as_str().unwrap().to_string())
                        .collect()
                })
                .collect();
            out.sort();
            out
        };
        let ids = [&g.gen_id, &g.gen_id, &g.up_id, &g.gen_id];
        let mut issued: Vec<Vec<String>> = g
            .won
            .iter()
            .zip(ids)
            .map(|(code, id)| vec!["alice".into(), id.to_string(), code.clone()])
            .collect();
        issued.push(vec!["bob".into(), g.up_id.clone(), g.bobs.clone()]);
        issued.sort();
        assert_eq!(events.len(), 6, "{backend}: {events:?}");
        assert_eq!(
            detail("CouponIssued", &["user_id", "campaign_id", "code"]),
            issued,
            "{backend}"
        );
        let redeemed = vec![vec![g.won[2].clone(), "order-9".to_string()]];
        assert_eq!(
            detail("CouponRedeemed", &["code", "order_reference"]),
            redeemed,
            "{backend}"
        );
    }
}

/// `text` percent-encoded for a query string.
fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// `GET /campaigns?<query>`, signed by the fixture's coupon principal, or by `arn` when given.
async fn campaigns(store: &Arc<Store>, query: &str, arn: Option<&str>) -> (u16, Value) {
    let mut v = event("coupon-create-campaign");
    v["routeKey"] = json!("GET /campaigns");
    v["requestContext"]["routeKey"] = json!("GET /campaigns");
    v["requestContext"]["http"]["method"] = json!("GET");
    v["rawQueryString"] = json!(query);
    v.as_object_mut().unwrap().remove("body");
    if let Some(arn) = arn {
        v["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    }
    let (s, b, _) = call(store, Function::Coupon, &v).await;
    (s, b)
}

/// The campaign ids of a `GET /campaigns` page.
fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|i| i["campaign_id"].as_str().unwrap().to_string())
        .collect()
}

/// The body of a campaign of one generated code under `reference`, of `merchant` when given.
fn merchant_body(now: i64, merchant: Option<&str>, reference: &str) -> Value {
    let mut body = json!({
        "title": format!("drop {reference}"), "generate": 1,
        "ends_at": rfc3339(now + 600_000), "reference": reference,
    });
    if let Some(m) = merchant {
        body["merchant_id"] = json!(m);
    }
    body
}

/// `POST /campaigns` of [`merchant_body`], answered 201: the campaign's id.
async fn created(store: &Arc<Store>, now: i64, merchant: Option<&str>, reference: &str) -> String {
    let (s, b) = create(store, &merchant_body(now, merchant, reference)).await;
    assert_eq!(s, 201, "{b}");
    b["campaign_id"].as_str().unwrap().to_string()
}

/// Test: a merchant's campaigns, newest first, two a page over three pages, with a campaign
/// created between the reads: no campaign repeated or skipped, the new one on none of the
/// later pages (it is above every cursor) and first when the list is read again; each item
/// the campaign as `GET /campaigns/{id}` shows it, without the caller's coupons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchants_campaigns_page_newest_first_while_campaigns_are_created() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let mut made = Vec::new();
        for i in 1..=5 {
            made.push(created(&store, now, Some("shop-1"), &format!("drop-{i}")).await);
        }

        let (s1, first) = campaigns(&store, "merchant_id=shop-1&limit=2", None).await;
        let newer = created(&store, now, Some("shop-1"), "drop-6").await;
        let cursor = first["next_cursor"].as_str().unwrap().to_string();
        let (s2, second) = campaigns(
            &store,
            &format!("merchant_id=shop-1&limit=2&cursor={cursor}"),
            None,
        )
        .await;
        let cursor = second["next_cursor"].as_str().unwrap().to_string();
        let (s3, third) = campaigns(
            &store,
            &format!("merchant_id=shop-1&limit=2&cursor={cursor}"),
            None,
        )
        .await;
        let (_, again) = campaigns(&store, "merchant_id=shop-1&limit=1", None).await;

        assert_eq!((s1, s2, s3), (200, 200, 200), "{backend}");
        let paged: Vec<String> = [&first, &second, &third]
            .into_iter()
            .flat_map(ids)
            .collect();
        let newest_first: Vec<String> = made.iter().rev().cloned().collect();
        assert_eq!(paged, newest_first, "{backend}");
        assert_eq!(third["next_cursor"], Value::Null, "{backend}: {third}");
        assert_eq!(ids(&again), [newer], "{backend}");
        let item = &first["items"][0];
        assert_eq!(
            (&item["title"], &item["status"], &item["codes_total"]),
            (&json!("drop drop-5"), &json!("open"), &json!(1)),
            "{backend}: {item}"
        );
        assert!(item.get("coupons").is_none(), "{backend}: {item}");
    }
}

/// Test: a merchant's list holds its own campaigns only, not another merchant's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_merchants_campaigns_are_not_listed() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let mine = created(&store, now, Some("shop-a"), "a-1").await;
        let theirs = created(&store, now, Some("shop-b"), "b-1").await;

        let (sa, a) = campaigns(&store, "merchant_id=shop-a", None).await;
        let (sb, b) = campaigns(&store, "merchant_id=shop-b", None).await;

        assert_eq!((sa, ids(&a)), (200, vec![mine]), "{backend}: {a}");
        assert_eq!((sb, ids(&b)), (200, vec![theirs]), "{backend}: {b}");
    }
}

/// Test: `POST /campaigns` sent again with the same body and reference (201, the same
/// campaign: a replay) lists the campaign once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_creation_is_listed_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let id = created(&store, now, Some("shop-1"), "drop-1").await;

        let (s, again) = create(&store, &merchant_body(now, Some("shop-1"), "drop-1")).await;
        let (_, page) = campaigns(&store, "merchant_id=shop-1", None).await;

        assert_eq!(ids(&page), std::slice::from_ref(&id), "{backend}: {page}");
        assert_eq!((s, &again["campaign_id"]), (201, &json!(id)), "{backend}");
    }
}

/// Test: the same reference with another `merchant_id` is another creation: 409
/// `reference_reused`, and the other merchant's list stays empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_under_another_merchant_is_reused() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        created(&store, now, Some("shop-1"), "drop-1").await;

        let (s, b) = create(&store, &merchant_body(now, Some("shop-2"), "drop-1")).await;
        let (_, page) = campaigns(&store, "merchant_id=shop-2", None).await;

        assert_eq!(
            (s, b["error"].as_str()),
            (409, Some("reference_reused")),
            "{b}"
        );
        assert_eq!(ids(&page), Vec::<String>::new(), "{backend}: {page}");
    }
}

/// Test: a campaign created without `merchant_id` is in no merchant's list: no list key is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_without_a_merchant_is_in_no_list() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;

        created(&store, now, None, "drop-1").await;

        let lists: Vec<String> = dump_all(&redis, &store)
            .await
            .into_keys()
            .filter(|k| k.contains(":merchant:"))
            .collect();
        assert_eq!(lists, Vec::<String>::new(), "{backend}");
    }
}

/// Test: a listed campaign whose creation has not written its pools (recorded by
/// `coupon_create.lua`, the run stopped there) is left out: its page holds fewer than
/// `limit` items, here none, and still gives a cursor to the next page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_without_its_pools_is_left_out_of_its_page() {
    use hongbao::coupons::rules::generated::new_campaign_secret;
    use hongbao::coupons::rules::{CodeSource, NewCampaign};
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let older = created(&store, now, Some("shop-1"), "drop-1").await;
        let stopped = NewCampaign {
            merchant_id: Some("shop-1".into()),
            ..NewCampaign::new("stopped", CodeSource::Generated(1), now + 600_000, "drop-2")
        };
        let mut conn = store.conn().await.unwrap();
        hongbao::coupons::create::store::record(&mut conn, "hb", &stopped, &new_campaign_secret())
            .await
            .unwrap();

        let (s1, first) = campaigns(&store, "merchant_id=shop-1&limit=1", None).await;
        let cursor = first["next_cursor"].as_str().unwrap_or_default();
        let (s2, second) = campaigns(
            &store,
            &format!("merchant_id=shop-1&limit=1&cursor={cursor}"),
            None,
        )
        .await;

        assert_eq!((s1, ids(&first)), (200, vec![]), "{backend}: {first}");
        assert_eq!(
            (s2, ids(&second)),
            (200, vec![older]),
            "{backend}: {second}"
        );
        assert_eq!(second["next_cursor"], Value::Null, "{backend}");
    }
}

/// Test: a caller outside `HONGBAO_COUPON_PRINCIPALS`, or unsigned, is 403 `forbidden`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_campaigns_outside_the_principals_is_forbidden() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let stranger = "arn:aws:sts::123456789012:assumed-role/someone-else/x";

    let (s, b) = campaigns(&store, "merchant_id=shop-1", Some(stranger)).await;
    let mut unsigned = event("coupon-create-campaign");
    unsigned["routeKey"] = json!("GET /campaigns");
    unsigned["requestContext"]["http"]["method"] = json!("GET");
    unsigned["rawQueryString"] = json!("merchant_id=shop-1");
    let (su, bu, _) = call(&store, Function::Coupon, &without_auth(unsigned)).await;

    assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
    assert_eq!((su, bu["error"].as_str()), (403, Some("forbidden")), "{bu}");
}

/// Test: a bad query is 400 `invalid_request`: `merchant_id` missing, empty, with a space
/// or over 64 characters; `limit` 0, 101 or not a number; a cursor no page gave; a
/// parameter unknown or given twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_campaign_queries_are_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let long = format!("merchant_id={}", "m".repeat(65));
    let bad = [
        "",
        "limit=5",
        "merchant_id=",
        "merchant_id=shop%201",
        long.as_str(),
        "merchant_id=shop-1&limit=0",
        "merchant_id=shop-1&limit=101",
        "merchant_id=shop-1&limit=ten",
        "merchant_id=shop-1&cursor=zzzzz",
        "merchant_id=shop-1&cursor=000001",
        "merchant_id=shop-1&page=2",
        "merchant_id=shop-1&merchant_id=shop-1",
    ];

    for query in bad {
        let (s, b) = campaigns(&store, query, None).await;

        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_request")),
            "{query}: {b}"
        );
    }
}
