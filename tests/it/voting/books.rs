//! The books' numbers: votes, scores, down-votes and switches, the one-week window, and
//! concurrent voters.

use std::collections::HashMap;

use harness::{Backend, TestRedis};
use hongbao::voting::{self, Direction, VoteOutcome, ONE_WEEK_IN_SECONDS};
use serde_json::json;

use super::{
    assert_consistent, assert_ttls, call, page, post, posted_text, store_at, stored, vote,
    with_article,
};
use crate::common::{self, event, snapshot};

/// The reference's numbers, the poster's vote, the one-week window by the Redis clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_books_numbers_and_the_one_week_window() {
    for backend in Backend::all() {
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
    for backend in Backend::all() {
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
    for backend in Backend::all() {
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
