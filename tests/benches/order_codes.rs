//! Order-code throughput: codes per second through `hongbao::order_codes::next_codes` (the
//! next-order-code function's call path) against a private `redis-server`, beside
//! `redis-benchmark` running `INCR` (the physical limit: one round trip, the cheapest write)
//! and the same EVALSHA of `order_code.lua` on the same server in the same run.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench order_codes
//! BENCH_CALLS=20000 BENCH_DIGITS=7 cargo bench -p hongbao-tests --bench order_codes
//! ```
//!
//! Every phase starts on an empty server (`FLUSHALL`), so its first call creates the day's
//! secret and its first batch builds the sandbox's round tables, as at the start of a real day.
//! The default width is 7 digits (9,000,000 codes a day) so no phase runs out of codes; the
//! per-code work in Redis does not depend on the width (the permutation runs in the client).
//!
//! The single-client phases (`INCR` through `redis-benchmark` and through `redis-rs`, the bare
//! EVALSHA of `order_code.lua` that one code sends, through `redis-rs`, and one code per
//! call through `hongbao`) run in three interleaved rounds and the fastest round of each is
//! reported, as the machine's other load disturbs latency most. The bare EVALSHA splits the
//! cost of one code into the script's round trip and the client's work around it.
//!
//! Columns: `µs/call` is wall time per call for one client (the latency of a call; for more
//! clients it is wall time divided by calls); `x INCR` compares it with `redis-benchmark INCR
//! -c 1` (one round trip of a C client) and, for `hongbao`, `x redis-rs INCR` with an `INCR`
//! through the same `redis-rs` connection (the same client stack); `EVALSHA µs` is the server's
//! own time per script call (`INFO commandstats`); the CPU columns are `redis-server`'s CPU
//! (`INFO cpu`) and the client's (`getrusage`: this process, or `redis-benchmark`) per call.
//! Writes the table's figures to `target/bench/order_codes.json` too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::RedisServer;
use hongbao::order_codes::rules::ZoneWindow;
use hongbao::order_codes::{self, Outcome};
use hongbao::store::scripts::{self, Call, OrderCodeCall};
use hongbao::{Config, Store};
use tokio::runtime::Runtime;

#[path = "support/mod.rs"]
mod support;
use support::{
    block_query, evalsha_stats, load_script, redis_benchmark, runtime, rusage_cpu, server_cpu_secs,
    write_json,
};

/// Default number of calls per phase (`BENCH_CALLS` overrides it).
const DEFAULT_CALLS: u64 = 50_000;

/// Interleaved rounds of the single-client phases; the fastest of each is reported.
const LATENCY_ROUNDS: usize = 3;

/// One measured phase: a line of the table.
struct Row {
    /// What ran: `redis-benchmark`, `redis-rs`, `hongbao`.
    mode: &'static str,
    /// The command or call, e.g. `INCR` or `next_codes(100)`.
    what: String,
    /// How the load was applied, e.g. `-c 50 -P 1` or `64 tasks / 1 conn`.
    concurrency: String,
    /// Whether one client sent one call at a time (latency-bound).
    single_client: bool,
    /// Calls sent.
    calls: u64,
    /// Codes handed out (0 for `INCR`).
    codes: u64,
    /// Wall time of the phase.
    seconds: f64,
    /// The server's own time per EVALSHA (`INFO commandstats`), microseconds; NaN for `INCR`.
    evalsha_usec: f64,
    /// CPU time of `redis-server` in the phase (`INFO cpu`), seconds.
    server_cpu: f64,
    /// CPU time of the client (this process, or `redis-benchmark`) in the phase, seconds.
    client_cpu: f64,
}

impl Row {
    fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.seconds
    }

    fn codes_per_sec(&self) -> f64 {
        self.codes as f64 / self.seconds
    }

    fn usec_per_call(&self) -> f64 {
        self.seconds * 1e6 / self.calls as f64
    }

    /// Microseconds of `cpu` seconds per call.
    fn per_call(&self, cpu: f64) -> f64 {
        cpu * 1e6 / self.calls as f64
    }
}

/// The server, a runtime and an admin store for setup and statistics.
struct Bench {
    server: RedisServer,
    rt: Runtime,
    admin: Arc<Store>,
    digits: u32,
}

impl Bench {
    fn start(digits: u32) -> Self {
        let server = RedisServer::start();
        let rt = runtime();
        let admin = Arc::new(Store::new(config(&server, digits)));
        load_script(&rt, &admin, &scripts::ORDER_CODE);
        Bench {
            server,
            rt,
            admin,
            digits,
        }
    }

    /// Runs `cmd` (a Redis command as its words) on the admin connection.
    fn query<T: redis::FromRedisValue>(&self, cmd: &[&str]) -> T {
        block_query(&self.rt, &self.admin, cmd)
    }

    /// Empties the server and its statistics before a phase (the loaded script stays).
    fn reset(&self) {
        let _: () = self.query(&["FLUSHALL"]);
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
    }

    /// CPU time (user + system) `redis-server` has used so far, seconds (`INFO cpu`).
    fn server_cpu(&self) -> f64 {
        server_cpu_secs(&self.query::<String>(&["INFO", "cpu"]))
    }

    /// `(calls, usec_per_call)` of `cmdstat_evalsha`.
    fn evalsha_stats(&self) -> (u64, f64) {
        evalsha_stats(&self.query::<String>(&["INFO", "commandstats"]))
    }

    /// Positions taken, summed over the day hashes present (one field each: secret -> taken).
    fn codes_taken(&self) -> u64 {
        let keys: Vec<String> = self.query(&["KEYS", "hb:{oc}:day:*"]);
        keys.iter()
            .flat_map(|k| self.query::<Vec<u64>>(&["HVALS", k]))
            .sum()
    }

    /// `redis-benchmark` sending `n` requests of `command` over `clients` connections,
    /// `pipeline` deep. `count` is the codes per request (0 for `INCR`).
    fn redis_benchmark(
        &self,
        what: &str,
        command: &[String],
        n: u64,
        clients: u32,
        pipeline: u32,
        count: u64,
    ) -> Row {
        self.reset();
        let (client_cpu, server_cpu) = (rusage_cpu(libc::RUSAGE_CHILDREN), self.server_cpu());
        let rps = redis_benchmark(self.server.port(), clients, n, pipeline, None, command);
        let client_cpu = rusage_cpu(libc::RUSAGE_CHILDREN) - client_cpu;
        let server_cpu = self.server_cpu() - server_cpu;
        let (calls, evalsha_usec) = self.evalsha_stats();
        let codes = if count > 0 {
            assert_eq!(
                calls, n,
                "redis-benchmark: every request must reach the server"
            );
            let taken = self.codes_taken();
            assert_eq!(
                taken,
                n * count,
                "redis-benchmark: every request must take its codes"
            );
            taken
        } else {
            0
        };
        Row {
            mode: "redis-benchmark",
            what: what.to_string(),
            concurrency: format!("-c {clients} -P {pipeline}"),
            single_client: clients == 1 && pipeline == 1,
            calls: n,
            codes,
            seconds: n as f64 / rps,
            evalsha_usec: if count > 0 { evalsha_usec } else { f64::NAN },
            server_cpu,
            client_cpu,
        }
    }

    /// The EVALSHA words of one `count`-code call, as `next_codes` would send them now.
    fn evalsha_words(&self, count: u32) -> Vec<String> {
        let cfg = self.admin.config();
        let w = ZoneWindow::around(&cfg.order_codes.tz, chrono_now());
        let dates: Vec<_> = w
            .days
            .iter()
            .map(|&d| order_codes::date_of_day(d).expect("date"))
            .collect();
        let day_hashes: Vec<String> = dates
            .iter()
            .map(|&d| order_codes::day_key("hb", d))
            .collect();
        let quotas: Vec<String> = dates
            .iter()
            .map(|&d| order_codes::quota_key("hb", d, "bench"))
            .collect();
        // The fresh secret doubles as the guess: the first call stores it, every later call
        // takes the hot path (TIME + HINCRBY), as a warm sandbox does.
        let secret = order_codes::new_day_secret();
        let days: Vec<(i64, &str)> = w.days.iter().map(|&d| (d, secret.as_str())).collect();
        OrderCodeCall {
            day_hashes: &day_hashes,
            newest_day: &order_codes::newest_day_key("hb"),
            quotas: &quotas,
            count,
            positions_per_day: order_codes::domain(self.digits),
            new_secret: &secret,
            quota_ttl_secs: order_codes::QUOTA_TTL_SECS,
            per_user_per_day: cfg.order_codes.per_user_per_day,
            window_start: w.start,
            window_end: w.end,
            days: &days,
            base_offset: w.base_offset,
            transitions: &w.transitions,
        }
        .evalsha_words()
    }

    /// `tasks` tasks over `conns` stores looping `next_codes(count)` until `n` calls are done.
    fn hongbao(&self, n: u64, count: u32, tasks: usize, conns: usize) -> Row {
        self.reset();
        let stores: Vec<Arc<Store>> = (0..conns)
            .map(|_| Arc::new(Store::new(config(&self.server, self.digits))))
            .collect();
        self.rt.block_on(async {
            for s in &stores {
                s.conn().await.expect("connect");
            }
        });
        let next = Arc::new(AtomicU64::new(0));
        let (client_cpu, server_cpu) = (rusage_cpu(libc::RUSAGE_SELF), self.server_cpu());
        let started = Instant::now();
        let codes: u64 = self.rt.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|t| {
                    let (store, next) = (stores[t % conns].clone(), next.clone());
                    tokio::spawn(async move {
                        let mut codes = 0u64;
                        while next.fetch_add(1, Ordering::Relaxed) < n {
                            match order_codes::next_codes(&store, "bench", count)
                                .await
                                .expect("next_codes")
                            {
                                Outcome::Issued { codes: c, .. } => codes += c.len() as u64,
                                other => panic!("expected codes, got {other:?}"),
                            }
                        }
                        codes
                    })
                })
                .collect();
            let mut total = 0;
            for h in handles {
                total += h.await.expect("task");
            }
            total
        });
        let seconds = started.elapsed().as_secs_f64();
        let client_cpu = rusage_cpu(libc::RUSAGE_SELF) - client_cpu;
        let server_cpu = self.server_cpu() - server_cpu;
        let (calls, evalsha_usec) = self.evalsha_stats();
        assert_eq!(calls, n, "hongbao: one EVALSHA per call");
        assert_eq!(codes, n * u64::from(count));
        assert_eq!(self.codes_taken(), codes);
        Row {
            mode: "hongbao",
            what: format!("next_codes({count})"),
            concurrency: format!("{tasks} tasks / {conns} conn"),
            single_client: tasks == 1,
            calls: n,
            codes,
            seconds,
            evalsha_usec,
            server_cpu,
            client_cpu,
        }
    }

    /// `tasks` tasks sending the command `words` (e.g. `INCR bench:incr`, or the EVALSHA that
    /// `next_codes(1)` sends) through one `redis-rs` connection (the same client stack as
    /// `hongbao`) until `n` calls are done.
    fn redis_rs(&self, what: &str, words: &[String], n: u64, tasks: usize) -> Row {
        self.reset();
        let _: String = self.query(&["SCRIPT", "LOAD", scripts::ORDER_CODE.source()]);
        let store = Arc::new(Store::new(config(&self.server, self.digits)));
        let next = Arc::new(AtomicU64::new(0));
        self.rt
            .block_on(async { store.conn().await.expect("connect") });
        let (client_cpu, server_cpu) = (rusage_cpu(libc::RUSAGE_SELF), self.server_cpu());
        let started = self.rt.block_on(async {
            let started = Instant::now();
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    let (store, next) = (store.clone(), next.clone());
                    let mut cmd = redis::cmd(&words[0]);
                    for w in &words[1..] {
                        cmd.arg(w);
                    }
                    tokio::spawn(async move {
                        let mut conn = store.conn().await.expect("connect");
                        while next.fetch_add(1, Ordering::Relaxed) < n {
                            let _: redis::Value = cmd.query_async(&mut conn).await.expect("call");
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.expect("task");
            }
            started
        });
        let seconds = started.elapsed().as_secs_f64();
        let client_cpu = rusage_cpu(libc::RUSAGE_SELF) - client_cpu;
        let server_cpu = self.server_cpu() - server_cpu;
        let evalsha_usec = if words[0] == "EVALSHA" {
            self.evalsha_stats().1
        } else {
            f64::NAN
        };
        Row {
            mode: "redis-rs",
            what: what.into(),
            concurrency: format!("{tasks} tasks / 1 conn"),
            single_client: tasks == 1,
            calls: n,
            codes: 0,
            seconds,
            evalsha_usec,
            server_cpu,
            client_cpu,
        }
    }
}

/// The function's clock, Unix seconds.
fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// The production default configuration on `server`, with `digits`-digit suffixes.
fn config(server: &RedisServer, digits: u32) -> Config {
    let mut cfg = Config {
        redis_url: server.url(),
        ..Config::default()
    };
    cfg.order_codes.digits = digits;
    // The per-user quota on (its counter is read and written on every call, as in
    // production) but never reached by the bench's one user.
    cfg.order_codes.per_user_per_day = u32::MAX;
    cfg
}

fn print_table(rows: &[Row]) -> serde_json::Value {
    let rtt = |mode: &str| {
        rows.iter()
            .find(|r| r.mode == mode && r.what == "INCR" && r.single_client)
            .map_or(f64::NAN, Row::usec_per_call)
    };
    let (rb, rs) = (rtt("redis-benchmark"), rtt("redis-rs"));
    println!();
    println!(
        "| mode | call | concurrency | calls | codes | seconds | calls/s | codes/s | µs/call \
         | x INCR (rb -c 1) | x redis-rs INCR (1 task) | EVALSHA µs | server CPU µs/call | client CPU µs/call |"
    );
    println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut phases = Vec::new();
    for r in rows {
        // JSON has no NaN: a figure that does not apply is null.
        let num = |x: f64| {
            if x.is_finite() {
                serde_json::json!(x)
            } else {
                serde_json::Value::Null
            }
        };
        phases.push(serde_json::json!({
            "mode": r.mode,
            "call": r.what,
            "concurrency": r.concurrency,
            "single_client": r.single_client,
            "calls": r.calls,
            "codes": r.codes,
            "seconds": r.seconds,
            "calls_per_sec": r.calls_per_sec(),
            "codes_per_sec": r.codes_per_sec(),
            "usec_per_call": r.usec_per_call(),
            "x_rb_incr": num(if r.single_client { r.usec_per_call() / rb } else { f64::NAN }),
            "x_redis_rs_incr": num(if r.single_client { r.usec_per_call() / rs } else { f64::NAN }),
            "evalsha_usec_per_call": num(r.evalsha_usec),
            "server_cpu_usec_per_call": r.per_call(r.server_cpu),
            "client_cpu_usec_per_call": r.per_call(r.client_cpu),
        }));
        let ratio = |base: f64| {
            if r.single_client {
                format!("{:.2}", r.usec_per_call() / base)
            } else {
                "".into()
            }
        };
        let evalsha = if r.evalsha_usec.is_nan() {
            String::new()
        } else {
            format!("{:.2}", r.evalsha_usec)
        };
        println!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.0} | {} | {:.1} | {} | {} | {} | {:.1} | {:.1} |",
            r.mode,
            r.what,
            r.concurrency,
            r.calls,
            r.codes,
            r.seconds,
            r.calls_per_sec(),
            if r.codes > 0 { format!("{:.0}", r.codes_per_sec()) } else { String::new() },
            r.usec_per_call(),
            ratio(rb),
            if r.mode == "hongbao" || r.mode == "redis-rs" { ratio(rs) } else { String::new() },
            evalsha,
            r.per_call(r.server_cpu),
            r.per_call(r.client_cpu)
        );
    }
    println!();
    serde_json::json!({ "phases": phases })
}

/// Runs every phase, prints the table and writes its figures.
fn main() {
    let n: u64 = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_CALLS);
    let digits: u32 = std::env::var("BENCH_DIGITS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(7);
    assert!(
        n * 100 <= order_codes::domain(digits),
        "{n} batches of 100 exceed one day's codes"
    );
    let bench = Bench::start(digits);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    println!(
        "order codes: {n} calls per phase, {digits}-digit suffixes, redis-server on port {}, {cores} cores",
        bench.server.port()
    );
    let mut rows = Vec::new();
    let mut run = |row: Row| {
        eprintln!(
            "  {} {} {}: {:.0} calls/s, {:.0} codes/s",
            row.mode,
            row.what,
            row.concurrency,
            row.calls_per_sec(),
            row.codes_per_sec()
        );
        rows.push(row);
    };
    let incr = ["INCR".to_string(), "bench:incr".to_string()];
    // Latency (one client, one call at a time) is what the machine's other load disturbs most:
    // three interleaved rounds, the fastest of each kept.
    let mut fastest: Vec<Row> = Vec::new();
    for _ in 0..LATENCY_ROUNDS {
        let round = [
            bench.redis_benchmark("INCR", &incr, n, 1, 1, 0),
            bench.redis_rs("INCR", &incr, n, 1),
            bench.redis_rs("EVALSHA order_code (1)", &bench.evalsha_words(1), n, 1),
            bench.hongbao(n, 1, 1, 1),
        ];
        for (i, row) in round.into_iter().enumerate() {
            eprintln!(
                "  {} {} {}: {:.1} µs/call",
                row.mode,
                row.what,
                row.concurrency,
                row.usec_per_call()
            );
            if fastest.len() <= i {
                fastest.push(row);
            } else if row.seconds < fastest[i].seconds {
                fastest[i] = row;
            }
        }
    }
    let hongbao_single = fastest.pop().expect("four rows");
    for row in fastest {
        run(row);
    }
    run(bench.redis_benchmark("INCR", &incr, n, 50, 1, 0));
    run(bench.redis_benchmark("INCR", &incr, n, 50, 16, 0));
    run(bench.redis_benchmark(
        "EVALSHA order_code (1)",
        &bench.evalsha_words(1),
        n,
        50,
        1,
        1,
    ));
    run(bench.redis_benchmark(
        "EVALSHA order_code (100)",
        &bench.evalsha_words(100),
        n,
        50,
        1,
        100,
    ));
    run(hongbao_single);
    run(bench.hongbao(n, 1, 64, 1));
    run(bench.hongbao(n, 100, 1, 1));
    run(bench.hongbao(n, 100, 16, 1));
    run(bench.hongbao(n, 100, 64, 2));
    let figures = print_table(&rows);
    println!("figures: {}", write_json("order_codes", &figures).display());
}
