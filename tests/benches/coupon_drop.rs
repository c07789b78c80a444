//! Coupon drop: seed 004's coupon drop (抢优惠券) as hongbao runs it
//! (`hongbao::store::coupons`, `lua/coupon_grab.lua`), measured five ways, each beside a
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
//!    written by `lua/coupon_create_pool.lua` (what an uploaded campaign of that many codes is:
//!    creation takes at most 10,000 codes and later batches join the pools fixed then), fresh
//!    and once every code is issued (`lua/coupon_grab.lua`, pipelined): the bytes of its keys, its
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::{RedisCluster, RedisServer, RESPONSE_TIMEOUT};
use hongbao::domain::coupons::codes::MAX_CODES_PER_BATCH;
use hongbao::domain::coupons::pools::CODES_PER_POOL;
use hongbao::domain::coupons::{campaign_id, CodeSource, NewCampaign, VisitLimit};
use hongbao::store::coupons::{
    self, keys, AddCodesOutcome, CreateOutcome, Created, GrabOutcome, PoolKeys,
};
use hongbao::store::scripts::{self, text, Call, CouponCreatePoolCall, CouponGrabCall};
use hongbao::{Config, Error, Store};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use serde_json::{json, Value};

#[path = "support/mod.rs"]
mod support;
use support::{env_num, info_field, median, server_main_thread_cpu_secs, write_json};

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

// ------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------

/// A plain connection to the node at `url`, with the harness's response timeout.
async fn node_conn(url: &str) -> MultiplexedConnection {
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    redis::Client::open(url)
        .expect("node url")
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// Runs `args` (a Redis command as its words) on `conn`.
async fn q<T: redis::FromRedisValue>(conn: &mut impl ConnectionLike, args: &[&str]) -> T {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Redis `TIME` in Unix ms.
async fn redis_ms(conn: &mut impl ConnectionLike) -> i64 {
    let (s, us): (i64, i64) = q(conn, &["TIME"]).await;
    s * 1000 + us / 1000
}

/// The server's main-thread CPU so far, seconds (`INFO cpu`).
async fn main_cpu(conn: &mut impl ConnectionLike) -> f64 {
    let info: String = q(conn, &["INFO", "cpu"]).await;
    server_main_thread_cpu_secs(&info).0
}

/// `INFO memory` `used_memory`, bytes.
async fn used_memory(conn: &mut impl ConnectionLike) -> f64 {
    let info: String = q(conn, &["INFO", "memory"]).await;
    info_field(&info, "used_memory", None)
}

/// `(calls, usec)` of every command in `INFO commandstats` (subcommands as `config|get`).
async fn commandstats(conn: &mut impl ConnectionLike) -> BTreeMap<String, (u64, f64)> {
    let info: String = q(conn, &["INFO", "commandstats"]).await;
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))
                    .and_then(|v| v.trim().parse::<f64>().ok())
            };
            Some((name.to_string(), (field("calls")? as u64, field("usec")?)))
        })
        .collect()
}

/// `MEMORY USAGE <key> SAMPLES 0` of each of `keys` (0 for a key that is gone).
async fn memory_usage(conn: &mut impl ConnectionLike, keys: &[String]) -> Vec<u64> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(500) {
        let mut pipe = redis::pipe();
        for k in chunk {
            pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
        }
        let sizes: Vec<Option<u64>> = pipe.query_async(conn).await.expect("MEMORY USAGE");
        out.extend(sizes.into_iter().map(Option::unwrap_or_default));
    }
    out
}

/// Every key of a standalone server (`SCAN`).
async fn all_keys(conn: &mut impl ConnectionLike) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Restricts process `pid` (this thread and the threads it starts later, for `None`) to CPU
/// `cpu`; false if the machine has fewer than 2 CPUs or the call failed.
fn pin(pid: Option<u32>, cpu: usize) -> bool {
    if std::thread::available_parallelism().map_or(1, |c| c.get()) < 2 && pid.is_none() {
        return false;
    }
    // SAFETY: `sched_setaffinity` only reads the zeroed set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let pid = pid.map_or(0, |p| p as libc::pid_t);
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`), to judge how quiet the machine was.
fn loadavg() -> String {
    let raw = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    raw.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The production default configuration on `url`.
fn config(url: String, cluster: bool) -> Config {
    Config {
        redis_url: url,
        redis_cluster: cluster,
        ..Config::default()
    }
}

/// Uploaded code `i` of the codes marked `tag`: `<tag>-` and 8 hex digits of a bijection of
/// `i` (distinct for distinct `i`), like a printed voucher code.
fn code(tag: &str, i: u64) -> String {
    let x = (i as u32).wrapping_mul(0x9E37_79B1) ^ 0x5BD1_E995;
    format!("{tag}-{x:08X}")
}

/// `n` codes marked `tag`.
fn codes(tag: &str, n: u64) -> Vec<String> {
    (0..n).map(|i| code(tag, i)).collect()
}

/// `FLUSHALL SYNC`, keeping the campaign counter (`{coupon}:seq`), so that no campaign id is
/// reused (a process keeps what it learnt of a campaign by id).
async fn flush(conn: &mut impl ConnectionLike, prefix: &str) {
    let seq = keys::seq(prefix);
    let last: Option<String> = q(conn, &["GET", &seq]).await;
    let _: () = q(conn, &["FLUSHALL", "SYNC"]).await;
    if let Some(last) = last {
        let _: () = q(conn, &["SET", &seq, &last]).await;
    }
}

/// A campaign request: `per_user` [`PER_USER`], open for an hour.
fn new_campaign(now: i64, reference: &str, source: CodeSource, starts: Option<i64>) -> NewCampaign {
    let req = NewCampaign {
        title: "20 off 100".into(),
        source,
        starts_at_ms: starts,
        ends_at_ms: now + 3_600_000,
        per_user: PER_USER,
        redeem_by_ms: now + 7_200_000,
        reference: reference.into(),
        codes_planned: None,
    };
    req.check().expect("a valid campaign");
    req
}

/// Creates `req`.
async fn create(store: &Store, req: &NewCampaign) -> Created {
    match coupons::create(store, req).await.expect("create") {
        CreateOutcome::Created(c) => c,
        other => panic!("campaign {}: {other:?}", req.reference),
    }
}

/// An uploaded campaign of `codes`, open when this returns: one creation of up to 10,000 codes
/// (open at once), or, for more, a creation that opens a little later and batches of 10,000
/// added before the start (`store::coupons::add_codes`), as the API allows.
async fn uploaded_campaign(store: &Store, reference: &str, codes: &[String]) -> Created {
    let now = redis_ms(&mut store.conn().await.expect("connect")).await;
    let batches: Vec<&[String]> = codes.chunks(MAX_CODES_PER_BATCH).collect();
    let start = (batches.len() > 1).then(|| now + 3_000 + 1_500 * batches.len() as i64);
    let req = new_campaign(
        now,
        reference,
        CodeSource::Uploaded(batches[0].to_vec()),
        start,
    );
    let created = create(store, &req).await;
    for (b, batch) in batches.iter().enumerate().skip(1) {
        match coupons::add_codes(store, &created.campaign_id, &format!("b{b}"), batch)
            .await
            .expect("add codes")
        {
            AddCodesOutcome::Added { .. } => {}
            other => panic!("{reference}: batch {b}: {other:?}"),
        }
    }
    if let Some(start) = start {
        while redis_ms(&mut store.conn().await.expect("connect")).await < start {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    created
}

/// A generated campaign of `n` codes, open at once.
async fn generated_campaign(store: &Store, reference: &str, n: u64) -> Created {
    let now = redis_ms(&mut store.conn().await.expect("connect")).await;
    create(
        store,
        &new_campaign(now, reference, CodeSource::Generated(n), None),
    )
    .await
}

/// Loads the grab script on `conn` (every call then one `EVALSHA` that hits the cache).
async fn load_grab(conn: &mut impl ConnectionLike) {
    let sha: String = q(conn, &["SCRIPT", "LOAD", scripts::COUPON_GRAB.source()]).await;
    assert_eq!(sha, scripts::COUPON_GRAB.get_hash(), "SCRIPT LOAD");
}

/// `part` as a percentage of `whole`.
fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

// ------------------------------------------------------------------------------------------
// Crowds
// ------------------------------------------------------------------------------------------

/// Users grabbing at once: user `i` is `<prefix>-<i>`; users `0, n, 2n, …` press twice in a
/// row (a double tap); `tasks` tasks take users in order from a shared counter.
#[derive(Debug, Clone)]
struct Crowd {
    /// Distinct users.
    users: u64,
    /// Every n-th user presses twice; 0: nobody.
    repeat_every: u64,
    /// Concurrent tasks.
    tasks: usize,
    /// User id prefix.
    prefix: &'static str,
}

impl Crowd {
    /// Whether user `i` presses twice.
    fn repeats(&self, i: u64) -> bool {
        self.repeat_every > 0 && i.is_multiple_of(self.repeat_every)
    }

    /// User `i`'s id.
    fn user(&self, i: u64) -> String {
        format!("{}-{i:06}", self.prefix)
    }

    /// Requests the crowd sends.
    fn requests(&self) -> u64 {
        self.users
            + if self.repeat_every > 0 {
                self.users.div_ceil(self.repeat_every)
            } else {
                0
            }
    }
}

/// hongbao's grab answers, in table order.
const HB_PATHS: [&str; 6] = [
    "grabbed",
    "already_grabbed",
    "sold_out",
    "rate_limited",
    "other",
    "error",
];

/// The [`HB_PATHS`] index of a grab's answer.
fn hb_path(r: &Result<GrabOutcome, Error>) -> usize {
    match r {
        Ok(GrabOutcome::Grabbed { .. }) => 0,
        Ok(GrabOutcome::AlreadyGrabbed { .. }) => 1,
        Ok(GrabOutcome::SoldOut) => 2,
        Ok(GrabOutcome::RateLimited { .. }) => 3,
        Ok(_) => 4,
        Err(_) => 5,
    }
}

/// The seed's answers, in table order.
const SEED_PATHS: [&str; 4] = ["code", "no_code", "rate_limited", "error"];

/// What a crowd saw.
#[derive(Debug, Default)]
struct Out {
    /// Answers per path ([`HB_PATHS`] or [`SEED_PATHS`]).
    mix: Vec<u64>,
    /// Every code a caller was told it got: (user index, code).
    wins: Vec<(u64, String)>,
    /// Wall time, seconds.
    secs: f64,
}

/// Waits for every task and adds their outputs up.
async fn gather(handles: Vec<tokio::task::JoinHandle<Out>>, started: Instant) -> Out {
    let mut out = Out::default();
    for h in handles {
        let o = h.await.expect("crowd task");
        if out.mix.len() < o.mix.len() {
            out.mix.resize(o.mix.len(), 0);
        }
        for (total, n) in out.mix.iter_mut().zip(o.mix) {
            *total += n;
        }
        out.wins.extend(o.wins);
    }
    out.secs = started.elapsed().as_secs_f64();
    out
}

/// `crowd` grabbing campaign `id` through `store::coupons::grab` on `store`.
async fn hongbao_crowd(store: Arc<Store>, id: &str, crowd: &Crowd, visits: VisitLimit) -> Out {
    let next = Arc::new(AtomicU64::new(0));
    let id: Arc<str> = id.into();
    let started = Instant::now();
    let handles = (0..crowd.tasks)
        .map(|_| {
            let (store, id, next, crowd) = (store.clone(), id.clone(), next.clone(), crowd.clone());
            tokio::spawn(async move {
                let mut out = Out {
                    mix: vec![0; HB_PATHS.len()],
                    ..Out::default()
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= crowd.users {
                        return out;
                    }
                    let user = crowd.user(i);
                    for _ in 0..if crowd.repeats(i) { 2 } else { 1 } {
                        let r = coupons::grab(&store, &id, &user, visits).await;
                        out.mix[hb_path(&r)] += 1;
                        if let Ok(GrabOutcome::Grabbed { code, .. }) = r {
                            out.wins.push((i, code));
                        }
                    }
                }
            })
        })
        .collect();
    gather(handles, started).await
}

/// One request of seed 004's design: `canAccess(limit, window_secs, visits)` (`GET`; when the
/// count is 0, `DEL` if `with_del`; under the limit `INCR` and, on the first visit, `EXPIRE`),
/// then `SPOP codes`; each its own round trip. The [`SEED_PATHS`] index and the code.
async fn seed_grab(
    conn: &mut MultiplexedConnection,
    visits: &str,
    limit: i64,
    window_secs: u64,
    with_del: bool,
) -> redis::RedisResult<(usize, Option<String>)> {
    let total: Option<String> = redis::cmd("GET").arg(visits).query_async(conn).await?;
    // NumberUtils.toInt: 0 for a missing or malformed value.
    let total: i64 = total.and_then(|t| t.parse().ok()).unwrap_or(0);
    if total <= 0 && with_del {
        let _: i64 = redis::cmd("DEL").arg(visits).query_async(conn).await?;
    }
    if total >= limit {
        return Ok((2, None));
    }
    let _: i64 = redis::cmd("INCR").arg(visits).query_async(conn).await?;
    if total <= 0 {
        let _: i64 = redis::cmd("EXPIRE")
            .arg(visits)
            .arg(window_secs)
            .query_async(conn)
            .await?;
    }
    let code: Option<String> = redis::cmd("SPOP").arg(SEED_CODES).query_async(conn).await?;
    Ok(match code {
        Some(c) => (0, Some(c)),
        None => (1, None),
    })
}

/// `crowd` running seed 004's design over `conn` (one multiplexed connection).
async fn seed_crowd(
    conn: &MultiplexedConnection,
    crowd: &Crowd,
    visits: VisitLimit,
    with_del: bool,
) -> Out {
    let next = Arc::new(AtomicU64::new(0));
    let limit = i64::from(visits.per_window);
    let window_secs = visits.window_ms.div_ceil(1000).max(1);
    let started = Instant::now();
    let handles = (0..crowd.tasks)
        .map(|_| {
            let (mut conn, next, crowd) = (conn.clone(), next.clone(), crowd.clone());
            tokio::spawn(async move {
                let mut out = Out {
                    mix: vec![0; SEED_PATHS.len()],
                    ..Out::default()
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= crowd.users {
                        return out;
                    }
                    let key = format!("seed:visits:{}", crowd.user(i));
                    for _ in 0..if crowd.repeats(i) { 2 } else { 1 } {
                        match seed_grab(&mut conn, &key, limit, window_secs, with_del).await {
                            Ok((path, code)) => {
                                out.mix[path] += 1;
                                if let Some(code) = code {
                                    out.wins.push((i, code));
                                }
                            }
                            Err(_) => out.mix[3] += 1,
                        }
                    }
                }
            })
        })
        .collect();
    gather(handles, started).await
}

/// `SADD` of `codes` to the seed's set.
async fn seed_sadd(conn: &mut impl ConnectionLike, codes: &[String]) {
    for chunk in codes.chunks(1000) {
        let _: u64 = redis::cmd("SADD")
            .arg(SEED_CODES)
            .arg(chunk)
            .query_async(conn)
            .await
            .expect("SADD");
    }
}

/// The seed's sanity: the codes it handed out are distinct and at most `n`.
fn check_seed(name: &str, out: &Out, n: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let distinct: HashSet<&str> = out.wins.iter().map(|(_, c)| c.as_str()).collect();
    if distinct.len() != out.wins.len() || distinct.len() as u64 > n {
        problems.push(format!(
            "{name}: {} codes handed out, {} distinct, {n} in the set",
            out.wins.len(),
            distinct.len()
        ));
    }
    if out.mix[3] > 0 {
        problems.push(format!("{name}: {} requests failed", out.mix[3]));
    }
    problems
}

/// The invariants of campaign `c` after its grabs (see the module documentation): `told` are
/// the (user, code) pairs callers were told they got; `uploaded` its uploaded codes.
async fn check_campaign(
    store: &Store,
    c: &Created,
    told: &[(String, String)],
    uploaded: Option<&[String]>,
) -> Vec<String> {
    let id = &c.campaign_id;
    let mut problems = Vec::new();
    let view = match coupons::campaign(store, id, None).await {
        Ok(Some(v)) => v,
        other => return vec![format!("campaign {id}: {other:?}")],
    };
    if view.codes_left + view.codes_issued != view.codes_total || view.codes_total != c.codes_total
    {
        problems.push(format!(
            "campaign {id}: codes_left {} + codes_issued {} vs codes_total {} (created with {})",
            view.codes_left, view.codes_issued, view.codes_total, c.codes_total
        ));
    }
    let distinct: HashSet<&str> = told.iter().map(|(_, code)| code.as_str()).collect();
    if distinct.len() != told.len() || told.len() as u64 != view.codes_issued {
        problems.push(format!(
            "campaign {id}: {} codes told to callers, {} distinct, {} issued",
            told.len(),
            distinct.len(),
            view.codes_issued
        ));
    }
    let mut per_user: HashMap<&str, u32> = HashMap::new();
    for (user, _) in told {
        *per_user.entry(user).or_default() += 1;
    }
    let over = per_user.values().filter(|&&n| n > PER_USER).count();
    if over > 0 {
        problems.push(format!(
            "campaign {id}: {over} users were told more than {PER_USER} codes"
        ));
    }

    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await.expect("connect");
    let (mut recorded, mut held, mut over_held, mut open) = (0u64, 0u64, 0u64, 0u64);
    let mut issued: HashMap<String, String> = HashMap::new();
    let mut left: Vec<String> = Vec::new();
    for k in 0..c.pools {
        let keys = PoolKeys::new(prefix, id, c.campaign_no, k, c.pools);
        let (counter, records, pending): (Option<u64>, u64, u64) = redis::pipe()
            .cmd("HGET")
            .arg(&keys.pool)
            .arg("issued")
            .cmd("HLEN")
            .arg(&keys.issued)
            .cmd("HLEN")
            .arg(&keys.pending)
            .query_async(&mut conn)
            .await
            .expect("pool counts");
        if counter != Some(records) {
            problems.push(format!(
                "campaign {id} pool {k}: issued counter {counter:?}, {records} issued records"
            ));
        }
        recorded += records;
        open += pending;
        let holders: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&keys.holders)
            .query_async(&mut conn)
            .await
            .expect("holders");
        for (user, items) in holders.iter().filter(|(u, _)| !u.contains('\n')) {
            let n = items.split(' ').count() as u64;
            if n > u64::from(PER_USER) {
                over_held += 1;
                if over_held == 1 {
                    problems.push(format!("campaign {id}: {user} holds {items:?}"));
                }
            }
            held += items.split(' ').filter(|i| !i.starts_with('?')).count() as u64;
        }
        if uploaded.is_some() {
            let records: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&keys.issued)
                .query_async(&mut conn)
                .await
                .expect("issued");
            issued.extend(records);
            let l: Vec<String> = redis::cmd("LRANGE")
                .arg(&keys.codes)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .expect("codes");
            left.extend(l);
        }
    }
    if over_held > 0 {
        problems.push(format!(
            "campaign {id}: {over_held} users hold more than {PER_USER} items"
        ));
    }
    if recorded != view.codes_issued || held != recorded || open > 0 {
        problems.push(format!(
            "campaign {id}: {recorded} issued records, {held} items held, {} issued, {open} \
             open reservations",
            view.codes_issued
        ));
    }
    if let Some(all) = uploaded {
        let all: HashSet<&str> = all.iter().map(String::as_str).collect();
        let both = left.iter().filter(|c| issued.contains_key(*c)).count();
        let strangers = left
            .iter()
            .chain(issued.keys())
            .filter(|c| !all.contains(c.as_str()))
            .count();
        if both > 0 || strangers > 0 || left.len() + issued.len() != all.len() {
            problems.push(format!(
                "campaign {id}: {} left + {} issued of {} uploaded, {both} both, {strangers} \
                 not uploaded",
                left.len(),
                issued.len(),
                all.len()
            ));
        }
        let wrong = told
            .iter()
            .filter(|(user, code)| {
                issued
                    .get(code)
                    .is_none_or(|r| r.split('\n').next() != Some(user.as_str()))
            })
            .count();
        if wrong > 0 {
            problems.push(format!(
                "campaign {id}: {wrong} codes told to callers are not issued to them"
            ));
        }
    }
    problems
}

/// The (user, code) pairs of a crowd's wins.
fn told(crowd: &Crowd, out: &Out) -> Vec<(String, String)> {
    out.wins
        .iter()
        .map(|(i, code)| (crowd.user(*i), code.clone()))
        .collect()
}

// ------------------------------------------------------------------------------------------
// Part 1: server CPU per grab in a storm, hongbao beside seed 004
// ------------------------------------------------------------------------------------------

/// The designs of part 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Design {
    /// `store::coupons::grab`.
    Hongbao,
    /// Seed 004 as the brief lists it: GET, INCR, EXPIRE (first visit), SPOP.
    Seed,
    /// Seed 004 as its Java is written: also DEL when the count reads 0.
    SeedDel,
}

impl Design {
    /// Every design, in table order.
    const ALL: [Design; 3] = [Design::Hongbao, Design::Seed, Design::SeedDel];

    /// Its name in the tables.
    fn name(self) -> &'static str {
        match self {
            Design::Hongbao => "hongbao",
            Design::Seed => "seed 004",
            Design::SeedDel => "seed 004 + DEL",
        }
    }

    /// Its answers' names.
    fn paths(self) -> &'static [&'static str] {
        match self {
            Design::Hongbao => &HB_PATHS,
            _ => &SEED_PATHS,
        }
    }
}

/// The scenarios of part 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// `BENCH_GRABBERS` users for `BENCH_CODES` codes.
    Storm,
    /// `BENCH_WIN_USERS` users for `BENCH_CODES` codes.
    Wins,
}

impl Scenario {
    /// Both, in table order.
    const ALL: [Scenario; 2] = [Scenario::Storm, Scenario::Wins];

    /// Its name.
    fn name(self) -> &'static str {
        match self {
            Scenario::Storm => "storm",
            Scenario::Wins => "wins",
        }
    }

    /// Its crowd.
    fn crowd(self, s: &Settings) -> Crowd {
        match self {
            Scenario::Storm => s.crowd(s.grabbers, "u"),
            Scenario::Wins => s.crowd(s.win_users, "w"),
        }
    }
}

/// One measured run of a design.
#[derive(Debug, Clone)]
struct Measure {
    /// Requests sent.
    requests: u64,
    /// Server main-thread CPU over the run, µs.
    cpu_usec: f64,
    /// Wall time, seconds.
    secs: f64,
    /// Answers per path.
    mix: Vec<u64>,
    /// `INFO commandstats` over the run: command -> (calls, usec).
    stats: BTreeMap<String, (u64, f64)>,
}

impl Measure {
    /// Server CPU per request, µs.
    fn per_request(&self) -> f64 {
        self.cpu_usec / self.requests as f64
    }

    /// `usec_per_call` of `EVALSHA`.
    fn evalsha_usec_per_call(&self) -> f64 {
        self.stats
            .get("evalsha")
            .map_or(0.0, |&(calls, usec)| usec / calls.max(1) as f64)
    }
}

/// Part 1's server and clients.
struct StormBench {
    /// The server.
    server: RedisServer,
    /// Admin connection (setup, statistics).
    admin: MultiplexedConnection,
    /// hongbao's store (one sandbox).
    store: Arc<Store>,
    /// The seed's connection.
    seed: MultiplexedConnection,
}

/// Runs `design` on `scenario` once, from an empty server; the measure and the problems found.
async fn storm_run(
    b: &mut StormBench,
    design: Design,
    scenario: Scenario,
    round: usize,
    s: &Settings,
    visits: VisitLimit,
) -> (Measure, Vec<String>) {
    let prefix = b.store.config().key_prefix.clone();
    flush(&mut b.admin, &prefix).await;
    let crowd = scenario.crowd(s);
    let tag = format!("{}{round}", &scenario.name()[..1].to_uppercase());
    let all = codes(&tag, s.codes);
    let created = match design {
        Design::Hongbao => {
            let c =
                uploaded_campaign(&b.store, &format!("{}-{round}", scenario.name()), &all).await;
            // A warm sandbox: the campaign's shape known, connected.
            coupons::campaign(&b.store, &c.campaign_id, None)
                .await
                .expect("campaign")
                .expect("campaign exists");
            Some(c)
        }
        Design::Seed | Design::SeedDel => {
            seed_sadd(&mut b.admin, &all).await;
            None
        }
    };
    let _: () = q(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
    let cpu_before = main_cpu(&mut b.admin).await;
    let out = match design {
        Design::Hongbao => {
            let id = &created.as_ref().expect("campaign").campaign_id;
            hongbao_crowd(b.store.clone(), id, &crowd, visits).await
        }
        Design::Seed => seed_crowd(&b.seed, &crowd, visits, false).await,
        Design::SeedDel => seed_crowd(&b.seed, &crowd, visits, true).await,
    };
    let cpu_after = main_cpu(&mut b.admin).await;
    let mut stats = commandstats(&mut b.admin).await;
    stats.remove("info");
    let requests: u64 = out.mix.iter().sum();
    let label = format!("{} {} round {}", design.name(), scenario.name(), round + 1);
    let mut problems = Vec::new();
    if requests != crowd.requests() {
        problems.push(format!(
            "{label}: {requests} requests, {} expected",
            crowd.requests()
        ));
    }
    match (design, &created) {
        (Design::Hongbao, Some(c)) => {
            if out.mix[5] > 0 {
                problems.push(format!("{label}: {} grab calls failed", out.mix[5]));
            }
            if let Some(&(evals, _)) = stats.get("eval") {
                problems.push(format!("{label}: {evals} EVAL calls (NOSCRIPT fallbacks)"));
            }
            problems.extend(
                check_campaign(&b.store, c, &told(&crowd, &out), Some(&all))
                    .await
                    .into_iter()
                    .map(|p| format!("{label}: {p}")),
            );
        }
        _ => problems.extend(check_seed(&label, &out, s.codes)),
    }
    let info: String = q(&mut b.admin, &["INFO", "commandstats"]).await;
    let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
    if failed > 0 {
        problems.push(format!("{label}: {failed} failed EVALSHA calls"));
    }
    (
        Measure {
            requests,
            cpu_usec: (cpu_after - cpu_before) * 1e6,
            secs: out.secs,
            mix: out.mix,
            stats,
        },
        problems,
    )
}

/// Part 1's figures: per scenario, per design, every round's measure.
struct StormCpu {
    /// `[scenario][design]` -> rounds.
    runs: Vec<Vec<Vec<Measure>>>,
    /// redis-server version.
    version: String,
}

impl StormCpu {
    /// Median µs CPU per request of `design` in `scenario`.
    fn usec(&self, scenario: usize, design: usize) -> f64 {
        median(
            self.runs[scenario][design]
                .iter()
                .map(Measure::per_request)
                .collect(),
        )
    }

    /// Median, min and max of the per-round ratio hongbao / `design` in `scenario`.
    fn ratio(&self, scenario: usize, design: usize) -> (f64, f64, f64) {
        let r: Vec<f64> = self.runs[scenario][0]
            .iter()
            .zip(&self.runs[scenario][design])
            .map(|(h, d)| h.per_request() / d.per_request())
            .collect();
        (
            median(r.clone()),
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    }

    /// Per command of `design` in `scenario`, over all rounds: (calls per request, µs per
    /// request), largest µs first.
    fn commands(&self, scenario: usize, design: usize) -> Vec<(String, f64, f64)> {
        let runs = &self.runs[scenario][design];
        let requests: u64 = runs.iter().map(|m| m.requests).sum();
        let mut by: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for m in runs {
            for (name, (calls, usec)) in &m.stats {
                let e = by.entry(name.clone()).or_default();
                e.0 += calls;
                e.1 += usec;
            }
        }
        let mut out: Vec<(String, f64, f64)> = by
            .into_iter()
            .filter(|(_, (calls, _))| *calls > 0)
            .map(|(name, (calls, usec))| {
                (name, calls as f64 / requests as f64, usec / requests as f64)
            })
            .collect();
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        out
    }
}

/// Part 1: every scenario and design, `BENCH_ROUNDS` rounds, on one pinned server.
async fn storm_cpu(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> StormCpu {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut admin = node_conn(&server.url()).await;
    let info: String = q(&mut admin, &["INFO", "server"]).await;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    load_grab(&mut admin).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    store.conn().await.expect("connect");
    let seed = node_conn(&server.url()).await;
    let mut b = StormBench {
        server,
        admin,
        store,
        seed,
    };
    let mut runs: Vec<Vec<Vec<Measure>>> =
        vec![vec![Vec::new(); Design::ALL.len()]; Scenario::ALL.len()];
    for round in 0..s.rounds {
        for (si, scenario) in Scenario::ALL.iter().enumerate() {
            let mut order: Vec<usize> = (0..Design::ALL.len()).collect();
            if (round + si) % 2 == 1 {
                order.reverse();
            }
            for d in order {
                let (m, p) = storm_run(&mut b, Design::ALL[d], *scenario, round, s, visits).await;
                eprintln!(
                    "  part 1 round {}: {} {}: {} requests in {:.2} s, {:.2} µs CPU/request",
                    round + 1,
                    scenario.name(),
                    Design::ALL[d].name(),
                    m.requests,
                    m.secs,
                    m.per_request()
                );
                problems.extend(p);
                runs[si][d].push(m);
            }
        }
    }
    eprintln!("  part 1 server: {}", b.server.url());
    StormCpu { runs, version }
}

/// Prints part 1's tables.
fn print_storm(r: &StormCpu, s: &Settings) {
    println!();
    println!(
        "## 1. Server CPU per grab: hongbao beside seed 004 (standalone redis-server {}, {} \
         rounds)",
        r.version, s.rounds
    );
    println!();
    println!(
        "| scenario | design | requests | outcomes (last round) | requests/s (median) | µs CPU/request \
         (median) | hongbao / design (median [min–max]) | goal |"
    );
    println!("| --- | --- | ---: | --- | ---: | ---: | ---: | --- |");
    for (si, scenario) in Scenario::ALL.iter().enumerate() {
        for (d, design) in Design::ALL.iter().enumerate() {
            let runs = &r.runs[si][d];
            let last = runs.last().expect("a round");
            let outcomes: Vec<String> = design
                .paths()
                .iter()
                .zip(&last.mix)
                .filter(|(_, n)| **n > 0)
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            let (ratio, goal) = if d == 0 {
                ("—".to_string(), "—".to_string())
            } else {
                let (m, lo, hi) = r.ratio(si, d);
                let goal = if *design == Design::Seed {
                    format!("≤ 1.0×: {}", if m <= 1.0 { "met" } else { "not met" })
                } else {
                    "—".to_string()
                };
                (format!("{m:.2}× [{lo:.2}–{hi:.2}]"), goal)
            };
            println!(
                "| {} ({} users, {} codes) | {} | {} | {} | {:.0} | {:.2} | {ratio} | {goal} |",
                scenario.name(),
                scenario.crowd(s).users,
                s.codes,
                design.name(),
                last.requests,
                outcomes.join(", "),
                median(runs.iter().map(|m| m.requests as f64 / m.secs).collect()),
                r.usec(si, d),
            );
        }
    }
    println!();
    println!(
        "hongbao grab script (lua/coupon_grab.lua) EVALSHA usec_per_call (INFO commandstats, \
         median over rounds): storm {:.2} µs, wins {:.2} µs",
        median(
            r.runs[0][0]
                .iter()
                .map(Measure::evalsha_usec_per_call)
                .collect()
        ),
        median(
            r.runs[1][0]
                .iter()
                .map(Measure::evalsha_usec_per_call)
                .collect()
        ),
    );
    println!();
    println!("| scenario | design | INFO commandstats per request: command calls × µs (all rounds; commands inside scripts counted too, their µs also inside the script's) |");
    println!("| --- | --- | --- |");
    for (si, scenario) in Scenario::ALL.iter().enumerate() {
        for (d, design) in Design::ALL.iter().enumerate() {
            let cmds: Vec<String> = r
                .commands(si, d)
                .iter()
                .map(|(name, calls, usec)| format!("{name} {calls:.2} × {usec:.2} µs"))
                .collect();
            println!(
                "| {} | {} | {} |",
                scenario.name(),
                design.name(),
                cmds.join(", ")
            );
        }
    }
    println!();
    println!(
        "µs CPU/request = the server's main-thread CPU (INFO cpu used_cpu_user_main_thread + \
         used_cpu_sys_main_thread) over the run / requests; every run from FLUSHALL; seed 004 = \
         GET visits:<user>, INCR, EXPIRE on the first visit, SPOP codes (one round trip each, \
         {} tasks over one redis-rs connection, as hongbao's {} tasks over one Store); + DEL = \
         canAccess as the seed's Java is written (DEL when the count reads 0); users 0, {n}, \
         2×{n}… press twice; the seed has no per-user limit beyond the visit limit, so a second \
         press takes a second code",
        s.tasks,
        s.tasks,
        n = s.repeat_every
    );
}

/// Part 1's JSON.
fn storm_json(r: &StormCpu, s: &Settings) -> Value {
    json!({
        "redis_version": r.version,
        "codes": s.codes,
        "rounds": s.rounds,
        "tasks": s.tasks,
        "repeat_every": s.repeat_every,
        "scenarios": Scenario::ALL.iter().enumerate().map(|(si, scenario)| json!({
            "scenario": scenario.name(),
            "users": scenario.crowd(s).users,
            "designs": Design::ALL.iter().enumerate().map(|(d, design)| {
                let (m, lo, hi) = r.ratio(si, d);
                json!({
                    "design": design.name(),
                    "usec_cpu_per_request_median": r.usec(si, d),
                    "hongbao_ratio_median": m,
                    "hongbao_ratio_min": lo,
                    "hongbao_ratio_max": hi,
                    "evalsha_usec_per_call_median": median(
                        r.runs[si][d].iter().map(Measure::evalsha_usec_per_call).collect()),
                    "commands_per_request": r.commands(si, d).iter().map(|(name, calls, usec)|
                        json!({"command": name, "calls": calls, "usec": usec}))
                        .collect::<Vec<_>>(),
                    "rounds": r.runs[si][d].iter().map(|m| json!({
                        "requests": m.requests,
                        "server_cpu_usec": m.cpu_usec,
                        "usec_cpu_per_request": m.per_request(),
                        "secs": m.secs,
                        "outcomes": design.paths().iter().zip(&m.mix)
                            .map(|(p, n)| (p.to_string(), json!(n)))
                            .collect::<serde_json::Map<_, _>>(),
                    })).collect::<Vec<_>>(),
                })
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

// ------------------------------------------------------------------------------------------
// Part 2: the cluster's spread
// ------------------------------------------------------------------------------------------

/// One master of the cluster.
struct Node {
    /// `host:port`.
    addr: String,
    /// Its slot ranges, as `CLUSTER NODES` gives them.
    slots: String,
    /// Its slot ranges, inclusive.
    ranges: Vec<(u16, u16)>,
    /// A plain connection to it.
    conn: MultiplexedConnection,
}

impl Node {
    /// Its port.
    fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap_or_default()
    }
}

/// Connects to every node at `urls` and reads each node's slots from `CLUSTER NODES`.
async fn cluster_nodes(urls: &[String]) -> Vec<Node> {
    let mut nodes = Vec::with_capacity(urls.len());
    for url in urls {
        nodes.push(Node {
            addr: url.trim_start_matches("redis://").to_string(),
            slots: String::new(),
            ranges: Vec::new(),
            conn: node_conn(url).await,
        });
    }
    let map: String = q(&mut nodes[0].conn, &["CLUSTER", "NODES"]).await;
    for line in map.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(addr) = fields.get(1).and_then(|a| a.split('@').next()) else {
            continue;
        };
        let Some(node) = nodes.iter_mut().find(|n| n.addr == addr) else {
            continue;
        };
        for slot in fields.iter().skip(8).filter(|s| !s.starts_with('[')) {
            let (lo, hi) = slot.split_once('-').unwrap_or((slot, slot));
            node.ranges
                .push((lo.parse().expect("slot"), hi.parse().expect("slot")));
        }
        node.slots = fields.get(8..).unwrap_or_default().join(" ");
    }
    for n in &nodes {
        assert!(!n.ranges.is_empty(), "{} serves no slots:\n{map}", n.addr);
    }
    nodes
}

/// The node (index) serving `slot` at the start.
fn owner_of(nodes: &[Node], slot: u16) -> usize {
    nodes
        .iter()
        .position(|n| n.ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot)))
        .unwrap_or_else(|| panic!("no master serves slot {slot}"))
}

/// One master's share of the cluster storm.
#[derive(Debug, Clone)]
struct Share {
    /// `host:port`.
    addr: String,
    /// Its slots.
    slots: String,
    /// Pools of the campaign it holds.
    pools: usize,
    /// `cmdstat_evalsha` calls.
    evalsha_calls: u64,
    /// `cmdstat_evalsha` usec.
    evalsha_usec: f64,
    /// Main-thread CPU over the storm, seconds.
    cpu_secs: f64,
}

/// Part 2's figures.
struct ClusterSpread {
    /// The campaign's codes and pools.
    codes: u64,
    /// Its pools.
    pools: u32,
    /// Requests.
    requests: u64,
    /// Wall time, seconds.
    secs: f64,
    /// Answers per path.
    mix: Vec<u64>,
    /// Every master.
    masters: Vec<Share>,
}

impl ClusterSpread {
    /// Each master's shares of (EVALSHA calls, EVALSHA usec, main-thread CPU).
    fn shares(&self) -> Vec<(f64, f64, f64)> {
        let calls: f64 = self.masters.iter().map(|m| m.evalsha_calls as f64).sum();
        let usec: f64 = self.masters.iter().map(|m| m.evalsha_usec).sum();
        let cpu: f64 = self.masters.iter().map(|m| m.cpu_secs).sum();
        self.masters
            .iter()
            .map(|m| {
                (
                    m.evalsha_calls as f64 / calls,
                    m.evalsha_usec / usec,
                    m.cpu_secs / cpu,
                )
            })
            .collect()
    }

    /// Whether every share is within 1/3 ± [`SHARE_TOLERANCE`].
    fn met(&self) -> bool {
        let ok = |x: f64| (x - 1.0 / 3.0).abs() <= SHARE_TOLERANCE;
        self.shares()
            .iter()
            .all(|&(a, b, c)| ok(a) && ok(b) && ok(c))
    }
}

/// Part 2: a generated campaign stormed on the cluster.
async fn cluster_spread(
    nodes: &mut [Node],
    url: &str,
    s: &Settings,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> ClusterSpread {
    let store = Arc::new(Store::new(config(url.to_string(), true)));
    let c = generated_campaign(&store, "cluster-drop", s.cluster_codes).await;
    let mut owners = vec![0usize; nodes.len()];
    for k in 0..c.pools {
        let keys = PoolKeys::new(
            &store.config().key_prefix,
            &c.campaign_id,
            c.campaign_no,
            k,
            c.pools,
        );
        let slot: u16 = q(&mut nodes[0].conn, &["CLUSTER", "KEYSLOT", &keys.pool]).await;
        owners[owner_of(nodes, slot)] += 1;
    }
    coupons::campaign(&store, &c.campaign_id, None)
        .await
        .expect("campaign")
        .expect("campaign exists");
    let mut before = Vec::with_capacity(nodes.len());
    for n in nodes.iter_mut() {
        load_grab(&mut n.conn).await;
        let _: () = q(&mut n.conn, &["CONFIG", "RESETSTAT"]).await;
        before.push(main_cpu(&mut n.conn).await);
    }
    let crowd = s.crowd(s.cluster_grabbers, "c");
    let out = hongbao_crowd(store.clone(), &c.campaign_id, &crowd, visits).await;
    let mut masters = Vec::with_capacity(nodes.len());
    for (k, n) in nodes.iter_mut().enumerate() {
        let cpu = main_cpu(&mut n.conn).await - before[k];
        let info: String = q(&mut n.conn, &["INFO", "commandstats"]).await;
        let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
        let evals = info_field(&info, "cmdstat_eval", Some("calls")) as u64;
        if failed + evals > 0 {
            problems.push(format!(
                "cluster {}: {failed} failed EVALSHA calls, {evals} EVAL calls",
                n.addr
            ));
        }
        masters.push(Share {
            addr: n.addr.clone(),
            slots: n.slots.clone(),
            pools: owners[k],
            evalsha_calls: info_field(&info, "cmdstat_evalsha", Some("calls")) as u64,
            evalsha_usec: info_field(&info, "cmdstat_evalsha", Some("usec")),
            cpu_secs: cpu,
        });
    }
    let requests: u64 = out.mix.iter().sum();
    if out.mix[5] > 0 {
        problems.push(format!("cluster: {} grab calls failed", out.mix[5]));
    }
    if requests != crowd.requests() {
        problems.push(format!(
            "cluster: {requests} requests, {} expected",
            crowd.requests()
        ));
    }
    problems.extend(
        check_campaign(&store, &c, &told(&crowd, &out), None)
            .await
            .into_iter()
            .map(|p| format!("cluster: {p}")),
    );
    ClusterSpread {
        codes: c.codes_total,
        pools: c.pools,
        requests,
        secs: out.secs,
        mix: out.mix,
        masters,
    }
}

/// Prints part 2's table.
fn print_cluster(r: &ClusterSpread, s: &Settings) {
    println!();
    println!(
        "## 2. Cluster spread: a generated campaign of {} codes in {} pools, {} users ({} \
         requests in {:.2} s, {:.0}/s: {})",
        r.codes,
        r.pools,
        s.cluster_grabbers,
        r.requests,
        r.secs,
        r.requests as f64 / r.secs,
        HB_PATHS
            .iter()
            .zip(&r.mix)
            .filter(|(_, n)| **n > 0)
            .map(|(p, n)| format!("{p} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    println!(
        "| master | slots | pools | EVALSHA calls | share of calls | EVALSHA µs/call | share of \
         EVALSHA µs | main-thread CPU (s) | share of CPU | goal 1/3 ± {SHARE_TOLERANCE} |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let ok = |x: f64| (x - 1.0 / 3.0).abs() <= SHARE_TOLERANCE;
    for (m, (calls, usec, cpu)) in r.masters.iter().zip(r.shares()) {
        println!(
            "| {} | {} | {} | {} | {:.1}% | {:.2} | {:.1}% | {:.2} | {:.1}% | {} |",
            m.addr,
            m.slots,
            m.pools,
            m.evalsha_calls,
            100.0 * calls,
            m.evalsha_usec / m.evalsha_calls.max(1) as f64,
            100.0 * usec,
            m.cpu_secs,
            100.0 * cpu,
            if ok(calls) && ok(usec) && ok(cpu) {
                "met"
            } else {
                "not met"
            }
        );
    }
    println!();
    println!(
        "EVALSHA = INFO commandstats cmdstat_evalsha of each node after CONFIG RESETSTAT (the grab \
         script); main-thread CPU = INFO cpu used_cpu_*_main_thread over the storm (also the \
         users' coupon-list writes on their own tags and the cluster bus)"
    );
}

/// Part 2's JSON.
fn cluster_json(r: &ClusterSpread, s: &Settings) -> Value {
    json!({
        "codes": r.codes,
        "pools": r.pools,
        "users": s.cluster_grabbers,
        "requests": r.requests,
        "secs": r.secs,
        "outcomes": HB_PATHS.iter().zip(&r.mix)
            .map(|(p, n)| (p.to_string(), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
        "goal_met": r.met(),
        "masters": r.masters.iter().zip(r.shares()).map(|(m, (calls, usec, cpu))| json!({
            "node": m.addr,
            "slots": m.slots,
            "pools": m.pools,
            "evalsha_calls": m.evalsha_calls,
            "evalsha_usec": m.evalsha_usec,
            "main_thread_cpu_secs": m.cpu_secs,
            "share_of_calls": calls,
            "share_of_evalsha_usec": usec,
            "share_of_cpu": cpu,
        })).collect::<Vec<_>>(),
    })
}

// ------------------------------------------------------------------------------------------
// Part 3: bytes per code
// ------------------------------------------------------------------------------------------

/// The kind of a key, for the memory table.
fn kind(key: &str) -> &'static str {
    if key.starts_with("seed:") {
        if key.contains(":visits:") {
            "seed visit counters"
        } else {
            "seed SADD set"
        }
    } else if key.ends_with(":coupon-codes") {
        "code directory (*:coupon-codes)"
    } else if key.contains(":coupons:") {
        "user lists (*:coupons:*)"
    } else if key.contains(":{coupon}:") {
        "campaign records ({coupon})"
    } else if key.ends_with(":journal") {
        "journal (until ledger-export acks)"
    } else if key.contains(":visits:") {
        "visit counters"
    } else if key.ends_with(":codes") {
        "codes list"
    } else if key.ends_with(":issued") {
        "issued records"
    } else if key.ends_with(":holders") {
        "holders"
    } else if key.ends_with(":pending") || key.ends_with(":loans") || key.ends_with(":batches") {
        "reservations, loans, batches"
    } else if key.contains(":coupon:") {
        "pool hashes"
    } else {
        "other"
    }
}

/// Keys and bytes by kind.
type Usage = BTreeMap<&'static str, (i64, i64)>;

/// Every key's `MEMORY USAGE`, by kind, and `used_memory`.
async fn usage(conn: &mut impl ConnectionLike) -> (Usage, f64) {
    let keys = all_keys(conn).await;
    let sizes = memory_usage(conn, &keys).await;
    let mut out = Usage::new();
    for (k, b) in keys.iter().zip(sizes) {
        let e = out.entry(kind(k)).or_default();
        e.0 += 1;
        e.1 += b as i64;
    }
    (out, used_memory(conn).await)
}

/// One step of part 3: what changed, per code.
#[derive(Debug, Clone)]
struct Step {
    /// What the step did.
    label: String,
    /// The codes it is counted per.
    per: u64,
    /// Keys and bytes by kind, after minus before.
    delta: Vec<(&'static str, i64, i64)>,
    /// `used_memory` after minus before.
    used_memory: f64,
}

impl Step {
    /// `after` minus `before`.
    fn new(label: String, per: u64, before: &(Usage, f64), after: &(Usage, f64)) -> Step {
        let kinds: HashSet<&'static str> = before.0.keys().chain(after.0.keys()).copied().collect();
        let mut delta: Vec<(&'static str, i64, i64)> = kinds
            .into_iter()
            .map(|k| {
                let (kb, bb) = before.0.get(k).copied().unwrap_or_default();
                let (ka, ba) = after.0.get(k).copied().unwrap_or_default();
                (k, ka - kb, ba - bb)
            })
            .filter(|&(_, keys, bytes)| keys != 0 || bytes != 0)
            .collect();
        delta.sort_by_key(|&(_, _, bytes)| std::cmp::Reverse(bytes.abs()));
        Step {
            label,
            per,
            delta,
            used_memory: after.1 - before.1,
        }
    }

    /// The step's bytes of the kinds `pick` selects.
    fn bytes(&self, pick: impl Fn(&str) -> bool) -> i64 {
        self.delta
            .iter()
            .filter(|(k, _, _)| pick(k))
            .map(|&(_, _, b)| b)
            .sum()
    }

    /// Bytes per code of the kinds `pick` selects.
    fn per_code(&self, pick: impl Fn(&str) -> bool) -> f64 {
        self.bytes(pick) as f64 / self.per as f64
    }
}

/// Part 3's figures.
struct Memory {
    /// The steps, in order: uploaded created, seed set, generated created, generated issued,
    /// uploaded issued, seed grabs.
    steps: Vec<Step>,
}

/// Part 3 on a fresh server.
async fn memory(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Memory {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut conn = node_conn(&server.url()).await;
    load_grab(&mut conn).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    let n = s.memory_codes;
    let all = codes("MU", n);
    let mut steps = Vec::new();

    // Warm-up: every script cached and the campaign records created, so that the steps count
    // what a campaign and its codes add.
    for c in [
        uploaded_campaign(&store, "memory-warm-up", &codes("MW", 1)).await,
        generated_campaign(&store, "memory-warm-up-generated", 1).await,
    ] {
        let won = coupons::grab(&store, &c.campaign_id, "warm-up", visits).await;
        assert!(matches!(won, Ok(GrabOutcome::Grabbed { .. })), "{won:?}");
    }

    let s0 = usage(&mut conn).await;
    let up = uploaded_campaign(&store, "memory-uploaded", &all).await;
    let s1 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: uploaded campaign of {n} codes created"),
        n,
        &s0,
        &s1,
    ));
    seed_sadd(&mut conn, &all).await;
    let s2 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("seed 004: SADD of the same {n} codes"),
        n,
        &s1,
        &s2,
    ));
    let gen = generated_campaign(&store, "memory-generated", s.memory_generated).await;
    let s3 = usage(&mut conn).await;
    steps.push(Step::new(
        format!(
            "hongbao: generated campaign of {} codes created ({} pools)",
            s.memory_generated, gen.pools
        ),
        s.memory_generated,
        &s2,
        &s3,
    ));
    let issue = n.min(s.memory_generated);
    let crowd_g = Crowd {
        users: issue,
        repeat_every: 0,
        tasks: s.tasks,
        prefix: "g",
    };
    let out_g = hongbao_crowd(store.clone(), &gen.campaign_id, &crowd_g, visits).await;
    let s4 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: {issue} generated codes issued (grab by {issue} users)"),
        issue,
        &s3,
        &s4,
    ));
    let crowd_u = Crowd {
        users: n,
        repeat_every: 0,
        tasks: s.tasks,
        prefix: "m",
    };
    let out_u = hongbao_crowd(store.clone(), &up.campaign_id, &crowd_u, visits).await;
    let s5 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("hongbao: all {n} uploaded codes issued (grab by {n} users)"),
        n,
        &s4,
        &s5,
    ));
    let out_s = seed_crowd(&conn, &crowd_u, visits, false).await;
    let s6 = usage(&mut conn).await;
    steps.push(Step::new(
        format!("seed 004: {n} users' canAccess + SPOP (every code handed out)"),
        n,
        &s5,
        &s6,
    ));

    for (name, c, crowd, out, uploaded) in [
        ("memory generated", &gen, &crowd_g, &out_g, None),
        (
            "memory uploaded",
            &up,
            &crowd_u,
            &out_u,
            Some(all.as_slice()),
        ),
    ] {
        if out.mix[0] != crowd.users {
            problems.push(format!(
                "{name}: {} of {} grabs won ({:?})",
                out.mix[0], crowd.users, out.mix
            ));
        }
        problems.extend(
            check_campaign(&store, c, &told(crowd, out), uploaded)
                .await
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    problems.extend(check_seed("memory seed", &out_s, n));
    drop(server);
    Memory { steps }
}

impl Memory {
    /// Uploaded, un-issued: (pool keys, directory, campaign records, all) bytes per code.
    fn uploaded(&self) -> (f64, f64, f64, f64) {
        let st = &self.steps[0];
        (
            st.per_code(|k| k == "pool hashes" || k == "codes list"),
            st.per_code(|k| k.starts_with("code directory")),
            st.per_code(|k| k.starts_with("campaign records")),
            st.per_code(|_| true),
        )
    }

    /// The seed's set, bytes per code.
    fn seed(&self) -> f64 {
        self.steps[1].per_code(|_| true)
    }

    /// Generated, before issuing: bytes per code.
    fn generated(&self) -> f64 {
        self.steps[2].per_code(|_| true)
    }

    /// Per issued generated code: (issued + holders + user list, journal, all).
    fn issued(&self) -> (f64, f64, f64) {
        let st = &self.steps[3];
        (
            st.per_code(|k| k == "issued records" || k == "holders" || k.starts_with("user lists")),
            st.per_code(|k| k.starts_with("journal")),
            st.per_code(|_| true),
        )
    }
}

/// Prints part 3's table.
fn print_memory(m: &Memory) {
    println!();
    println!("## 3. Bytes per code (MEMORY USAGE <key> SAMPLES 0 of every key, by kind; INFO memory used_memory)");
    println!();
    println!("| step | kind | keys Δ | bytes Δ | bytes per code |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for st in &m.steps {
        for &(k, keys, bytes) in &st.delta {
            println!(
                "| {} | {k} | {keys} | {bytes} | {:.1} |",
                st.label,
                bytes as f64 / st.per as f64
            );
        }
        let total: i64 = st.delta.iter().map(|d| d.2).sum();
        println!(
            "| {} | **total** (used_memory Δ: {:.0} B, {:.1} per code) | {} | {total} | {:.1} |",
            st.label,
            st.used_memory,
            st.used_memory / st.per as f64,
            st.delta.iter().map(|d| d.1).sum::<i64>(),
            total as f64 / st.per as f64
        );
    }
    let (pool, dir, rec, all) = m.uploaded();
    let (issued, journal, issued_all) = m.issued();
    println!();
    println!(
        "uploaded: {all:.1} B/code stored before any grab (pool hash + codes list {pool:.1}, \
         directory {dir:.1}, campaign records {rec:.1}) vs seed 004's SADD set {:.1} B/code \
         ({:.2}×); generated: {:.3} B/code before issuing; per issued generated code {issued:.1} \
         B (issued record + holders entry + user list) + {journal:.1} B journal entry until \
         ledger-export acknowledges it ({issued_all:.1} B in all)",
        m.seed(),
        all / m.seed(),
        m.generated()
    );
}

/// Part 3's JSON.
fn memory_json(m: &Memory) -> Value {
    let (pool, dir, rec, all) = m.uploaded();
    let (issued, journal, issued_all) = m.issued();
    json!({
        "uploaded_bytes_per_code": all,
        "uploaded_pool_bytes_per_code": pool,
        "uploaded_directory_bytes_per_code": dir,
        "uploaded_records_bytes_per_code": rec,
        "seed_sadd_bytes_per_code": m.seed(),
        "generated_bytes_per_code_before_issuing": m.generated(),
        "generated_bytes_per_issued_code": issued,
        "generated_journal_bytes_per_issued_code": journal,
        "generated_all_bytes_per_issued_code": issued_all,
        "steps": m.steps.iter().map(|st| json!({
            "step": st.label,
            "per_codes": st.per,
            "used_memory_delta": st.used_memory,
            "kinds": st.delta.iter().map(|&(k, keys, bytes)| json!({
                "kind": k, "keys": keys, "bytes": bytes,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

// ------------------------------------------------------------------------------------------
// Part 4: grabs per second
// ------------------------------------------------------------------------------------------

/// A phase of part 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `redis-benchmark -c clients -P pipeline`.
    Rb {
        /// Connections.
        clients: u32,
        /// Pipeline depth.
        pipeline: u32,
    },
    /// `tasks` tasks over one `Store`.
    Hongbao {
        /// Concurrent tasks.
        tasks: usize,
    },
}

impl Phase {
    /// Every phase, in table order.
    const ALL: [Phase; 4] = [
        Phase::Rb {
            clients: 50,
            pipeline: 1,
        },
        Phase::Rb {
            clients: 50,
            pipeline: 16,
        },
        Phase::Hongbao { tasks: 64 },
        Phase::Hongbao { tasks: 256 },
    ];

    /// Its name.
    fn name(self) -> String {
        match self {
            Phase::Rb { clients, pipeline } => {
                format!("redis-benchmark -c {clients} -P {pipeline}")
            }
            Phase::Hongbao { tasks } => format!("hongbao {tasks} tasks / 1 Store"),
        }
    }
}

/// One run of a phase.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Requests.
    requests: u64,
    /// Codes issued.
    grabs: u64,
    /// Wall time, seconds.
    secs: f64,
    /// `EVALSHA` usec per call.
    usec_per_call: f64,
    /// Server main-thread CPU, µs.
    cpu_usec: f64,
}

impl Run {
    /// Grabs per second.
    fn rate(&self) -> f64 {
        self.grabs as f64 / self.secs
    }
}

/// Part 4's server and admin store.
struct HotBench {
    /// The server.
    server: RedisServer,
    /// Admin connection.
    admin: MultiplexedConnection,
    /// Admin store (creations, checks).
    store: Arc<Store>,
}

/// Runs `phase` once on a fresh campaign of `n` codes.
async fn hot_run(
    b: &mut HotBench,
    phase: Phase,
    n: u64,
    visits: VisitLimit,
    tag: &str,
    problems: &mut Vec<String>,
) -> Run {
    let prefix = b.store.config().key_prefix.clone();
    flush(&mut b.admin, &prefix).await;
    let c = generated_campaign(&b.store, &format!("hot-{tag}"), n).await;
    let keys = PoolKeys::new(&prefix, &c.campaign_id, c.campaign_no, 0, c.pools);
    coupons::campaign(&b.store, &c.campaign_id, None)
        .await
        .expect("campaign")
        .expect("campaign exists");
    let label = format!("part 4 {} ({tag})", phase.name());
    let (secs, before, told_pairs) = match phase {
        Phase::Rb { clients, pipeline } => {
            let user = "rb-__rand_int__";
            let words = CouponGrabCall {
                pool: &keys.pool,
                codes: &keys.codes,
                issued: &keys.issued,
                holders: &keys.holders,
                rate: &keys.visits(user),
                pending: &keys.pending,
                journal: &keys.journal,
                user_id: user,
                home: 0,
                rate_limit: visits.per_window,
                rate_window_ms: visits.window_ms,
                reservation: "0000000000000000",
                campaign_id: &c.campaign_id,
            }
            .evalsha_words();
            let _: () = q(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
            let before = main_cpu(&mut b.admin).await;
            let port = b.server.port().to_string();
            let out = tokio::task::spawn_blocking(move || {
                Command::new("redis-benchmark")
                    .args(["-h", "127.0.0.1", "-p", &port])
                    .args(["-c", &clients.to_string(), "-n", &n.to_string()])
                    .args(["-P", &pipeline.to_string()])
                    .args(["-r", &RAND_RANGE.to_string(), "--csv"])
                    .args(&words)
                    .env_remove("LD_PRELOAD")
                    .output()
                    .expect("run redis-benchmark")
            })
            .await
            .expect("redis-benchmark task");
            let stdout = String::from_utf8_lossy(&out.stdout);
            // CSV: a header line, then `"<command>","<rps>",` and six latency fields.
            let rps: f64 = stdout
                .lines()
                .nth(1)
                .and_then(|l| l.rsplit("\",\"").nth(6))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    panic!(
                        "redis-benchmark failed: {stdout}{}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            (n as f64 / rps, before, None)
        }
        Phase::Hongbao { tasks } => {
            let store = Arc::new(Store::new(config(b.server.url(), false)));
            store.conn().await.expect("connect");
            let crowd = Crowd {
                users: n,
                repeat_every: 0,
                tasks,
                prefix: "h",
            };
            let _: () = q(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
            let before = main_cpu(&mut b.admin).await;
            let out = hongbao_crowd(store, &c.campaign_id, &crowd, visits).await;
            if out.mix[0] != n {
                problems.push(format!(
                    "{label}: {} of {n} calls grabbed ({:?})",
                    out.mix[0], out.mix
                ));
            }
            (out.secs, before, Some(told(&crowd, &out)))
        }
    };
    let cpu = main_cpu(&mut b.admin).await - before;
    let info: String = q(&mut b.admin, &["INFO", "commandstats"]).await;
    let calls = info_field(&info, "cmdstat_evalsha", Some("calls")) as u64;
    let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
    if calls != n || failed > 0 {
        problems.push(format!(
            "{label}: {calls} EVALSHA calls ({failed} failed) for {n} requests"
        ));
    }
    let grabs: Option<u64> = q(&mut b.admin, &["HGET", &keys.pool, "issued"]).await;
    let grabs = grabs.unwrap_or(0);
    let rb = matches!(phase, Phase::Rb { .. });
    let found = check_campaign(&b.store, &c, &told_pairs.unwrap_or_default(), None).await;
    problems.extend(
        found
            .into_iter()
            // redis-benchmark's callers are not told: only the server's invariants.
            .filter(|p| !(rb && p.contains("told to callers")))
            .map(|p| format!("{label}: {p}")),
    );
    Run {
        requests: n,
        grabs,
        secs,
        usec_per_call: info_field(&info, "cmdstat_evalsha", Some("usec_per_call")),
        cpu_usec: cpu * 1e6,
    }
}

/// Part 4: every phase, `BENCH_HOT_ROUNDS` rounds, alternating order.
async fn hot(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Vec<(Phase, Vec<Run>)> {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut admin = node_conn(&server.url()).await;
    load_grab(&mut admin).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    let mut b = HotBench {
        server,
        admin,
        store,
    };
    let mut results: Vec<(Phase, Vec<Run>)> = Phase::ALL.iter().map(|p| (*p, Vec::new())).collect();
    for round in 0..s.hot_rounds {
        // redis-benchmark and hongbao alternate; every other round backwards.
        let mut order = vec![0, 2, 1, 3];
        if round % 2 == 1 {
            order.reverse();
        }
        for k in order {
            let phase = results[k].0;
            let run = hot_run(
                &mut b,
                phase,
                s.grabs,
                visits,
                &format!("{round}-{k}"),
                problems,
            )
            .await;
            eprintln!(
                "  part 4 round {}: {}: {:.0} grabs/s",
                round + 1,
                phase.name(),
                run.rate()
            );
            results[k].1.push(run);
        }
    }
    results
}

/// The best rate of `runs`.
fn best_rate(runs: &[Run]) -> f64 {
    runs.iter().map(Run::rate).fold(0.0, f64::max)
}

/// The median over rounds of `runs`' rate as a percentage of `reference`'s in the same round.
fn paired(runs: &[Run], reference: &[Run]) -> f64 {
    median(
        runs.iter()
            .zip(reference)
            .map(|(r, x)| pct(r.rate(), x.rate()))
            .collect(),
    )
}

/// Prints part 4's table.
fn print_hot(results: &[(Phase, Vec<Run>)], s: &Settings) {
    println!();
    println!(
        "## 4. Grabs per second: one hot generated campaign of {} codes (one pool) on one \
         server, {} rounds",
        s.grabs, s.hot_rounds
    );
    println!();
    println!(
        "| phase | requests | grabs/s (best) | grabs/s (median) | % of rb -P 1 (best / paired) \
         | % of rb -P 16 (best / paired) | EVALSHA µs/call (median) | server CPU µs/request \
         (median) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (p1, p16) = (&results[0].1, &results[1].1);
    for (phase, runs) in results {
        let b = best_rate(runs);
        println!(
            "| {} | {} | {b:.0} | {:.0} | {:.0}% / {:.0}% | {:.0}% / {:.0}% | {:.2} | {:.2} |",
            phase.name(),
            runs[0].requests,
            median(runs.iter().map(Run::rate).collect()),
            pct(b, best_rate(p1)),
            paired(runs, p1),
            pct(b, best_rate(p16)),
            paired(runs, p16),
            median(runs.iter().map(|r| r.usec_per_call).collect()),
            median(
                runs.iter()
                    .map(|r| r.cpu_usec / r.requests as f64)
                    .collect()
            ),
        );
    }
    println!();
    println!(
        "rb = redis-benchmark sending the EVALSHA store::coupons::grab sends (user id and visit \
         key with __rand_int__, -r {RAND_RANGE}); grabs = the pool's issued count; paired = \
         median over rounds of the ratio to rb in the same round; hongbao's grab is the EVALSHA \
         then, after a win, the user's coupon list (MULTI, ZADD, PEXPIREAT ×2, EXEC) in a \
         second round trip, which rb does not send"
    );
}

/// Part 4's JSON.
fn hot_json(results: &[(Phase, Vec<Run>)], s: &Settings) -> Value {
    json!({
        "codes_per_phase": s.grabs,
        "rounds": s.hot_rounds,
        "phases": results.iter().map(|(phase, runs)| json!({
            "phase": phase.name(),
            "best_grabs_per_sec": best_rate(runs),
            "median_grabs_per_sec": median(runs.iter().map(Run::rate).collect()),
            "runs": runs.iter().map(|r| json!({
                "requests": r.requests,
                "grabs": r.grabs,
                "secs": r.secs,
                "grabs_per_sec": r.rate(),
                "evalsha_usec_per_call": r.usec_per_call,
                "server_cpu_usec_per_request": r.cpu_usec / r.requests as f64,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

// ------------------------------------------------------------------------------------------
// Part 5: pool size
// ------------------------------------------------------------------------------------------

/// One pool measured in one state, and its slot moved.
#[derive(Debug, Clone)]
struct PoolMove {
    /// Codes of the pool.
    size: u64,
    /// `fresh` or `sold out`.
    state: &'static str,
    /// Seconds to write the pool (fresh) or to issue every code (sold out).
    write_secs: f64,
    /// Bytes of the pool's own keys.
    pool_bytes: u64,
    /// Its biggest key (the part after the pool's name, e.g. `:codes`).
    biggest: String,
    /// That key's bytes.
    biggest_bytes: u64,
    /// That key's `DUMP` size.
    dump_bytes: u64,
    /// That key's `MIGRATE`, client wall time, ms.
    biggest_ms: f64,
    /// Keys in the slot (the pool's, the tag's journal, other keys of the slot).
    slot_keys: usize,
    /// Their bytes.
    slot_bytes: u64,
    /// The whole slot move, ms.
    slot_ms: f64,
    /// The source's `cmdstat_migrate` usec over the move.
    migrate_usec: f64,
    /// The target's `cmdstat_restore-asking` usec over the move.
    restore_usec: f64,
}

/// Measures the slot `slot` of the pool named `base` (size `size`) on node `*owner`, then moves
/// the slot to the next node.
#[allow(clippy::too_many_arguments)]
async fn measure_and_move(
    nodes: &mut [Node],
    slot: u16,
    owner: &mut usize,
    base: &str,
    size: u64,
    state: &'static str,
    write_secs: f64,
    problems: &mut Vec<String>,
) -> PoolMove {
    let (src, dst) = (*owner, (*owner + 1) % nodes.len());
    let slot_s = slot.to_string();
    let count: u64 = q(
        &mut nodes[src].conn,
        &["CLUSTER", "COUNTKEYSINSLOT", &slot_s],
    )
    .await;
    let keys: Vec<String> = q(
        &mut nodes[src].conn,
        &["CLUSTER", "GETKEYSINSLOT", &slot_s, &count.to_string()],
    )
    .await;
    let sizes = memory_usage(&mut nodes[src].conn, &keys).await;
    let own = |k: &str| k == base || k.starts_with(&format!("{base}:"));
    let pool_bytes: u64 = keys
        .iter()
        .zip(&sizes)
        .filter(|(k, _)| own(k))
        .map(|(_, b)| b)
        .sum();
    let (biggest, biggest_bytes) = keys
        .iter()
        .zip(&sizes)
        .filter(|(k, _)| own(k))
        .max_by_key(|(_, b)| **b)
        .map(|(k, b)| (k.clone(), *b))
        .expect("the pool's keys");
    let dump: Option<Vec<u8>> = q(&mut nodes[src].conn, &["DUMP", &biggest]).await;
    let dump_bytes = dump.map_or(0, |d| d.len() as u64);

    let src_id: String = q(&mut nodes[src].conn, &["CLUSTER", "MYID"]).await;
    let dst_id: String = q(&mut nodes[dst].conn, &["CLUSTER", "MYID"]).await;
    let dst_port = nodes[dst].port().to_string();
    for n in [src, dst] {
        let _: () = q(&mut nodes[n].conn, &["CONFIG", "RESETSTAT"]).await;
    }
    let started = Instant::now();
    let _: () = q(
        &mut nodes[dst].conn,
        &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &src_id],
    )
    .await;
    let _: () = q(
        &mut nodes[src].conn,
        &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &dst_id],
    )
    .await;
    let mut biggest_ms = 0.0;
    let mut moved = 0usize;
    loop {
        let batch: Vec<String> = q(
            &mut nodes[src].conn,
            &["CLUSTER", "GETKEYSINSLOT", &slot_s, "1000"],
        )
        .await;
        if batch.is_empty() {
            break;
        }
        for k in &batch {
            let t = Instant::now();
            let reply: String = q(
                &mut nodes[src].conn,
                &["MIGRATE", "127.0.0.1", &dst_port, k, "0", "60000"],
            )
            .await;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if *k == biggest {
                biggest_ms = ms;
            }
            if reply == "OK" {
                moved += 1;
            }
        }
    }
    let others: Vec<usize> = (0..nodes.len()).filter(|&n| n != dst && n != src).collect();
    for n in std::iter::once(dst)
        .chain(std::iter::once(src))
        .chain(others)
    {
        let _: () = q(
            &mut nodes[n].conn,
            &["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id],
        )
        .await;
    }
    let slot_ms = started.elapsed().as_secs_f64() * 1e3;
    let src_stats = commandstats(&mut nodes[src].conn).await;
    let dst_stats = commandstats(&mut nodes[dst].conn).await;
    let arrived: u64 = q(
        &mut nodes[dst].conn,
        &["CLUSTER", "COUNTKEYSINSLOT", &slot_s],
    )
    .await;
    if moved != keys.len() || arrived != count {
        problems.push(format!(
            "pool of {size} ({state}): {moved} of {} keys migrated, {arrived} arrived",
            keys.len()
        ));
    }
    *owner = dst;
    PoolMove {
        size,
        state,
        write_secs,
        pool_bytes,
        biggest: biggest.strip_prefix(base).unwrap_or(&biggest).to_string(),
        biggest_bytes,
        dump_bytes,
        biggest_ms,
        slot_keys: keys.len(),
        slot_bytes: sizes.iter().sum(),
        slot_ms,
        migrate_usec: src_stats.get("migrate").map_or(0.0, |s| s.1),
        restore_usec: dst_stats.get("restore-asking").map_or(0.0, |s| s.1),
    }
}

/// Issues every code of the one-pool campaign `id` (number `no`, `size` codes) on `conn`
/// (the pool's node) by `size` users, pipelined; the seconds it took.
async fn fill(
    conn: &mut MultiplexedConnection,
    keys: &PoolKeys,
    id: &str,
    size: u64,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> f64 {
    load_grab(conn).await;
    let started = Instant::now();
    let mut grabbed = 0u64;
    let indices: Vec<u64> = (0..size).collect();
    for chunk in indices.chunks(FILL_PIPELINE) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let user = format!("t-{i:07}");
            let reservation = format!("{i:016x}");
            let (k, a) = CouponGrabCall {
                pool: &keys.pool,
                codes: &keys.codes,
                issued: &keys.issued,
                holders: &keys.holders,
                rate: &keys.visits(&user),
                pending: &keys.pending,
                journal: &keys.journal,
                user_id: &user,
                home: 0,
                rate_limit: visits.per_window,
                rate_window_ms: visits.window_ms,
                reservation: &reservation,
                campaign_id: id,
            }
            .texts();
            pipe.cmd("EVALSHA")
                .arg(scripts::COUPON_GRAB.get_hash())
                .arg(k.len())
                .arg(k)
                .arg(a);
        }
        let replies: Vec<String> = pipe.query_async(conn).await.expect("grabs");
        grabbed += replies.iter().filter(|r| r.starts_with("grabbed:")).count() as u64;
    }
    let secs = started.elapsed().as_secs_f64();
    let (left, issued): (u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(&keys.codes)
        .cmd("HLEN")
        .arg(&keys.issued)
        .query_async(conn)
        .await
        .expect("counts");
    if grabbed != size || left != 0 || issued != size {
        problems.push(format!(
            "pool of {size}: {grabbed} grabbed, {left} left, {issued} issued records"
        ));
    }
    secs
}

/// Part 5 on the cluster.
async fn pool_sizes(
    nodes: &mut [Node],
    s: &Settings,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Vec<PoolMove> {
    let mut out = Vec::new();
    for (j, &size) in s.pool_sizes.iter().enumerate() {
        // Campaign numbers far above the ones the store gives (up to 32^5 - 1).
        let no = 30_000_000 + j as u64;
        let id = campaign_id(no);
        let keys = PoolKeys::new("hb", &id, no, 0, 1);
        let slot: u16 = q(&mut nodes[0].conn, &["CLUSTER", "KEYSLOT", &keys.pool]).await;
        let mut owner = owner_of(nodes, slot);
        let all = codes(&format!("P{j}"), size);
        let batch: Vec<&str> = all.iter().map(String::as_str).collect();
        let conn = &mut nodes[owner].conn;
        let now = redis_ms(conn).await;
        let sha: String = q(
            conn,
            &["SCRIPT", "LOAD", scripts::COUPON_CREATE_POOL.source()],
        )
        .await;
        assert_eq!(sha, scripts::COUPON_CREATE_POOL.get_hash());
        let started = Instant::now();
        let reply = CouponCreatePoolCall {
            pool: &keys.pool,
            codes: &keys.codes,
            fingerprint: "v1:bench",
            title: "20 off 100",
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 3_600_000,
            redeem_by_ms: now + 7_200_000,
            per_user: PER_USER,
            pools: 1,
            kind: "uploaded",
            first_index: 0,
            end_index: 0,
            secret: "",
            campaign_total: size,
            batch: &batch,
        }
        .invocation()
        .invoke_async(conn)
        .await
        .expect("coupon_create_pool");
        assert_eq!(
            text("coupon_create_pool", reply).expect("reply"),
            "created",
            "pool of {size}"
        );
        let write = started.elapsed().as_secs_f64();
        let base = keys.pool.clone();
        out.push(
            measure_and_move(
                nodes, slot, &mut owner, &base, size, "fresh", write, problems,
            )
            .await,
        );
        let secs = fill(&mut nodes[owner].conn, &keys, &id, size, visits, problems).await;
        out.push(
            measure_and_move(
                nodes, slot, &mut owner, &base, size, "sold out", secs, problems,
            )
            .await,
        );
        eprintln!("  part 5: pool of {size} measured");
    }
    out
}

/// Prints part 5's table.
fn print_pools(rows: &[PoolMove]) {
    println!();
    println!("## 5. One pool's size: bytes and the time to move its hash slot (3-master cluster)");
    println!();
    println!(
        "| codes in the pool | state | written in (s) | pool keys (bytes) | bytes per code | \
         biggest key | its bytes | its DUMP (bytes) | its MIGRATE (ms) | slot: keys, bytes | \
         slot move (ms) | source MIGRATE µs / target RESTORE µs |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        println!(
            "| {} | {} | {:.2} | {} | {:.1} | {} | {} | {} | {:.1} | {}, {} | {:.1} | {:.0} / {:.0} |",
            r.size,
            r.state,
            r.write_secs,
            r.pool_bytes,
            r.pool_bytes as f64 / r.size as f64,
            r.biggest,
            r.biggest_bytes,
            r.dump_bytes,
            r.biggest_ms,
            r.slot_keys,
            r.slot_bytes,
            r.slot_ms,
            r.migrate_usec,
            r.restore_usec
        );
    }
    println!();
    println!(
        "a pool written by lua/coupon_create_pool.lua (fresh: pool hash + codes list), then every \
         code issued by lua/coupon_grab.lua to distinct users, pipelined (sold out: issued \
         records, holders, the tag's journal); bytes = MEMORY USAGE SAMPLES 0; slot move = \
         SETSLOT IMPORTING/MIGRATING, one MIGRATE per key of the slot, SETSLOT NODE on every \
         master (the source is blocked during each MIGRATE, the target during each RESTORE)"
    );
}

/// Part 5's JSON.
fn pools_json(rows: &[PoolMove]) -> Value {
    json!(rows
        .iter()
        .map(|r| json!({
            "codes": r.size,
            "state": r.state,
            "write_secs": r.write_secs,
            "pool_bytes": r.pool_bytes,
            "bytes_per_code": r.pool_bytes as f64 / r.size as f64,
            "biggest_key": r.biggest,
            "biggest_key_bytes": r.biggest_bytes,
            "biggest_key_dump_bytes": r.dump_bytes,
            "biggest_key_migrate_ms": r.biggest_ms,
            "slot_keys": r.slot_keys,
            "slot_bytes": r.slot_bytes,
            "slot_move_ms": r.slot_ms,
            "source_migrate_usec": r.migrate_usec,
            "target_restore_asking_usec": r.restore_usec,
        }))
        .collect::<Vec<_>>())
}

// ------------------------------------------------------------------------------------------
// Summary
// ------------------------------------------------------------------------------------------

/// Prints the summary table: one line per part that ran.
fn print_summary(
    storm: Option<&StormCpu>,
    cluster: Option<&ClusterSpread>,
    mem: Option<&Memory>,
    hot: Option<&[(Phase, Vec<Run>)]>,
    pools: Option<&[PoolMove]>,
) {
    println!();
    println!("## Summary");
    println!();
    println!("| # | measure | hongbao | baseline | hongbao / baseline, goal |");
    println!("| --- | --- | ---: | ---: | --- |");
    if let Some(r) = storm {
        for (si, scenario) in Scenario::ALL.iter().enumerate() {
            let (m, lo, hi) = r.ratio(si, 1);
            let (md, _, _) = r.ratio(si, 2);
            println!(
                "| 1 | server main-thread CPU per grab request, {} | {:.2} µs | seed 004 {:.2} µs \
                 (+ DEL {:.2} µs) | {m:.2}× [{lo:.2}–{hi:.2}] ({md:.2}× of + DEL); goal ≤ 1.0×: {} |",
                scenario.name(),
                r.usec(si, 0),
                r.usec(si, 1),
                r.usec(si, 2),
                if m <= 1.0 { "met" } else { "not met" }
            );
        }
        println!(
            "| 1 | coupon_grab.lua EVALSHA usec_per_call (storm / wins) | {:.2} / {:.2} µs | — | — |",
            median(r.runs[0][0].iter().map(Measure::evalsha_usec_per_call).collect()),
            median(r.runs[1][0].iter().map(Measure::evalsha_usec_per_call).collect()),
        );
    }
    if let Some(c) = cluster {
        let shares: Vec<String> = c
            .shares()
            .iter()
            .map(|(_, usec, cpu)| format!("{:.1}% / {:.1}%", 100.0 * usec, 100.0 * cpu))
            .collect();
        println!(
            "| 2 | each master's share of the grab CPU (EVALSHA µs / main-thread CPU) | {} | 33.3% | goal ±5 points: {} |",
            shares.join(", "),
            if c.met() { "met" } else { "not met" }
        );
    }
    if let Some(m) = mem {
        let (_, _, _, all) = m.uploaded();
        let (issued, journal, _) = m.issued();
        println!(
            "| 3 | bytes per uploaded code (pool + directory + records) | {all:.1} B | seed SADD {:.1} B | {:.2}× |",
            m.seed(),
            all / m.seed()
        );
        println!(
            "| 3 | bytes per generated code before issuing / per issued code (+ journal) | {:.3} B / {issued:.1} B (+ {journal:.1} B) | — | — |",
            m.generated()
        );
    }
    if let Some(h) = hot {
        let med = |runs: &[Run]| median(runs.iter().map(Run::rate).collect());
        let best_hb = h
            .iter()
            .filter(|(p, _)| matches!(p, Phase::Hongbao { .. }))
            .max_by(|a, b| med(&a.1).total_cmp(&med(&b.1)))
            .expect("hongbao phases");
        println!(
            "| 4 | grabs/s of one hot campaign on one node (medians over rounds) | {:.0} ({}) | rb -P 1 {:.0}, -P 16 {:.0} | {:.0}% / {:.0}% (paired medians) |",
            med(&best_hb.1),
            best_hb.0.name(),
            med(&h[0].1),
            med(&h[1].1),
            paired(&best_hb.1, &h[0].1),
            paired(&best_hb.1, &h[1].1)
        );
    }
    if let Some(p) = pools {
        let cells: Vec<String> = p
            .iter()
            .map(|r| {
                format!(
                    "{} {}: {:.1} MB, biggest DUMP {:.1} MB, MIGRATE {:.0} ms",
                    r.size,
                    r.state,
                    r.pool_bytes as f64 / 1e6,
                    r.dump_bytes as f64 / 1e6,
                    r.biggest_ms
                )
            })
            .collect();
        println!(
            "| 5 | one pool: bytes, biggest key's DUMP, its MIGRATE | {} | — | — |",
            cells.join("; ")
        );
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
    let load_before = loadavg();
    let started = Instant::now();
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
            let mut nodes = cluster_nodes(&c.urls()).await;
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
    println!(
        "total {:.1} s; load average before {load_before}, after {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    for p in &problems {
        println!("check failed: {p}");
    }
    assert!(
        problems.is_empty(),
        "{} checks failed (see above)",
        problems.len()
    );
}
