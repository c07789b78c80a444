//! One packet per order however many creates race, seed 000's test (100 grabbers, 5
//! shares), and every refusal of `POST /merchant-packets` writing nothing.

use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{self, event, with_body, Function};
use harness::{Backend, TestRedis};
use hongbao::wallet;
use hongbao::Store;

use super::*;

/// [`SHOP`] funded with 1,000.00 pays the packet of `order-1` (20.00 in 5 shares, shared by
/// carol); its id.
async fn order_one(store: &Arc<Store>) -> String {
    fund_merchant(store, SHOP, 100_000).await;
    let (s, b) = create(store, &order("order-1", 2_000, 5)).await;
    assert_eq!(s, 201, "{b}");
    b["packet_id"].as_str().unwrap().to_string()
}

/// 100 grabbers `g000` to `g099` at once on `packet_id`: (user, status, answer) each.
async fn hundred_grabbers(store: &Arc<Store>, packet_id: &str) -> Vec<(String, u16, Value)> {
    let grabs = (0..100).map(|i| {
        let (store, u, id) = (store.clone(), format!("g{i:03}"), packet_id.to_string());
        tokio::spawn(async move {
            let (s, b) = as_user(&store, Function::Grab, "grab-grab", &id, &u).await;
            (u, s, b)
        })
    });
    join_all(grabs)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// The grabbers that won a share, with its cents.
fn winners(grabbed: &[(String, u16, Value)]) -> Vec<(String, i64)> {
    grabbed
        .iter()
        .filter(|(_, s, _)| *s == 200)
        .map(|(u, _, b)| (u.clone(), b["amount_cents"].as_i64().unwrap()))
        .collect()
}

/// Test: seed 000's scenario, one packet per order: 100 concurrent creates of one order make
/// one packet, debited once (one answer `repeat: false`, 99 `repeat: true`, all 201 with the
/// same packet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_creates_of_one_order_make_one_packet_debited_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 100_000).await;

        let creates = (0..100).map(|_| {
            let store = store.clone();
            tokio::spawn(async move { create(&store, &order("order-1", 2_000, 5)).await })
        });
        let created: Vec<(u16, Value)> = join_all(creates)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        assert!(created.iter().all(|(s, _)| *s == 201), "{backend}");
        let first = created
            .iter()
            .filter(|(_, b)| b["repeat"] == json!(false))
            .count();
        assert_eq!(first, 1, "{backend}");
        let id = &created[0].1["packet_id"];
        assert!(
            created.iter().all(|(_, b)| &b["packet_id"] == id),
            "{backend}"
        );
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents),
            (98_000, 2_000),
            "{backend}"
        );
    }
}

/// Test: the packet's view names the merchant, the sharer (its sender) and the payout, never
/// the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_names_the_merchant_the_sharer_and_the_payout() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let id = order_one(&store).await;

    let (s, view) = as_user(&store, Function::Grab, "grab-view", &id, "dave").await;

    let got = (
        s,
        &view["merchant_id"],
        &view["sharer_id"],
        &view["payout"],
        &view["sender_id"],
    );
    assert_eq!(
        got,
        (
            200,
            &json!(SHOP),
            &json!("carol"),
            &json!("wallet"),
            &json!("carol")
        )
    );
    assert!(view.get("order_reference").is_none(), "{view}");
}

/// Test: of 100 grabbers at once for 5 shares exactly 5 win, their shares summing to the
/// total; the others are 410 `sold_out`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_of_a_hundred_grabbers_win() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let id = order_one(&store).await;

        let grabbed = hundred_grabbers(&store, &id).await;

        let won = winners(&grabbed);
        assert_eq!(
            (won.len(), won.iter().map(|(_, c)| c).sum::<i64>()),
            (5, 2_000),
            "{backend}"
        );
        let lost = grabbed.iter().filter(|(_, s, _)| *s != 200);
        assert!(lost
            .clone()
            .all(|(_, s, b)| *s == 410 && b["error"] == json!("sold_out")));
    }
}

/// Test: each winner's claim, sent twice at once, pays their wallet once and moves the share
/// from the budget's `reserved` to `paid_cash`; every cent is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winners_claim_sent_twice_at_once_pays_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let id = order_one(&store).await;
        let won = winners(&hundred_grabbers(&store, &id).await);

        let claims = won
            .iter()
            .flat_map(|(u, _)| [u.clone(), u.clone()])
            .map(|u| {
                let (store, id) = (store.clone(), id.clone());
                tokio::spawn(async move {
                    as_user(&store, Function::Claim, "claim-claim", &id, &u).await
                })
            });
        let claimed: Vec<(u16, Value)> = join_all(claims)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        assert!(
            claimed.iter().all(|(s, _)| *s == 200),
            "{backend}: {claimed:?}"
        );
        for (u, cents) in &won {
            assert_eq!(
                wallet::balance(&store, u).await.unwrap(),
                *cents,
                "{backend} {u}"
            );
        }
        let b = books(&store, SHOP).await;
        let got = (b.balance_cents, b.reserved_cents, b.paid_cash_cents);
        assert_eq!(got, (98_000, 0, 2_000), "{backend}");
        let users: Vec<String> = (0..100).map(|i| format!("g{i:03}")).collect();
        assert_books(&store, &backend.to_string(), &users, &[id], 100_000).await;
    }
}

/// Test: every refusal of `POST /merchant-packets` writes nothing (DUMP of every key before
/// and after): 402 a total above the budget (with `balance_cents`), 409 another body under an
/// order that has its packet (with `packet_id`), 403 a principal outside
/// `HONGBAO_MERCHANT_PRINCIPALS`, no IAM signature, a JWT caller; 400 a bad merchant id,
/// order reference, sharer, total, payout or field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 5_000).await;
        let (s, first) = create(&store, &order("order-1", 2_000, 5)).await;
        assert_eq!(s, 201);
        let ev = |body: Value| with_body(event("merchant-create-packet"), &body.to_string());
        let with = |field: &str, value: Value| {
            let mut b = order("order-2", 1_000, 5);
            b[field] = value;
            ev(b)
        };
        let outsider = {
            let mut v = ev(order("order-2", 1_000, 5));
            v["requestContext"]["authorizer"]["iam"]["userArn"] =
                json!("arn:aws:sts::123456789012:assumed-role/someone-else/x");
            v
        };
        let jwt_caller = {
            let mut v = ev(order("order-2", 1_000, 5));
            v["requestContext"]["authorizer"] =
                event("wallet-get")["requestContext"]["authorizer"].clone();
            v
        };
        let cases = vec![
            common::Refusal::new(
                "over the budget",
                Function::Merchant,
                ev(order("order-2", 3_001, 5)),
                402,
                "insufficient_funds",
            ),
            common::Refusal::new(
                "another body under the order",
                Function::Merchant,
                ev(order("order-1", 2_000, 4)),
                409,
                "order_reference_reused",
            ),
            common::Refusal::new(
                "a principal outside",
                Function::Merchant,
                outsider,
                403,
                "forbidden",
            ),
            common::Refusal::new(
                "no IAM signature",
                Function::Merchant,
                common::without_auth(ev(order("order-2", 1_000, 5))),
                403,
                "forbidden",
            ),
            common::Refusal::new(
                "a JWT caller",
                Function::Merchant,
                jwt_caller,
                403,
                "forbidden",
            ),
            common::Refusal::invalid(
                "a bad merchant id",
                Function::Merchant,
                with("merchant_id", json!("a b")),
            ),
            common::Refusal::invalid(
                "an order reference with a space",
                Function::Merchant,
                with("order_reference", json!("order 2")),
            ),
            common::Refusal::invalid(
                "no sharer",
                Function::Merchant,
                with("sharer_id", json!("")),
            ),
            common::Refusal::invalid(
                "a share below a cent",
                Function::Merchant,
                with("total_cents", json!(4)),
            ),
            common::Refusal::invalid(
                "an unknown payout",
                Function::Merchant,
                with("payout", json!("cash")),
            ),
            common::Refusal::invalid(
                "an unknown field",
                Function::Merchant,
                with("recipients", json!(["x"])),
            ),
        ];

        // Act + Assert: a refused create leaves the reclaim index entry it wrote before the
        // script ran, brought forward for reclaim-cron to drop (`store::packets::create`).
        common::assert_refused(&store, &redis, &backend.to_string(), cases, |k| {
            !k.ends_with(":fence") && !k.ends_with("{reclaim}:due")
        })
        .await;
        let (s, b) = create(&store, &order("order-1", 2_000, 4)).await;
        assert_eq!(b["packet_id"], first["packet_id"], "{backend}: {s} {b}");
        assert_eq!(books(&store, SHOP).await.balance_cents, 3_000);
    }
}
