//! Coupon drop: seed 004's coupon drop (抢优惠券) as hongbao runs it
//! (`hongbao::coupons`, `coupon_grab.lua`), measured five ways, each beside a
//! baseline on the same server in the same run:
//!
//! 1. **Server CPU per grab** of a storm on a private standalone `redis-server`: the
//!    `BENCH_GRABBERS` users of [`Crowd`] grab a campaign of `BENCH_CODES` uploaded codes
//!    through `store::coupons::grab` (one `Store`, `BENCH_TASKS` tasks, the default visit limit
//!    of 10 per 10,000 ms, `per_user` 1), beside seed 004's design with the same users and codes,
//!    issued from Rust with redis-rs as the seed's Java does, one command per round trip on one
//!    multiplexed connection with as many tasks: `canAccess` (`GET visits:<user>`; under the
//!    limit `INCR` and, on the first visit, `EXPIRE` of the window) then `SPOP codes`. The seed
//!    runs twice: as the brief lists it (`seed 004`: GET, INCR, EXPIRE, SPOP), and as its Java
//!    is written (`seed 004 + DEL`: it also `DEL`s the counter when it reads 0). The goal,
//!    hongbao ≤ 1.0× the seed, is judged against the cheaper `seed 004`. A second scenario,
//!    `wins`, has as many users as codes (`BENCH_WIN_USERS`), so nearly every request takes the
//!    win path. Cost = the server's main-thread CPU over the storm (`INFO cpu`
//!    `used_cpu_user_main_thread` + `used_cpu_sys_main_thread`) per request; also each
//!    command's `INFO commandstats` calls and µs per request (commands run inside scripts are
//!    counted too, and their time is also inside the script's), and `usec_per_call` of the grab
//!    script's `EVALSHA`. Every run starts from `FLUSHALL` (the campaign counter kept, so a
//!    campaign id is never reused) and the designs alternate their order every round;
//!    the table gives medians over `BENCH_ROUNDS` rounds and the spread of the per-round ratio.
//! 2. **Cluster spread**: on the harness's local 3-master cluster, a generated campaign of
//!    `BENCH_CLUSTER_CODES` codes (24 pools on evenly spaced slots) stormed by
//!    `BENCH_CLUSTER_GRABBERS` users (every `BENCH_REPEAT_EVERY`-th twice): each master's share
//!    of the grab calls (`cmdstat_evalsha` calls), of the scripts' server time (`cmdstat_evalsha`
//!    usec) and of its main-thread CPU over the storm; goal 1/3 ± 0.05 each.
//! 3. **Bytes per code** on a fresh standalone server: `MEMORY USAGE <key> SAMPLES 0` of every
//!    key (by kind: pool hash, codes list, issued, holders, directory `*:coupon-codes`, user
//!    lists `*:coupons:*`, journal, visit counters, seed keys) and `INFO memory` `used_memory`
//!    before and after each step: an uploaded campaign of `BENCH_MEMORY_CODES` codes; the seed's
//!    `SADD` set of the same codes; a generated campaign of `BENCH_MEMORY_GENERATED` codes (not
//!    stored until issued); `BENCH_MEMORY_CODES` of its codes issued through the store (per issued
//!    code: issued record + holders entry + user list, and the journal entry that stays until
//!    ledger-export acknowledges it); every uploaded code issued; the seed's `canAccess` + `SPOP`
//!    for as many users.
//! 4. **Grabs per second** of one hot generated campaign (`BENCH_GRABS` codes, one pool) on one
//!    server through `store::coupons::grab` (64 and 256 tasks over one `Store`) beside
//!    `redis-benchmark` sending the same `EVALSHA` (`-c 50 -P 1` and `-P 16`), its user id and
//!    visit key carrying `__rand_int__` (`-r 2000000000`) so every call is a new user's win; a
//!    fresh campaign per phase, `BENCH_HOT_ROUNDS` rounds, the two kinds alternating (every
//!    other round backwards). hongbao's grab also writes the user's coupon list after a win
//!    (`MULTI`, `ZADD`, `PEXPIREAT` ×2, `EXEC`, a second round trip), which the
//!    `redis-benchmark` line does not. `usec_per_call` is the server's wall time inside the
//!    call, so on a busy machine it also holds the time the server thread was preempted; the
//!    main-thread CPU per request does not.
//! 5. **Pool size**: on the cluster, one pool of each of `BENCH_POOL_SIZES` uploaded codes,
//!    written by `coupon_create_pool.lua` (what an uploaded campaign of that many codes is:
//!    creation takes at most 10,000 codes and later batches join the pools fixed then), fresh
//!    and once every code is issued (`coupon_grab.lua`, pipelined): the bytes of its keys, its
//!    biggest key's bytes and `DUMP` size, and the time to move its hash slot to another master
//!    (`CLUSTER SETSLOT … IMPORTING/MIGRATING`, one `MIGRATE` per key, `SETSLOT … NODE`): the
//!    biggest key's `MIGRATE` (client wall time; the source is blocked for it), the whole slot,
//!    and the source's `cmdstat_migrate` / target's `cmdstat_restore-asking` usec.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench coupon_drop
//! BENCH_GRABBERS=20000 BENCH_ROUNDS=1 BENCH_PARTS=1,3 cargo bench -p hongbao-tests --bench coupon_drop
//! ```
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `BENCH_PARTS` | `1,2,3,4,5` | the parts to run |
//! | `BENCH_GRABBERS` | `100000` | part 1 storm: distinct users (`storm`) |
//! | `BENCH_CODES` | `10000` | part 1: uploaded codes of the campaign (and of the seed's set) |
//! | `BENCH_WIN_USERS` | `BENCH_CODES` | part 1 `wins` scenario: distinct users |
//! | `BENCH_REPEAT_EVERY` | `10` | users `0, n, 2n, …` press twice in a row (`0`: nobody) |
//! | `BENCH_TASKS` | `64` | concurrent tasks of a storm (parts 1, 2, 3) |
//! | `BENCH_ROUNDS` | `3` | rounds of part 1 |
//! | `BENCH_HOT_ROUNDS` | `5` | rounds of part 4 |
//! | `BENCH_CLUSTER_CODES` | `1000000` | part 2: generated codes of the cluster campaign |
//! | `BENCH_CLUSTER_GRABBERS` | `100000` | part 2: distinct users |
//! | `BENCH_MEMORY_CODES` | `10000` | part 3: uploaded codes, and generated codes issued |
//! | `BENCH_MEMORY_GENERATED` | `1000000` | part 3: generated campaign's codes |
//! | `BENCH_GRABS` | `20000` | part 4: requests (= codes of the phase's campaign, at most 50,000) per phase |
//! | `BENCH_POOL_SIZES` | `10000,50000,200000` | part 5: codes of each measured pool |
//! | `BENCH_PIN` | `1` | `0`: no CPU pinning (by default, on 2+ CPUs, the servers' main threads run on CPU 0 and the bench, `redis-benchmark` included, on CPU 1) |
//!
//! Checked after the run (the bench prints and writes its figures, then fails if any check
//! does not hold), for every hongbao campaign stormed: every code issued at most once (the codes
//! callers were told are distinct and as many as the campaign's `codes_issued`; each pool's
//! `issued` counter equals its records; for uploaded codes, no code both left and issued, and
//! left + issued = the codes uploaded, each issued to the user who was told it); no user above
//! `per_user` (told, and in every pool's holders); `codes_left + codes_issued = codes_total`
//! (`store::coupons::campaign`); no call failed; no `EVALSHA` failed or fell back to `EVAL`;
//! `redis-benchmark`'s calls all arrived; a moved slot's keys all arrived. The seed's runs are
//! checked for distinct codes handed out. Writes the figures to `target/bench/coupon_drop.json`.

use harness::RedisCluster;
use hongbao::coupons::rules::pools::CODES_PER_POOL;
use hongbao::Config;
use serde_json::{json, Value};

#[path = "../support/mod.rs"]
mod support;
use support::{env_num, fail_on, nodes, pin, write_json, Started};

mod cluster;
mod crowd;
mod hot;
mod memory;
mod pools;
mod server;
mod storm_cpu;
mod summary;

use cluster::{cluster_json, cluster_spread, print_cluster};
use crowd::Crowd;
use hot::{hot, hot_json, print_hot};
use memory::{memory, memory_json, print_memory};
use pools::{pool_sizes, pools_json, print_pools};
use storm_cpu::{print_storm, storm_cpu, storm_json};
use summary::print_summary;

/// Codes one user may grab from every campaign of the bench.
const PER_USER: u32 = 1;
/// The seed's set of codes (part 1 and 3).
const SEED_CODES: &str = "seed:codes";
/// `redis-benchmark -r`: random user ids in `0..RAND_RANGE`.
const RAND_RANGE: u64 = 2_000_000_000;
/// Requests per pipeline when filling a pool (part 5).
const FILL_PIPELINE: usize = 500;
/// The slot-share goal of part 2: 1/3 ± this.
const SHARE_TOLERANCE: f64 = 0.05;

/// The bench's settings, from the environment.
#[derive(Debug, Clone)]
struct Settings {
    /// Parts to run.
    parts: Vec<u8>,
    /// Part 1 storm users.
    grabbers: u64,
    /// Part 1 codes.
    codes: u64,
    /// Part 1 `wins` users.
    win_users: u64,
    /// Every n-th user presses twice; 0: nobody.
    repeat_every: u64,
    /// Concurrent tasks of a storm.
    tasks: usize,
    /// Rounds of part 1.
    rounds: usize,
    /// Rounds of part 4.
    hot_rounds: usize,
    /// Part 2 generated codes.
    cluster_codes: u64,
    /// Part 2 users.
    cluster_grabbers: u64,
    /// Part 3 uploaded codes (and generated codes issued).
    memory_codes: u64,
    /// Part 3 generated campaign's codes.
    memory_generated: u64,
    /// Part 4 requests per phase.
    grabs: u64,
    /// Part 5 pool sizes.
    pool_sizes: Vec<u64>,
    /// Pin servers to CPU 0 and the bench to CPU 1.
    pin: bool,
}

/// A comma-separated list of numbers from the environment.
fn env_list<T: std::str::FromStr>(name: &str) -> Option<Vec<T>> {
    let raw = std::env::var(name).ok()?;
    let list: Vec<T> = raw
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    (!list.is_empty()).then_some(list)
}

impl Settings {
    /// Reads the `BENCH_*` variables.
    fn from_env() -> Self {
        let codes = env_num("BENCH_CODES").unwrap_or(10_000u64).max(1);
        Settings {
            parts: env_list("BENCH_PARTS").unwrap_or_else(|| vec![1, 2, 3, 4, 5]),
            grabbers: env_num("BENCH_GRABBERS").unwrap_or(100_000u64).max(1),
            codes,
            win_users: env_num("BENCH_WIN_USERS").unwrap_or(codes).max(1),
            repeat_every: env_num("BENCH_REPEAT_EVERY").unwrap_or(10),
            tasks: env_num("BENCH_TASKS").unwrap_or(64usize).max(1),
            rounds: env_num("BENCH_ROUNDS").unwrap_or(3usize).max(1),
            hot_rounds: env_num("BENCH_HOT_ROUNDS").unwrap_or(5usize).max(1),
            cluster_codes: env_num("BENCH_CLUSTER_CODES")
                .unwrap_or(1_000_000u64)
                .max(1),
            cluster_grabbers: env_num("BENCH_CLUSTER_GRABBERS")
                .unwrap_or(100_000u64)
                .max(1),
            memory_codes: env_num("BENCH_MEMORY_CODES").unwrap_or(10_000u64).max(1),
            memory_generated: env_num("BENCH_MEMORY_GENERATED")
                .unwrap_or(1_000_000u64)
                .max(1),
            grabs: env_num("BENCH_GRABS")
                .unwrap_or(20_000u64)
                .clamp(1, CODES_PER_POOL),
            pool_sizes: env_list("BENCH_POOL_SIZES")
                .unwrap_or_else(|| vec![10_000, 50_000, 200_000]),
            pin: env_num::<u8>("BENCH_PIN").unwrap_or(1) != 0,
        }
    }

    /// Whether part `n` runs.
    fn runs(&self, n: u8) -> bool {
        self.parts.contains(&n)
    }

    /// A crowd of `users` users named `<prefix>-<i>`.
    fn crowd(&self, users: u64, prefix: &'static str) -> Crowd {
        Crowd {
            users,
            repeat_every: self.repeat_every,
            tasks: self.tasks,
            prefix,
        }
    }
}

/// Runs the parts, prints the tables, writes the JSON, and fails if a check did not hold.
fn main() {
    let s = Settings::from_env();
    let pinned = s.pin && pin(None, 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Started::now();
    let visits = Config::default().coupons.visits;
    println!(
        "coupon drop: parts {:?}, visit limit {} per {} ms, per_user {PER_USER}, {} tasks, {}",
        s.parts,
        visits.per_window,
        visits.window_ms,
        s.tasks,
        if pinned {
            "servers' main threads on CPU 0, the bench on CPU 1"
        } else {
            "not pinned"
        }
    );
    let mut problems: Vec<String> = Vec::new();
    let mut figures = serde_json::Map::new();

    let storm = s.runs(1).then(|| {
        let r = rt.block_on(storm_cpu(&s, pinned, visits, &mut problems));
        print_storm(&r, &s);
        figures.insert("storm_cpu".into(), storm_json(&r, &s));
        r
    });
    let hot_runs = s.runs(4).then(|| {
        let r = rt.block_on(hot(&s, pinned, visits, &mut problems));
        print_hot(&r, &s);
        figures.insert("throughput".into(), hot_json(&r, &s));
        r
    });
    let mem = s.runs(3).then(|| {
        let r = rt.block_on(memory(&s, pinned, visits, &mut problems));
        print_memory(&r);
        figures.insert("memory".into(), memory_json(&r));
        r
    });
    let (cluster, pools) = if s.runs(2) || s.runs(5) {
        let c = RedisCluster::start();
        if pinned {
            for n in c.nodes() {
                pin(n.pid(), 0);
            }
        }
        let (spread, pools) = rt.block_on(async {
            let mut nodes = nodes(&c.urls(), true).await;
            let spread = if s.runs(2) {
                Some(cluster_spread(&mut nodes, &c.url(), &s, visits, &mut problems).await)
            } else {
                None
            };
            let pools = if s.runs(5) {
                Some(pool_sizes(&mut nodes, &s, visits, &mut problems).await)
            } else {
                None
            };
            (spread, pools)
        });
        drop(c);
        if let Some(r) = &spread {
            print_cluster(r, &s);
            figures.insert("cluster_spread".into(), cluster_json(r, &s));
        }
        if let Some(r) = &pools {
            print_pools(r);
            figures.insert("pool_size".into(), pools_json(r));
        }
        (spread, pools)
    } else {
        (None, None)
    };

    print_summary(
        storm.as_ref(),
        cluster.as_ref(),
        mem.as_ref(),
        hot_runs.as_deref(),
        pools.as_deref(),
    );
    figures.insert("bench".into(), json!("coupon_drop"));
    figures.insert("pinned".into(), json!(pinned));
    figures.insert("problems".into(), json!(problems));
    let path = write_json("coupon_drop", &Value::Object(figures));
    println!();
    println!("figures: {}", path.display());
    started.print_total();
    fail_on(&problems);
}
