//! Merchant budgets (`POST /merchants/{merchant_id}/deposits` and `/withdrawals`, `GET
//! /merchants/{merchant_id}`; `lua/deposit.lua`, `lua/withdraw.lua`) through
//! the merchant function's router, on standalone and on the 3-master cluster: money moves once
//! per reference however many calls race, the books close after every step, every refusal
//! writes nothing, no JWT caller moves a merchant's money, and the movements reach the journal
//! as the merchant's without touching a wallet of the same id.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{self, call, event, with_body, without_auth, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::lambda::ledger_export::EventDetail;
use hongbao::merchants::rules::Books;
use hongbao::store::journal;
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::wallet;
use hongbao::Store;

/// The merchant of the fixtures (`events/merchant-*.json`).
const SHOP: &str = "shop-1042";

/// A fixture (`merchant-deposit`, `merchant-withdrawal`, `merchant-get`) for `merchant`, with
/// `body` when given.
fn merchant_event(fixture: &str, merchant: &str, body: Option<Value>) -> Value {
    let mut v = event(fixture);
    let path = v["rawPath"].as_str().unwrap().replace(SHOP, merchant);
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["merchant_id"] = json!(merchant);
    match body {
        Some(b) => with_body(v, &b.to_string()),
        None => v,
    }
}

/// Sends a deposit or a withdrawal (`fixture`) of `cents` under `reference`; (status, body).
async fn move_money(
    store: &Arc<Store>,
    fixture: &str,
    merchant: &str,
    cents: i64,
    reference: &str,
) -> (u16, Value) {
    let body = json!({"amount_cents": cents, "reference": reference});
    let (s, b, _) = call(
        store,
        Function::Merchant,
        &merchant_event(fixture, merchant, Some(body)),
    )
    .await;
    (s, b)
}

/// The merchant's books as its hash holds them.
async fn books(store: &Store, merchant: &str) -> Books {
    let mk = Keys::new(&store.config().key_prefix).merchant(merchant);
    let mut conn = store.conn().await.unwrap();
    let fields: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(&mk.merchant)
        .query_async(&mut conn)
        .await
        .unwrap();
    Books::from_fields(&fields).unwrap()
}

/// Every key's DUMP but the replication fences (`REDIS_WAIT_REPLICAS`: replication, not a
/// write of the call).
/// Nor the refusals' call answers (with a TTL: [`common::snapshot_but_call_answers`]).
async fn snapshot(redis: &TestRedis) -> Vec<(String, Option<Vec<u8>>)> {
    let mut keys = common::snapshot_but_call_answers(redis).await;
    keys.retain(|(k, _)| !k.ends_with(":fence"));
    keys
}

/// Test: 32 concurrent deposits under one reference credit the budget once; 64 concurrent
/// withdrawals of 300 cents with distinct references against the 10,000 cents pay exactly 33
/// (the rest 402 with the balance), and every one sent again pays nothing more. The books
/// close after each round, and the ledger holds one entry per movement.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_movements_move_each_cent_once_and_the_books_close() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        // Act: the deposit race.
        let deposits = (0..32).map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                move_money(&store, "merchant-deposit", SHOP, 10_000, "topup-1").await
            })
        });
        let answers: Vec<(u16, Value)> = join_all(deposits)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // Assert
        let applied = answers
            .iter()
            .filter(|(s, b)| *s == 201 && b["repeat"] == json!(false))
            .count();
        assert_eq!(applied, 1, "{backend}: {answers:?}");
        assert!(answers
            .iter()
            .all(|(s, b)| *s == 201 && b["balance_cents"] == json!(10_000)));
        let b = books(&store, SHOP).await;
        assert_eq!((b.balance_cents, b.deposited_cents), (10_000, 10_000));
        assert!(b.close(), "{backend}: {b:?}");

        // Act: the withdrawal race, twice.
        for round in ["first", "again"] {
            let calls = (0..64).map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    move_money(
                        &store,
                        "merchant-withdrawal",
                        SHOP,
                        300,
                        &format!("payout-{i}"),
                    )
                    .await
                })
            });
            let answers: Vec<(u16, Value)> = join_all(calls)
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect();
            let paid = answers
                .iter()
                .filter(|(s, b)| *s == 201 && b["repeat"] == json!(false))
                .count();
            let repeats = answers
                .iter()
                .filter(|(s, b)| *s == 201 && b["repeat"] == json!(true))
                .count();
            let refused = answers
                .iter()
                .filter(|(s, b)| {
                    *s == 402
                        && b["error"] == json!("insufficient_funds")
                        && b["balance_cents"].as_i64().unwrap() < 300
                })
                .count();
            let want = if round == "first" {
                (33, 0, 31)
            } else {
                (0, 33, 31)
            };
            assert_eq!((paid, repeats, refused), want, "{backend} {round}");
            let b = books(&store, SHOP).await;
            assert_eq!((b.balance_cents, b.withdrawn_cents), (100, 9_900));
            assert!(b.close(), "{backend} {round}: {b:?}");
        }

        // The look-up shows the same books, and a ledger of 34 movements in pages of 50.
        let (s, view, _) = call(
            &store,
            Function::Merchant,
            &merchant_event("merchant-get", SHOP, None),
        )
        .await;
        assert_eq!(s, 200, "{view}");
        assert_eq!(
            (
                &view["balance_cents"],
                &view["deposited_cents"],
                &view["withdrawn_cents"],
                &view["ledger_entries"],
                &view["next_offset"],
            ),
            (
                &json!(100),
                &json!(10_000),
                &json!(9_900),
                &json!(34),
                &Value::Null
            )
        );
        let kinds: Vec<&str> = view["ledger"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.iter().filter(|k| **k == "withdrawal").count(), 33);
        assert_eq!(kinds.last(), Some(&"deposit"));
    }
}

/// Test: every refusal writes nothing (every key's DUMP before and after): 402 (more than the
/// balance), 409 (a reference again with another amount, each direction), 403 (a principal
/// outside `HONGBAO_MERCHANT_PRINCIPALS`, no IAM signature, a JWT caller), 400 (a bad merchant
/// id, amount, reference or field).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        assert_eq!(
            move_money(&store, "merchant-deposit", SHOP, 1_000, "topup-1")
                .await
                .0,
            201
        );
        assert_eq!(
            move_money(&store, "merchant-withdrawal", SHOP, 100, "payout-1")
                .await
                .0,
            201
        );
        let before = snapshot(&redis).await;
        let body =
            |cents: i64, reference: &str| json!({"amount_cents": cents, "reference": reference});
        let outsider = {
            let mut v = merchant_event("merchant-deposit", SHOP, Some(body(5, "x")));
            v["requestContext"]["authorizer"]["iam"]["userArn"] =
                json!("arn:aws:sts::123456789012:assumed-role/someone-else/x");
            v
        };
        let jwt_caller = {
            let mut v = merchant_event("merchant-deposit", SHOP, Some(body(5, "x")));
            v["requestContext"]["authorizer"] =
                event("wallet-get")["requestContext"]["authorizer"].clone();
            v
        };
        let cases: Vec<(&str, Value, u16, &str)> = vec![
            (
                "over the balance",
                merchant_event("merchant-withdrawal", SHOP, Some(body(901, "payout-2"))),
                402,
                "insufficient_funds",
            ),
            (
                "a deposit's reference with another amount",
                merchant_event("merchant-deposit", SHOP, Some(body(999, "topup-1"))),
                409,
                "idempotency_key_reused",
            ),
            (
                "a withdrawal's reference with another amount",
                merchant_event("merchant-withdrawal", SHOP, Some(body(99, "payout-1"))),
                409,
                "idempotency_key_reused",
            ),
            ("a principal outside", outsider, 403, "forbidden"),
            (
                "no IAM signature",
                without_auth(merchant_event("merchant-deposit", SHOP, Some(body(5, "x")))),
                403,
                "forbidden",
            ),
            ("a JWT caller", jwt_caller, 403, "forbidden"),
            (
                "a bad merchant id",
                merchant_event("merchant-deposit", "shop%20x", Some(body(5, "x"))),
                400,
                "invalid_request",
            ),
            (
                "a zero amount",
                merchant_event("merchant-deposit", SHOP, Some(body(0, "x"))),
                400,
                "invalid_request",
            ),
            (
                "over 10^11 cents",
                merchant_event("merchant-deposit", SHOP, Some(body(100_000_000_001, "x"))),
                400,
                "invalid_request",
            ),
            (
                "a reference with a space",
                merchant_event("merchant-withdrawal", SHOP, Some(body(5, "a b"))),
                400,
                "invalid_request",
            ),
            (
                "an unknown field",
                merchant_event(
                    "merchant-deposit",
                    SHOP,
                    Some(json!({"amount_cents": 5, "reference": "x", "user_id": "alice"})),
                ),
                400,
                "invalid_request",
            ),
        ];

        for (what, ev, status, error) in cases {
            // Act
            let (s, b, _) = call(&store, Function::Merchant, &ev).await;

            // Assert
            assert_eq!(
                (s, b["error"].as_str()),
                (status, Some(error)),
                "{backend} {what}: {b}"
            );
            assert_eq!(
                snapshot(&redis).await,
                before,
                "{backend} {what}: a key changed"
            );
        }
        let b = books(&store, SHOP).await;
        assert_eq!((b.balance_cents, b.close()), (900, true));
    }
}

/// Test: a merchant's movements are journaled as the merchant's (`merchant_deposit`,
/// `merchant_withdrawal`, published with `merchant_id` and no `user_id`), and a wallet whose
/// owner has the merchant's id — the same hash tag, the same journal — still reconciles and
/// keeps its own balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn movements_are_journaled_as_the_merchants_beside_a_wallet_of_the_same_id() {
    for backend in Backend::all() {
        // Arrange: a user named as the merchant, with money of their own.
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, SHOP, 700).await;

        // Act
        move_money(&store, "merchant-deposit", SHOP, 5_000, "topup-1").await;
        move_money(&store, "merchant-withdrawal", SHOP, 1_200, "payout-1").await;

        // Assert: the journal of the shared tag.
        let key = Keys::new(&store.config().key_prefix).merchant(SHOP).journal;
        let entries = journal::read(&store, &key, 100).await.unwrap();
        let merchant: Vec<(Kind, i64, i64)> = entries
            .iter()
            .filter(|e| e.kind.is_merchant())
            .map(|e| (e.kind, e.amount_cents, e.balance_cents))
            .collect();
        assert_eq!(
            merchant,
            [
                (Kind::MerchantDeposit, 5_000, 5_000),
                (Kind::MerchantWithdrawal, -1_200, 3_800)
            ],
            "{backend}"
        );
        let detail = serde_json::to_value(EventDetail::from(
            entries.iter().find(|e| e.kind.is_merchant()).unwrap(),
        ))
        .unwrap();
        assert_eq!(
            (
                &detail["merchant_id"],
                detail.get("user_id"),
                &detail["kind"]
            ),
            (&json!(SHOP), None, &json!("merchant_deposit"))
        );
        assert_eq!(wallet::balance(&store, SHOP).await.unwrap(), 700);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (summary, unreconciled) = reconcile::run_until(&store, far, 1_000).await.unwrap();
        assert!(summary.checked >= 1, "{backend}: {summary:?}");
        assert!(unreconciled.is_empty(), "{backend}: {unreconciled:?}");
    }
}
