//! The re-run checker's votes: `vote.lua`. Three users vote up and down on one article
//! (its poster's own vote stands), each call with its own call id; earlier calls are re-sent at
//! random later points, often after the same user voted otherwise. A re-sent vote must answer
//! its first answer (`changed:` or `unchanged:`, with the counts of then) and write nothing: no
//! vote switched back, no count moved. The model: each user's vote; after every step the
//! article's `votes` are the poster's 1 plus the users' votes, and the vote record holds each
//! user's vote.

use std::collections::BTreeMap;

use harness::{Backend, TestRedis};
use hongbao::domain::resend::CALL_KEEP_MS;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{text, Call, VoteCall};
use hongbao::voting::{self, ArticleId, Order, SiteKeys};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{post_article, rerun_one, seed, sequences, Entity, Sent, Trace};

/// One vote: `user`'s up-vote (`up`) or down-vote.
#[derive(Debug, Clone)]
struct Op {
    user: String,
    up: bool,
}

impl Op {
    fn direction(&self) -> &'static str {
        if self.up {
            "1"
        } else {
            "-1"
        }
    }
}

/// The article of one sequence and the site's keys.
struct Article {
    id: ArticleId,
    site: SiteKeys,
}

impl Entity for Article {
    type Op = Op;

    /// The script's `KEYS` (the article is in no group).
    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        vec![
            self.site.article(self.id),
            self.site.voters(self.id),
            self.site.ranking(Order::Score),
            self.site.vote_rate(&op.user),
            self.site.article_groups(self.id),
            Keys::call_answer(&self.site.voters(self.id), call),
        ]
    }

    /// The script's answer, as `voting::vote` sends it but unlimited (no rate limit) and with
    /// the sequence's call id.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let cfg = store.config();
        let keys = self.keys_of(op, call);
        let reply = VoteCall {
            article: &keys[0],
            voters: &keys[1],
            score: &keys[2],
            rate: &keys[3],
            article_groups: &keys[4],
            call_answer: &keys[5],
            group_scores: &[],
            user_id: &op.user,
            direction: if op.up { 1 } else { -1 },
            member: &self.id.member(),
            rate_limit: 0,
            rate_window_ms: cfg.voting.rate_window_ms,
            voting_window_secs: voting::ONE_WEEK_IN_SECONDS,
            vote_score: voting::VOTE_SCORE,
            clock_offset_secs: 0,
            poster: "",
            call_keep_ms: CALL_KEEP_MS,
            group_names: &[],
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        text("vote", reply).unwrap()
    }
}

/// Test: the re-run checker over votes, on standalone and on the 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vote_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(200);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = crate::common::store(&redis, |_| {});
        let mut rng = StdRng::seed_from_u64(seed ^ 0x0707e ^ backend as u64);
        for sequence in 0..n {
            let article = post(&store, &format!("poster-{sequence}")).await;
            let mut votes: BTreeMap<String, &'static str> = BTreeMap::new();
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            for step in 0..rng.random_range(6..=20) {
                let op = Op {
                    user: format!("voter-{}", rng.random_range(0..3)),
                    up: rng.random_bool(0.5),
                };
                let call = format!("{sequence:08x}{step:08x}");
                let answer = article.send(&store, &op, &call).await;
                trace.push(format!("{op:?} call {call} -> {answer}"));
                let kind = match votes.insert(op.user.clone(), op.direction()) {
                    Some(before) if before == op.direction() => "unchanged",
                    _ => "changed",
                };
                let total: i64 = 1 + votes
                    .values()
                    .map(|d| d.parse::<i64>().unwrap())
                    .sum::<i64>();
                if !answer.starts_with(&format!("{kind}:{total}:")) {
                    trace.fail(format!("the model expected {kind}:{total}:…"));
                }
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    let same = |(_, _, first): &Sent<Op>, again: &str| again == first;
                    rerun_one(&article, &store, &sent, &mut rng, &mut trace, same).await;
                }
                check(&store, &article, &votes, &trace).await;
            }
        }
    }
}

/// Posts an article by `poster`.
async fn post(store: &Store, poster: &str) -> Article {
    Article {
        id: post_article(store, poster).await,
        site: SiteKeys::of(store.config()),
    }
}

/// Fails the sequence unless the article's votes and its vote record are the model's.
async fn check(
    store: &Store,
    article: &Article,
    votes: &BTreeMap<String, &'static str>,
    trace: &Trace,
) {
    let mut conn = store.conn().await.unwrap();
    let total: i64 = redis::cmd("HGET")
        .arg(article.site.article(article.id))
        .arg("votes")
        .query_async(&mut conn)
        .await
        .unwrap();
    let want = 1 + votes
        .values()
        .map(|d| d.parse::<i64>().unwrap())
        .sum::<i64>();
    if total != want {
        trace.fail(format!("votes {total}, the model {want}"));
    }
    for (user, direction) in votes {
        let held: Option<String> = redis::cmd("HGET")
            .arg(article.site.voters(article.id))
            .arg(user)
            .query_async(&mut conn)
            .await
            .unwrap();
        if held.as_deref() != Some(*direction) {
            trace.fail(format!("{user} holds {held:?}, the model {direction}"));
        }
    }
}
