//! The books' numbers: votes, scores, down-votes and switches, the one-week window, and
//! concurrent voters.

use std::collections::HashMap;
use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::voting::{self, Direction, VoteOutcome, ONE_WEEK_IN_SECONDS};
use hongbao::Store;
use serde_json::{json, Value};

use super::{
    assert_consistent, assert_ttls, call, page, post, posted_text, store_at, stored, vote,
    with_article,
};
use crate::common::{self, event, snapshot};

/// alice posts the fixture's article (id 1); (its answer, the posting time, Unix s).
async fn posted(store: &Arc<Store>) -> (Value, i64) {
    let (s, a, _) = call(store, &event("vote-post-article")).await;
    assert_eq!(s, 201, "{a}");
    let posted = a["score"].as_i64().unwrap() - 432;
    (a, posted)
}

/// Test: a posted article has the poster's vote and scores its posting time + 432 (the
/// reference's numbers), its records consistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_article_scores_its_time_plus_432() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (a, posted) = posted(&store).await;

        let fields = (&a["article_id"], &a["title"], &a["poster"], &a["votes"]);
        let want = (
            &json!("1"),
            &json!("Go To Statement Considered Harmful"),
            &json!("alice"),
            &json!(1),
        );
        assert_eq!(fields, want, "{backend}");
        assert!(a["link"].as_str().unwrap().starts_with("https://"));
        assert_eq!(a["posted_at"], posted_text(posted + 432, 1).as_str());
        assert_eq!(assert_consistent(&redis, "1").await, (1, posted + 432));
    }
}

/// Test: another user's vote adds a vote and 432 to the score.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_vote_adds_432() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (_, posted) = posted(&store).await;

        let (s, v, _) = call(&store, &with_article(event("vote-vote"), "1")).await;

        let want = json!({"article_id": "1", "votes": 2, "score": posted + 864, "direction": "up",
                          "changed": true});
        assert_eq!((s, v), (200, want), "{backend}");
        assert_eq!(assert_consistent(&redis, "1").await, (2, posted + 864));
    }
}

/// Test: a repeated vote and the poster's own up-vote change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_and_the_posters_up_vote_change_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (_, posted) = posted(&store).await;
        assert_eq!(vote(&store, "1", "bob", "up").await.0, 200);

        let (_, repeat, _) = vote(&store, "1", "bob", "up").await;
        let (_, own, _) = vote(&store, "1", "alice", "up").await;

        for v in [repeat, own] {
            let got = (v["votes"].clone(), v["score"].clone(), v["changed"].clone());
            assert_eq!(
                got,
                (json!(2), json!(posted + 864), json!(false)),
                "{backend}: {v}"
            );
        }
        assert_eq!(assert_consistent(&redis, "1").await, (2, posted + 864));
    }
}

/// Test: a vote 604,790 s after the posting counts (10 s of slack for the test's real time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_within_the_week_counts() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    posted(&store).await;

    let late = store_at(&redis, ONE_WEEK_IN_SECONDS - 10);
    let (s, v, _) = vote(&late, "1", "carol", "up").await;

    assert_eq!(
        (s, v["votes"].clone(), v["changed"].clone()),
        (200, json!(2), json!(true)),
        "{v}"
    );
}

/// Test: 604,801 s after the posting every vote is 410 `voting_closed` with the article's
/// numbers, and nothing is written (not even a rate-limit log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vote_after_the_week_is_closed_and_writes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (_, posted) = posted(&store).await;
        assert_eq!(vote(&store, "1", "bob", "up").await.0, 200);
        let closed = store_at(&redis, ONE_WEEK_IN_SECONDS + 1);
        let before = snapshot(&redis).await;

        for (user, dir) in [("dave", "up"), ("bob", "down"), ("alice", "down")] {
            let (s, v, _) = vote(&closed, "1", user, dir).await;
            let got = (
                s,
                v["error"].as_str(),
                v["votes"].clone(),
                v["score"].clone(),
            );
            assert_eq!(
                got,
                (410, Some("voting_closed"), json!(2), json!(posted + 864)),
                "{user}"
            );
        }
        let voted = voting::vote(&closed, "1", "erin", Direction::Up)
            .await
            .unwrap();

        assert_eq!(
            voted,
            VoteOutcome::Closed {
                votes: 2,
                score: posted + 864
            }
        );
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend}: a closed vote changed data"
        );
    }
}

/// Test: the listing reports the article's numbers, and every key has its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_reports_the_same_numbers() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (a, posted) = posted(&store).await;
        assert_eq!(vote(&store, "1", "bob", "up").await.0, 200);

        let (s, list) = page(&store, None, "").await;

        assert_eq!(
            (s, &list["order"], &list["page"]),
            (200, &json!("score"), &json!(1))
        );
        let first = &list["articles"][0];
        let got = (
            &first["article_id"],
            &first["votes"],
            &first["score"],
            &first["posted_at"],
        );
        assert_eq!(
            got,
            (
                &json!("1"),
                &json!(2),
                &json!(posted + 864),
                &a["posted_at"]
            ),
            "{backend}"
        );
        assert_ttls(&redis).await;
    }
}

/// Test: a vote record gone inside the window (deleted, evicted) is a loud 500, never a
/// second vote for its earlier voters; nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_vote_record_is_a_500_writing_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "lost record").await;
        let keys = voting::SiteKeys::new("hb", "news");
        let voters = keys.voters(voting::ArticleId::parse("1").unwrap());
        let _: i64 = redis::cmd("DEL")
            .arg(voters)
            .query_async(&mut redis.raw_conn().await)
            .await
            .unwrap();
        let before = snapshot(&redis).await;

        let err = voting::vote(&store, "1", "bob", Direction::Up)
            .await
            .unwrap_err();
        let (s, e, _) = vote(&store, "1", "alice", "up").await;

        assert!(matches!(err, hongbao::Error::Internal(_)), "{err:?}");
        assert_eq!(
            (s, e["error"].as_str()),
            (500, Some("internal")),
            "{backend}"
        );
        assert_eq!(snapshot(&redis).await, before, "{backend}");
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
