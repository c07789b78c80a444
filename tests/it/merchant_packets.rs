//! Merchant packets (`POST /merchant-packets`, `lua/merchant_create_packet.lua`; then the red
//! packets' own grab, claim and reclaim) through the routers, on standalone and on the
//! 3-master cluster: one packet per order however many creates race, seed 000's test (100
//! grabbers, 5 shares), claims paid once with the merchant's books moved in the same step,
//! expiry refunding the merchant and never the sharer, re-sent scripts answering as their
//! first run, and every refusal writing nothing. After each, wallets + merchant budgets +
//! packets = deposits − withdrawals, and the merchant's books close.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{self, call, event, with_body, with_placeholder, with_sub, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::domain::merchants::Books;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{Call, MerchantCreatePacketCall, SettleCall};
use hongbao::store::{audit, journal, reclaim, wallet};
use hongbao::Store;

/// The merchant of the fixtures (`events/merchant-*.json`).
const SHOP: &str = "shop-1042";

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

/// Deposits `cents` into `merchant`'s budget through the merchant route.
async fn fund_merchant(store: &Arc<Store>, merchant: &str, cents: i64) {
    let mut v = event("merchant-deposit");
    let path = v["rawPath"].as_str().unwrap().replace(SHOP, merchant);
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["merchant_id"] = json!(merchant);
    let body = json!({"amount_cents": cents, "reference": format!("topup-{cents}")});
    let (s, b, _) = call(store, Function::Merchant, &with_body(v, &body.to_string())).await;
    assert_eq!(s, 201, "{b}");
}

/// A create body for `order` of `total` cents in `count` shares, paid out to wallets.
fn order(order: &str, total: i64, count: u32) -> Value {
    json!({"merchant_id": SHOP, "order_reference": order, "sharer_id": "carol",
           "total_cents": total, "count": count, "payout": "wallet"})
}

/// Sends `POST /merchant-packets` with `body`; (status, answer).
async fn create(store: &Arc<Store>, body: &Value) -> (u16, Value) {
    let ev = with_body(event("merchant-create-packet"), &body.to_string());
    let (s, b, _) = call(store, Function::Merchant, &ev).await;
    (s, b)
}

/// Sends `user`'s call of the red packet route `fixture` (`grab-grab`, `claim-claim`,
/// `grab-view`, `create-packet-cancel`) on `packet_id` through `function`.
async fn as_user(
    store: &Arc<Store>,
    function: Function,
    fixture: &str,
    packet_id: &str,
    user: &str,
) -> (u16, Value) {
    let ev = with_sub(
        with_placeholder(event(fixture), "PACKET_ID", packet_id),
        user,
    );
    let (s, b, _) = call(store, function, &ev).await;
    (s, b)
}

/// Asserts the merchant's books close and wallets + budget + packets = `net` cents.
async fn assert_books(store: &Store, label: &str, users: &[String], packets: &[String], net: i64) {
    let b = books(store, SHOP).await;
    assert!(b.close(), "{label}: {b:?}");
    let t = audit::totals_of(store, users, &[SHOP.to_string()], packets)
        .await
        .unwrap();
    assert_eq!(t.total(), net, "{label}: {t:?}");
}

/// Test: seed 000's own test. 100 concurrent creates for one order make one packet, debited
/// once (one 201, 99 answers 200 `repeat` with the same packet); then 100 concurrent grabbers
/// for its 5 shares: exactly 5 win, each once, their shares sum to the total; each winner's
/// claim, sent twice at once, pays their wallet once and moves the share from the budget's
/// `reserved` to `paid_cash`. The view names the merchant, the sharer and the payout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_packet_per_order_and_five_winners_among_a_hundred_grabbers() {
    for backend in Backend::ALL {
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
        assert_eq!(
            created.iter().filter(|(s, _)| *s == 201).count(),
            1,
            "{backend}"
        );
        assert!(created
            .iter()
            .all(|(s, b)| (*s == 201) != (b["repeat"] == json!(true)) && (*s == 201 || *s == 200)));
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

/// Test: money goes back to the merchant, never to the sharer. A `sharer_first` packet of 6
/// shares gives the sharer share 1 at creation; two members grab, one claims, and one claim is
/// left half-done (step 1 only, as if the Lambda died). At expiry reclaim-cron pays the pending
/// claim, refunds the rest (the sharer's unclaimed share, the other grabber's, the 3
/// un-grabbed) to the budget's balance out of `reserved`, and journals it as the merchant's;
/// a second run refunds nothing. The sharer cannot cancel the packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_refunds_the_merchant_and_never_the_sharer() {
    for backend in Backend::ALL {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 10_000).await;
        let mut body = order("order-7", 3_000, 6);
        body["sharer_first"] = json!(true);
        body["expires_in_secs"] = json!(3);
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{created}");
        let packet_id = created["packet_id"].as_str().unwrap().to_string();
        let (s, cancel) = as_user(
            &store,
            Function::CreatePacket,
            "create-packet-cancel",
            &packet_id,
            "carol",
        )
        .await;
        assert_eq!(
            (s, &cancel["error"]),
            (403, &json!("forbidden")),
            "{cancel}"
        );
        let (s, again) = as_user(&store, Function::Grab, "grab-grab", &packet_id, "carol").await;
        assert_eq!(
            (s, &again["error"]),
            (409, &json!("already_grabbed")),
            "{again}"
        );
        let mut shares = HashMap::new();
        for u in ["erin", "frank"] {
            let (s, b) = as_user(&store, Function::Grab, "grab-grab", &packet_id, u).await;
            assert_eq!(s, 200, "{b}");
            shares.insert(u, b["amount_cents"].as_i64().unwrap());
        }
        let (s, _) = as_user(&store, Function::Claim, "claim-claim", &packet_id, "erin").await;
        assert_eq!(s, 200);
        let step1 = common::claim_step_one(&store, &packet_id, "frank").await;
        assert_eq!((step1[0].as_str(), step1[4].as_str()), ("claimed", SHOP));
        let meta = Keys::new(&store.config().key_prefix)
            .packet(&packet_id)
            .meta;
        let expires_at_ms: i64 = redis::cmd("HGET")
            .arg(&meta)
            .arg("expires_at")
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        common::sleep_until_redis_ms(&store, expires_at_ms).await;

        // Act
        let first = reclaim::run(&store).await.unwrap();
        let second = reclaim::run(&store).await.unwrap();
        // The settlement's reply lost and the script sent again: it answers the settled
        // packet and refunds nothing more.
        let (pk, mk) = {
            let keys = Keys::new(&store.config().key_prefix);
            (keys.packet(&packet_id), keys.merchant(SHOP))
        };
        let resent: redis::Value = SettleCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            legacy_order: &pk.legacy_order,
            claims: &pk.claims,
            wallet: &mk.merchant,
            ledger: &mk.ledger,
            recipients: &pk.recipients,
            sent: &mk.ledger,
            journal: &mk.journal,
            packet_id: &packet_id,
            retention_secs: 60,
            ledger_cap: 100,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        let resent = hongbao::store::scripts::texts("settle", resent).unwrap();

        // Assert
        let paid = shares["erin"] + shares["frank"];
        assert_eq!(resent[0], "settled", "{backend}: {resent:?}");
        assert_eq!(resent[2], "0", "{backend}: settled again: {resent:?}");
        assert_eq!(
            (first.settled, first.redriven),
            (1, 1),
            "{backend}: {first:?}"
        );
        assert_eq!(first.refunded_cents, 3_000 - paid, "{backend}");
        assert_eq!((second.settled, second.refunded_cents), (0, 0));
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents, b.paid_cash_cents),
            (10_000 - paid, 0, paid),
            "{backend}"
        );
        assert_eq!(wallet::balance(&store, "carol").await.unwrap(), 0);
        assert_eq!(
            wallet::balance(&store, "frank").await.unwrap(),
            shares["frank"]
        );
        let users = ["carol", "erin", "frank"].map(String::from);
        assert_books(
            &store,
            &backend.to_string(),
            &users,
            std::slice::from_ref(&packet_id),
            10_000,
        )
        .await;
        let key = Keys::new(&store.config().key_prefix).merchant(SHOP).journal;
        let entries = journal::read(&store, &key, 100).await.unwrap();
        let merchant: Vec<(Kind, i64)> = entries
            .iter()
            .filter(|e| e.kind.is_merchant() && e.reference == packet_id)
            .map(|e| (e.kind, e.amount_cents))
            .collect();
        assert_eq!(
            merchant,
            [
                (Kind::MerchantPacketDebit, -3_000),
                (Kind::MerchantRefund, 3_000 - paid),
                (Kind::MerchantPacketSettled, 0),
            ],
            "{backend}"
        );
        assert!(entries
            .iter()
            .filter(|e| e.reference == packet_id && !e.kind.is_merchant())
            .all(|e| e.kind == Kind::ClaimCredit && e.user_id != "carol"));
    }
}

/// Test: the create script run twice with the same packet id (a cluster client re-sending a
/// command whose reply was lost) answers `created` both times and debits once; a claim's step
/// 3 run twice moves the share to `paid_cash` once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_sent_scripts_answer_as_their_first_run() {
    for backend in Backend::ALL {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 5_000).await;
        let keys = Keys::new(&store.config().key_prefix);
        let mk = keys.merchant(SHOP);
        let packet_id = hongbao::store::keys::new_packet_id(SHOP);
        let pk = keys.packet(&packet_id);
        let mut conn = store.conn().await.unwrap();
        let now = now_ms(&store).await;
        let amounts = [700_i64, 300];
        let call = MerchantCreatePacketCall {
            merchant: &mk.merchant,
            ledger: &mk.ledger,
            records: &mk.records,
            records_forget: &mk.records_forget,
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            packets: &mk.packets,
            journal: &mk.journal,
            packet_id: &packet_id,
            merchant_id: SHOP,
            order_reference: "order-9",
            sharer_id: "carol",
            payout: "wallet",
            sharer_first: "",
            total_cents: 1_000,
            count: 2,
            mode: "lucky",
            split: "double_mean",
            greeting: "",
            cover: "",
            expires_in_secs: 600,
            fingerprint: "m1:test",
            order_keep_ms: 3_600_000,
            ledger_cap: 100,
            indexed_at_ms: now,
            delivery_window_ms: 60_000,
            salt: &"0".repeat(64),
            commitment: &"1".repeat(64),
            share_amounts: &amounts,
        };

        // Act
        let mut replies = Vec::new();
        for _ in 0..2 {
            let reply: redis::Value = call.invocation().invoke_async(&mut conn).await.unwrap();
            replies.push(hongbao::store::scripts::texts("merchant_create_packet", reply).unwrap());
        }

        // Assert
        assert_eq!(replies[0], ["created", packet_id.as_str()]);
        assert_eq!(replies[1], replies[0], "{backend}");
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents, b.close()),
            (4_000, 1_000, true)
        );

        // Act: a grab, then claim steps 1 and 3 twice each (step 2 between, once).
        let (s, grabbed) = as_user(&store, Function::Grab, "grab-grab", &packet_id, "gina").await;
        assert_eq!(s, 200, "{grabbed}");
        let share = grabbed["amount_cents"].as_i64().unwrap();
        let (s, _) = as_user(&store, Function::Claim, "claim-claim", &packet_id, "gina").await;
        assert_eq!(s, 200);
        let done = hongbao::store::scripts::ClaimDoneCall {
            claims: &pk.claims,
            grabs: &pk.grabs,
            books: &mk.merchant,
            user_id: "gina",
            mark: "",
            merchant_id: SHOP,
        };
        let again: i64 = done.invocation().invoke_async(&mut conn).await.unwrap();

        // Assert
        assert_eq!(again, 0, "{backend}: a done claim moved again");
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.reserved_cents, b.paid_cash_cents, b.close()),
            (1_000 - share, share, true),
            "{backend}"
        );
        assert_books(
            &store,
            &backend.to_string(),
            &["gina".into()],
            &[packet_id],
            5_000,
        )
        .await;
    }
}

/// Redis `TIME`, Unix ms.
async fn now_ms(store: &Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// Test: every refusal of `POST /merchant-packets` writes nothing (DUMP of every key before
/// and after): 402 a total above the budget (with `balance_cents`), 409 another body under an
/// order that has its packet (with `packet_id`), 403 a principal outside
/// `HONGBAO_MERCHANT_PRINCIPALS`, no IAM signature, a JWT caller; 400 a bad merchant id,
/// order reference, sharer, total, payout or field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_write_nothing() {
    for backend in Backend::ALL {
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

/// Test: a storm. 50 orders' packets of 6 shares (every other one `sharer_first`) are created
/// twice each at once, 2,000 users grab 2 packets each at once, about two thirds of the winners
/// claim (each claim sent twice), then the packets expire and reclaim-cron settles them. The
/// merchant's books close after each phase; every packet refunds exactly what was not claimed,
/// to the merchant; no sharer gets cash they did not claim; wallets + budget + packets =
/// deposits throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_of_orders_conserves_the_books() {
    for backend in Backend::ALL {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 1_000_000).await;
        let label = backend.to_string();

        // Act: 50 orders, each created twice at once.
        let creates = (0..100).map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let n = i % 50;
                let mut body = order(&format!("order-{n}"), 2_000 + n * 10, 6);
                body["sharer_id"] = json!(format!("sharer-{n}"));
                body["sharer_first"] = json!(n % 2 == 0);
                body["expires_in_secs"] = json!(8);
                create(&store, &body).await
            })
        });
        let mut packets: Vec<String> = Vec::new();
        for r in join_all(creates).await {
            let (s, b) = r.unwrap();
            assert!(s == 201 || s == 200, "{label}: {s} {b}");
            packets.push(b["packet_id"].as_str().unwrap().to_string());
        }
        packets.sort();
        packets.dedup();
        assert_eq!(packets.len(), 50, "{label}");
        let total: i64 = (0..50).map(|n| 2_000 + n * 10).sum();
        let b = books(&store, SHOP).await;
        assert_eq!(
            (b.balance_cents, b.reserved_cents),
            (1_000_000 - total, total)
        );
        let sharers: Vec<String> = (0..50).map(|n| format!("sharer-{n}")).collect();
        let users: Vec<String> = (0..2_000).map(|i| format!("u{i:04}")).collect();
        let everyone: Vec<String> = users.iter().chain(&sharers).cloned().collect();
        assert_books(&store, &label, &everyone, &packets, 1_000_000).await;

        // Act: 2,000 users grab 2 packets each, all at once.
        let grabs = users.iter().enumerate().flat_map(|(i, u)| {
            [i * 7 % 50, (i * 13 + 5) % 50].map(|p| {
                let (store, u, id) = (store.clone(), u.clone(), packets[p].clone());
                tokio::spawn(async move {
                    let (s, _) = as_user(&store, Function::Grab, "grab-grab", &id, &u).await;
                    (s == 200).then_some((id, u))
                })
            })
        });
        let winners: Vec<(String, String)> = join_all(grabs)
            .await
            .into_iter()
            .filter_map(Result::unwrap)
            .collect();
        let ungrabbed_sharers = 25;
        assert_eq!(winners.len(), 50 * 6 - ungrabbed_sharers, "{label}");

        // Act: two thirds of the winners claim, each twice at once.
        let claims = winners
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 0)
            .flat_map(|(_, w)| [w.clone(), w.clone()])
            .map(|(id, u)| {
                let store = store.clone();
                tokio::spawn(async move {
                    as_user(&store, Function::Claim, "claim-claim", &id, &u).await
                })
            });
        for r in join_all(claims).await {
            let (s, b) = r.unwrap();
            assert_eq!(s, 200, "{label}: {b}");
        }
        let b = books(&store, SHOP).await;
        assert!(b.paid_cash_cents > 0 && b.close(), "{label}: {b:?}");
        assert_books(&store, &label, &everyone, &packets, 1_000_000).await;

        // Act: expiry, then reclaim-cron.
        let keys = Keys::new(&store.config().key_prefix);
        let mut last = 0;
        for id in &packets {
            let at: i64 = redis::cmd("HGET")
                .arg(keys.packet(id).meta)
                .arg("expires_at")
                .query_async(&mut store.conn().await.unwrap())
                .await
                .unwrap();
            last = last.max(at);
        }
        common::sleep_until_redis_ms(&store, last).await;
        let run = reclaim::run(&store).await.unwrap();

        // Assert
        assert_eq!((run.settled, run.failed), (50, 0), "{label}: {run:?}");
        let b = books(&store, SHOP).await;
        assert_eq!(b.reserved_cents, 0, "{label}: {b:?}");
        assert_eq!(
            b.balance_cents + b.paid_cash_cents,
            1_000_000,
            "{label}: {b:?}"
        );
        assert_eq!(run.refunded_cents, total - b.paid_cash_cents, "{label}");
        let mut cash = 0;
        for u in &everyone {
            cash += wallet::balance(&store, u).await.unwrap();
        }
        assert_eq!(
            cash, b.paid_cash_cents,
            "{label}: the wallets hold what was claimed"
        );
        for s in &sharers {
            assert_eq!(wallet::balance(&store, s).await.unwrap(), 0, "{label}: {s}");
        }
        assert_books(&store, &label, &everyone, &packets, 1_000_000).await;
    }
}
