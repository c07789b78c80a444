//! The HTTP contract through the fixtures and the production script, and 6- and 7-digit
//! codes.

use std::collections::HashSet;
use std::sync::Arc;

use harness::{Backend, RedisServer, TestRedis};
use hongbao::order_codes::{self, Outcome};
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{self, event, with_body, with_sub};

use super::{call, issued, order_store, redis_now, script_at, set_taken, taken, unix};
use crate::common::{assert_refused, Function, Refusal};

/// Test: the HTTP contract through the event fixtures and the production script (real Redis
/// `TIME`): 201 with the date and codes, 400 for every bad input with nothing taken, 401, 405,
/// 503 `exhausted` with `Retry-After` until the next business day, 503 `unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_contract_and_bad_inputs() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        let (date, yyyymmdd) = todays_date_clear_of_midnight(&redis).await;
        codes_through_the_fixtures(&store, &redis, &date).await;
        let cases = bad_inputs();
        assert_refused(&store, &redis, &backend.to_string(), cases, |_| true).await;
        exhausted_until_midnight(&store, &redis, &date, &yyyymmdd).await;
    }
    redis_down_is_unavailable().await;
}

/// Today's date in Shanghai and its `%Y%m%d`, once Redis `TIME` is clear of midnight there
/// (16:00Z), where the expected date is ambiguous.
async fn todays_date_clear_of_midnight(redis: &TestRedis) -> (chrono::NaiveDate, String) {
    while (redis_now(redis).await + 8 * 3600).rem_euclid(86_400) >= 86_400 - 60 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let local_day = (redis_now(redis).await + 8 * 3600).div_euclid(86_400);
    let date = order_codes::date_of_day(local_day).unwrap();
    let yyyymmdd = date.format("%Y%m%d").to_string();
    (date, yyyymmdd)
}

fn single(body: &str) -> Value {
    with_body(event("next-order-code-single"), body)
}

/// The single and batch fixtures, a count of 7 and an empty body: 201 with `date`'s codes,
/// each once; 109 taken.
async fn codes_through_the_fixtures(
    store: &Arc<Store>,
    redis: &TestRedis,
    date: &chrono::NaiveDate,
) {
    let yymmdd = date.format("%y%m%d").to_string();
    let (s, b, _) = call(store, &event("next-order-code-single")).await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["date"], date.to_string());
    let codes = b["codes"].as_array().unwrap();
    assert_eq!(codes.len(), 1);
    let code = codes[0].as_str().unwrap();
    assert!(
        code.len() == 11 && code.starts_with(&yymmdd) && !code[6..].starts_with('0'),
        "{code}"
    );

    let (s, b, _) = call(store, &event("next-order-code-batch")).await;
    assert_eq!(
        (s, b["date"].clone()),
        (201, json!(date.to_string())),
        "{b}"
    );
    let batch: HashSet<&str> = b["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(batch.len(), 100);
    assert!(!batch.contains(code));
    let (s, b, _) = call(store, &single(r#"{"count": 7}"#)).await;
    assert_eq!((s, b["codes"].as_array().map(Vec::len)), (201, Some(7)));
    let (s, b, _) = call(store, &single("{}")).await;
    assert_eq!((s, b["codes"].as_array().map(Vec::len)), (201, Some(1)));
    let yyyymmdd = date.format("%Y%m%d").to_string();
    assert_eq!(taken(redis, "hb", &yyyymmdd).await, 109);
}

/// Bodies of `POST /order-codes` refused with 400 `invalid_request`.
const INVALID_BODIES: &[(&str, &str)] = &[
    ("count 0", r#"{"count": 0}"#),
    ("count -1", r#"{"count": -1}"#),
    ("count huge", r#"{"count": 18446744073709551616}"#),
    ("count fractional", r#"{"count": 1.5}"#),
    ("count float", r#"{"count": 2.0}"#),
    ("count as string", r#"{"count": "5"}"#),
    ("count null", r#"{"count": null}"#),
    ("unknown field", r#"{"count": 1, "prefix": "99"}"#),
    ("JSON array", "[1]"),
    ("bare number", "5"),
    ("malformed JSON", r#"{"count": "#),
];

/// The bad-inputs table: the bodies above, the bad-count fixture, a missing or bad caller, a
/// wrong method, another function's route.
fn bad_inputs() -> Vec<Refusal> {
    let f = Function::NextOrderCode;
    let mut no_auth = event("next-order-code-single");
    no_auth["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let mut get = event("next-order-code-single");
    get["requestContext"]["http"]["method"] = json!("GET");
    let mut cases = vec![Refusal::invalid(
        "fixture: count 101",
        f,
        event("next-order-code-bad-count"),
    )];
    cases.extend(
        INVALID_BODIES
            .iter()
            .map(|(name, body)| Refusal::invalid(*name, f, single(body))),
    );
    cases.extend([
        Refusal::new("no JWT", f, no_auth, 401, "unauthorized"),
        Refusal::new(
            "bad user id",
            f,
            with_sub(single("{}"), "a\u{202E}b"),
            401,
            "unauthorized",
        ),
        Refusal::new("GET", f, get, 405, "method_not_allowed"),
        Refusal::new(
            "route of another function",
            f,
            event("create-packet-lucky"),
            404,
            "not_found",
        ),
    ]);
    cases
}

/// Exhausted: 5 codes left today; a batch of 6 fails whole (503 with `Retry-After` until
/// midnight in Shanghai, nothing taken), 5 singles succeed, then 503.
async fn exhausted_until_midnight(
    store: &Arc<Store>,
    redis: &TestRedis,
    date: &chrono::NaiveDate,
    yyyymmdd: &str,
) {
    set_taken(redis, "hb", yyyymmdd, 89_995).await;
    let (s, b, retry) = call(store, &single(r#"{"count": 6}"#)).await;
    assert_eq!(
        (s, b["error"].as_str(), b["date"].as_str()),
        (503, Some("exhausted"), Some(date.to_string().as_str())),
        "{b}"
    );
    let retry: i64 = retry.expect("Retry-After").parse().unwrap();
    let until_midnight = 86_400 - (redis_now(redis).await + 8 * 3600).rem_euclid(86_400);
    assert!(
        (retry - until_midnight).abs() <= 2,
        "Retry-After {retry}, midnight in {until_midnight} s"
    );
    assert_eq!(taken(redis, "hb", yyyymmdd).await, 89_995);
    for _ in 0..5 {
        assert_eq!(call(store, &event("next-order-code-single")).await.0, 201);
    }
    let (s, b, retry) = call(store, &event("next-order-code-single")).await;
    assert_eq!((s, b["error"].as_str()), (503, Some("exhausted")), "{b}");
    assert!(retry.is_some());
}

/// Redis down: 503 unavailable with Retry-After: 1, never a code.
async fn redis_down_is_unavailable() {
    let mut server = RedisServer::start();
    let cfg = hongbao::Config {
        redis_url: server.url(),
        connect_timeout: std::time::Duration::from_millis(300),
        response_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    server.stop();
    let store = Arc::new(Store::new(cfg));
    let (s, b, retry) = call(&store, &event("next-order-code-batch")).await;
    assert_eq!(
        (s, b["error"].as_str(), retry.as_deref()),
        (503, Some("unavailable"), Some("1")),
        "{b}"
    );
}

/// 2026-11-21 04:00Z, the instant the digit tests' codes are issued at.
const DIGITS_AT: i64 = unix(2026, 11, 21, 4, 0, 0);

/// A store of `digits`-digit suffixes under its own key prefix `d<digits>`.
fn digits_store(redis: &TestRedis, digits: u32) -> Arc<Store> {
    common::store(redis, |c| {
        c.key_prefix = format!("d{digits}");
        c.order_codes.digits = digits;
    })
}

/// Test: with 6- and 7-digit suffixes (`HONGBAO_ORDER_CODE_DIGITS`) 2,000 codes and the day's
/// last 10 are 12- and 13-digit codes of the day, the suffix's first digit never 0, every code
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_and_seven_digit_codes_are_distinct_codes_of_the_day() {
    let script = script_at(DIGITS_AT, 0);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        for digits in [6u32, 7] {
            let store = digits_store(&redis, digits);
            let mut codes: Vec<String> = Vec::new();
            for _ in 0..20 {
                let out = order_codes::next_codes_with(&store, &script, "t", 100, DIGITS_AT).await;
                codes.extend(issued(out, "2026-11-21"));
            }
            let last = 9 * 10u64.pow(digits - 1) - 10;
            set_taken(&redis, &format!("d{digits}"), "20261121", last).await;

            let out = order_codes::next_codes_with(&store, &script, "t", 10, DIGITS_AT).await;

            codes.extend(issued(out, "2026-11-21"));
            let low = 10u64.pow(digits - 1);
            let shaped = |c: &String| {
                c.len() == 6 + digits as usize
                    && c.starts_with("261121")
                    && c.bytes().all(|b| b.is_ascii_digit())
            };
            assert!(codes.iter().all(shaped), "{backend} {digits}: {codes:?}");
            let suffixes: HashSet<u64> = codes.iter().map(|c| c[6..].parse().unwrap()).collect();
            assert_eq!(suffixes.len(), 2_010, "{backend} {digits}: every code once");
            assert!(suffixes.iter().all(|s| (low..10 * low).contains(s)));
        }
    }
}

/// Test: a day holds exactly 9 × 10^(digits − 1) codes: once the last is handed out the next
/// call is `exhausted` and the count stays at the day's size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_of_six_or_seven_digit_codes_ends_exhausted() {
    let script = script_at(DIGITS_AT, 0);
    let redis = TestRedis::start(Backend::Standalone);
    for digits in [6u32, 7] {
        let store = digits_store(&redis, digits);
        let per_day = 9 * 10u64.pow(digits - 1);
        issued(
            order_codes::next_codes_with(&store, &script, "t", 1, DIGITS_AT).await,
            "2026-11-21",
        );
        set_taken(&redis, &format!("d{digits}"), "20261121", per_day).await;

        let out = order_codes::next_codes_with(&store, &script, "t", 1, DIGITS_AT).await;

        assert!(
            matches!(out, Ok(Outcome::Exhausted { .. })),
            "{digits}: {out:?}"
        );
        assert_eq!(
            taken(&redis, &format!("d{digits}"), "20261121").await,
            per_day
        );
    }
}
