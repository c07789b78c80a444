//! Storm replay: the server's main-thread CPU per request of a flash crowd, hongbao beside a
//! baseline design, measured by recording every byte the clients sent and replaying it,
//! saturated, on a fresh `redis-server`.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench storm_replay
//! BENCH_SANDBOXES=50 BENCH_ROUNDS=11 cargo bench -p hongbao-tests --bench storm_replay
//! ```
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `BENCH_SANDBOXES` | `100` | simulated Lambda sandboxes (one `Store` or connection each, one request at a time) |
//! | `BENCH_GRABBERS` | `3000` | distinct grabbers of the one red packet (every 10th presses twice) |
//! | `BENCH_VOTERS` | `1000` | distinct users up-voting the one article |
//! | `BENCH_ROUNDS` | `41` | rounds of replays (each scenario's recording replayed once per round) |
//! | `BENCH_PIN` | `1` | `0`: no CPU pinning (by default, on 2+ CPUs, the servers run on CPU 0 and the bench on CPU 1) |
//!
//! **Recording.** Each scenario runs once on its own private `redis-server`, its clients
//! connected through a recording proxy in this process (a tokio TCP listener on
//! `127.0.0.1:0`): every chunk a client's connection delivers (the bytes of one `read`) is
//! logged in order with the connection's number and the phase (`setup` or `storm`, one atomic
//! switch the bench flips once the setup is done and every sandbox is connected: warm
//! sandboxes) before it is forwarded; the server's bytes go back untouched. hongbao itself is
//! unchanged: its `Store`s are simply given the proxy's address, so whatever commands it sends
//! (scripts, plain reads, a cache answering without Redis) are what is recorded.
//!
//! * `grab` (hongbao): a sender's wallet credited and one lucky red packet of 300 shares
//!   created (`wallet::deposit`, `store::packets::create`), every hongbao script
//!   `SCRIPT LOAD`ed, then `BENCH_SANDBOXES` sandboxes, each its own `Store` (own connection,
//!   own in-process state), take grabbers in order from a shared queue and call
//!   `store::packets::grab` (the grab function's only Redis path); every 10th grabber presses
//!   again right after their first answer, in the same sandbox.
//! * `grab-seed` (baseline): the same request sequence through the original red-packet blog
//!   post's grab script ([`SEED_GRAB`], as in `script_costs`) over a pool of 300 JSON shares,
//!   `redis::Script::invoke_async` on one redis-rs connection per sandbox (script pre-loaded).
//! * `vote` (hongbao): one article posted (`voting::post`), then `BENCH_VOTERS` distinct
//!   users up-vote it through `voting::vote` over the sandboxes' `Store`s.
//! * `vote-ch1` (baseline): the same up-votes through "Redis in Action" chapter 1's
//!   `article_vote` as one script ([`CH1_VOTE`], as in `script_costs`).
//!
//! **Replay.** Every round starts a fresh `redis-server` per scenario, replays the setup
//! chunks in their recorded order, each on its own connection's replay connection (so a
//! connection's handshake, e.g. `HELLO`, `CLIENT SETINFO`, stays on the connection whose storm
//! follows), waiting for every reply; reads `INFO cpu`; then replays every connection's storm
//! chunks on its own connection, all connections at once and as fast as the server answers
//! (saturated): write a chunk, read exactly as many RESP replies as the chunk completed
//! commands (a command split over two chunks counts in the second), next chunk. Then
//! `INFO cpu` again: CPU per request = the main thread's user + system time
//! (`used_cpu_{user,sys}_main_thread`; the whole process's if absent) over the storm,
//! divided by the storm's requests (calls of the scenario's function, not commands). Answers
//! that depend on `TIME` differ from the recording's in their timestamps only. One storm is
//! only a few tens of ms of server CPU, so the table gives the median over the rounds, and
//! the median (min–max) of the per-round ratio hongbao / baseline (a scenario and its baseline
//! are replayed next to each other in every round; the pair's order alternates). Goals: grab
//! ≤ 1.0×, vote ≤ 1.5×; a missed goal is printed as `not met` and does not fail the bench.
//! Unless `BENCH_PIN=0`, every server (recorded and replayed) is pinned to CPU 0 and the
//! bench's own threads (proxy, sandboxes, replay clients) to CPU 1 (`sched_setaffinity`), so
//! the client never preempts the server it measures.
//!
//! Checked (the bench prints and writes its figures, then fails if any check does not hold):
//! the recorded grab storms handed out exactly 300 shares (fewer grabbers: one each) to
//! distinct users, every winner's repeat got their own share back (hongbao:
//! `AlreadyGrabbed` with the same share, or `RateLimited`; the seed: `1`), no loser's repeat
//! won, and no call failed; every recorded vote was a new vote; the recorded server and every
//! replayed server end in the same state: the packet sold out (HLEN of hongbao's grabs hash,
//! of the seed's users hash = 300, the seed's pool empty), the article at 1 + voters votes
//! (and the chapter 1 voted set at the voters); every recorded chunk ended its connection's
//! commands whole; each replay got as many error replies in its setup and in its storm as the
//! recorded server sent (the proxy parses the server's bytes it forwards only to count them:
//! e.g. redis-rs's `CLIENT SETINFO` on a server before 7.2 in the setup; none in the storms,
//! since every script is loaded first). Also reports commands per request (the
//! recorded storm's commands over its requests) and each replayed storm's `INFO
//! commandstats` calls per command (the difference across the storm; commands run inside
//! scripts are counted too). Writes the figures to `target/bench/storm_replay.json` too.
//!
//! The proxy and the replay use tokio's `net` and `io-util` features, which redis-rs's
//! `tokio-comp` turns on in the workspace's build.

use std::sync::Arc;

use harness::RedisServer;
use serde_json::json;

#[path = "../support/mod.rs"]
mod support;
use support::{env_num, fail_on, node_conn, pin, write_json, Started};

mod proxy;
mod recording;
mod replay;
mod report;
mod resp;
mod storms;

use recording::{record, Recording};
use replay::{info, replay, Replay};
use report::{print_tables, scenario_json, summarize};

/// Default number of simulated Lambda sandboxes (`BENCH_SANDBOXES` overrides it).
const DEFAULT_SANDBOXES: usize = 100;
/// Default number of distinct grabbers (`BENCH_GRABBERS` overrides it).
const DEFAULT_GRABBERS: u64 = 3_000;
/// Default number of distinct voters (`BENCH_VOTERS` overrides it).
const DEFAULT_VOTERS: u64 = 1_000;
/// Default number of rounds (`BENCH_ROUNDS` overrides it).
const DEFAULT_ROUNDS: usize = 41;
/// Every 10th grabber (the 1st, 11th, ...) presses twice.
const REPEAT_EVERY: u64 = 10;
/// Shares of the packet (hongbao's and the seed's pool).
const SHARES: u32 = 300;
/// The packet's total is this many cents per share (a lucky, double-mean split).
const CENTS_PER_SHARE: i64 = 100;
/// Size of the proxy's read buffer: the most one recorded chunk can hold.
const CHUNK_BYTES: usize = 64 * 1024;

/// The seed's keys: pool of JSON shares, detail list, hash of users who grabbed.
const SEED_KEYS: [&str; 3] = ["seed:{p}:pool", "seed:{p}:detail", "seed:{p}:users"];

/// The bench's settings, from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    /// Simulated Lambda sandboxes.
    sandboxes: usize,
    /// Distinct grabbers.
    grabbers: u64,
    /// Distinct voters.
    voters: u64,
    /// Rounds of replays.
    rounds: usize,
    /// Servers on CPU 0, the bench's threads on CPU 1 (`BENCH_PIN`, default on).
    pin: bool,
}

impl Settings {
    /// Reads the `BENCH_*` variables.
    fn from_env() -> Self {
        Settings {
            sandboxes: env_num("BENCH_SANDBOXES")
                .unwrap_or(DEFAULT_SANDBOXES)
                .max(1),
            grabbers: env_num("BENCH_GRABBERS").unwrap_or(DEFAULT_GRABBERS).max(1),
            voters: env_num("BENCH_VOTERS").unwrap_or(DEFAULT_VOTERS).max(1),
            rounds: env_num("BENCH_ROUNDS").unwrap_or(DEFAULT_ROUNDS).max(1),
            pin: env_num::<u8>("BENCH_PIN").unwrap_or(1) != 0,
        }
    }

    /// Grab requests of a grab storm: every grabber once, every 10th twice.
    fn grab_requests(&self) -> u64 {
        self.grabbers + self.grabbers.div_ceil(REPEAT_EVERY)
    }

    /// Shares a grab storm hands out: all of them, or one per grabber if fewer.
    fn expected_wins(&self) -> u64 {
        self.grabbers.min(u64::from(SHARES))
    }
}

/// Whether grabber `i` presses twice.
fn repeats(i: u64) -> bool {
    i.is_multiple_of(REPEAT_EVERY)
}

/// The user id of grabber `i`.
fn grabber(i: u64) -> String {
    format!("storm-{i:06}")
}

/// The user id of voter `i`.
fn voter(i: u64) -> String {
    format!("voter-{i:06}")
}

/// The four recorded storms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// hongbao's grab.
    Grab,
    /// The original blog post's grab script.
    GrabSeed,
    /// hongbao's vote.
    Vote,
    /// Chapter 1's vote as one script.
    VoteCh1,
}

impl Scenario {
    /// Every scenario, in table order.
    const ALL: [Scenario; 4] = [
        Scenario::Grab,
        Scenario::GrabSeed,
        Scenario::Vote,
        Scenario::VoteCh1,
    ];

    /// Its name in the table and the JSON.
    fn name(self) -> &'static str {
        match self {
            Scenario::Grab => "grab",
            Scenario::GrabSeed => "grab-seed",
            Scenario::Vote => "vote",
            Scenario::VoteCh1 => "vote-ch1",
        }
    }

    /// For a hongbao scenario, its baseline and the goal of the ratio.
    fn baseline(self) -> Option<(Scenario, f64)> {
        match self {
            Scenario::Grab => Some((Scenario::GrabSeed, 1.0)),
            Scenario::Vote => Some((Scenario::VoteCh1, 1.5)),
            Scenario::GrabSeed | Scenario::VoteCh1 => None,
        }
    }

    /// What the scenario's function does, for the table's notes.
    fn function(self) -> &'static str {
        match self {
            Scenario::Grab => "store::packets::grab",
            Scenario::GrabSeed => "SEED_GRAB (Script::invoke_async)",
            Scenario::Vote => "voting::vote (up)",
            Scenario::VoteCh1 => "CH1_VOTE (Script::invoke_async)",
        }
    }
}

/// Records every scenario once on its own fresh server (pinned to CPU 0 when `pinned`), printing
/// each recording's outline; returns the recordings in [`Scenario::ALL`] order and the first
/// server's `redis_version`.
fn record_all(
    rt: &tokio::runtime::Runtime,
    s: Settings,
    pinned: bool,
) -> (Vec<Arc<Recording>>, String) {
    let mut recs = Vec::with_capacity(Scenario::ALL.len());
    let mut version = String::new();
    for scenario in Scenario::ALL {
        let server = RedisServer::start();
        if pinned {
            pin(server.pid(), 0);
        }
        if version.is_empty() {
            let server_info =
                rt.block_on(async { info(&mut node_conn(&server.url()).await, "server").await });
            version = server_info
                .lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .unwrap_or("?")
                .trim()
                .to_string();
        }
        let rec = rt.block_on(record(scenario, &server, s));
        eprintln!(
            "recorded {}: {} requests, {} storm commands on {} connections, {}",
            scenario.name(),
            rec.out.requests,
            rec.storm_commands,
            rec.storm.len(),
            rec.out.mix.text()
        );
        recs.push(Arc::new(rec));
    }
    (recs, version)
}

/// Replays every recording once per round, each on a fresh server (pinned to CPU 0 when
/// `pinned`), a scenario and its baseline next to each other, their order alternating; prints
/// each round's CPU per request; returns every round's replays in [`Scenario::ALL`] order.
fn replay_rounds(
    rt: &tokio::runtime::Runtime,
    recs: &[Arc<Recording>],
    s: Settings,
    pinned: bool,
) -> Vec<Vec<Replay>> {
    let mut rounds: Vec<Vec<Replay>> = Vec::with_capacity(s.rounds);
    for round in 0..s.rounds {
        // A scenario and its baseline next to each other, their order alternating.
        let order: Vec<usize> = if round % 2 == 0 {
            vec![0, 1, 2, 3]
        } else {
            vec![1, 0, 3, 2]
        };
        let mut replays: Vec<Option<Replay>> = vec![None; recs.len()];
        for k in order {
            let server = RedisServer::start();
            if pinned {
                pin(server.pid(), 0);
            }
            replays[k] = Some(rt.block_on(replay(recs[k].clone(), &server)));
        }
        let replays: Vec<Replay> = replays.into_iter().map(|r| r.expect("replayed")).collect();
        eprintln!(
            "round {}/{}: {}",
            round + 1,
            s.rounds,
            replays
                .iter()
                .zip(recs)
                .map(|(r, rec)| format!(
                    "{} {:.2} µs/request",
                    rec.scenario.name(),
                    r.cpu_usec / rec.out.requests as f64
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        rounds.push(replays);
    }
    rounds
}

/// Every check that did not hold: the recordings' and every round's replays'.
fn problems(recs: &[Arc<Recording>], rounds: &[Vec<Replay>]) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    for rec in recs {
        for p in &rec.out.problems {
            problems.push(format!("{} recording: {p}", rec.scenario.name()));
        }
    }
    for (n, round) in rounds.iter().enumerate() {
        for (r, rec) in round.iter().zip(recs) {
            for p in &r.problems {
                problems.push(format!(
                    "{} replay, round {}: {p}",
                    rec.scenario.name(),
                    n + 1
                ));
            }
        }
    }
    problems
}

/// Records every scenario once, replays them all every round, prints the tables, writes the
/// JSON, and fails if a check did not hold.
fn main() {
    let s = Settings::from_env();
    let pinned = s.pin && pin(None, 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Started::now();

    let (recs, version) = record_all(&rt, s, pinned);
    println!(
        "storm replay: redis-server {version}, {} sandboxes, {} grabbers ({} shares, every \
         {REPEAT_EVERY}th grabber twice), {} voters, {} rounds, {}",
        s.sandboxes,
        s.grabbers,
        SHARES,
        s.voters,
        s.rounds,
        if pinned {
            "servers on CPU 0, the bench on CPU 1"
        } else {
            "not pinned"
        }
    );

    let rounds = replay_rounds(&rt, &recs, s, pinned);
    let sums = summarize(&recs, &rounds);
    print_tables(&recs, &sums, s);

    let problems = problems(&recs, &rounds);
    if rounds.iter().flatten().any(|r| !r.main_thread) {
        println!(
            "note: INFO cpu had no *_main_thread fields; the whole server process's CPU was used"
        );
    }

    let json = json!({
        "bench": "storm_replay",
        "redis_version": version,
        "sandboxes": s.sandboxes,
        "grabbers": s.grabbers,
        "repeat_every": REPEAT_EVERY,
        "shares": SHARES,
        "voters": s.voters,
        "rounds": s.rounds,
        "pinned": pinned,
        "cpu": if rounds.iter().flatten().all(|r| r.main_thread) {
            "main thread (used_cpu_user_main_thread + used_cpu_sys_main_thread)"
        } else {
            "process (used_cpu_user + used_cpu_sys)"
        },
        "scenarios": recs
            .iter()
            .zip(&sums)
            .enumerate()
            .map(|(k, (rec, sum))| scenario_json(rec, sum, &rounds, k))
            .collect::<Vec<_>>(),
        "problems": problems,
    });
    let path = write_json("storm_replay", &json);
    println!("figures: {}", path.display());
    started.print_total();
    fail_on(&problems);
}
