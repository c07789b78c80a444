//! `GET /merchants/{merchant_id}/packets`: a merchant's packets, a page at a time.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{self, call, event, Function};
use harness::{Backend, TestRedis};
use hongbao::store::keys::Keys;
use hongbao::Store;

use super::*;

/// `GET /merchants/{merchant}/packets` with `query`; (status, answer).
async fn list(store: &Arc<Store>, merchant: &str, query: &str) -> (u16, Value) {
    let mut v = event("merchant-list-packets");
    let path = format!("/merchants/{merchant}/packets");
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["merchant_id"] = json!(merchant);
    let v = crate::common::with_query(v, query);
    let (s, b, _) = call(store, Function::Merchant, &v).await;
    (s, b)
}

/// Test: a merchant's packets are listed newest first, three a page, each once, with their
/// order, status and counters; a packet created while paging is on no later page; another
/// merchant's packets are not listed; a bad cursor is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchants_packets_page_newest_first_while_packets_are_created() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 100_000).await;
        fund_merchant(&store, "shop-7", 100_000).await;
        let mut made = Vec::new();
        for i in 0..7 {
            let (s, b) = create(&store, &order(&format!("order-{i}"), 600, 3)).await;
            assert_eq!(s, 201, "{b}");
            made.push(b["packet_id"].as_str().unwrap().to_string());
        }
        let mut other = order("order-0", 600, 3);
        other["merchant_id"] = json!("shop-7");
        assert_eq!(create(&store, &other).await.0, 201);
        let (s, _) = as_user(&store, Function::Grab, "grab-grab", &made[6], "hal").await;
        assert_eq!(s, 200);

        // Act
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let query = match &cursor {
                Some(c) => format!("limit=3&cursor={c}"),
                None => "limit=3".into(),
            };
            let (s, page) = list(&store, SHOP, &query).await;
            assert_eq!(s, 200, "{backend}: {page}");
            if pages.is_empty() {
                let (s, b) = create(&store, &order("order-late", 600, 3)).await;
                assert_eq!(s, 201, "{b}");
            }
            pages.push(page.clone());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }

        // Assert
        let listed: Vec<String> = pages
            .iter()
            .flat_map(|p| p["items"].as_array().unwrap().clone())
            .map(|i| i["packet_id"].as_str().unwrap().to_string())
            .collect();
        // Newest first: by `created_at`, then (creates of the same ms) by packet id.
        let keys = Keys::new(&store.config().key_prefix);
        let mut newest_first = Vec::new();
        for id in &made {
            let at: i64 = redis::cmd("HGET")
                .arg(keys.packet(id).meta)
                .arg("created_at")
                .query_async(&mut store.conn().await.unwrap())
                .await
                .unwrap();
            newest_first.push((at, id.clone()));
        }
        newest_first.sort_by(|a, b| b.cmp(a));
        let newest_first: Vec<String> = newest_first.into_iter().map(|(_, id)| id).collect();
        assert_eq!(listed, newest_first, "{backend}");
        let items: Vec<Value> = pages
            .iter()
            .flat_map(|p| p["items"].as_array().unwrap().clone())
            .collect();
        let sixth = items
            .iter()
            .find(|i| i["packet_id"] == json!(made[6]))
            .unwrap();
        assert_eq!(
            (
                &sixth["order_reference"],
                &sixth["status"],
                &sixth["grabbed_count"]
            ),
            (&json!("order-6"), &json!("open"), &json!(1)),
            "{backend}: {sixth}"
        );
        assert!(items.iter().all(|i| i["merchant_id"] == json!(SHOP)));
        let (s, b) = list(&store, SHOP, "cursor=not-a-cursor").await;
        assert_eq!((s, &b["error"]), (400, &json!("invalid_request")), "{b}");
        // A fresh first page shows the packet created while paging (newest, or tied in its ms).
        let (s, b) = list(&store, SHOP, "").await;
        assert_eq!(s, 200);
        let fresh: Vec<&Value> = b["items"].as_array().unwrap().iter().take(2).collect();
        assert!(
            fresh
                .iter()
                .any(|i| i["order_reference"] == json!("order-late")),
            "{backend}: {b}"
        );
    }
}
