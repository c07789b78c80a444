//! The wallet routes' limits: who may deposit, the balance limit, the ledger page, the
//! deposit cap, and the grab rate limit.

use harness::{Backend, TestRedis};
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{
    self, call, event, snapshot, snapshot_but_call_answers, with_body, with_sub, Function,
};

/// Sets the IAM caller's `userArn`.
fn with_user_arn(mut v: Value, arn: &str) -> Value {
    v["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    v
}

/// The role `HONGBAO_DEPOSIT_PRINCIPALS` allows in the fixtures.
const ALLOWED: &str = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/worker-7";

/// A deposit of `cents` to alice under `reference`, signed by `arn`.
fn deposit_by(arn: &str, cents: i64, reference: &str) -> Value {
    let body = json!({"user_id": "alice", "amount_cents": cents, "reference": reference});
    with_user_arn(with_body(event("wallet-deposit"), &body.to_string()), arn)
}

/// Test: a deposit signed by a role that only looks like an allowed one, another role, an
/// IAM user of the same name or nobody is 403 and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposits_from_outside_the_deposit_principals_are_forbidden() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let before = snapshot(&redis).await;
    let outsiders = [
        "arn:aws:sts::123456789012:assumed-role/hongbao-payments-evil/x",
        "arn:aws:sts::123456789012:assumed-role/other/x",
        "arn:aws:iam::123456789012:user/hongbao-payments",
        "",
    ];

    let mut statuses = Vec::new();
    for arn in outsiders {
        let (s, b, _) = call(&store, Function::Wallet, &deposit_by(arn, 1, "b")).await;
        statuses.push((s, b["error"].as_str().map(str::to_string)));
    }

    assert_eq!(statuses, vec![(403, Some("forbidden".to_string())); 4]);
    assert_eq!(snapshot(&redis).await, before, "a refused deposit wrote");
}

/// Test: a deposit over `HONGBAO_MAX_BALANCE_CENTS` is 409 `balance_limit` and writes nothing
/// but its answer (kept under its call id, with a TTL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposit_over_the_balance_limit_is_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |c| c.wallet.max_balance_cents = 1_000);
    assert_eq!(
        call(&store, Function::Wallet, &deposit_by(ALLOWED, 600, "a"))
            .await
            .0,
        201
    );
    let before = snapshot_but_call_answers(&redis).await;

    let (s, b, _) = call(&store, Function::Wallet, &deposit_by(ALLOWED, 401, "c")).await;

    assert_eq!(
        (s, b["error"].as_str()),
        (409, Some("balance_limit")),
        "{b}"
    );
    assert_eq!(
        snapshot_but_call_answers(&redis).await,
        before,
        "a refused deposit wrote"
    );
}

/// Test: a deposit up to `HONGBAO_MAX_BALANCE_CENTS` exactly is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposit_up_to_the_balance_limit_is_taken() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |c| c.wallet.max_balance_cents = 1_000);
    assert_eq!(
        call(&store, Function::Wallet, &deposit_by(ALLOWED, 600, "a"))
            .await
            .0,
        201
    );

    let (s, b, _) = call(&store, Function::Wallet, &deposit_by(ALLOWED, 400, "c")).await;

    assert_eq!((s, b["balance_cents"].as_i64()), (201, Some(1_000)), "{b}");
}

/// Test: with `HONGBAO_DEPOSIT_PRINCIPALS` unset nobody may deposit: 403, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_deposit_principals_nobody_deposits() {
    let redis = TestRedis::start(Backend::Standalone);
    let closed = common::store(&redis, |c| c.wallet.deposit_principals = Default::default());
    let before = snapshot(&redis).await;

    let (s, _, _) = call(&closed, Function::Wallet, &deposit_by(ALLOWED, 1, "d")).await;

    assert_eq!(s, 403);
    assert_eq!(snapshot(&redis).await, before);
}

/// README promises through the handlers: `GET /wallet` pages the newest 50 entries of a ledger
/// capped at 1,000; one deposit is at most 10^11 cents; a grab storm by one user gets 429 +
/// `Retry-After` on the 11th repeat within the window, and the limit lifts once it passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_page_deposit_cap_and_grab_rate_limit() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    for i in 0..1_005 {
        hongbao::wallet::deposit(&store, "alice", 1, &format!("d{i}"))
            .await
            .unwrap();
    }
    let (s, w, _) = call(
        &store,
        Function::Wallet,
        &with_sub(event("wallet-get"), "alice"),
    )
    .await;
    assert_eq!((s, w["balance_cents"].clone()), (200, json!(1_005)));
    let refs: Vec<&str> = w["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reference"].as_str().unwrap())
        .collect();
    let newest: Vec<String> = (955..1_005).rev().map(|i| format!("d{i}")).collect();
    assert_eq!(refs, newest, "the newest 50, newest first");
    let mut conn = redis.raw_conn().await;
    let kept: i64 = redis::cmd("LLEN")
        .arg(hongbao::store::keys::Keys::new("hb").wallet("alice").ledger)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(kept, 1_000, "the ledger keeps 1,000 entries");

    assert_eq!(deposit(&store, "bob", 100_000_000_001, "big").await.0, 400);
    assert_eq!(deposit(&store, "bob", 100_000_000_000, "big").await.0, 201);

    let body = r#"{"total_cents":1000,"count":2,"mode":"lucky","expires_in_secs":600}"#;
    let (s, p, _) = call(
        &store,
        Function::CreatePacket,
        &with_sub(with_body(event("create-packet-lucky"), body), "alice"),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let id = p["packet_id"].as_str().unwrap().to_string();
    let grab = with_sub(with_packet(event("grab-grab"), &id), "storm");
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..12 {
        let (s, _, retry) = call(&store, Function::Grab, &grab).await;
        statuses.push(s);
        retry_after = retry;
    }
    assert_eq!(statuses[0], 200);
    assert!(statuses[1..11].iter().all(|s| *s == 409), "{statuses:?}");
    assert_eq!(statuses[11], 429, "{statuses:?}");
    let secs: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!(
        (1..=1).contains(&secs),
        "Retry-After {secs} for a 1 s window"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let (s, b, _) = call(&store, Function::Grab, &grab).await;
    assert_eq!(s, 409, "the limit lifts after the window: {b}");
}
