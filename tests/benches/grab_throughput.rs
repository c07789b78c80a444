//! Grab throughput: grabs per second through `hongbao::packets::grab` (the grab function's call
//! path) against a private `redis-server`, beside `redis-benchmark` running the same EVALSHA of
//! `lua/grab.lua` on the same server in the same run (the physical limit of one Redis).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench grab_throughput
//! BENCH_GRABS=50000 cargo bench -p hongbao-tests --bench grab_throughput
//! ```
//!
//! Every phase gets a fresh packet with one share per request and grabs it with unique users, so
//! every call does the full production script: rate-limit log (fresh sorted set), `HGET` of the
//! grabs hash (miss), `LPOP`, two `HINCRBY`, `HSET`, `RPUSH`. The limiter stays at its default
//! (10 per user and packet per second); unique users never reach it.
//!
//! `redis-benchmark -r` replaces *each* `__rand_int__` of a command with its own random number,
//! so its user id (`ARGV[1]`) and the user part of its rate-limit key (`KEYS[5]`) differ. Both
//! are fresh either way, so the script does the same work as for a real user; only the rare
//! repeated user id (random in `0..2^31`) turns into a cheaper `already_grabbed`, which is why
//! the table counts real grabs (the packet's `grabbed_count`) beside requests.
//!
//! Phases run one after another on one server: the `redis-benchmark` ones (`-P 1` with 1 and 50
//! connections, then `-P 16`, the pipelined ceiling), then `hongbao` with K concurrent tasks over
//! one `Store` (one multiplexed connection, as in a Lambda sandbox) and over several `Store`s.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::RedisServer;
use hongbao::keys::Keys;
use hongbao::packets::{self, CreateOutcome, GrabOutcome, NewPacket};
use hongbao::split::{LuckySplit, Mode};
use hongbao::{scripts, wallet, Config, Store};
use tokio::runtime::Runtime;

/// Default number of requests per phase (`BENCH_GRABS` overrides it).
const DEFAULT_GRABS: u64 = 100_000;
/// `redis-benchmark -r`: random user ids in `0..RAND_RANGE` (its random source is 31 bits).
const RAND_RANGE: u64 = 2_000_000_000;
/// The sender that pays for every benchmark packet.
const SENDER: &str = "bench-sender";

/// One measured phase: a line of the table.
struct Row {
    /// `redis-benchmark` or `hongbao`.
    mode: &'static str,
    /// How the load was applied, e.g. `-c 50 -P 1` or `256 tasks / 1 conn`.
    concurrency: String,
    /// EVALSHA calls sent.
    requests: u64,
    /// Calls that really grabbed a share (growth of the packet's `grabbed_count`).
    grabs: u64,
    /// Wall time of the phase.
    seconds: f64,
    /// The server's own time per EVALSHA in this phase (`INFO commandstats`), microseconds.
    usec_per_call: f64,
}

impl Row {
    /// Successful grabs per second.
    fn grabs_per_sec(&self) -> f64 {
        self.grabs as f64 / self.seconds
    }
}

/// The server, a runtime to drive `hongbao` on, and an admin store for setup and statistics.
struct Bench {
    /// The private server every phase runs against.
    server: RedisServer,
    /// Multi-thread runtime (one worker per core), as the grab Lambda uses.
    rt: Runtime,
    /// Store used for funding, creating packets and reading statistics (never measured).
    admin: Arc<Store>,
    /// Key names under the default prefix.
    keys: Keys,
}

impl Bench {
    /// Starts a fresh server, connects and loads the grab script (`SCRIPT LOAD`).
    fn start() -> Self {
        let server = RedisServer::start();
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
        let admin = Arc::new(Store::new(config(&server)));
        let sha = rt.block_on(async {
            let mut conn = admin.conn().await.expect("connect");
            scripts::GRAB.prepare_invoke().load_async(&mut conn).await.expect("SCRIPT LOAD")
        });
        assert_eq!(sha, scripts::GRAB.get_hash());
        let keys = Keys::new(&admin.config().key_prefix);
        Bench { server, rt, admin, keys }
    }

    /// Funds the sender and creates a lucky packet of `count` shares; returns its id.
    fn new_packet(&self, count: u64) -> String {
        let count = u32::try_from(count).expect("share count fits u32");
        let total = i64::from(count) * 5;
        let req = NewPacket {
            total_cents: total,
            count,
            mode: Mode::Lucky,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 3600,
            greeting: None,
        };
        self.rt.block_on(async {
            let reference = format!("bench-{}", rand::random::<u64>());
            wallet::deposit(&self.admin, SENDER, total, &reference).await.expect("deposit");
            match packets::create(&self.admin, SENDER, &req, None).await.expect("create") {
                CreateOutcome::Created(p) => p.packet_id,
                other => panic!("create failed: {other:?}"),
            }
        })
    }

    /// Runs `cmd` (a Redis command as its words) on the admin connection.
    fn query<T: redis::FromRedisValue>(&self, cmd: &[&str]) -> T {
        self.rt.block_on(async {
            let mut conn = self.admin.conn().await.expect("connect");
            redis::cmd(cmd[0]).arg(&cmd[1..]).query_async(&mut conn).await.expect("admin query")
        })
    }

    /// `cmdstat_evalsha` of `INFO commandstats` as `(calls, usec_per_call)`.
    fn evalsha_stats(&self) -> (u64, f64) {
        let info: String = self.query(&["INFO", "commandstats"]);
        let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:")).unwrap_or("");
        let field = |name: &str| {
            line.split([':', ','])
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (field("calls") as u64, field("usec_per_call"))
    }

    /// Shares grabbed from `packet_id` so far.
    fn grabbed(&self, packet_id: &str) -> u64 {
        let meta = self.keys.packet(packet_id).meta;
        self.query::<Option<u64>>(&["HGET", &meta, "grabbed_count"]).unwrap_or(0)
    }

    /// Frees a finished packet's memory (its rate-limit logs expire on their own).
    fn drop_packet(&self, packet_id: &str) {
        let k = self.keys.packet(packet_id);
        let _: u64 = self.query(&["UNLINK", &k.meta, &k.shares, &k.grabs, &k.order]);
    }

    /// Measures `redis-benchmark` sending `n` EVALSHA grabs over `clients` connections, `pipeline`
    /// requests deep, against a fresh `n`-share packet.
    fn redis_benchmark(&self, n: u64, clients: u32, pipeline: u32) -> Row {
        let id = self.new_packet(n);
        let k = self.keys.packet(&id);
        let rl = self.keys.grab_rate(&id, "user:__rand_int__");
        let cfg = self.admin.config();
        let (limit, window) = (cfg.grab_rate_limit.to_string(), cfg.grab_rate_window_ms.to_string());
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
        let out = Command::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &self.server.port().to_string()])
            .args(["-c", &clients.to_string(), "-n", &n.to_string(), "-P", &pipeline.to_string()])
            .args(["-r", &RAND_RANGE.to_string(), "--csv"])
            .args(["EVALSHA", scripts::GRAB.get_hash(), "5", &k.meta, &k.shares, &k.grabs, &k.order])
            .args([rl.as_str(), "user:__rand_int__", &limit, &window])
            .output()
            .expect("run redis-benchmark");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // CSV: a header line, then `"<command>","<rps>",...`.
        let rps: f64 = stdout
            .lines()
            .nth(1)
            .and_then(|l| l.rsplit("\",\"").nth(6))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                panic!("redis-benchmark failed: {stdout}{}", String::from_utf8_lossy(&out.stderr))
            });
        let (calls, usec_per_call) = self.evalsha_stats();
        assert_eq!(calls, n, "redis-benchmark: every request must reach the server");
        let grabs = self.grabbed(&id);
        self.drop_packet(&id);
        Row {
            mode: "redis-benchmark",
            concurrency: format!("-c {clients} -P {pipeline}"),
            requests: n,
            grabs,
            seconds: n as f64 / rps,
            usec_per_call,
        }
    }

    /// Measures `tasks` concurrent tasks looping `packets::grab` with unique users over `conns`
    /// stores (one multiplexed connection each, tasks spread round-robin) until `n` calls are done.
    fn hongbao(&self, n: u64, tasks: usize, conns: usize) -> Row {
        let id: Arc<str> = self.new_packet(n).into();
        let stores: Vec<Arc<Store>> =
            (0..conns).map(|_| Arc::new(Store::new(config(&self.server)))).collect();
        self.rt.block_on(async {
            for s in &stores {
                s.conn().await.expect("connect");
            }
        });
        let _: () = self.query(&["CONFIG", "RESETSTAT"]);
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let grabbed: u64 = self.rt.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|t| {
                    let (store, id, next) = (stores[t % conns].clone(), id.clone(), next.clone());
                    tokio::spawn(async move {
                        let mut grabbed = 0u64;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= n {
                                return grabbed;
                            }
                            let user = format!("user:{i:012}");
                            match packets::grab(&store, &id, &user).await.expect("grab") {
                                GrabOutcome::Grabbed { .. } => grabbed += 1,
                                other => panic!("{user}: expected a share, got {other:?}"),
                            }
                        }
                    })
                })
                .collect();
            let mut total = 0;
            for h in handles {
                total += h.await.expect("grab task");
            }
            total
        });
        let seconds = started.elapsed().as_secs_f64();
        let (calls, usec_per_call) = self.evalsha_stats();
        assert_eq!(calls, n, "hongbao: one EVALSHA per grab");
        assert_eq!(grabbed, self.grabbed(&id));
        self.drop_packet(&id);
        Row {
            mode: "hongbao",
            concurrency: format!("{tasks} tasks / {conns} conn"),
            requests: n,
            grabs: grabbed,
            seconds,
            usec_per_call,
        }
    }
}

/// The production default configuration on `server`, with room for benchmark-sized packets.
fn config(server: &RedisServer) -> Config {
    let mut cfg = Config::default();
    cfg.redis_url = server.url();
    cfg.max_count = u32::MAX;
    cfg.max_total_cents = i64::MAX;
    cfg
}

/// Prints the table; percentages are of the best `redis-benchmark` figure without pipelining
/// (the comparable one: one request per round trip per connection) and of the pipelined ceiling.
fn print_table(rows: &[Row]) {
    let best = |pipelined: bool| {
        rows.iter()
            .filter(|r| r.mode == "redis-benchmark" && r.concurrency.ends_with("-P 1") != pipelined)
            .map(Row::grabs_per_sec)
            .fold(0.0, f64::max)
    };
    let (unpipelined, pipelined) = (best(false), best(true));
    println!();
    println!(
        "| mode | concurrency | requests | grabs | seconds | grabs/s | % of rb best -P 1 | % of rb -P 16 | server µs/call |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.0} | {:.0}% | {:.0}% | {:.2} |",
            r.mode,
            r.concurrency,
            r.requests,
            r.grabs,
            r.seconds,
            r.grabs_per_sec(),
            100.0 * r.grabs_per_sec() / unpipelined,
            100.0 * r.grabs_per_sec() / pipelined,
            r.usec_per_call
        );
    }
    println!();
}

/// Runs every phase and prints the table.
fn main() {
    let n: u64 = std::env::var("BENCH_GRABS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_GRABS);
    let bench = Bench::start();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    println!(
        "grab throughput: {n} requests per phase, redis-server on port {}, {cores} cores",
        bench.server.port()
    );
    let mut rows = Vec::new();
    let mut run = |row: Row| {
        eprintln!("  {} {}: {:.0} grabs/s", row.mode, row.concurrency, row.grabs_per_sec());
        rows.push(row);
    };
    run(bench.redis_benchmark(n, 1, 1));
    run(bench.redis_benchmark(n, 50, 1));
    run(bench.redis_benchmark(n, 50, 16));
    run(bench.hongbao(n, 1, 1));
    run(bench.hongbao(n, 64, 1));
    run(bench.hongbao(n, 256, 1));
    run(bench.hongbao(n, 256, 4));
    print_table(&rows);
}
