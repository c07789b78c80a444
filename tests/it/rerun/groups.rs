//! The re-run checker's article groups: `article_groups.lua`. The poster adds its article to
//! groups and removes it from others (three groups, at most two at once), each call with its own
//! call id; earlier calls are re-sent at random later points, often after a later change. A
//! re-sent change must answer its first answer (the groups of then, or `too_many_groups`) and
//! write nothing: no group joined or left again. The model: the article's groups; after every
//! step the article's set of groups and each group's set are the model's.

use std::collections::BTreeSet;

use harness::{Backend, TestRedis};
use hongbao::domain::resend::CALL_KEEP_MS;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{texts, ArticleGroupsCall, Call};
use hongbao::voting::{ArticleId, Order, SiteKeys};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{post_article, rerun_one, seed, sequences, Entity, Sent, Trace};

/// The groups a sequence draws from.
const GROUPS: [&str; 3] = ["g-a", "g-b", "g-c"];

/// The most groups the article may be in.
const MAX_GROUPS: u32 = 2;

/// One change: groups to add, then groups to remove (disjoint).
#[derive(Debug, Clone)]
struct Op {
    add: Vec<&'static str>,
    remove: Vec<&'static str>,
}

impl Op {
    fn names(&self) -> Vec<&'static str> {
        self.add.iter().chain(&self.remove).copied().collect()
    }
}

/// The poster's article of one sequence and the site's keys.
struct Article {
    id: ArticleId,
    poster: String,
    site: SiteKeys,
}

impl Entity for Article {
    type Op = Op;

    /// The script's `KEYS`: the article's, the call's answer, then each named group's set and
    /// rankings.
    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        let mut keys = vec![
            self.site.article(self.id),
            self.site.article_groups(self.id),
            self.site.ranking(Order::Score),
            self.site.ranking(Order::Time),
            Keys::call_answer(&self.site.article_groups(self.id), call),
        ];
        let names = op.names();
        keys.extend(names.iter().map(|g| self.site.group(g)));
        keys.extend(
            names
                .iter()
                .map(|g| self.site.group_ranking(Order::Score, g)),
        );
        keys.extend(
            names
                .iter()
                .map(|g| self.site.group_ranking(Order::Time, g)),
        );
        keys
    }

    /// The script's answer items joined by `:`, as `voting::set_groups` sends the change but
    /// with the sequence's call id.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let keys = self.keys_of(op, call);
        let g = op.names().len();
        let reply = ArticleGroupsCall {
            article: &keys[0],
            article_groups: &keys[1],
            score: &keys[2],
            time: &keys[3],
            call_answer: &keys[4],
            group_sets: &keys[5..5 + g],
            group_scores: &keys[5 + g..5 + 2 * g],
            group_times: &keys[5 + 2 * g..],
            user_id: &self.poster,
            member: &self.id.member(),
            call_keep_ms: CALL_KEEP_MS,
            adds: op.add.len(),
            group_names: &op.names(),
            max_groups: MAX_GROUPS,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        texts("article_groups", reply).unwrap().join(":")
    }
}

/// A change of one or two distinct groups, each added or removed.
fn draw(rng: &mut StdRng) -> Op {
    let mut op = Op {
        add: Vec::new(),
        remove: Vec::new(),
    };
    let first = rng.random_range(0..GROUPS.len());
    let mut names = vec![GROUPS[first]];
    if rng.random_bool(0.4) {
        names.push(GROUPS[(first + 1 + rng.random_range(0..2)) % GROUPS.len()]);
    }
    for name in names {
        if rng.random_bool(0.6) {
            op.add.push(name);
        } else {
            op.remove.push(name);
        }
    }
    op
}

/// The model's answer to `op` on groups `now`, and the groups after it.
fn apply(now: &BTreeSet<&'static str>, op: &Op) -> (String, BTreeSet<&'static str>) {
    let mut after = now.clone();
    let mut added = false;
    for g in &op.add {
        added |= after.insert(g);
    }
    for g in &op.remove {
        after.remove(g);
    }
    if added && after.len() > MAX_GROUPS as usize {
        return (format!("too_many_groups:{}", now.len()), now.clone());
    }
    ("ok".into(), after)
}

/// Test: the re-run checker over article groups, on standalone and on the 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(200);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = crate::common::store(&redis, |_| {});
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6a0f ^ backend as u64);
        for sequence in 0..n {
            let article = post(&store, &format!("poster-{sequence}")).await;
            let mut groups: BTreeSet<&'static str> = BTreeSet::new();
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            for step in 0..rng.random_range(6..=20) {
                let op = draw(&mut rng);
                let call = format!("{sequence:08x}{step:08x}");
                let answer = article.send(&store, &op, &call).await;
                trace.push(format!("{op:?} call {call} -> {answer}"));
                let (expected, after) = apply(&groups, &op);
                let got: BTreeSet<&str> = answer.split(':').skip(1).collect();
                let matches = match expected.as_str() {
                    "ok" => answer.starts_with("ok") && got == after,
                    refusal => answer == refusal,
                };
                if !matches {
                    trace.fail(format!("the model expected {expected} {after:?}"));
                }
                groups = after;
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    let same = |(_, _, first): &Sent<Op>, again: &str| again == first;
                    rerun_one(&article, &store, &sent, &mut rng, &mut trace, same).await;
                }
                check(&store, &article, &groups, &trace).await;
            }
        }
    }
}

/// Posts an article by `poster`.
async fn post(store: &Store, poster: &str) -> Article {
    Article {
        id: post_article(store, poster).await,
        poster: poster.to_string(),
        site: SiteKeys::of(store.config()),
    }
}

/// Fails the sequence unless the article's groups, and each group's members, are the model's.
async fn check(store: &Store, article: &Article, groups: &BTreeSet<&'static str>, trace: &Trace) {
    let mut conn = store.conn().await.unwrap();
    let held: BTreeSet<String> = redis::cmd("SMEMBERS")
        .arg(article.site.article_groups(article.id))
        .query_async(&mut conn)
        .await
        .unwrap();
    let want: BTreeSet<String> = groups.iter().map(|g| g.to_string()).collect();
    if held != want {
        trace.fail(format!("the article is in {held:?}, the model {want:?}"));
    }
    for g in GROUPS {
        let member: bool = redis::cmd("SISMEMBER")
            .arg(article.site.group(g))
            .arg(article.id.member())
            .query_async(&mut conn)
            .await
            .unwrap();
        if member != groups.contains(g) {
            trace.fail(format!("{g}'s set holds the article: {member}"));
        }
    }
}
