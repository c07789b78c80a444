//! A storm of orders' packets, grabs, claims and settlements keeps the books closed.

use futures::future::join_all;
use serde_json::json;

use crate::common::{self, Function};
use harness::{Backend, TestRedis};
use hongbao::store::keys::Keys;
use hongbao::store::{reclaim, wallet};

use super::*;

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
                body["expires_in_secs"] = json!(20);
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
