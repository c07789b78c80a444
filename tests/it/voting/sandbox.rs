//! A sandbox's remembered posters: votes checked from the vote record alone.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::voting::{self, Direction, VoteOutcome, ONE_WEEK_IN_SECONDS, VOTE_SCORE};
use hongbao::Store;
use serde_json::json;

use super::{assert_consistent, post, store_at, stored};
use crate::common::{self, snapshot};

/// alice's article: (its id, its posting time, Unix s).
async fn alices_article(redis: &TestRedis, store: &Arc<Store>) -> (String, i64) {
    let id = post(store, "alice", "t").await["article_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (hash, ..) = stored(redis, &id).await;
    (id, hash["posted_at"].parse().unwrap())
}

/// `user`'s up-vote on article `id`.
async fn up(store: &Arc<Store>, id: &str, user: &str) -> VoteOutcome {
    voting::vote(store, id, user, Direction::Up).await.unwrap()
}

/// The article's vote record, its key.
fn voters(id: &str) -> String {
    voting::SiteKeys::new("hb", "news").voters(voting::ArticleId::parse(id).unwrap())
}

/// Test: the vote record lives exactly while voting is open (`PEXPIRETIME` = the deadline in
/// ms - 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vote_record_lives_exactly_while_voting_is_open() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (id, posted) = alices_article(&redis, &store).await;

        let mut conn = redis.raw_conn().await;
        let expires_ms: i64 = redis::cmd("PEXPIRETIME")
            .arg(voters(&id))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            expires_ms,
            (posted + ONE_WEEK_IN_SECONDS) * 1000 - 1,
            "{backend:?}"
        );
    }
}

/// Test: a sandbox that has voted on an article remembers its poster
/// (`shared/src/voting/vote/memory.rs`): its next votes read the vote record alone, one
/// `HMGET` each, neither the article nor Redis `TIME`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_that_knows_the_poster_votes_from_the_record_alone() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (id, posted) = alices_article(&redis, &store).await;
        assert!(matches!(
            up(&store, &id, "bob").await,
            VoteOutcome::Voted { votes: 2, .. }
        ));
        common::reset_stats(&redis).await;

        let carol = up(&store, &id, "carol").await;
        let again = up(&store, &id, "carol").await;
        let down = voting::vote(&store, &id, "bob", Direction::Down)
            .await
            .unwrap();

        assert!(matches!(
            carol,
            VoteOutcome::Voted {
                votes: 3,
                changed: true,
                ..
            }
        ));
        assert!(matches!(
            again,
            VoteOutcome::Voted {
                votes: 3,
                changed: false,
                ..
            }
        ));
        let want = VoteOutcome::Voted {
            votes: 1,
            score: posted + VOTE_SCORE,
            changed: true,
        };
        assert_eq!(down, want, "{backend:?}");
        let reads = (
            common::command_calls(&redis, "time").await,
            common::command_calls(&redis, "hmget").await,
        );
        assert_eq!(
            reads,
            (0, 3),
            "{backend:?}: three votes, each one HMGET of the record"
        );
        assert_consistent(&redis, &id).await;
    }
}

/// Test: after the deadline another sandbox (the test clock) finds voting closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_deadline_voting_is_closed() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let (id, _) = alices_article(&redis, &store).await;
    up(&store, &id, "bob").await;

    let later = store_at(&redis, ONE_WEEK_IN_SECONDS + 1);

    assert!(matches!(
        up(&later, &id, "dave").await,
        VoteOutcome::Closed { votes: 2, .. }
    ));
}

/// Test: the record gone inside the window is an error, not a second vote, and nothing is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_gone_inside_the_window_is_an_error_writing_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (id, _) = alices_article(&redis, &store).await;
        up(&store, &id, "bob").await;
        let mut conn = redis.raw_conn().await;
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(voters(&id))
            .arg(1)
            .query_async(&mut conn)
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let after_loss = snapshot(&redis).await;

        let voted = voting::vote(&store, &id, "erin", Direction::Up).await;

        assert!(voted.is_err(), "{backend:?}: {voted:?}");
        assert_eq!(
            snapshot(&redis).await,
            after_loss,
            "{backend:?}: nothing written"
        );
    }
}

/// Test: a remembered poster that no longer matches (the site's data replaced, the id
/// reused) falls back to reading the article, and the sandbox learns the new poster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poster_that_no_longer_matches_is_learnt_again() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let (id, _) = alices_article(&redis, &store).await;
        up(&store, &id, "bob").await;
        redis.flushall().await;
        assert_eq!(post(&store, "frank", "t2").await["article_id"], json!(id));

        let bob = up(&store, &id, "bob").await;
        common::reset_stats(&redis).await;
        let carol = up(&store, &id, "carol").await;

        assert!(
            matches!(
                bob,
                VoteOutcome::Voted {
                    votes: 2,
                    changed: true,
                    ..
                }
            ),
            "{bob:?}"
        );
        assert!(
            matches!(
                carol,
                VoteOutcome::Voted {
                    votes: 3,
                    changed: true,
                    ..
                }
            ),
            "{carol:?}"
        );
        assert_eq!(
            common::command_calls(&redis, "time").await,
            0,
            "{backend:?}: frank learnt"
        );
        assert_consistent(&redis, &id).await;
    }
}
