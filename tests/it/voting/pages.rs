//! Pages of articles and the vote rate limit.

use std::collections::HashSet;

use harness::{Backend, TestRedis};
use serde_json::{json, Value};

use super::{assert_consistent, assert_ttls, ids, page, post, vote};
use crate::common::{self, snapshot};

/// 26 articles: pages of 25 then 1 then none, by score and by time, ties by higher id first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_twenty_five_in_a_documented_order() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        for i in 0..26 {
            post(&store, &format!("poster-{i}"), &format!("article {i}")).await;
        }
        // Some votes so that score order differs from time order; most articles keep ties.
        for (id, up, down) in [("3", 4, 0), ("20", 2, 0), ("7", 0, 3), ("1", 1, 0)] {
            for u in 0..up {
                assert_eq!(vote(&store, id, &format!("fan-{u}"), "up").await.0, 200);
            }
            for u in 0..down {
                assert_eq!(
                    vote(&store, id, &format!("critic-{u}"), "down").await.0,
                    200
                );
            }
        }
        for order in ["score", "time"] {
            let (s, p1) = page(&store, None, &format!("order={order}")).await;
            let (s2, p2) = page(&store, None, &format!("order={order}&page=2")).await;
            let (s3, p3) = page(&store, None, &format!("page=3&order={order}")).await;
            assert_eq!((s, s2, s3), (200, 200, 200));
            assert_eq!(
                (p1["page"].clone(), p2["page"].clone(), p2["order"].clone()),
                (json!(1), json!(2), json!(order))
            );
            assert_eq!((ids(&p1).len(), ids(&p2).len(), ids(&p3).len()), (25, 1, 0));
            let all: Vec<&Value> = p1["articles"]
                .as_array()
                .unwrap()
                .iter()
                .chain(p2["articles"].as_array().unwrap())
                .collect();
            let seen: HashSet<String> = all
                .iter()
                .map(|a| a["article_id"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(seen.len(), 26);
            // The documented order: key descending, then the higher id (the later post) first.
            let key = |a: &Value| {
                let score = a["score"].as_i64().unwrap();
                let posted = score - 432 * a["votes"].as_i64().unwrap();
                assert_eq!(
                    a["posted_at"],
                    hongbao::api::error::rfc3339(posted * 1000).as_str()
                );
                let id: u64 = a["article_id"].as_str().unwrap().parse().unwrap();
                (if order == "score" { score } else { posted }, id)
            };
            let keys: Vec<(i64, u64)> = all.iter().map(|a| key(a)).collect();
            let mut expected = keys.clone();
            expected.sort_by(|a, b| b.cmp(a));
            assert_eq!(keys, expected, "{backend} order={order}");
            assert!(
                keys.windows(2).any(|w| w[0].0 == w[1].0),
                "the tie rule was exercised"
            );
            for a in &all {
                for field in ["title", "link", "poster"] {
                    assert!(a[field].is_string(), "{field}");
                }
            }
            if order == "score" {
                assert_eq!(ids(&p1)[0], "3", "4 extra votes put article 3 first");
                assert_eq!(ids(&p2), ["7"], "3 down-votes put article 7 last");
            } else {
                assert_eq!(ids(&p2), ["1"], "the oldest article is last by time");
            }
        }
        assert_ttls(&redis).await;
    }
}

/// Per-user vote rate limit: 429 with Retry-After, nothing written, lifted after the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_are_rate_limited_per_user() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        // 3 per 2 s (the window is the counter's TTL, real time: no clock offset moves it).
        let store = common::store(&redis, |c| {
            c.voting.rate_limit = 3;
            c.voting.rate_window_ms = 2_000;
        });
        for i in 0..5 {
            post(&store, &format!("p{i}"), "t").await;
        }
        // Unknown articles do not count.
        assert_eq!(vote(&store, "99", "bob", "up").await.0, 404);
        for id in ["1", "2", "2"] {
            assert_eq!(vote(&store, id, "bob", "up").await.0, 200);
        }
        let before = snapshot(&redis).await;
        let (s, e, retry) = vote(&store, "3", "bob", "up").await;
        assert_eq!((s, e["error"].as_str()), (429, Some("rate_limited")), "{e}");
        let retry: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=2).contains(&retry), "{retry}");
        assert_eq!(
            snapshot(&redis).await,
            before,
            "a refused vote writes nothing"
        );
        // Other users are not affected; after the window bob may vote again.
        assert_eq!(vote(&store, "3", "carol", "up").await.0, 200);
        tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
        let (s, v, _) = vote(&store, "3", "bob", "up").await;
        assert_eq!((s, v["votes"].clone()), (200, json!(3)));
        assert_consistent(&redis, "3").await;
        assert_ttls(&redis).await;
    }
}
