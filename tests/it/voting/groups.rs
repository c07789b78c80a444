//! Groups: an article's groups, and each group's page from its own rankings (kept by the group
//! change and the vote, so a page costs a page and shows every change at once).

use std::collections::HashMap;

use harness::{Backend, TestRedis};
use hongbao::voting::{Order, SiteKeys};
use hongbao::Store;
use serde_json::json;

use super::{call, ids, page, post, set_groups, vote, with_article};
use crate::common::{self, event, snapshot};

fn keys() -> SiteKeys {
    SiteKeys::new("hb", "news")
}

/// A sorted set's `member → score`s.
async fn zset(store: &Store, key: &str) -> HashMap<String, f64> {
    common::zset_with_scores(store, key)
        .await
        .into_iter()
        .collect()
}

/// Group `group`'s rankings hold exactly its members, each with its entry in the site's
/// ranking of the same order.
async fn assert_rankings_follow_the_site(store: &Store, group: &str) {
    let mut conn = store.conn().await.unwrap();
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys().group(group))
        .query_async(&mut conn)
        .await
        .unwrap();
    for order in [Order::Score, Order::Time] {
        let site = zset(store, &keys().ranking(order)).await;
        let expected: HashMap<String, f64> = members.iter().map(|m| (m.clone(), site[m])).collect();
        let got = zset(store, &keys().group_ranking(order, group)).await;
        assert_eq!(got, expected, "{group} by {}", order.as_str());
    }
}

/// Three articles (1, 2 by alice, 3 by bob); alice puts 1 and 2 into "rust".
async fn two_in_rust(redis: &TestRedis) -> std::sync::Arc<hongbao::Store> {
    let store = common::store(redis, |_| {});
    post(&store, "alice", "a1").await;
    post(&store, "alice", "a2").await;
    post(&store, "bob", "b1").await;
    for id in ["1", "2"] {
        let (s, _) = set_groups(&store, id, "alice", json!({"add": ["rust"]})).await;
        assert_eq!(s, 200);
    }
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_answers_the_articles_groups_without_duplicates() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "a1").await;

        let (s, g) = set_groups(
            &store,
            "1",
            "alice",
            json!({"add": ["rust", "redis", "rust"]}),
        )
        .await;

        assert_eq!(
            (s, g),
            (200, json!({"article_id": "1", "groups": ["redis", "rust"]}))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_lists_only_its_members_by_score_and_by_time() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = two_in_rust(&redis).await;
        assert_eq!(vote(&store, "1", "carol", "up").await.0, 200);

        let (s, by_score) = page(&store, Some("rust"), "").await;
        let (_, by_time) = page(&store, Some("rust"), "order=time").await;

        assert_eq!(
            (s, by_score["group"].clone(), by_score["order"].clone()),
            (200, json!("rust"), json!("score"))
        );
        assert_eq!(ids(&by_score), ["1", "2"], "{backend}");
        assert_eq!(ids(&by_time), ["2", "1"], "{backend}");
        assert_rankings_follow_the_site(&store, "rust").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_moves_the_article_in_its_groups_at_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = two_in_rust(&redis).await;
        assert_eq!(ids(&page(&store, Some("rust"), "").await.1), ["2", "1"]);

        assert_eq!(vote(&store, "1", "carol", "up").await.0, 200);

        assert_eq!(ids(&page(&store, Some("rust"), "").await.1), ["1", "2"]);
        assert_rankings_follow_the_site(&store, "rust").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_and_leaving_show_on_the_groups_page_at_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = two_in_rust(&redis).await;
        assert_eq!(vote(&store, "3", "carol", "up").await.0, 200);

        set_groups(&store, "3", "bob", json!({"add": ["rust"]})).await;
        set_groups(&store, "1", "alice", json!({"remove": ["rust"]})).await;

        assert_eq!(ids(&page(&store, Some("rust"), "").await.1), ["3", "2"]);
        assert_eq!(
            ids(&page(&store, Some("rust"), "order=time").await.1),
            ["3", "2"]
        );
        assert_rankings_follow_the_site(&store, "rust").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_that_remembers_old_groups_moves_the_new_ones() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let voter = common::store(&redis, |_| {});
        post(&voter, "alice", "a1").await;
        assert_eq!(vote(&voter, "1", "carol", "up").await.0, 200); // remembers: no groups
        let other = common::store(&redis, |_| {});
        set_groups(&other, "1", "alice", json!({"add": ["rust", "go"]})).await;

        let (s, v, _) = vote(&voter, "1", "dave", "up").await;

        assert_eq!((s, v["votes"].clone()), (200, json!(3)));
        assert_rankings_follow_the_site(&voter, "rust").await;
        assert_rankings_follow_the_site(&voter, "go").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_made_before_groups_kept_rankings_gets_them_on_its_first_page() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        for title in ["a1", "a2", "a3"] {
            post(&store, "alice", title).await;
        }
        assert_eq!(vote(&store, "1", "carol", "up").await.0, 200);
        // The layout of before: the group set and the article's groups, no rankings.
        let mut conn = redis.raw_conn().await;
        for id in ["1", "2"] {
            let id = hongbao::voting::ArticleId::parse(id).unwrap();
            let _: () = redis::pipe()
                .cmd("SADD")
                .arg(keys().group("rust"))
                .arg(id.member())
                .cmd("SADD")
                .arg(keys().article_groups(id))
                .arg("rust")
                .query_async(&mut conn)
                .await
                .unwrap();
        }

        let (s, p) = page(&store, Some("rust"), "").await;

        assert_eq!((s, ids(&p)), (200, vec!["1".to_string(), "2".to_string()]));
        assert_eq!(
            ids(&page(&store, Some("rust"), "order=time").await.1),
            ["2", "1"]
        );
        assert_rankings_follow_the_site(&store, "rust").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_poster_changes_an_articles_groups() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = two_in_rust(&redis).await;
        let before = snapshot(&redis).await;

        let (s, e) = set_groups(&store, "1", "bob", json!({"remove": ["rust"]})).await;

        assert_eq!((s, e["error"].as_str()), (403, Some("forbidden")));
        assert_eq!(snapshot(&redis).await, before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_group_is_an_empty_page_and_writes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = two_in_rust(&redis).await;
        let before = snapshot(&redis).await;

        let (s, p) = page(&store, Some("nobody-posts-here"), "order=time").await;

        assert_eq!((s, p["articles"].clone()), (200, json!([])));
        assert_eq!(snapshot(&redis).await, before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fixture_events_change_and_list_a_group() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "a1").await;
        post(&store, "alice", "a2").await;

        let (s, g, _) = call(&store, &with_article(event("vote-groups"), "2")).await;
        let (s2, p, _) = call(&store, &event("vote-group-articles")).await;

        assert_eq!((s, g["groups"].clone()), (200, json!(["programming"])));
        assert_eq!((s2, ids(&p)), (200, vec!["2".to_string()]));
    }
}
