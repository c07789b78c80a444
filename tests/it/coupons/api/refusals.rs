//! Every refusal of the coupon routes writes nothing.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::Store;
use serde_json::{json, Value};

use super::{add_codes, at, create, grab, redeem, uploaded, view};
use crate::common::{call, event, with_body, without_auth, Function};
use crate::coupons::{coupon_store, dump_all, redis_ms};

/// Test: every refusal of the coupon routes writes nothing (every key's type, contents and
/// TTL compared before and after): 400 bodies (both sources, a bad time, `per_user` 11,
/// codes repeated in the request or held by another campaign, an array body), 403 (no
/// signature, a principal outside `HONGBAO_COUPON_PRINCIPALS`), 404 (unknown campaigns), 409
/// (`reference_reused`, `campaign_started`, `codes_generated`, and `already_grabbed` with the
/// visit limit off). Batches join a campaign before its start, once per reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |c| c.coupons.visits.per_window = 0);
        let now = redis_ms(&store).await;
        let ids = three_campaigns(&store, now).await;
        let batch = a_batch_joins_once(&store, &ids).await;
        let (s, _, _) = grab(&store, &ids.open, "alice").await;
        assert_eq!(s, 200);

        let before = dump_all(&redis, &store).await;
        refused_bodies(&store, now).await;
        unsigned_merchant_routes(&store, now, &ids).await;
        refused_batches_views_and_redeems(&store, &ids, &batch).await;
        refused_grabs(&store, &ids).await;
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );
        let (_, v) = view(&store, &ids.scheduled, "alice").await;
        assert_eq!(
            (&v["codes_total"], &v["codes_left"]),
            (&json!(4), &json!(4))
        );
    }
}

/// The campaigns the refusals aim at.
struct Campaigns {
    /// Open now, codes `FIRST-0` to `FIRST-4`, reference `open-1`.
    open: String,
    /// Starting in 5 minutes, code `LATER-0`.
    scheduled: String,
    /// Open now, 10 generated codes.
    generated: String,
}

/// Creates the three [`Campaigns`].
async fn three_campaigns(store: &Arc<Store>, now: i64) -> Campaigns {
    let first: Vec<String> = (0..5).map(|i| format!("FIRST-{i}")).collect();
    let (s, open) = create(store, &uploaded(now, &first, 600_000, "open-1")).await;
    assert_eq!(s, 201, "{open}");
    let mut later = uploaded(now, &["LATER-0".to_string()], 600_000, "later-1");
    later["starts_at"] = json!(rfc3339(now + 300_000));
    let (s, sched) = create(store, &later).await;
    assert_eq!((s, &sched["status"]), (201, &json!("scheduled")), "{sched}");
    let generated = json!({
        "title": "generated", "generate": 10, "ends_at": rfc3339(now + 600_000),
        "reference": "gen-1",
    });
    let (s, gen) = create(store, &generated).await;
    assert_eq!((s, &gen["codes_left"]), (201, &json!(10)), "{gen}");
    let id = |b: &Value| b["campaign_id"].as_str().unwrap().to_string();
    Campaigns {
        open: id(&open),
        scheduled: id(&sched),
        generated: id(&gen),
    }
}

/// A batch joins the scheduled campaign, once (its repeat under `b-1` is a 201 replay);
/// returns the batch's codes.
async fn a_batch_joins_once(store: &Arc<Store>, ids: &Campaigns) -> Vec<String> {
    let batch: Vec<String> = (0..3).map(|i| format!("BATCH-{i}")).collect();
    let (s, b) = add_codes(store, &ids.scheduled, &batch, "b-1").await;
    assert_eq!(
        (s, &b["codes_total"], &b["repeat"]),
        (201, &json!(4), &json!(false))
    );
    let (s, b) = add_codes(store, &ids.scheduled, &batch, "b-1").await;
    assert_eq!(
        (s, &b["codes_total"], &b["repeat"]),
        (201, &json!(4), &json!(true))
    );
    batch
}

/// Campaign bodies refused: (what, body, status, error code); a `duplicate_codes` answer lists
/// the one duplicate.
async fn refused_bodies(store: &Arc<Store>, now: i64) {
    let bodies: Vec<(&str, Value, u16, &str)> = vec![
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
        ("an array body", json!([1, 2]), 400, "invalid_request"),
    ];
    for (what, body, status, code) in &bodies {
        let (s, b) = create(store, body).await;
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
}

/// Unsigned, or signed by someone else: 403 on every merchant route.
async fn unsigned_merchant_routes(store: &Arc<Store>, now: i64, ids: &Campaigns) {
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
            at("coupon-add-codes", &ids.scheduled),
            &json!({"codes": ["NEW-3"], "reference": "b-2"}).to_string(),
        ),
        with_body(
            event("coupon-redeem"),
            &json!({"code": "FIRST-0", "user_id": "alice", "order_reference": "o"}).to_string(),
        ),
    ];
    for v in merchant_events {
        for v in [without_auth(v.clone()), stranger(v)] {
            let (s, b, _) = call(store, Function::Coupon, &v).await;
            assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        }
    }
}

/// Batches, views and redemptions refused: (status, error code, answer).
async fn refused_batches_views_and_redeems(store: &Arc<Store>, ids: &Campaigns, batch: &[String]) {
    let one = |code: &str| [code.to_string()];
    let (sched, open, gen) = (&ids.scheduled, &ids.open, &ids.generated);
    let refusals: Vec<(u16, &str, (u16, Value))> = vec![
        (
            404,
            "not_found",
            add_codes(store, "ZZZZZ", batch, "b-9").await,
        ),
        (404, "not_found", view(store, "ZZZZZ", "alice").await),
        (
            409,
            "reference_reused",
            add_codes(store, sched, &one("OTHER-1"), "b-1").await,
        ),
        (
            400,
            "duplicate_codes",
            add_codes(store, sched, &one("FIRST-1"), "b-3").await,
        ),
        (
            400,
            "invalid_request",
            add_codes(store, sched, &one("no"), "b-3").await,
        ),
        (
            409,
            "campaign_started",
            add_codes(store, open, &one("NEW-4"), "b-4").await,
        ),
        (
            409,
            "codes_generated",
            add_codes(store, gen, &one("NEW-5"), "b-5").await,
        ),
        (
            400,
            "invalid_request",
            redeem(store, "bad code!", "alice", "o-1").await,
        ),
        (
            400,
            "invalid_request",
            redeem(store, "FIRST-0", "alice", "bad order").await,
        ),
    ];
    for (status, code, (s, b)) in refusals {
        assert_eq!((s, b["error"].as_str()), (status, Some(code)), "{b}");
    }
}

/// Grabs refused: unknown campaigns, and alice's second grab with the visit limit off.
async fn refused_grabs(store: &Arc<Store>, ids: &Campaigns) {
    for (id, user, status, code) in [
        ("ZZZZZ", "alice", 404, "not_found"),
        ("bad id", "alice", 404, "not_found"),
        (ids.open.as_str(), "alice", 409, "already_grabbed"),
    ] {
        let (s, b, _) = grab(store, id, user).await;
        assert_eq!((s, b["error"].as_str()), (status, Some(code)), "{id}: {b}");
    }
}
