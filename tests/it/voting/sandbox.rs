//! A sandbox's remembered posters: votes checked from the vote record alone.

use harness::{Backend, TestRedis};
use hongbao::voting::{self, Direction, VoteOutcome, ONE_WEEK_IN_SECONDS, VOTE_SCORE};
use serde_json::json;

use super::{assert_consistent, post, store_at, stored};
use crate::common::{self, snapshot};

/// A sandbox that has voted on an article remembers its poster (`store/voting/posters.rs`):
/// its next votes check the vote record alone, which lives exactly while voting is open
/// (`PEXPIRETIME` = the deadline in ms - 1), and read neither the article nor Redis `TIME`. A
/// record gone inside the window is still an error, not a second vote; a remembered poster
/// that no longer matches (the site's data replaced, the id reused) falls back to reading the
/// article, and the sandbox learns the new poster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_that_knows_the_poster_votes_from_the_record_alone() {
    for backend in Backend::all() {
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
