//! Script costs: the server's own time per call (`INFO commandstats` `usec_per_call`) of every
//! path a flash crowd takes through the hot scripts, beside its bare baseline on the same
//! private `redis-server` in the same run:
//!
//! * `grab.lua` (win, already grabbed, sold out, rate limited) beside the original
//!   red-packet blog post's grab design (HEXISTS, RPOP, cjson decode/encode, HSET, LPUSH),
//!   written here as bench-only Lua;
//! * `vote.lua` (new up-vote, new down-vote, switch) beside "Redis in Action" chapter 1's
//!   `article_vote` (ZSCORE, SADD, ZINCRBY, HINCRBY) run as one bench-only script;
//! * `order_code.lua` (one code) beside `INCR`, server time and the round trip of one
//!   client through redis-rs (`order_codes::next_codes` against `INCR`);
//! * the coupon checkout: `coupon_hold.lua`, `coupon_redeem.lua` and
//!   `coupon_release.lua` beside the bare redemption (`HGET`, `HSET`);
//! * `claim.lua` on a merchant packet paid out as coupons (the whole claim) beside its
//!   step 1 on a merchant packet paid into wallets;
//! * `lua/deposit.lua` (a deposit) and `lua/withdraw.lua` (a withdrawal applied, one
//!   refused) beside the same paths of those scripts as commit 6c9536b had them (`wallet.rs`).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench script_costs
//! BENCH_CALLS=50000 BENCH_ROUNDS=9 cargo bench -p hongbao-tests --bench script_costs
//! ```
//!
//! Every round (default 5) starts from an empty server and runs every phase once; the table
//! gives medians over the rounds and the median (and spread) of the per-round ratios, since
//! other load on a shared machine moves single phases by up to 50 %.
//!
//! Prints a table (path, µs/call, baseline, its µs/call, ratio, goal, met) and writes the same
//! figures to `target/bench/script_costs.json`, so two runs can be compared. The goals are the
//! issue's: grab and vote ≤ 1.3× their baselines on every path, one order code ≤ 1.5× an `INCR`
//! round trip, a merchant packet's grab ≤ 1.05× a user's packet's, a deposit's and a
//! withdrawal's paths ≤ 1.2× their 6c9536b scripts'. Every phase starts with `CONFIG RESETSTAT` and checks that exactly its calls
//! arrived and answered the expected path.

use std::time::Instant;

use harness::RedisServer;
use hongbao::order_codes;
use hongbao::store::scripts::{self, Call, VoteCall};
use hongbao::voting::{self, NewArticle, SiteKeys};
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use redis::{Script, Value};
use serde_json::json;

#[path = "../support/mod.rs"]
mod support;

mod checkout;
mod claim;
mod grab;
mod wallet;
use checkout::{checkout_rows, BARE_REDEEM};
use claim::claim_rows;
use grab::grab_rows;
use support::{
    bench_config, ch1_article, env_num, info_field, median, write_json, CH1_KEYS, CH1_VOTE,
    SEED_GRAB,
};
use wallet::wallet_rows;

/// Default calls per phase (`BENCH_CALLS` overrides it).
const DEFAULT_CALLS: usize = 20_000;
/// Default rounds (`BENCH_ROUNDS` overrides it); every round runs every phase once.
const DEFAULT_ROUNDS: usize = 5;
/// Calls per pipeline: the server's time per call does not depend on it; the bench's wall time
/// does.
const PIPELINE: usize = 200;

/// The floor of any rate-limited repeat: the original red-packet blog post's repeat (HEXISTS) plus
/// the one read and the one write that counting an accepted attempt needs (GET, INCR; a counter
/// without a TTL, so cheaper than any real limiter). KEYS[1] hash of users, KEYS[2] the user,
/// KEYS[3] counter.
const LIMITED_REPEAT_FLOOR: &str = r#"
if redis.call('HEXISTS', KEYS[1], KEYS[2]) ~= 0 then
  if (tonumber(redis.call('GET', KEYS[3])) or 0) < 1000000000 then
    redis.call('INCR', KEYS[3])
  end
  return '1'
end
return '0'
"#;

/// The expectation of a phase whose replies are JSON objects (the seed's wins).
const JSON_OBJECT: &str = "{";

/// One line of the table.
struct Row {
    path: &'static str,
    usec: f64,
    baseline: &'static str,
    baseline_usec: f64,
    goal: f64,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.usec / self.baseline_usec
    }
}

/// The bench's connection to its server.
struct Bench {
    conn: MultiplexedConnection,
    calls: usize,
    /// Sources of scripts a row builds at run time (an earlier commit's), for `SCRIPT LOAD`.
    sources: Vec<String>,
}

impl Bench {
    async fn cmd<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> T {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        c.query_async(&mut self.conn).await.expect(args[0])
    }

    async fn reset_stats(&mut self) {
        let _: () = self.cmd(&["CONFIG", "RESETSTAT"]).await;
    }

    /// `usec_per_call` and `calls` of `command` since the last reset.
    async fn stat(&mut self, command: &str) -> (f64, u64) {
        let info: String = self.cmd(&["INFO", "commandstats"]).await;
        let name = format!("cmdstat_{command}");
        (
            info_field(&info, &name, Some("usec_per_call")),
            info_field(&info, &name, Some("calls")) as u64,
        )
    }

    /// Sends `invocations` (each an EVALSHA of `script` with its keys and args) in pipelines
    /// and returns the first element of every reply (the path's name, or the reply itself).
    async fn run(
        &mut self,
        script: &Script,
        invocations: &[(Vec<String>, Vec<String>)],
    ) -> Vec<String> {
        // Load once, so every measured call is an EVALSHA that hits the script cache.
        let _: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script_source(script, &self.sources))
            .query_async(&mut self.conn)
            .await
            .expect("SCRIPT LOAD");
        let mut out = Vec::with_capacity(invocations.len());
        for chunk in invocations.chunks(PIPELINE) {
            let mut pipe = redis::pipe();
            for (keys, args) in chunk {
                let cmd = pipe.cmd("EVALSHA").arg(script.get_hash()).arg(keys.len());
                for k in keys {
                    cmd.arg(k);
                }
                for a in args {
                    cmd.arg(a);
                }
            }
            let replies: Vec<Value> = pipe.query_async(&mut self.conn).await.expect("EVALSHA");
            out.extend(replies.into_iter().map(first_text));
        }
        out
    }

    /// Runs one phase: reset, send, check every reply was `expect` (a JSON object for `{`),
    /// read the EVALSHA cost.
    async fn phase(
        &mut self,
        name: &str,
        script: &Script,
        invocations: &[(Vec<String>, Vec<String>)],
        expect: &str,
    ) -> f64 {
        self.reset_stats().await;
        let replies = self.run(script, invocations).await;
        let ok = |r: &String| match expect {
            JSON_OBJECT => r.starts_with(JSON_OBJECT),
            // Our scripts answer `<path>` or `<path>:<data>`.
            _ => r.split(':').next() == Some(expect),
        };
        let wrong = replies.iter().filter(|r| !ok(r)).count();
        assert_eq!(
            wrong,
            0,
            "{name}: {wrong} replies were not {expect:?}: {:?}",
            &replies[..3]
        );
        let (usec, calls) = self.stat("evalsha").await;
        assert_eq!(calls as usize, invocations.len(), "{name}: EVALSHA calls");
        usec
    }
}

/// The text of a reply, or of its first element for an array reply.
fn first_text(v: Value) -> String {
    match v {
        Value::Array(items) => items.into_iter().next().map(first_text).unwrap_or_default(),
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::SimpleString(s) => s,
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        other => format!("{other:?}"),
    }
}

/// The source of `script`: a bench-only script of this file, one of the scripts a row measures, or
/// one a row registered ([`Bench::sources`]).
fn script_source<'a>(script: &Script, registered: &'a [String]) -> &'a str {
    let ours = [
        &scripts::GRAB,
        &scripts::VOTE,
        &scripts::COUPON_HOLD,
        &scripts::COUPON_REDEEM,
        &scripts::COUPON_RELEASE,
        &scripts::CLAIM,
        &scripts::WALLET_CREDIT,
        &scripts::DEPOSIT,
        &scripts::WITHDRAW,
    ]
    .map(|lua| lua.source());
    [SEED_GRAB, CH1_VOTE, LIMITED_REPEAT_FLOOR, BARE_REDEEM]
        .into_iter()
        .chain(ours)
        .chain(registered.iter().map(String::as_str))
        .find(|source| Script::new(source).get_hash() == script.get_hash())
        .expect("unknown script")
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Vote paths of `vote.lua` and chapter 1's vote.
async fn vote_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    let n = b.calls;
    let cfg = store.config();
    let site = SiteKeys::of(cfg);
    let article = voting::post(
        store,
        "bench-poster",
        &NewArticle::new("bench".into(), "https://example.com/".into()).expect("article"),
    )
    .await
    .expect("post");
    let voting::PostOutcome::Posted(article) = article else {
        panic!("the bench's one post is within the quota")
    };
    let id = article.id;
    let limit = cfg.voting.rate_limit;
    let vote = |user: String, direction: i64, limit: u32| {
        // Each vote its own call: a switch is a new call of a user who voted before (with the
        // user's call id alone, the switch would be answered as the up-vote's re-send).
        let call_answer = format!("{}:call:{user}:{direction}", site.voters(id));
        VoteCall {
            article: &site.article(id),
            voters: &site.voters(id),
            score: &site.ranking(voting::Order::Score),
            rate: &site.vote_rate(&user),
            article_groups: &site.article_groups(id),
            call_answer: &call_answer,
            group_scores: &[],
            user_id: &user,
            direction,
            member: &id.member(),
            rate_limit: limit,
            rate_window_ms: cfg.voting.rate_window_ms,
            voting_window_secs: voting::ONE_WEEK_IN_SECONDS,
            vote_score: voting::VOTE_SCORE,
            clock_offset_secs: 0,
            // As a sandbox sends it once it has voted on the article (it remembers the poster).
            poster: "bench-poster",
            call_keep_ms: hongbao::domain::resend::CALL_KEEP_MS,
            // The article is in no group.
            group_names: &[],
        }
        .texts()
    };
    let ups: Vec<_> = (0..n).map(|i| vote(format!("u{i}"), 1, limit)).collect();
    let up = b.phase("vote up", &scripts::VOTE, &ups, "changed").await;
    let downs: Vec<_> = (0..n).map(|i| vote(format!("d{i}"), -1, limit)).collect();
    let down = b
        .phase("vote down", &scripts::VOTE, &downs, "changed")
        .await;
    let switches: Vec<_> = (0..n).map(|i| vote(format!("u{i}"), -1, limit)).collect();
    let switch = b
        .phase("vote switch", &scripts::VOTE, &switches, "changed")
        .await;
    let unlimited: Vec<_> = (0..n).map(|i| vote(format!("o{i}"), 1, 0)).collect();
    let up_unlimited = b
        .phase("vote up, limit off", &scripts::VOTE, &unlimited, "changed")
        .await;

    // Chapter 1: the article in the time and score sets, a voted set, the article hash.
    let ch1 = Script::new(CH1_VOTE);
    let [time, voted, score, hash] = CH1_KEYS;
    let cutoff = ch1_article(&mut b.conn).await.to_string();
    let ch1_votes: Vec<_> = (0..n)
        .map(|i| {
            (
                strings(&[time, voted, score, hash]),
                vec!["a".into(), format!("u{i}"), cutoff.clone()],
            )
        })
        .collect();
    let ch1_up = b.phase("ch1 vote", &ch1, &ch1_votes, "1").await;
    let row = |path, usec| Row {
        path,
        usec,
        baseline: "ch1 article_vote (new vote)",
        baseline_usec: ch1_up,
        goal: 1.3,
    };
    vec![
        row("vote: up", up),
        row("vote: down", down),
        row("vote: switch", switch),
        Row {
            goal: f64::INFINITY,
            ..row("vote: up, rate limit off", up_unlimited)
        },
    ]
}

/// One order code per call against `INCR`: the server's time and one client's round trip.
async fn order_code_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    let n = (b.calls / 4).max(100);
    let mut conn = store.conn().await.expect("conn");
    let _ = order_codes::next_codes(store, "bench", 1)
        .await
        .expect("warm-up code");
    b.reset_stats().await;
    let started = Instant::now();
    for _ in 0..n {
        let _ = order_codes::next_codes(store, "bench", 1)
            .await
            .expect("code");
    }
    let code_rtt = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (code_usec, calls) = b.stat("evalsha").await;
    assert_eq!(calls as usize, n, "order-code calls");
    b.reset_stats().await;
    let started = Instant::now();
    for _ in 0..n {
        let _: i64 = redis::cmd("INCR")
            .arg("bench:{oc}:incr")
            .query_async(&mut conn)
            .await
            .expect("INCR");
    }
    let incr_rtt = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let (incr_usec, _) = b.stat("incr").await;
    vec![
        Row {
            path: "order code: server time",
            usec: code_usec,
            baseline: "INCR: server time",
            baseline_usec: incr_usec,
            goal: f64::INFINITY,
        },
        Row {
            path: "order code: round trip (1 client)",
            usec: code_rtt,
            baseline: "INCR: round trip (1 client)",
            baseline_usec: incr_rtt,
            goal: 1.5,
        },
    ]
}

/// One path over all rounds: medians, and the spread of the per-round ratios.
struct Summary {
    path: &'static str,
    baseline: &'static str,
    goal: f64,
    usec: f64,
    baseline_usec: f64,
    /// Median of the per-round ratios (what `met` compares with the goal).
    ratio: f64,
    ratio_min: f64,
    ratio_max: f64,
}

fn summarize(rounds: &[Vec<Row>]) -> Vec<Summary> {
    (0..rounds[0].len())
        .map(|i| {
            let of = |f: &dyn Fn(&Row) -> f64| median(rounds.iter().map(|r| f(&r[i])).collect());
            let ratios: Vec<f64> = rounds.iter().map(|r| r[i].ratio()).collect();
            let first = &rounds[0][i];
            Summary {
                path: first.path,
                baseline: first.baseline,
                goal: first.goal,
                usec: of(&|r| r.usec),
                baseline_usec: of(&|r| r.baseline_usec),
                ratio: median(ratios.clone()),
                ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
                ratio_max: ratios.iter().copied().fold(0.0, f64::max),
            }
        })
        .collect()
}

fn main() {
    let calls = env_num("BENCH_CALLS").unwrap_or(DEFAULT_CALLS);
    let rounds = env_num("BENCH_ROUNDS").unwrap_or(DEFAULT_ROUNDS).max(1);
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (version, per_round) = rt.block_on(async {
        let mut cfg = bench_config(server.url(), false);
        // The order-code quota on (counted on every call, as in production), never reached.
        cfg.order_codes.per_user_per_day = u32::MAX;
        let store = Store::new(cfg);
        let client = redis::Client::open(server.url()).expect("client");
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let mut b = Bench {
            conn,
            calls,
            sources: Vec::new(),
        };
        let version: String = b.cmd(&["INFO", "server"]).await;
        let version = version
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .to_string();
        let mut per_round = Vec::with_capacity(rounds);
        for round in 0..rounds {
            // Every round starts from an empty server, so its phases do the same work.
            let _: () = b.cmd(&["FLUSHALL"]).await;
            let mut rows = grab_rows(&mut b, &store).await;
            rows.extend(vote_rows(&mut b, &store).await);
            rows.extend(order_code_rows(&mut b, &store).await);
            rows.extend(checkout_rows(&mut b, &store).await);
            rows.extend(claim_rows(&mut b, &store).await);
            rows.extend(wallet_rows(&mut b, &store).await);
            eprintln!("round {}/{rounds} done", round + 1);
            per_round.push(rows);
        }
        (version, per_round)
    });
    let rows = summarize(&per_round);
    println!(
        "redis-server {version}, {rounds} rounds, {calls} calls per phase (order codes: {} \
         sequential); medians over the rounds\n",
        (calls / 4).max(100)
    );
    println!("| path | µs/call | baseline | baseline µs/call | ratio (min–max) | goal | met |");
    println!("| --- | ---: | --- | ---: | ---: | ---: | --- |");
    for r in &rows {
        let (goal, met) = if r.goal.is_finite() {
            (
                format!("≤ {}×", r.goal),
                if r.ratio <= r.goal { "met" } else { "missed" },
            )
        } else {
            ("—".into(), "—")
        };
        println!(
            "| {} | {:.2} | {} | {:.2} | {:.2}× ({:.2}–{:.2}) | {goal} | {met} |",
            r.path, r.usec, r.baseline, r.baseline_usec, r.ratio, r.ratio_min, r.ratio_max
        );
    }
    println!(
        "\nµs/call = INFO commandstats usec_per_call of EVALSHA (INCR for the INCR rows): the \
         script's own server time; round trip = wall time per sequential call from this process \
         through redis-rs. ratio = the median of the per-round ratios (each round measures a \
         path and its baseline within seconds of each other), min–max its spread. Rows \
         without a goal show what the rate limiter costs (the same path with the limit off) and the \
         floor of any rate-limited repeat (the seed's repeat plus one counter read and write)."
    );
    let json = json!({
        "bench": "script_costs",
        "redis_version": version,
        "rounds": rounds,
        "calls_per_phase": calls,
        "rows": rows.iter().map(|r| json!({
            "path": r.path,
            "usec_per_call": r.usec,
            "baseline": r.baseline,
            "baseline_usec_per_call": r.baseline_usec,
            "ratio": r.ratio,
            "ratio_min": r.ratio_min,
            "ratio_max": r.ratio_max,
            "goal": if r.goal.is_finite() { json!(r.goal) } else { json!(null) },
            "met": if r.goal.is_finite() { json!(r.ratio <= r.goal) } else { json!(null) },
        })).collect::<Vec<_>>(),
        "per_round": per_round.iter().map(|rows| rows.iter().map(|r| json!({
            "path": r.path,
            "usec_per_call": r.usec,
            "baseline_usec_per_call": r.baseline_usec,
        })).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let path = write_json("script_costs", &json);
    println!("figures: {}", path.display());
}
