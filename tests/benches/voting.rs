//! Vote throughput: votes per second through `hongbao::voting::vote` (the vote function's call
//! path) against a private `redis-server`, beside `redis-benchmark` running the same EVALSHA of
//! `vote.lua` on the same server in the same run (the physical limit of one Redis).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench voting
//! BENCH_VOTES=50000 cargo bench -p hongbao-tests --bench voting
//! ```
//!
//! Every phase gets a fresh article and up-votes it with unique users, so every call does the
//! full production script: `HGET` of the posting time, `TIME`, the rate-limit log (a fresh sorted
//! set: `ZREMRANGEBYSCORE`, `ZCARD`, `ZADD`, `PEXPIRE`), `HGET` of the vote record (a miss),
//! `HSET`, `HINCRBY`, `ZINCRBY`. The limiter stays at its default (30 per user per minute);
//! unique users never reach it.
//!
//! `redis-benchmark -r` replaces *each* `__rand_int__` of a command with its own random number,
//! so its user id (`ARGV[1]`) and the user part of its rate-limit key (`KEYS[4]`) differ. Both
//! are fresh either way, so the script does the same work as for a real user; only the rare
//! repeated user id (random in `0..2^31`) turns into a cheaper `unchanged`, which is why the table
//! counts real votes (the growth of the article's `votes`) beside requests.
//!
//! Phases run one after another on one server: `redis-benchmark` (`-P 1` with 1 and 50
//! connections, then `-P 16`, the pipelined ceiling), then `hongbao` with K concurrent tasks over
//! one `Store` (one multiplexed connection, as in a Lambda sandbox) and over several `Store`s.
//! Writes the table's figures to `target/bench/voting.json` too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::RedisServer;
use hongbao::store::scripts::{self, Call, VoteCall};
use hongbao::voting::{self, ArticleId, Direction, NewArticle, Order, SiteKeys, VoteOutcome};
use hongbao::{Config, Store};
use tokio::runtime::Runtime;

#[path = "support/mod.rs"]
mod support;
use support::{
    block_query, evalsha_stats, load_script, redis_benchmark, runtime, rusage_cpu, server_cpu_secs,
    write_json,
};

/// Default number of requests per phase (`BENCH_VOTES` overrides it).
const DEFAULT_VOTES: u64 = 100_000;
/// `redis-benchmark -r`: random user ids in `0..RAND_RANGE` (its random source is 31 bits).
const RAND_RANGE: u64 = 2_000_000_000;

/// One measured phase: a line of the table.
struct Row {
    /// `redis-benchmark` or `hongbao`.
    mode: &'static str,
    /// How the load was applied, e.g. `-c 50 -P 1` or `256 tasks / 1 conn`.
    concurrency: String,
    /// EVALSHA calls sent.
    requests: u64,
    /// Calls that really added a vote (growth of the article's `votes`).
    votes: u64,
    /// Wall time of the phase.
    seconds: f64,
    /// The server's own time per EVALSHA in this phase (`INFO commandstats`), microseconds.
    usec_per_call: f64,
    /// CPU time of the client (this process, or `redis-benchmark`) in the phase, seconds.
    client_cpu: f64,
    /// CPU time of `redis-server` in the phase (`INFO cpu`), seconds.
    server_cpu: f64,
}

impl Row {
    /// Recorded votes per second.
    fn votes_per_sec(&self) -> f64 {
        self.votes as f64 / self.seconds
    }

    /// Microseconds of `cpu` seconds per request.
    fn per_request(&self, cpu: f64) -> f64 {
        cpu * 1e6 / self.requests as f64
    }
}

/// The server, a runtime to drive `hongbao` on, and an admin store for setup and statistics.
struct Bench {
    /// The private server every phase runs against.
    server: RedisServer,
    /// Multi-thread runtime (one worker per core unless `BENCH_WORKERS` says otherwise).
    rt: Runtime,
    /// Store used for posting articles and reading statistics (never measured).
    admin: Arc<Store>,
    /// Key names of the default site.
    keys: SiteKeys,
}

impl Bench {
    /// Starts a fresh server, connects and loads the vote script (`SCRIPT LOAD`).
    fn start() -> Self {
        let server = RedisServer::start();
        let rt = runtime();
        let admin = Arc::new(Store::new(config(&server)));
        load_script(&rt, &admin, &scripts::VOTE);
        let keys = SiteKeys::of(admin.config());
        Bench {
            server,
            rt,
            admin,
            keys,
        }
    }

    /// Posts a fresh article; returns its id.
    fn new_article(&self) -> ArticleId {
        let new = NewArticle {
            title: "benchmark".into(),
            link: "https://example.com/".into(),
        };
        self.rt.block_on(async {
            match voting::post(&self.admin, "bench-poster", &new)
                .await
                .expect("post")
            {
                voting::PostOutcome::Posted(a) => a.id,
                other => panic!("{other:?}"),
            }
        })
    }

    /// Runs `cmd` (a Redis command as its words) on the admin connection.
    fn query<T: redis::FromRedisValue>(&self, cmd: &[&str]) -> T {
        block_query(&self.rt, &self.admin, cmd)
    }

    /// `cmdstat_evalsha` of `INFO commandstats` as `(calls, usec_per_call)`.
    fn evalsha_stats(&self) -> (u64, f64) {
        evalsha_stats(&self.query::<String>(&["INFO", "commandstats"]))
    }

    /// CPU time (user + system) `redis-server` has used so far, seconds (`INFO cpu`).
    fn server_cpu(&self) -> f64 {
        server_cpu_secs(&self.query::<String>(&["INFO", "cpu"]))
    }

    /// Votes recorded on `id` beyond the poster's own, and checks the score invariant.
    fn added_votes(&self, id: ArticleId) -> u64 {
        let votes: i64 = self
            .query::<Option<i64>>(&["HGET", &self.keys.article(id), "votes"])
            .unwrap_or(0);
        let posted: i64 = self
            .query::<Option<i64>>(&["HGET", &self.keys.article(id), "posted_at"])
            .unwrap_or(0);
        let score: i64 = self
            .query::<Option<i64>>(&["ZSCORE", &self.keys.ranking(Order::Score), &id.member()])
            .unwrap_or(0);
        assert_eq!(
            score,
            posted + voting::VOTE_SCORE * votes,
            "score invariant"
        );
        (votes - 1) as u64
    }

    /// Frees a finished phase's article, vote record and rate-limit logs (`FLUSHALL ASYNC`;
    /// the loaded script stays).
    fn reset(&self) {
        let _: String = self.query(&["FLUSHALL", "ASYNC"]);
    }

    /// Measures `redis-benchmark` sending `n` EVALSHA votes over `clients` connections,
    /// `pipeline` requests deep, against a fresh article.
    fn redis_benchmark(&self, n: u64, clients: u32, pipeline: u32) -> Row {
        let id = self.new_article();
        let cfg = self.admin.config();
        let (article, voters, score) = (
            self.keys.article(id),
            self.keys.voters(id),
            self.keys.ranking(Order::Score),
        );
        let rl = self.keys.vote_rate("user:__rand_int__");
        // Each command its own call, as each of the random users' votes is.
        let call_answer = format!("{voters}:call:__rand_int__");
        // The EVALSHA the store's `voting::vote` sends (an up-vote), with `redis-benchmark`'s
        // random user.
        let evalsha = VoteCall {
            article: &article,
            voters: &voters,
            score: &score,
            rate: &rl,
            article_groups: &self.keys.article_groups(id),
            call_answer: &call_answer,
            group_scores: &[],
            user_id: "user:__rand_int__",
            direction: 1,
            member: &id.member(),
            rate_limit: cfg.voting.rate_limit,
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
        .evalsha_words();
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
        let (client_cpu, server_cpu) = (rusage_cpu(libc::RUSAGE_CHILDREN), self.server_cpu());
        let rps = redis_benchmark(
            self.server.port(),
            clients,
            n,
            pipeline,
            Some(RAND_RANGE),
            &evalsha,
        );
        let client_cpu = rusage_cpu(libc::RUSAGE_CHILDREN) - client_cpu;
        let server_cpu = self.server_cpu() - server_cpu;
        let (calls, usec_per_call) = self.evalsha_stats();
        assert_eq!(
            calls, n,
            "redis-benchmark: every request must reach the server"
        );
        let votes = self.added_votes(id);
        self.reset();
        Row {
            mode: "redis-benchmark",
            concurrency: format!("-c {clients} -P {pipeline}"),
            requests: n,
            votes,
            seconds: n as f64 / rps,
            usec_per_call,
            client_cpu,
            server_cpu,
        }
    }

    /// Measures `tasks` concurrent tasks looping `voting::vote` with unique users over `conns`
    /// stores (one multiplexed connection each, tasks spread round-robin) until `n` calls are done.
    fn hongbao(&self, n: u64, tasks: usize, conns: usize) -> Row {
        let id: Arc<str> = self.new_article().to_string().into();
        let stores: Vec<Arc<Store>> = (0..conns)
            .map(|_| Arc::new(Store::new(config(&self.server))))
            .collect();
        self.rt.block_on(async {
            for s in &stores {
                s.conn().await.expect("connect");
            }
        });
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
        let next = Arc::new(AtomicU64::new(0));
        let (client_cpu, server_cpu) = (rusage_cpu(libc::RUSAGE_SELF), self.server_cpu());
        let started = Instant::now();
        let voted: u64 = self.rt.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|t| {
                    let (store, id, next) = (stores[t % conns].clone(), id.clone(), next.clone());
                    tokio::spawn(async move {
                        let mut voted = 0u64;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= n {
                                return voted;
                            }
                            let user = format!("user:{i:012}");
                            match voting::vote(&store, &id, &user, Direction::Up)
                                .await
                                .expect("vote")
                            {
                                VoteOutcome::Voted { changed: true, .. } => voted += 1,
                                other => panic!("{user}: expected a new vote, got {other:?}"),
                            }
                        }
                    })
                })
                .collect();
            let mut total = 0;
            for h in handles {
                total += h.await.expect("vote task");
            }
            total
        });
        let seconds = started.elapsed().as_secs_f64();
        let client_cpu = rusage_cpu(libc::RUSAGE_SELF) - client_cpu;
        let server_cpu = self.server_cpu() - server_cpu;
        let (calls, usec_per_call) = self.evalsha_stats();
        assert_eq!(calls, n, "hongbao: one EVALSHA per vote");
        let article = ArticleId::parse(&id).expect("id");
        assert_eq!(voted, self.added_votes(article));
        self.reset();
        Row {
            mode: "hongbao",
            concurrency: format!("{tasks} tasks / {conns} conn"),
            requests: n,
            votes: voted,
            seconds,
            usec_per_call,
            client_cpu,
            server_cpu,
        }
    }
}

/// The production default configuration on `server`.
fn config(server: &RedisServer) -> Config {
    Config {
        redis_url: server.url(),
        ..Config::default()
    }
}

/// Prints the table; percentages are of the best `redis-benchmark` figure without pipelining
/// (the comparable one: one request per round trip per connection) and of the pipelined ceiling.
fn print_table(rows: &[Row]) -> serde_json::Value {
    let best = |pipelined: bool| {
        rows.iter()
            .filter(|r| r.mode == "redis-benchmark" && r.concurrency.ends_with("-P 1") != pipelined)
            .map(Row::votes_per_sec)
            .fold(0.0, f64::max)
    };
    let (unpipelined, pipelined) = (best(false), best(true));
    println!();
    println!(
        "| mode | concurrency | requests | votes | seconds | votes/s | % of rb best -P 1 | % of rb -P 16 \
         | EVALSHA µs/call | server CPU µs/req | client CPU µs/req |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut phases = Vec::new();
    for r in rows {
        phases.push(serde_json::json!({
            "mode": r.mode,
            "concurrency": r.concurrency,
            "requests": r.requests,
            "votes": r.votes,
            "seconds": r.seconds,
            "votes_per_sec": r.votes_per_sec(),
            "pct_of_rb_p1": 100.0 * r.votes_per_sec() / unpipelined,
            "pct_of_rb_p16": 100.0 * r.votes_per_sec() / pipelined,
            "evalsha_usec_per_call": r.usec_per_call,
            "server_cpu_usec_per_request": r.per_request(r.server_cpu),
            "client_cpu_usec_per_request": r.per_request(r.client_cpu),
        }));
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.0} | {:.0}% | {:.0}% | {:.1} | {:.1} | {:.1} |",
            r.mode,
            r.concurrency,
            r.requests,
            r.votes,
            r.seconds,
            r.votes_per_sec(),
            100.0 * r.votes_per_sec() / unpipelined,
            100.0 * r.votes_per_sec() / pipelined,
            r.usec_per_call,
            r.per_request(r.server_cpu),
            r.per_request(r.client_cpu)
        );
    }
    println!();
    serde_json::json!({ "phases": phases })
}

/// Runs every phase, prints the table and writes its figures.
fn main() {
    let n: u64 = std::env::var("BENCH_VOTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_VOTES);
    let bench = Bench::start();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    println!(
        "vote throughput: {n} requests per phase, redis-server on port {}, {cores} cores",
        bench.server.port()
    );
    let mut rows = Vec::new();
    let mut run = |row: Row| {
        eprintln!(
            "  {} {}: {:.0} votes/s",
            row.mode,
            row.concurrency,
            row.votes_per_sec()
        );
        rows.push(row);
    };
    run(bench.redis_benchmark(n, 1, 1));
    run(bench.redis_benchmark(n, 50, 1));
    run(bench.redis_benchmark(n, 50, 16));
    run(bench.hongbao(n, 1, 1));
    run(bench.hongbao(n, 64, 1));
    run(bench.hongbao(n, 256, 1));
    run(bench.hongbao(n, 256, 4));
    let figures = print_table(&rows);
    println!("figures: {}", write_json("voting", &figures).display());
}
