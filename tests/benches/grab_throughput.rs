//! Grab throughput: grabs per second through `hongbao::packets::grab` (the grab function's call
//! path) against a private `redis-server`, beside `redis-benchmark` running the same EVALSHA of
//! `grab.lua` on the same server in the same run (the physical limit of one Redis).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench grab_throughput
//! BENCH_GRABS=100000 BENCH_ROUNDS=5 cargo bench -p hongbao-tests --bench grab_throughput
//! ```
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `BENCH_GRABS` | `20000` | EVALSHA requests (= shares of the phase's packet) per phase |
//! | `BENCH_ROUNDS` | `6` | rounds; every round runs every phase once |
//! | `BENCH_NICE` | unset | e.g. `-10`: nice value of the bench and its children, against other load |
//!
//! Every phase gets a fresh packet with one share per request and grabs it with unique users, so
//! every call takes the win path of the production script: `HGET` of the grabs hash (a miss),
//! `HMGET` of the meta, `TIME`, `LPOP`, two `HSET`s. The limiter stays at its default (10 per
//! user and packet per second); a win writes no counter, so unique users never reach it.
//!
//! `redis-benchmark -r` replaces *each* `__rand_int__` of a command with its own random number,
//! so its user id (`ARGV[1]`) and the user part of its rate-limit key (`KEYS[4]`) differ. Both
//! are fresh either way, so the script does the same work as for a real user; only a rare
//! repeated user id (random in `0..2e9`) turns into a cheaper `already_grabbed`, which is why the
//! table counts real grabs (growth of the packet's `grabbed_count`) beside requests.
//!
//! The phases, one at a time on one server: `redis-benchmark` with `-P 1` over 1 and 50
//! connections and with `-P 16` (the pipelined ceiling), and `hongbao` with K concurrent tasks
//! over one `Store` (one multiplexed connection, as in a Lambda sandbox) and over several
//! `Store`s, on a tokio runtime with one worker per core (as `#[tokio::main]` in the grab
//! function) and with a single worker. A round runs every phase, the two kinds alternating
//! and every other round backwards, so that load from other processes on the machine hits all
//! phases alike. The table gives each phase's best round and median, and its ratio to
//! `redis-benchmark` both best-to-best and as the median of per-round ratios. Writes the figures
//! to `target/bench/grab_throughput.json` too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::RedisServer;
use hongbao::packets::{self, GrabOutcome};
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{self, Call, GrabCall};
use hongbao::wallet;
use hongbao::Store;
use serde_json::{json, Value};
use tokio::runtime::Runtime;

#[path = "support/mod.rs"]
mod support;
use support::{
    bench_config, block_query, create_packet, env_num, info_field, load_script, lucky_packet,
    median, redis_benchmark, rusage_cpu, server_cpu_secs, write_json, Started,
};

/// Default number of requests per phase (`BENCH_GRABS` overrides it).
const DEFAULT_GRABS: u64 = 20_000;
/// Default number of rounds (`BENCH_ROUNDS` overrides it).
const DEFAULT_ROUNDS: usize = 6;
/// `redis-benchmark -r`: random user ids in `0..RAND_RANGE` (its random source is 31 bits).
const RAND_RANGE: u64 = 2_000_000_000;
/// The sender that pays for every benchmark packet.
const SENDER: &str = "bench-sender";

/// One way of applying load: a line of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `redis-benchmark -c clients -P pipeline` sending the grab EVALSHA.
    RedisBenchmark {
        /// Connections (`-c`).
        clients: u32,
        /// Requests in flight per connection (`-P`).
        pipeline: u32,
    },
    /// `tasks` tokio tasks looping `packets::grab`, spread over `conns` stores (connections).
    Hongbao {
        /// Concurrent tasks.
        tasks: usize,
        /// `Store`s, i.e. multiplexed connections.
        conns: usize,
        /// On the single-worker runtime instead of the one with a worker per core.
        one_worker: bool,
    },
}

impl Phase {
    /// Every phase, in table order.
    const ALL: [Phase; 8] = [
        Phase::RedisBenchmark {
            clients: 1,
            pipeline: 1,
        },
        Phase::RedisBenchmark {
            clients: 50,
            pipeline: 1,
        },
        Phase::RedisBenchmark {
            clients: 50,
            pipeline: 16,
        },
        Phase::Hongbao {
            tasks: 1,
            conns: 1,
            one_worker: false,
        },
        Phase::Hongbao {
            tasks: 64,
            conns: 1,
            one_worker: false,
        },
        Phase::Hongbao {
            tasks: 256,
            conns: 1,
            one_worker: false,
        },
        Phase::Hongbao {
            tasks: 256,
            conns: 4,
            one_worker: false,
        },
        Phase::Hongbao {
            tasks: 64,
            conns: 1,
            one_worker: true,
        },
    ];

    /// The `mode` column.
    fn mode(self) -> &'static str {
        match self {
            Phase::RedisBenchmark { .. } => "redis-benchmark",
            Phase::Hongbao { .. } => "hongbao",
        }
    }

    /// The `concurrency` column, on a machine with `cores` cores.
    fn concurrency(self, cores: usize) -> String {
        match self {
            Phase::RedisBenchmark { clients, pipeline } => format!("-c {clients} -P {pipeline}"),
            Phase::Hongbao {
                tasks,
                conns,
                one_worker,
            } => {
                let workers = if one_worker { 1 } else { cores };
                format!("{tasks} tasks / {conns} conn / {workers} worker")
            }
        }
    }
}

/// The order a round runs the phases in ([`Phase::ALL`] indices): `redis-benchmark` and
/// `hongbao` alternate.
const RUN_ORDER: [usize; 8] = [0, 3, 1, 4, 2, 5, 6, 7];

/// One measured run of a phase.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// EVALSHA calls sent.
    requests: u64,
    /// Calls that really grabbed a share.
    grabs: u64,
    /// Wall time.
    seconds: f64,
    /// The server's own time per EVALSHA (`INFO commandstats`), microseconds.
    usec_per_call: f64,
    /// CPU time of the client (this process, or `redis-benchmark`), seconds.
    client_cpu: f64,
    /// CPU time of `redis-server` (`INFO cpu`), seconds.
    server_cpu: f64,
    /// Socket reads of the server (`INFO stats` `total_reads_processed`).
    server_reads: f64,
}

impl Run {
    /// Successful grabs per second.
    fn grabs_per_sec(&self) -> f64 {
        self.grabs as f64 / self.seconds
    }

    /// Microseconds of `cpu` seconds per request.
    fn per_request(&self, cpu: f64) -> f64 {
        cpu * 1e6 / self.requests as f64
    }
}

/// Resource counters read before and after a phase.
#[derive(Debug, Clone, Copy)]
struct Counters {
    /// Client CPU seconds so far.
    client_cpu: f64,
    /// Server CPU seconds so far.
    server_cpu: f64,
    /// Server socket reads so far.
    server_reads: f64,
}

/// The server, runtimes to drive `hongbao` on, and an admin store for setup and statistics.
struct Bench {
    /// The private server every phase runs against.
    server: RedisServer,
    /// Multi-thread runtime with one worker per core, as the grab function's `#[tokio::main]`;
    /// also drives the admin store.
    rt: Runtime,
    /// Multi-thread runtime with a single worker.
    rt_one: Runtime,
    /// Store used for funding, creating packets and reading statistics (never measured).
    admin: Arc<Store>,
    /// Key names under the default prefix.
    keys: Keys,
}

impl Bench {
    /// Starts a fresh server, connects and loads the grab script (`SCRIPT LOAD`).
    fn start() -> Self {
        let server = RedisServer::start();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let rt_one = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let admin = Arc::new(Store::new(bench_config(server.url(), false)));
        load_script(&rt, &admin, &scripts::GRAB);
        let keys = Keys::new(&admin.config().key_prefix);
        Bench {
            server,
            rt,
            rt_one,
            admin,
            keys,
        }
    }

    /// Funds the sender and creates a lucky packet of `count` shares; returns its id.
    fn new_packet(&self, count: u64) -> String {
        let count = u32::try_from(count).expect("share count fits u32");
        let total = i64::from(count) * 5;
        let req = lucky_packet(total, count);
        self.rt.block_on(async {
            let reference = format!("bench-{}", rand::random::<u64>());
            wallet::deposit(&self.admin, SENDER, total, &reference)
                .await
                .expect("deposit");
            create_packet(&self.admin, SENDER, &req).await
        })
    }

    /// Runs `cmd` (a Redis command as its words) on the admin connection.
    fn query<T: redis::FromRedisValue>(&self, cmd: &[&str]) -> T {
        block_query(&self.rt, &self.admin, cmd)
    }

    /// Client (`RUSAGE_SELF` or `RUSAGE_CHILDREN`) and server counters now.
    fn counters(&self, client: libc::c_int) -> Counters {
        let info: String = self.query(&["INFO", "cpu"]);
        let stats: String = self.query(&["INFO", "stats"]);
        Counters {
            client_cpu: rusage_cpu(client),
            server_cpu: server_cpu_secs(&info),
            server_reads: info_field(&stats, "total_reads_processed", None),
        }
    }

    /// Resets `INFO commandstats` before a phase.
    fn reset_stats(&self) {
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
    }

    /// Finishes a phase on `packet_id`: checks that exactly `requests` EVALSHA calls arrived,
    /// frees the packet and fills in a [`Run`].
    fn finish(
        &self,
        packet_id: &str,
        requests: u64,
        seconds: f64,
        before: Counters,
        after: Counters,
    ) -> Run {
        let stats: String = self.query(&["INFO", "commandstats"]);
        let calls = info_field(&stats, "cmdstat_evalsha", Some("calls")) as u64;
        let failed = info_field(&stats, "cmdstat_evalsha", Some("failed_calls")) as u64;
        assert_eq!(
            (calls, failed),
            (requests, 0),
            "EVALSHA calls (all, failed) in the phase"
        );
        let k = self.keys.packet(packet_id);
        let grabs: Option<u64> = self.query(&["HGET", &k.meta, "grabbed_count"]);
        // Free the memory (wins write no rate-limit counter).
        let _: u64 = self.query(&["UNLINK", &k.meta, &k.shares, &k.grabs]);
        Run {
            requests,
            grabs: grabs.unwrap_or(0),
            seconds,
            usec_per_call: info_field(&stats, "cmdstat_evalsha", Some("usec_per_call")),
            client_cpu: after.client_cpu - before.client_cpu,
            server_cpu: after.server_cpu - before.server_cpu,
            server_reads: after.server_reads - before.server_reads,
        }
    }

    /// Runs `phase` with `n` requests against a fresh `n`-share packet.
    fn run(&self, phase: Phase, n: u64) -> Run {
        match phase {
            Phase::RedisBenchmark { clients, pipeline } => {
                self.redis_benchmark(n, clients, pipeline)
            }
            Phase::Hongbao {
                tasks,
                conns,
                one_worker,
            } => self.hongbao(
                if one_worker { &self.rt_one } else { &self.rt },
                n,
                tasks,
                conns,
            ),
        }
    }

    /// `redis-benchmark` sending `n` EVALSHA grabs over `clients` connections, `pipeline` deep.
    fn redis_benchmark(&self, n: u64, clients: u32, pipeline: u32) -> Run {
        let id = self.new_packet(n);
        let k = self.keys.packet(&id);
        let rl = self.keys.grab_rate(&id, "user:__rand_int__");
        let cfg = self.admin.config();
        // The EVALSHA the store's `packets::grab` sends, with `redis-benchmark`'s random user.
        let evalsha = GrabCall {
            meta: &k.meta,
            shares: &k.shares,
            grabs: &k.grabs,
            rate: &rl,
            recipients: &k.recipients,
            wrong_guesses: &k.wrong_guesses,
            guesses: &k.wrong_guesses,
            order: &k.order,
            user_id: "user:__rand_int__",
            rate_limit: cfg.packets.grab_rate_limit,
            rate_window_ms: cfg.packets.grab_rate_window_ms,
            password: "",
            call_id: "",
            guess_budget: cfg.packets.guess_budget,
            guess_window_ms: cfg.packets.guess_window_ms,
            guesses_per_user: 0,
        }
        .evalsha_words();
        self.reset_stats();
        let before = self.counters(libc::RUSAGE_CHILDREN);
        let rps = redis_benchmark(
            self.server.port(),
            clients,
            n,
            pipeline,
            Some(RAND_RANGE),
            &evalsha,
        );
        let after = self.counters(libc::RUSAGE_CHILDREN);
        self.finish(&id, n, n as f64 / rps, before, after)
    }

    /// `tasks` concurrent tasks on `rt` looping `packets::grab` with unique users over `conns`
    /// stores (tasks spread round-robin) until `n` calls are done; every call must grab a share.
    fn hongbao(&self, rt: &Runtime, n: u64, tasks: usize, conns: usize) -> Run {
        let id: Arc<str> = self.new_packet(n).into();
        let stores: Vec<Arc<Store>> = (0..conns)
            .map(|_| Arc::new(Store::new(bench_config(self.server.url(), false))))
            .collect();
        rt.block_on(async {
            for s in &stores {
                s.conn().await.expect("connect");
            }
        });
        let next = Arc::new(AtomicU64::new(0));
        self.reset_stats();
        let before = self.counters(libc::RUSAGE_SELF);
        let started = Instant::now();
        rt.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|t| {
                    let (store, id, next) = (stores[t % conns].clone(), id.clone(), next.clone());
                    tokio::spawn(async move {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= n {
                                return;
                            }
                            let user = format!("user:{i:012}");
                            match packets::grab(&store, &id, &user).await.expect("grab") {
                                GrabOutcome::Grabbed { .. } => {}
                                other => panic!("{user}: expected a share, got {other:?}"),
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.expect("grab task");
            }
        });
        let seconds = started.elapsed().as_secs_f64();
        let after = self.counters(libc::RUSAGE_SELF);
        let run = self.finish(&id, n, seconds, before, after);
        assert_eq!(run.grabs, n, "every hongbao call grabs a share");
        run
    }
}

/// The run with the most grabs per second.
fn best(runs: &[Run]) -> Run {
    *runs
        .iter()
        .max_by(|a, b| a.grabs_per_sec().total_cmp(&b.grabs_per_sec()))
        .expect("at least one run")
}

/// The median over rounds of `runs`' grabs per second as a percentage of `reference`'s in the
/// same round. Pairing runs that were seconds apart cancels most of the slower drifts in load
/// from other processes on the machine.
fn paired_pct(runs: &[Run], reference: &[f64]) -> f64 {
    median(
        runs.iter()
            .zip(reference)
            .map(|(r, x)| 100.0 * r.grabs_per_sec() / x)
            .collect(),
    )
}

/// Prints the table and the verdict on the goal, and returns the same figures as JSON. Throughput is each phase's best round and the
/// median over rounds. Percentages are of the best `redis-benchmark` figure without pipelining
/// (`-c 1` or `-c 50`: one request per round trip per connection) and of the pipelined one
/// (`-P 16`), the most one Redis does with this script: best round against best round, then the
/// median of per-round ratios.
fn print_table(results: &[(Phase, Vec<Run>)], cores: usize) -> Value {
    let reference = |pipelined: bool| -> Vec<f64> {
        let refs: Vec<&Vec<Run>> = results
            .iter()
            .filter(
                |(p, _)| matches!(p, Phase::RedisBenchmark { pipeline, .. } if (*pipeline > 1) == pipelined),
            )
            .map(|(_, runs)| runs)
            .collect();
        (0..refs[0].len())
            .map(|k| {
                refs.iter()
                    .map(|runs| runs[k].grabs_per_sec())
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    let (p1, p16) = (reference(false), reference(true));
    let top = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (p1_best, p16_best) = (top(&p1), top(&p16));
    println!();
    println!(
        "| mode | concurrency | requests | seconds (best) | grabs/s (best) | grabs/s (median) \
         | % of rb -P 1 (best / paired) | % of rb -P 16 (best / paired) | EVALSHA µs/call \
         | server CPU µs/req | client CPU µs/req | req/server read |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut phases = Vec::new();
    for (phase, runs) in results {
        let r = best(runs);
        let b = r.grabs_per_sec();
        phases.push(json!({
            "mode": phase.mode(),
            "concurrency": phase.concurrency(cores),
            "requests": r.requests,
            "grabs_per_sec_best": b,
            "grabs_per_sec_median": median(runs.iter().map(Run::grabs_per_sec).collect()),
            "grabs_per_sec_rounds": runs.iter().map(Run::grabs_per_sec).collect::<Vec<_>>(),
            "pct_of_rb_p1_paired": paired_pct(runs, &p1),
            "pct_of_rb_p16_paired": paired_pct(runs, &p16),
            "evalsha_usec_per_call": r.usec_per_call,
            "server_cpu_usec_per_request": r.per_request(r.server_cpu),
            "client_cpu_usec_per_request": r.per_request(r.client_cpu),
        }));
        println!(
            "| {} | {} | {} | {:.2} | {b:.0} | {:.0} | {:.0}% / {:.0}% | {:.0}% / {:.0}% | {:.1} | {:.1} \
             | {:.1} | {:.1} |",
            phase.mode(),
            phase.concurrency(cores),
            r.requests,
            r.seconds,
            median(runs.iter().map(Run::grabs_per_sec).collect()),
            100.0 * b / p1_best,
            paired_pct(runs, &p1),
            100.0 * b / p16_best,
            paired_pct(runs, &p16),
            r.usec_per_call,
            r.per_request(r.server_cpu),
            r.per_request(r.client_cpu),
            r.requests as f64 / r.server_reads.max(1.0),
        );
    }
    let all: Vec<&Run> = results.iter().flat_map(|(_, runs)| runs).collect();
    let calls: f64 = all.iter().map(|r| r.requests as f64).sum();
    let usec: f64 = all
        .iter()
        .map(|r| r.usec_per_call * r.requests as f64)
        .sum();
    let missed: u64 = all.iter().map(|r| r.requests - r.grabs).sum();
    println!();
    println!(
        "rb = redis-benchmark; paired = median over rounds of the ratio to rb in the same round; \
         EVALSHA µs/call = INFO commandstats usec_per_call (the script's own cost); server CPU = \
         INFO cpu; client CPU = getrusage of this process or of redis-benchmark; req/server read = \
         requests per socket read of redis-server (INFO stats total_reads_processed), i.e. how deep \
         the client pipelines"
    );
    println!(
        "cmdstat_evalsha over all phases: calls={calls:.0} usec_per_call={:.2}",
        usec / calls
    );
    println!("requests that grabbed nothing (redis-benchmark repeating a random user): {missed}");
    let (phase, runs) = results
        .iter()
        .filter(|(p, _)| matches!(p, Phase::Hongbao { .. }))
        .max_by(|a, b| paired_pct(&a.1, &p16).total_cmp(&paired_pct(&b.1, &p16)))
        .expect("hongbao phases");
    let pct = paired_pct(runs, &p16);
    println!(
        "goal (within 10% of redis-benchmark): hongbao {} makes {pct:.0}% of redis-benchmark -P 16 \
         (median of per-round ratios; best rounds {:.0}%) and {:.0}% of -P 1: {}",
        phase.concurrency(cores),
        100.0 * best(runs).grabs_per_sec() / p16_best,
        paired_pct(runs, &p1),
        if pct >= 90.0 { "met" } else { "not met" }
    );
    json!({
        "cores": cores,
        "rounds": results[0].1.len(),
        "phases": phases,
        "goal": {
            "phase": phase.concurrency(cores),
            "pct_of_rb_p16_paired": pct,
            "pct_of_rb_p1_paired": paired_pct(runs, &p1),
            "met": pct >= 90.0,
        },
    })
}

/// Runs every phase `BENCH_ROUNDS` times, interleaved, and prints the table.
fn main() {
    let n = env_num("BENCH_GRABS").unwrap_or(DEFAULT_GRABS).max(1);
    let rounds = env_num("BENCH_ROUNDS").unwrap_or(DEFAULT_ROUNDS).max(1);
    let nice: Option<i32> = env_num("BENCH_NICE");
    if let Some(nice) = nice {
        // Before anything is spawned: threads and child processes inherit it.
        // SAFETY: a plain system call on this process.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
            eprintln!(
                "BENCH_NICE={nice}: setpriority failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let bench = Bench::start();
    println!(
        "grab throughput: {n} requests per phase, {rounds} rounds, redis-server {} on port {}, {cores} cores, \
         nice {}",
        bench.query::<String>(&["INFO", "server"])
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .trim(),
        bench.server.port(),
        nice.unwrap_or(0)
    );
    let started = Started::now();
    let mut results: Vec<(Phase, Vec<Run>)> = Phase::ALL.iter().map(|p| (*p, Vec::new())).collect();
    for round in 1..=rounds {
        // Interleave the two kinds, and run every other round backwards, so that a drift in
        // load from other processes does not favour one phase.
        let mut order = RUN_ORDER;
        if round % 2 == 0 {
            order.reverse();
        }
        for i in order {
            let (phase, runs) = &mut results[i];
            let run = bench.run(*phase, n);
            eprintln!(
                "  round {round}: {} {}: {:.0} grabs/s",
                phase.mode(),
                phase.concurrency(cores),
                run.grabs_per_sec()
            );
            runs.push(run);
        }
    }
    let figures = print_table(&results, cores);
    println!(
        "figures: {}",
        write_json("grab_throughput", &figures).display()
    );
    started.print_total();
}
