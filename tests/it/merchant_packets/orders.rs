//! One packet per order however many creates race, seed 000's test (100 grabbers, 5
//! shares), and every refusal of `POST /merchant-packets` writing nothing.

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{self, event, with_body, Function};
use harness::{Backend, TestRedis};
use hongbao::wallet;

use super::*;

/// Test: seed 000's own test. 100 concurrent creates for one order make one packet, debited
/// once (one 201, 99 answers 200 `repeat` with the same packet); then 100 concurrent grabbers
/// for its 5 shares: exactly 5 win, each once, their shares sum to the total; each winner's
/// claim, sent twice at once, pays their wallet once and moves the share from the budget's
/// `reserved` to `paid_cash`. The view names the merchant, the sharer and the payout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_packet_per_order_and_five_winners_among_a_hundred_grabbers() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 100_000).await;

        // Act: 100 creates of one order.
        let creates = (0..100).map(|_| {
            let store = store.clone();
            tokio::spawn(async move { create(&store, &order("order-1", 2_000, 5)).await })
        });
        let created: Vec<(u16, Value)> = join_all(creates)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // Assert
        assert!(created.iter().all(|(s, _)| *s == 201), "{backend}");
        assert_eq!(
            created
                .iter()
                .filter(|(_, b)| b["repeat"] == json!(false))
                .count(),
            1,
            "{backend}"
        );
        let packet_id = created[0].1["packet_id"].as_str().unwrap().to_string();
        assert!(created
            .iter()
            .all(|(_, b)| b["packet_id"] == json!(packet_id)));
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents),
            (98_000, 2_000),
            "{backend}"
        );
        let (s, view) = as_user(&store, Function::Grab, "grab-view", &packet_id, "dave").await;
        assert_eq!(s, 200);
        assert_eq!(
            (
                &view["merchant_id"],
                &view["sharer_id"],
                &view["payout"],
                &view["sender_id"]
            ),
            (
                &json!(SHOP),
                &json!("carol"),
                &json!("wallet"),
                &json!("carol")
            ),
            "{backend}: {view}"
        );
        assert!(view.get("order_reference").is_none(), "{view}");

        // Act: 100 grabbers for 5 shares.
        let users: Vec<String> = (0..100).map(|i| format!("g{i:03}")).collect();
        let grabs = users.iter().map(|u| {
            let (store, u, id) = (store.clone(), u.clone(), packet_id.clone());
            tokio::spawn(async move {
                let (s, b) = as_user(&store, Function::Grab, "grab-grab", &id, &u).await;
                (u, s, b)
            })
        });
        let grabbed: Vec<(String, u16, Value)> = join_all(grabs)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // Assert
        let winners: Vec<(String, i64)> = grabbed
            .iter()
            .filter(|(_, s, _)| *s == 200)
            .map(|(u, _, b)| (u.clone(), b["amount_cents"].as_i64().unwrap()))
            .collect();
        assert_eq!(winners.len(), 5, "{backend}");
        assert_eq!(winners.iter().map(|(_, c)| c).sum::<i64>(), 2_000);
        assert!(grabbed
            .iter()
            .filter(|(_, s, _)| *s != 200)
            .all(|(_, s, b)| *s == 410 && b["error"] == json!("sold_out")));

        // Act: every winner claims twice at once.
        let claims = winners
            .iter()
            .flat_map(|(u, _)| [u.clone(), u.clone()])
            .map(|u| {
                let (store, id) = (store.clone(), packet_id.clone());
                tokio::spawn(async move {
                    as_user(&store, Function::Claim, "claim-claim", &id, &u).await
                })
            });
        let claimed: Vec<(u16, Value)> = join_all(claims)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // Assert
        assert!(
            claimed.iter().all(|(s, _)| *s == 200),
            "{backend}: {claimed:?}"
        );
        for (u, cents) in &winners {
            assert_eq!(
                wallet::balance(&store, u).await.unwrap(),
                *cents,
                "{backend} {u}"
            );
        }
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents, b.paid_cash_cents),
            (98_000, 0, 2_000),
            "{backend}"
        );
        assert_books(&store, &backend.to_string(), &users, &[packet_id], 100_000).await;
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
