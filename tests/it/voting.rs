//! The vote function: the article-voting site of "Redis in Action" chapter 1
//! (josiahcarlson/redis-in-action, `python/ch01_listing_source.py`), atomic, with down-votes (from
//! the source blog post on Redis key design) and groups — through the real handler and
//! `hongbao::store::voting`, against real `redis-server` processes, standalone and a 3-master
//! cluster.
//!
//! Time is driven with the voting test clock (`VotingRules::clock_offset_secs`, added to Redis
//! `TIME` by every voting script): a second `Store` on the same Redis with an offset of
//! 604,801 s acts one week and a second after the posts, one with 61 s acts after the group
//! cache's lifetime. No test sleeps.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::store::voting::{self, Direction, VoteOutcome, ONE_WEEK_IN_SECONDS, VOTE_SCORE};
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{self, event, snapshot, with_body, with_sub, without_auth};

/// Replaces the `ARTICLE_ID` placeholder everywhere in the event.
fn with_article(v: Value, id: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("ARTICLE_ID", id)).unwrap()
}

/// Sets the query string (`rawQueryString`, which the handler reads, and the parsed map).
fn with_query(mut v: Value, raw: &str) -> Value {
    v["rawQueryString"] = json!(raw);
    let mut map = serde_json::Map::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (k, val) = pair.split_once('=').unwrap_or((pair, ""));
        map.insert(k.to_string(), json!(val));
    }
    v["queryStringParameters"] = Value::Object(map);
    v
}

/// Points `vote-group-articles` at `group`.
fn with_group(v: Value, group: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("programming", group)).unwrap()
}

fn with_method(mut v: Value, method: &str) -> Value {
    let path = v["rawPath"].as_str().unwrap().to_string();
    v["requestContext"]["http"]["method"] = json!(method);
    v["routeKey"] = json!(format!("{method} {path}"));
    v
}

/// Sends `v` through the vote function's router; returns (status, JSON body, Retry-After).
async fn call(store: &Arc<Store>, v: &Value) -> (u16, Value, Option<String>) {
    common::call(store, common::Function::Vote, v).await
}

/// Posts an article through the handler as `poster`; returns the 201 body.
async fn post(store: &Arc<Store>, poster: &str, title: &str) -> Value {
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
async fn vote(
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
async fn set_groups(store: &Arc<Store>, id: &str, user: &str, body: Value) -> (u16, Value) {
    let ev = with_body(
        with_sub(with_article(event("vote-groups"), id), user),
        &body.to_string(),
    );
    let (s, b, _) = call(store, &ev).await;
    (s, b)
}

/// One page of `GET /articles` or, with `group`, `GET /groups/{group}/articles`.
async fn page(store: &Arc<Store>, group: Option<&str>, query: &str) -> (u16, Value) {
    let ev = match group {
        None => with_query(event("vote-list"), query),
        Some(g) => with_query(with_group(event("vote-group-articles"), g), query),
    };
    let (s, b, _) = call(store, &ev).await;
    (s, b)
}

/// The `article_id`s of a page body.
fn ids(page: &Value) -> Vec<String> {
    page["articles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["article_id"].as_str().unwrap().to_string())
        .collect()
}

/// `score - 432 × votes` of an answer, as the RFC 3339 text `posted_at` must be.
fn posted_text(score: i64, votes: i64) -> String {
    hongbao::api::error::rfc3339((score - VOTE_SCORE * votes) * 1000)
}

/// A store on `redis` whose voting clock runs `offset_secs` ahead of Redis `TIME`.
fn store_at(redis: &TestRedis, offset_secs: i64) -> Arc<Store> {
    common::store(redis, |c| c.voting.clock_offset_secs = offset_secs)
}

/// The article's stored state: (hash fields, vote record, score entry, time entry).
async fn stored(
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
async fn assert_consistent(redis: &TestRedis, id: &str) -> (i64, i64) {
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

/// Every key of the site: the content keys have no TTL, everything else (vote records, group
/// caches and their stamps, rate-limit states) has one; no key is outside the site's hash tag.
async fn assert_ttls(redis: &TestRedis) {
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
        let expiring = rest.ends_with(":voters")
            || rest.starts_with("cache:")
            || rest.starts_with("attempts:");
        if expiring {
            assert!(ttl > 0, "{key} has no TTL ({ttl})");
        } else {
            assert_eq!(ttl, -1, "{key} should be permanent");
        }
        if rest.starts_with("cache:") {
            assert!(ttl <= 60_000, "{key} cached for {ttl} ms");
        }
    }
}

/// The reference's numbers, the poster's vote, the one-week window by the Redis clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_books_numbers_and_the_one_week_window() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (s, a, _) = call(&store, &event("vote-post-article")).await;
        assert_eq!(s, 201, "{a}");
        assert_eq!(a["article_id"], "1");
        assert_eq!(a["title"], "Go To Statement Considered Harmful");
        assert_eq!(a["poster"], "alice");
        assert!(a["link"].as_str().unwrap().starts_with("https://"));
        assert_eq!(a["votes"], 1);
        let posted_score = a["score"].as_i64().unwrap();
        // score = posted time (Unix s) + 432.
        assert_eq!(a["posted_at"], posted_text(posted_score, 1).as_str());
        let posted = posted_score - 432;
        assert_eq!(assert_consistent(&redis, "1").await, (1, posted + 432));

        // Another user's vote: votes 2, score posted + 864.
        let (s, v, _) = call(&store, &with_article(event("vote-vote"), "1")).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(
            v,
            json!({"article_id": "1", "votes": 2, "score": posted + 864, "direction": "up", "changed": true})
        );
        // A repeat and the poster's up-vote change nothing.
        let (s, v, _) = vote(&store, "1", "bob", "up").await;
        assert_eq!(
            (
                s,
                v["votes"].clone(),
                v["score"].clone(),
                v["changed"].clone()
            ),
            (200, json!(2), json!(posted + 864), json!(false))
        );
        let (s, v, _) = vote(&store, "1", "alice", "up").await;
        assert_eq!(
            (s, v["votes"].clone(), v["changed"].clone()),
            (200, json!(2), json!(false))
        );
        assert_eq!(assert_consistent(&redis, "1").await, (2, posted + 864));

        // Still open 604,790 s later (10 s of slack for the real time this test takes)...
        let late = store_at(&redis, ONE_WEEK_IN_SECONDS - 10);
        let (s, v, _) = vote(&late, "1", "carol", "up").await;
        assert_eq!(
            (s, v["votes"].clone(), v["changed"].clone()),
            (200, json!(3), json!(true)),
            "{v}"
        );
        // ...closed 604,801 s later: 410, and nothing changes (not even a rate-limit log).
        let closed = store_at(&redis, ONE_WEEK_IN_SECONDS + 1);
        let before = snapshot(&redis).await;
        for (user, dir) in [
            ("dave", "up"),
            ("bob", "down"),
            ("alice", "down"),
            ("carol", "up"),
        ] {
            let (s, v, _) = vote(&closed, "1", user, dir).await;
            assert_eq!(
                (s, v["error"].as_str()),
                (410, Some("voting_closed")),
                "{user}: {v}"
            );
            assert_eq!(
                (v["votes"].clone(), v["score"].clone()),
                (json!(3), json!(posted + 3 * 432))
            );
        }
        let voted = voting::vote(&closed, "1", "erin", Direction::Up)
            .await
            .unwrap();
        assert_eq!(
            voted,
            VoteOutcome::Closed {
                votes: 3,
                score: posted + 3 * 432
            }
        );
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend}: a closed vote changed data"
        );
        assert_eq!(assert_consistent(&redis, "1").await, (3, posted + 3 * 432));

        // The listing reports the same numbers.
        let (s, list) = page(&store, None, "").await;
        assert_eq!(
            (s, list["order"].clone(), list["page"].clone()),
            (200, json!("score"), json!(1))
        );
        let first = &list["articles"][0];
        assert_eq!(
            (first["article_id"].clone(), first["votes"].clone()),
            (json!("1"), json!(3))
        );
        assert_eq!(first["score"], posted + 3 * 432);
        assert_eq!(first["posted_at"], a["posted_at"]);
        assert_ttls(&redis).await;

        // A vote record gone inside the window (deleted, evicted) is a loud 500, never a second
        // vote for its earlier voters; nothing is written.
        post(&store, "alice", "lost record").await;
        let mut conn = redis.raw_conn().await;
        let keys = voting::SiteKeys::new("hb", "news");
        let _: i64 = redis::cmd("DEL")
            .arg(keys.voters(voting::ArticleId::parse("2").unwrap()))
            .query_async(&mut conn)
            .await
            .unwrap();
        let before = snapshot(&redis).await;
        let err = voting::vote(&store, "2", "bob", Direction::Up)
            .await
            .unwrap_err();
        assert!(matches!(err, hongbao::Error::Internal(_)), "{err:?}");
        let (s, e, _) = vote(&store, "2", "alice", "up").await;
        assert_eq!((s, e["error"].as_str()), (500, Some("internal")));
        assert_eq!(snapshot(&redis).await, before);
    }
}

/// Down-votes, switching, one vote per user (never both), the poster's down-vote, and a user
/// racing themself with 200 concurrent random votes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_votes_switches_and_never_both() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| c.voting.rate_limit = 0);
        let a = post(&store, "alice", "down-votes").await;
        let posted = a["score"].as_i64().unwrap() - 432;

        let steps = [
            // (user, direction, votes, changed)
            ("bob", "down", 0, true),
            ("bob", "down", 0, false),
            ("bob", "up", 2, true),
            ("bob", "up", 2, false),
            ("bob", "down", 0, true),
            // The poster may switch like anyone: their 1 becomes -1.
            ("alice", "down", -2, true),
            ("alice", "down", -2, false),
            ("carol", "down", -3, true),
            ("alice", "up", -1, true),
        ];
        for (user, dir, votes, changed) in steps {
            let (s, v, _) = vote(&store, "1", user, dir).await;
            assert_eq!(s, 200, "{v}");
            assert_eq!(
                (
                    v["votes"].as_i64(),
                    v["score"].as_i64(),
                    v["changed"].as_bool(),
                    v["direction"].as_str()
                ),
                (
                    Some(votes),
                    Some(posted + 432 * votes),
                    Some(changed),
                    Some(dir)
                ),
                "{backend} {user} {dir}"
            );
            assert_eq!(
                assert_consistent(&redis, "1").await,
                (votes, posted + 432 * votes)
            );
        }
        let (_, record, _, _) = stored(&redis, "1").await;
        assert_eq!(
            record,
            HashMap::from([
                ("alice".into(), 1),
                ("bob".into(), -1),
                ("carol".into(), -1)
            ])
        );

        // One user, 200 concurrent votes in random directions: one vote at the end, never both.
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let dir = if rand::random::<bool>() {
                        Direction::Up
                    } else {
                        Direction::Down
                    };
                    (
                        i,
                        dir,
                        voting::vote(&store, "1", "dave", dir).await.unwrap(),
                    )
                })
            })
            .collect();
        let mut changed = 0;
        for t in tasks {
            match t.await.unwrap() {
                (_, _, VoteOutcome::Voted { changed: c, .. }) => changed += usize::from(c),
                other => panic!("{other:?}"),
            }
        }
        assert!(changed >= 1);
        let (votes, _) = assert_consistent(&redis, "1").await;
        let (_, record, _, _) = stored(&redis, "1").await;
        assert_eq!(record.len(), 4);
        assert_eq!(votes, -1 + record["dave"]);
        assert_ttls(&redis).await;
    }
}

/// 500 concurrent distinct voters: exactly +500 × 432; 500 concurrent repeats: nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_voters() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let a = post(&store, "alice", "contention").await;
        let posted = a["score"].as_i64().unwrap() - 432;
        for round in 0..2 {
            let tasks: Vec<_> = (0..500)
                .map(|i| {
                    let store = store.clone();
                    tokio::spawn(async move {
                        voting::vote(&store, "1", &format!("voter-{i:03}"), Direction::Up)
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut changed = 0;
            for t in tasks {
                match t.await.unwrap() {
                    VoteOutcome::Voted { changed: c, .. } => changed += usize::from(c),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(
                changed,
                if round == 0 { 500 } else { 0 },
                "{backend} round {round}"
            );
            assert_eq!(
                assert_consistent(&redis, "1").await,
                (501, posted + 432 + 500 * 432)
            );
        }
        assert_ttls(&redis).await;
    }
}

/// 26 articles: pages of 25 then 1 then none, by score and by time, ties by higher id first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_twenty_five_in_a_documented_order() {
    for backend in Backend::ALL {
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

/// Groups: only members are listed, the cached ranking is stale for at most 60 s, unknown
/// groups are empty and write nothing, only the poster changes an article's groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_list_members_through_a_sixty_second_cache() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "a1").await; // 1
        post(&store, "alice", "a2").await; // 2
        post(&store, "bob", "b1").await; // 3

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
        let (s, g) = set_groups(
            &store,
            "2",
            "alice",
            json!({"add": ["rust"], "remove": ["python"]}),
        )
        .await;
        assert_eq!((s, g["groups"].clone()), (200, json!(["rust"])));
        // The fixtures: alice puts article 2 into "programming", bob lists that group.
        let (s, g, _) = call(&store, &with_article(event("vote-groups"), "2")).await;
        assert_eq!(
            (s, g["groups"].clone()),
            (200, json!(["programming", "rust"]))
        );
        let (s, p, _) = call(&store, &event("vote-group-articles")).await;
        assert_eq!((s, ids(&p)), (200, vec!["2".to_string()]));
        // Only the poster.
        let before = snapshot(&redis).await;
        let (s, e) = set_groups(&store, "1", "bob", json!({"remove": ["rust"]})).await;
        assert_eq!((s, e["error"].as_str()), (403, Some("forbidden")));
        assert_eq!(snapshot(&redis).await, before);

        // Only members, by score: votes put 2 above 1.
        assert_eq!(vote(&store, "2", "carol", "up").await.0, 200);
        let (s, p) = page(&store, Some("rust"), "").await;
        assert_eq!(
            (s, p["group"].clone(), p["order"].clone(), p["page"].clone()),
            (200, json!("rust"), json!("score"), json!(1))
        );
        assert_eq!(ids(&p), ["2", "1"]);
        let (_, p) = page(&store, Some("rust"), "order=time").await;
        assert_eq!(ids(&p), ["2", "1"]);
        let (_, p) = page(&store, Some("redis"), "").await;
        assert_eq!(ids(&p), ["1"]);

        // Changes after the cache was built: article 3 joins, article 1 overtakes 2.
        let (s, _) = set_groups(&store, "3", "bob", json!({"add": ["rust"]})).await;
        assert_eq!(s, 200);
        for u in ["dave", "erin"] {
            assert_eq!(vote(&store, "1", u, "up").await.0, 200);
        }
        // Stale (the cached membership and order), but never for 60 s or more.
        let (_, p) = page(&store, Some("rust"), "").await;
        assert_eq!(ids(&p), ["2", "1"], "{backend}: cached");
        assert_eq!(
            p["articles"][1]["votes"], 3,
            "the articles' own fields are current"
        );
        let (_, p) = page(&store_at(&redis, 50), Some("rust"), "").await;
        assert_eq!(ids(&p), ["2", "1"], "{backend}: still cached 50 s later");
        let (_, p) = page(&store_at(&redis, 61), Some("rust"), "").await;
        assert_eq!(ids(&p), ["1", "2", "3"], "{backend}: rebuilt 61 s later");
        let (_, p) = page(&store_at(&redis, 61), Some("rust"), "order=time").await;
        assert_eq!(ids(&p), ["3", "2", "1"]);

        // Removing is seen once the (new) cache is 60 s old.
        let (s, g) = set_groups(&store, "1", "alice", json!({"remove": ["rust"]})).await;
        assert_eq!((s, g["groups"].clone()), (200, json!(["redis"])));
        let (_, p) = page(&store_at(&redis, 61), Some("rust"), "").await;
        assert_eq!(ids(&p), ["1", "2", "3"]);
        let (_, p) = page(&store_at(&redis, 122), Some("rust"), "").await;
        assert_eq!(ids(&p), ["2", "3"]);
        let (_, p) = page(&store_at(&redis, 122), Some("rust"), "page=2").await;
        assert_eq!(ids(&p), Vec::<String>::new());

        // An unknown group: an empty list, nothing written.
        let before = snapshot(&redis).await;
        let (s, p) = page(&store, Some("nobody-posts-here"), "order=time").await;
        assert_eq!((s, p["articles"].clone()), (200, json!([])));
        assert_eq!(snapshot(&redis).await, before);
        // An empty body changes nothing and answers the groups.
        let (s, g) = set_groups(&store, "1", "alice", json!({})).await;
        assert_eq!((s, g["groups"].clone()), (200, json!(["redis"])));
        assert_ttls(&redis).await;
    }
}

/// Per-user vote rate limit: 429 with Retry-After, nothing written, lifted after the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_are_rate_limited_per_user() {
    for backend in Backend::ALL {
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

/// Bad inputs (a table): 400 (401, 404, 405 where due) and nothing written; unknown articles
/// create no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_refused_and_write_nothing() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "existing").await;
        let post_ev = |body: &str| with_body(event("vote-post-article"), body);
        let vote_ev = |id: &str, body: &str| with_body(with_article(event("vote-vote"), id), body);
        let groups_ev =
            |id: &str, body: &str| with_body(with_article(event("vote-groups"), id), body);
        let list_ev = |q: &str| with_query(event("vote-list"), q);
        let group_ev =
            |g: &str, q: &str| with_query(with_group(event("vote-group-articles"), g), q);
        let long_title = "t".repeat(201);
        let long_link = format!("https://example.com/{}", "a".repeat(2029));
        let cases: Vec<(&str, Value, u16, &str)> = vec![
            ("empty body", post_ev(""), 400, "invalid_request"),
            (
                "malformed JSON",
                post_ev(r#"{"title":"#),
                400,
                "invalid_request",
            ),
            ("JSON array", post_ev("[]"), 400, "invalid_request"),
            (
                "unknown field",
                post_ev(r#"{"title":"t","link":"http://a.b","tags":[]}"#),
                400,
                "invalid_request",
            ),
            (
                "missing link",
                post_ev(r#"{"title":"t"}"#),
                400,
                "invalid_request",
            ),
            (
                "missing title",
                post_ev(r#"{"link":"http://a.b"}"#),
                400,
                "invalid_request",
            ),
            (
                "empty title",
                post_ev(r#"{"title":"","link":"http://a.b"}"#),
                400,
                "invalid_request",
            ),
            (
                "blank title",
                post_ev(r#"{"title":"  ","link":"http://a.b"}"#),
                400,
                "invalid_request",
            ),
            (
                "title of 201 chars",
                post_ev(&format!(
                    r#"{{"title":"{long_title}","link":"http://a.b"}}"#
                )),
                400,
                "invalid_request",
            ),
            (
                "control char in title",
                post_ev(r#"{"title":"a\nb","link":"http://a.b"}"#),
                400,
                "invalid_request",
            ),
            (
                "title not a string",
                post_ev(r#"{"title":5,"link":"http://a.b"}"#),
                400,
                "invalid_request",
            ),
            (
                "ftp link",
                post_ev(r#"{"title":"t","link":"ftp://a.b/"}"#),
                400,
                "invalid_request",
            ),
            (
                "javascript link",
                post_ev(r#"{"title":"t","link":"javascript:alert(1)"}"#),
                400,
                "invalid_request",
            ),
            (
                "link without host",
                post_ev(r#"{"title":"t","link":"http://"}"#),
                400,
                "invalid_request",
            ),
            (
                "link with a space",
                post_ev(r#"{"title":"t","link":"http://a.b/c d"}"#),
                400,
                "invalid_request",
            ),
            (
                "link with user info",
                post_ev(r#"{"title":"t","link":"http://bank.com@evil.com/"}"#),
                400,
                "invalid_request",
            ),
            (
                "link of 2049 chars",
                post_ev(&format!(r#"{{"title":"t","link":"{long_link}"}}"#)),
                400,
                "invalid_request",
            ),
            (
                "vote: bad direction",
                vote_ev("1", r#"{"direction":"sideways"}"#),
                400,
                "invalid_request",
            ),
            (
                "vote: no direction",
                vote_ev("1", "{}"),
                400,
                "invalid_request",
            ),
            (
                "vote: direction as number",
                vote_ev("1", r#"{"direction":1}"#),
                400,
                "invalid_request",
            ),
            (
                "vote: unknown field",
                vote_ev("1", r#"{"direction":"up","weight":2}"#),
                400,
                "invalid_request",
            ),
            ("vote: empty body", vote_ev("1", ""), 400, "invalid_request"),
            (
                "vote: unknown article",
                vote_ev("2", r#"{"direction":"up"}"#),
                404,
                "not_found",
            ),
            (
                "vote: huge id",
                vote_ev("999999999999", r#"{"direction":"down"}"#),
                404,
                "not_found",
            ),
            (
                "vote: id 0",
                vote_ev("0", r#"{"direction":"up"}"#),
                404,
                "not_found",
            ),
            (
                "vote: leading zero",
                vote_ev("01", r#"{"direction":"up"}"#),
                404,
                "not_found",
            ),
            (
                "vote: not a number",
                vote_ev("abc", r#"{"direction":"up"}"#),
                404,
                "not_found",
            ),
            (
                "vote: without JWT",
                without_auth(vote_ev("1", r#"{"direction":"up"}"#)),
                401,
                "unauthorized",
            ),
            (
                "list: bad order",
                list_ev("order=hot"),
                400,
                "invalid_request",
            ),
            ("list: page 0", list_ev("page=0"), 400, "invalid_request"),
            (
                "list: negative page",
                list_ev("page=-1"),
                400,
                "invalid_request",
            ),
            (
                "list: fractional page",
                list_ev("page=1.5"),
                400,
                "invalid_request",
            ),
            (
                "list: page too big",
                list_ev("page=100001"),
                400,
                "invalid_request",
            ),
            (
                "list: page twice",
                list_ev("page=1&page=2"),
                400,
                "invalid_request",
            ),
            (
                "list: unknown parameter",
                list_ev("sort=score"),
                400,
                "invalid_request",
            ),
            (
                "list: without JWT",
                without_auth(list_ev("")),
                401,
                "unauthorized",
            ),
            (
                "list: wrong method",
                with_method(list_ev(""), "DELETE"),
                405,
                "method_not_allowed",
            ),
            (
                "groups: uppercase",
                groups_ev("1", r#"{"add":["Rust"]}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: empty name",
                groups_ev("1", r#"{"add":[""]}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: 33 chars",
                groups_ev("1", &format!(r#"{{"add":["{}"]}}"#, "g".repeat(33))),
                400,
                "invalid_request",
            ),
            (
                "groups: space",
                groups_ev("1", r#"{"remove":["a b"]}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: add and remove",
                groups_ev("1", r#"{"add":["x"],"remove":["x"]}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: not a list",
                groups_ev("1", r#"{"add":"x"}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: unknown field",
                groups_ev("1", r#"{"set":["x"]}"#),
                400,
                "invalid_request",
            ),
            (
                "groups: too many",
                groups_ev(
                    "1",
                    &json!({"add": (0..33).map(|i| format!("g{i}")).collect::<Vec<_>>()})
                        .to_string(),
                ),
                400,
                "invalid_request",
            ),
            (
                "groups: unknown article",
                groups_ev("2", r#"{"add":["x"]}"#),
                404,
                "not_found",
            ),
            (
                "groups: not the poster",
                with_sub(groups_ev("1", r#"{"add":["x"]}"#), "bob"),
                403,
                "forbidden",
            ),
            (
                "groups: wrong method",
                with_method(groups_ev("1", r#"{"add":["x"]}"#), "POST"),
                405,
                "method_not_allowed",
            ),
            (
                "group page: bad name",
                group_ev("Rust", ""),
                400,
                "invalid_request",
            ),
            (
                "group page: bad order",
                group_ev("rust", "order=new"),
                400,
                "invalid_request",
            ),
            (
                "group page: page 0",
                group_ev("rust", "page=0"),
                400,
                "invalid_request",
            ),
        ];
        let before = snapshot(&redis).await;
        assert!(!before.is_empty());
        for (name, ev, status, code) in cases {
            let (s, body, _) = call(&store, &ev).await;
            assert_eq!(
                (s, body["error"].as_str()),
                (status, Some(code)),
                "{backend} {name}: {body}"
            );
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}"
            );
            if status == 405 {
                let allow = body["allow"].as_str().unwrap();
                assert!(allow == "GET, POST" || allow == "PUT", "{name}: {allow}");
            }
            assert_eq!(
                snapshot(&redis).await,
                before,
                "{backend} {name} changed the data"
            );
        }
        // A well-formed request of each read route works on the same data.
        assert_eq!(call(&store, &event("vote-list")).await.0, 200);
        assert_eq!(call(&store, &event("vote-group-articles")).await.0, 200);
    }
}

/// A sandbox that has voted on an article remembers its poster (`store/voting/posters.rs`):
/// its next votes check the vote record alone, which lives exactly while voting is open
/// (`PEXPIRETIME` = the deadline in ms - 1), and read neither the article nor Redis `TIME`. A
/// record gone inside the window is still an error, not a second vote; a remembered poster
/// that no longer matches (the site's data replaced, the id reused) falls back to reading the
/// article, and the sandbox learns the new poster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_that_knows_the_poster_votes_from_the_record_alone() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let id = post(&store, "alice", "t").await["article_id"]
            .as_str()
            .unwrap()
            .to_string();
        let (votes, _) = assert_consistent(&redis, &id).await;
        assert_eq!(votes, 1);
        let (hash, ..) = stored(&redis, &id).await;
        let posted: i64 = hash["posted_at"].parse().unwrap();
        let keys = voting::SiteKeys::new("hb", "news");
        let article = voting::ArticleId::parse(&id).unwrap();
        let mut conn = redis.raw_conn().await;
        let expires_ms: i64 = redis::cmd("PEXPIRETIME")
            .arg(keys.voters(article))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(expires_ms, (posted + ONE_WEEK_IN_SECONDS) * 1000 - 1);

        // The first vote reads the article and learns its poster; the next ones do not.
        let up = |user: &'static str| {
            let store = store.clone();
            let id = id.clone();
            async move { voting::vote(&store, &id, user, Direction::Up).await }
        };
        assert!(matches!(
            up("bob").await.unwrap(),
            VoteOutcome::Voted {
                votes: 2,
                changed: true,
                ..
            }
        ));
        common::reset_stats(&redis).await;
        assert!(matches!(
            up("carol").await.unwrap(),
            VoteOutcome::Voted {
                votes: 3,
                changed: true,
                ..
            }
        ));
        assert!(matches!(
            up("carol").await.unwrap(),
            VoteOutcome::Voted {
                votes: 3,
                changed: false,
                ..
            }
        ));
        assert_eq!(
            voting::vote(&store, &id, "bob", Direction::Down)
                .await
                .unwrap(),
            VoteOutcome::Voted {
                votes: 1,
                score: posted + VOTE_SCORE,
                changed: true
            }
        );
        assert_eq!(
            (
                common::command_calls(&redis, "time").await,
                common::command_calls(&redis, "hmget").await
            ),
            (0, 3),
            "{backend:?}: three votes, each one HMGET of the record"
        );
        assert_consistent(&redis, &id).await;
        // After the deadline another sandbox (the test clock) finds voting closed.
        let later = store_at(&redis, ONE_WEEK_IN_SECONDS + 1);
        assert!(matches!(
            voting::vote(&later, &id, "dave", Direction::Up)
                .await
                .unwrap(),
            VoteOutcome::Closed { votes: 1, .. }
        ));
        // The record gone inside the window: an error, whoever asks.
        let before = snapshot(&redis).await;
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(keys.voters(article))
            .arg(1)
            .query_async(&mut conn)
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let after_loss = snapshot(&redis).await;
        assert!(voting::vote(&store, &id, "erin", Direction::Up)
            .await
            .is_err());
        assert_eq!(snapshot(&redis).await, after_loss, "nothing written");
        assert_ne!(before, after_loss);

        // The site's data replaced: article 1 again, by another poster.
        redis.flushall().await;
        let again = post(&store, "frank", "t2").await;
        assert_eq!(again["article_id"], json!(id));
        assert!(matches!(
            up("bob").await.unwrap(),
            VoteOutcome::Voted {
                votes: 2,
                changed: true,
                ..
            }
        ));
        common::reset_stats(&redis).await;
        assert!(matches!(
            up("carol").await.unwrap(),
            VoteOutcome::Voted {
                votes: 3,
                changed: true,
                ..
            }
        ));
        assert_eq!(
            common::command_calls(&redis, "time").await,
            0,
            "{backend:?}: frank learnt"
        );
        assert_consistent(&redis, &id).await;
    }
}
