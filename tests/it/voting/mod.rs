//! The vote function: the article-voting site of "Redis in Action" chapter 1
//! (josiahcarlson/redis-in-action, `python/ch01_listing_source.py`), atomic, with down-votes (from
//! the source blog post on Redis key design) and groups — through the real handler and
//! `hongbao::voting`, against real `redis-server` processes, standalone and a 3-master
//! cluster.
//!
//! Time is driven with the voting test clock (`VotingRules::clock_offset_secs`, added to Redis
//! `TIME` by every voting script): a second `Store` on the same Redis with an offset of
//! 604,801 s acts one week and a second after the posts. No test sleeps.
//!
//! One file a topic: the books' numbers and votes, pages, groups, the bad-inputs tables, the
//! sandbox's remembered posters and groups.

mod bad_inputs;
mod books;
mod groups;
mod pages;
mod sandbox;

use std::collections::HashMap;
use std::sync::Arc;

use harness::TestRedis;
use hongbao::voting::{self, ONE_WEEK_IN_SECONDS, VOTE_SCORE};
use hongbao::Store;
use serde_json::{json, Value};

pub(super) use crate::common::with_query;
use crate::common::{self, event, with_body, with_placeholder, with_sub};

/// Replaces the `ARTICLE_ID` placeholder everywhere in the event.
pub(super) fn with_article(v: Value, id: &str) -> Value {
    with_placeholder(v, "ARTICLE_ID", id)
}

/// Points `vote-group-articles` at `group`.
pub(super) fn with_group(v: Value, group: &str) -> Value {
    with_placeholder(v, "programming", group)
}

pub(super) fn with_method(mut v: Value, method: &str) -> Value {
    let path = v["rawPath"].as_str().unwrap().to_string();
    v["requestContext"]["http"]["method"] = json!(method);
    v["routeKey"] = json!(format!("{method} {path}"));
    v
}

/// Sends `v` through the vote function's router; returns (status, JSON body, Retry-After).
pub(super) async fn call(store: &Arc<Store>, v: &Value) -> (u16, Value, Option<String>) {
    common::call(store, common::Function::Vote, v).await
}

/// Posts an article through the handler as `poster`; returns the 201 body.
pub(super) async fn post(store: &Arc<Store>, poster: &str, title: &str) -> Value {
    let body = json!({"title": title, "link": "https://example.com/a"}).to_string();
    let (s, b, _) = call(
        store,
        &with_body(with_sub(event("vote-post-article"), poster), &body),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    b
}

/// Votes through the handler; returns (status, body, Retry-After).
pub(super) async fn vote(
    store: &Arc<Store>,
    id: &str,
    user: &str,
    direction: &str,
) -> (u16, Value, Option<String>) {
    let body = json!({"direction": direction}).to_string();
    call(
        store,
        &with_body(with_sub(with_article(event("vote-vote"), id), user), &body),
    )
    .await
}

/// `PUT /articles/{id}/groups` as `user`.
pub(super) async fn set_groups(
    store: &Arc<Store>,
    id: &str,
    user: &str,
    body: Value,
) -> (u16, Value) {
    let ev = with_body(
        with_sub(with_article(event("vote-groups"), id), user),
        &body.to_string(),
    );
    let (s, b, _) = call(store, &ev).await;
    (s, b)
}

/// One page of `GET /articles` or, with `group`, `GET /groups/{group}/articles`.
pub(super) async fn page(store: &Arc<Store>, group: Option<&str>, query: &str) -> (u16, Value) {
    let ev = match group {
        None => with_query(event("vote-list"), query),
        Some(g) => with_query(with_group(event("vote-group-articles"), g), query),
    };
    let (s, b, _) = call(store, &ev).await;
    (s, b)
}

/// The `article_id`s of a page body.
pub(super) fn ids(page: &Value) -> Vec<String> {
    page["articles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["article_id"].as_str().unwrap().to_string())
        .collect()
}

/// `score - 432 × votes` of an answer, as the RFC 3339 text `posted_at` must be.
pub(super) fn posted_text(score: i64, votes: i64) -> String {
    hongbao::api::error::rfc3339((score - VOTE_SCORE * votes) * 1000)
}

/// A store on `redis` whose voting clock runs `offset_secs` ahead of Redis `TIME`.
pub(super) fn store_at(redis: &TestRedis, offset_secs: i64) -> Arc<Store> {
    common::store(redis, |c| c.voting.clock_offset_secs = offset_secs)
}

/// The article's stored state: (hash fields, vote record, score entry, time entry).
pub(super) async fn stored(
    redis: &TestRedis,
    id: &str,
) -> (
    HashMap<String, String>,
    HashMap<String, i64>,
    Option<i64>,
    Option<i64>,
) {
    let keys = voting::SiteKeys::new("hb", "news");
    let id = voting::ArticleId::parse(id).unwrap();
    let mut conn = redis.raw_conn().await;
    let hash: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(keys.article(id))
        .query_async(&mut conn)
        .await
        .unwrap();
    let record: HashMap<String, i64> = redis::cmd("HGETALL")
        .arg(keys.voters(id))
        .query_async(&mut conn)
        .await
        .unwrap();
    let score: Option<i64> = redis::cmd("ZSCORE")
        .arg(keys.ranking(voting::Order::Score))
        .arg(id.member())
        .query_async(&mut conn)
        .await
        .unwrap();
    let time: Option<i64> = redis::cmd("ZSCORE")
        .arg(keys.ranking(voting::Order::Time))
        .arg(id.member())
        .query_async(&mut conn)
        .await
        .unwrap();
    (hash, record, score, time)
}

/// Asserts the article's invariants: votes = sum of the record, score entry = posted + 432 ×
/// votes, time entry = posted, each user at most once in the record (a hash), and the record
/// expires exactly when voting closes. Returns (votes, score).
pub(super) async fn assert_consistent(redis: &TestRedis, id: &str) -> (i64, i64) {
    let (hash, record, score, time) = stored(redis, id).await;
    let posted: i64 = hash["posted_at"].parse().unwrap();
    let votes: i64 = hash["votes"].parse().unwrap();
    assert!(record.values().all(|v| *v == 1 || *v == -1), "{record:?}");
    assert_eq!(
        votes,
        record.values().sum::<i64>(),
        "votes vs record {record:?}"
    );
    assert_eq!(score, Some(posted + VOTE_SCORE * votes));
    assert_eq!(time, Some(posted));
    let keys = voting::SiteKeys::new("hb", "news");
    let mut conn = redis.raw_conn().await;
    let expire_at: i64 = redis::cmd("EXPIRETIME")
        .arg(keys.voters(voting::ArticleId::parse(id).unwrap()))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        expire_at,
        posted + ONE_WEEK_IN_SECONDS,
        "the vote record expires when voting closes"
    );
    (votes, posted + VOTE_SCORE * votes)
}

/// Every key of the site: the content keys have no TTL, everything else (vote records,
/// rate-limit states, the answers kept under call ids) has one; no key is outside the site's
/// hash tag.
pub(super) async fn assert_ttls(redis: &TestRedis) {
    let mut conn = redis.raw_conn().await;
    let keys = redis.all_keys().await;
    assert!(!keys.is_empty());
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let rest = key
            .strip_prefix("hb:{vote:news}:")
            .unwrap_or_else(|| panic!("key outside the site tag: {key}"));
        let expiring =
            rest.ends_with(":voters") || rest.starts_with("attempts:") || rest.contains(":call:");
        if expiring {
            assert!(ttl > 0, "{key} has no TTL ({ttl})");
        } else {
            assert_eq!(ttl, -1, "{key} should be permanent");
        }
    }
}
