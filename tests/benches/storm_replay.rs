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
//!   created (`store::wallet::deposit`, `store::packets::create`), every hongbao script
//!   `SCRIPT LOAD`ed, then `BENCH_SANDBOXES` sandboxes, each its own `Store` (own connection,
//!   own in-process state), take grabbers in order from a shared queue and call
//!   `store::packets::grab` (the grab function's only Redis path); every 10th grabber presses
//!   again right after their first answer, in the same sandbox.
//! * `grab-seed` (baseline): the same request sequence through the original red-packet blog
//!   post's grab script ([`SEED_GRAB`], as in `script_costs`) over a pool of 300 JSON shares,
//!   `redis::Script::invoke_async` on one redis-rs connection per sandbox (script pre-loaded).
//! * `vote` (hongbao): one article posted (`store::voting::post`), then `BENCH_VOTERS` distinct
//!   users up-vote it through `store::voting::vote` over the sandboxes' `Store`s.
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

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use harness::{RedisServer, RESPONSE_TIMEOUT};
use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::store::keys::Keys;
use hongbao::store::packets::{self, CreateOutcome, GrabOutcome, NewPacket, Share};
use hongbao::store::voting::{self, Direction, NewArticle, PostOutcome, SiteKeys, VoteOutcome};
use hongbao::store::{scripts, wallet};
use hongbao::{Config, Error, Store};
use redis::aio::MultiplexedConnection;
use redis::Script;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/mod.rs"]
mod support;
use support::{
    ch1_article, commandstats_calls, env_num, median, server_main_thread_cpu_secs, write_json,
    CH1_KEYS, CH1_VOTE, SEED_GRAB,
};

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
            Scenario::Vote => "store::voting::vote (up)",
            Scenario::VoteCh1 => "CH1_VOTE (Script::invoke_async)",
        }
    }
}

/// The recording phase of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Data, scripts and connections being set up: replayed before the measurement.
    Setup = 0,
    /// The storm: replayed and measured.
    Storm = 1,
    /// After the storm (connections closing): not replayed.
    After = 2,
}

impl Phase {
    /// The phase stored as `v` in the proxy's switch.
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Setup,
            1 => Phase::Storm,
            _ => Phase::After,
        }
    }
}

/// The bytes of one `read` from one side of a proxied connection, as the proxy saw them.
struct Chunk {
    /// The connection's number (in accept order).
    conn: usize,
    /// The phase when it was read.
    phase: Phase,
    /// The raw bytes.
    bytes: Vec<u8>,
}

/// What the proxy recorded.
#[derive(Default)]
struct Log {
    /// Every chunk read from a client, in the order they were read.
    sent: Vec<Chunk>,
    /// Every chunk read from the server, in the order they were read (only to count the
    /// recording's error replies).
    received: Vec<Chunk>,
}

/// The recording proxy: forwards every accepted connection to the server, logging every chunk
/// read from a client (in order, before forwarding it) and every chunk of the server's
/// replies (forwarded untouched).
struct Proxy {
    /// The address clients connect to.
    addr: SocketAddr,
    /// The current [`Phase`] (as `u8`).
    phase: Arc<AtomicU8>,
    /// Everything recorded so far.
    log: Arc<Mutex<Log>>,
    /// The accept loop.
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards to `upstream`.
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
        let addr = listener.local_addr().expect("proxy address");
        let phase = Arc::new(AtomicU8::new(Phase::Setup as u8));
        let log = Arc::new(Mutex::new(Log::default()));
        let (p, l) = (phase.clone(), log.clone());
        let accept = tokio::spawn(async move {
            let mut next = 0;
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(forward(client, upstream, next, p.clone(), l.clone()));
                next += 1;
            }
        });
        Proxy {
            addr,
            phase,
            log,
            accept,
        }
    }

    /// `redis://` URL of the proxy.
    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Tags the chunks read from now on with `phase`.
    fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    /// Stops accepting and returns what was recorded so far.
    fn finish(self) -> Log {
        self.set_phase(Phase::After);
        self.accept.abort();
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Logs `bytes`, read from connection `conn`, into `log` (`sent` or `received`, as `side`
/// picks) with the current phase.
fn log_chunk(
    log: &Mutex<Log>,
    side: fn(&mut Log) -> &mut Vec<Chunk>,
    conn: usize,
    phase: &AtomicU8,
    bytes: &[u8],
) {
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    side(&mut log).push(Chunk {
        conn,
        phase: Phase::from_u8(phase.load(Ordering::SeqCst)),
        bytes: bytes.to_vec(),
    });
}

/// One proxied connection, number `conn`: client bytes logged and forwarded to `upstream`,
/// the server's bytes logged and forwarded back untouched.
async fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    conn: usize,
    phase: Arc<AtomicU8>,
    log: Arc<Mutex<Log>>,
) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return; // the client sees its connection closed
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_rx, client_tx) = client.into_split();
    let (server_rx, server_tx) = server.into_split();
    let back = tokio::spawn(pump(
        server_rx,
        client_tx,
        |l| &mut l.received,
        conn,
        phase.clone(),
        log.clone(),
    ));
    // Each client chunk is logged before it is forwarded, so a command caused by an earlier
    // reply is always logged after the command that reply answered.
    pump(client_rx, server_tx, |l| &mut l.sent, conn, phase, log).await;
    let _ = back.await;
}

/// Copies `rx` to `tx` until either side closes, logging every chunk read (before writing it)
/// into `log` (`sent` or `received`, as `side` picks); then shuts `tx` down.
async fn pump(
    mut rx: OwnedReadHalf,
    mut tx: OwnedWriteHalf,
    side: fn(&mut Log) -> &mut Vec<Chunk>,
    conn: usize,
    phase: Arc<AtomicU8>,
    log: Arc<Mutex<Log>>,
) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        log_chunk(&log, side, conn, &phase, &buf[..n]);
        if tx.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = tx.shutdown().await;
}

/// Error replies (`-` or `!`) among the complete top-level replies in `received`, per phase
/// (`[setup, storm]`; a reply counts in the phase of the chunk that completes it), and the
/// first one of each phase.
fn recorded_errors(received: &[Chunk]) -> Result<([u64; 2], [Option<String>; 2]), String> {
    let mut pending: HashMap<usize, Vec<u8>> = HashMap::new();
    let (mut counts, mut first) = ([0u64; 2], [None, None]);
    for c in received.iter().filter(|c| c.phase != Phase::After) {
        let k = usize::from(c.phase == Phase::Storm);
        let buf = pending.entry(c.conn).or_default();
        buf.extend_from_slice(&c.bytes);
        let mut pos = 0;
        while pos < buf.len() {
            let Some(end) = value_end(buf, pos)? else {
                break;
            };
            if matches!(buf[pos], b'-' | b'!') {
                counts[k] += 1;
                first[k].get_or_insert_with(|| {
                    String::from_utf8_lossy(&buf[pos..end]).trim().to_string()
                });
            }
            pos = end;
        }
        buf.drain(..pos);
    }
    Ok((counts, first))
}

/// The end of the RESP value (RESP2 or RESP3) that starts at `pos` in `buf`, or `None` if
/// `buf` ends before it does. An attribute (`|`) is part of the value after it.
fn value_end(buf: &[u8], pos: usize) -> Result<Option<usize>, String> {
    let Some(cr) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[pos + 1..pos + cr];
    let next = pos + cr + 2;
    let len = || -> Result<i64, String> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad RESP length {:?}", String::from_utf8_lossy(line)))
    };
    match buf[pos] {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Ok(Some(next)),
        b'$' | b'!' | b'=' => {
            let n = len()?;
            if n < 0 {
                return Ok(Some(next));
            }
            let end = next + n as usize + 2;
            Ok((buf.len() >= end).then_some(end))
        }
        kind @ (b'*' | b'~' | b'>' | b'%' | b'|') => {
            let n = len()?;
            let items = if matches!(kind, b'%' | b'|') {
                2 * n
            } else {
                n
            };
            let mut p = next;
            for _ in 0..items.max(0) {
                match value_end(buf, p)? {
                    Some(end) => p = end,
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                if p >= buf.len() {
                    return Ok(None);
                }
                return value_end(buf, p);
            }
            Ok(Some(p))
        }
        other => Err(format!("unexpected RESP type byte {other:#04x} at {pos}")),
    }
}

/// The complete commands at the start of `buf` (RESP arrays, or inline lines) and the bytes
/// they take; the rest is the beginning of a command split over chunks. An empty array or an
/// empty inline line is no command (the server answers nothing).
fn complete_commands(buf: &[u8]) -> Result<(usize, usize), String> {
    let (mut pos, mut commands) = (0, 0);
    while pos < buf.len() {
        if buf[pos] == b'*' {
            let Some(end) = value_end(buf, pos)? else {
                break;
            };
            let header = &buf[pos + 1..];
            let digits = header
                .iter()
                .position(|&b| b == b'\r')
                .unwrap_or(header.len());
            let n: i64 = std::str::from_utf8(&header[..digits])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            commands += usize::from(n > 0);
            pos = end;
        } else {
            let Some(nl) = buf[pos..].iter().position(|&b| b == b'\n') else {
                break;
            };
            commands += usize::from(!buf[pos..pos + nl].trim_ascii().is_empty());
            pos += nl + 1;
        }
    }
    Ok((commands, pos))
}

/// One recorded chunk to replay: its bytes, and the replies to read after writing them.
struct Step {
    /// The recorded connection.
    conn: usize,
    /// The raw bytes.
    bytes: Vec<u8>,
    /// The commands this chunk completes (each gets one reply).
    replies: usize,
}

/// A check of the server's state after a storm: `command` answers `expect`.
#[derive(Debug, Clone)]
struct Check {
    /// What it checks.
    what: &'static str,
    /// The command, as its words.
    command: Vec<String>,
    /// The expected integer answer.
    expect: i64,
}

impl Check {
    /// A check that `words` answers `expect`.
    fn new(what: &'static str, words: &[&str], expect: u64) -> Check {
        Check {
            what,
            command: words.iter().map(|w| w.to_string()).collect(),
            expect: expect as i64,
        }
    }
}

/// Runs every check on `conn`; returns the failed ones.
async fn verify(conn: &mut MultiplexedConnection, checks: &[Check]) -> Vec<String> {
    let mut problems = Vec::new();
    for c in checks {
        let got: Result<Option<i64>, _> = redis::cmd(&c.command[0])
            .arg(&c.command[1..])
            .query_async(conn)
            .await;
        match got {
            Ok(Some(n)) if n == c.expect => {}
            other => problems.push(format!(
                "{}: {} answered {other:?}, not {}",
                c.what,
                c.command.join(" "),
                c.expect
            )),
        }
    }
    problems
}

/// Outcome counts by path, in first-seen order.
#[derive(Debug, Default, Clone)]
struct Mix(Vec<(&'static str, u64)>);

impl Mix {
    /// Counts one call that took `path`.
    fn add(&mut self, path: &'static str) {
        match self.0.iter_mut().find(|(p, _)| *p == path) {
            Some((_, n)) => *n += 1,
            None => self.0.push((path, 1)),
        }
    }

    /// All calls.
    fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// `path n, path n, ...`.
    fn text(&self) -> String {
        self.0
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What one user's presses (one or two calls in one sandbox) got.
#[derive(Debug, Default)]
struct UserOut {
    /// The path of each call, in order.
    paths: Vec<&'static str>,
    /// Calls that handed this user a share (or counted a new vote).
    wins: u32,
    /// How a repeat broke the rules, if it did.
    bad: Option<String>,
    /// The first error a call returned.
    error: Option<String>,
}

/// What a scenario's storm did, as its callers saw it, and what the server must hold after it.
struct StormOut {
    /// Calls of the scenario's function.
    requests: u64,
    /// Calls per path.
    mix: Mix,
    /// Checks of the callers' answers that did not hold.
    problems: Vec<String>,
    /// Checks of the server's state, run on the recorded and on every replayed server.
    checks: Vec<Check>,
    /// Wall time of the storm (through the proxy), seconds.
    secs: f64,
}

impl StormOut {
    /// Sums `outs` (one per user) and checks that `expected_wins` users won once each, no
    /// repeat broke the rules and no call failed.
    fn from_users(
        outs: Vec<UserOut>,
        expected_wins: u64,
        checks: Vec<Check>,
        secs: f64,
    ) -> StormOut {
        let mut mix = Mix::default();
        let mut problems = Vec::new();
        let (mut winners, mut wins, mut bad, mut errors) = (0u64, 0u64, 0u64, 0u64);
        let (mut first_bad, mut first_error) = (None, None);
        for o in &outs {
            o.paths.iter().for_each(|p| mix.add(p));
            wins += u64::from(o.wins);
            winners += u64::from(o.wins > 0);
            if let Some(b) = &o.bad {
                bad += 1;
                first_bad.get_or_insert_with(|| b.clone());
            }
            if let Some(e) = &o.error {
                errors += 1;
                first_error.get_or_insert_with(|| e.clone());
            }
        }
        if wins != expected_wins || winners != expected_wins {
            problems.push(format!(
                "{wins} wins by {winners} distinct users, not {expected_wins}"
            ));
        }
        if let Some(b) = first_bad {
            problems.push(format!("{bad} users' repeats broke the rules, e.g. {b}"));
        }
        if let Some(e) = first_error {
            problems.push(format!("{errors} users got an error, e.g. {e}"));
        }
        StormOut {
            requests: mix.total(),
            mix,
            problems,
            checks,
            secs,
        }
    }
}

/// Runs `users` users' jobs on `sandboxes`: one task per sandbox, each taking the next user
/// from a shared counter and running its job to the end before taking another (one request
/// at a time per sandbox); returns every user's result.
async fn run_sandboxes<H, F, Fut>(sandboxes: &[H], users: u64, job: F) -> Vec<UserOut>
where
    H: Clone + Send + 'static,
    F: Fn(H, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = UserOut> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = sandboxes
        .iter()
        .cloned()
        .map(|sandbox| {
            let (next, job) = (next.clone(), job.clone());
            tokio::spawn(async move {
                let mut outs = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= users {
                        return outs;
                    }
                    outs.push(job(sandbox.clone(), i).await);
                }
            })
        })
        .collect();
    let mut outs = Vec::with_capacity(users as usize);
    for h in handles {
        outs.extend(h.await.expect("sandbox task"));
    }
    outs
}

/// hongbao's configuration on `url` (the proxy), with room for the bench's packet.
fn config(url: String) -> Config {
    let mut cfg = Config {
        redis_url: url,
        redis_cluster: false,
        ..Config::default()
    };
    cfg.packets.max_count = u32::MAX;
    cfg.packets.max_total_cents = i64::MAX;
    cfg.packets.packets_per_minute = 0;
    cfg
}

/// A plain redis-rs connection to `url`, with the harness's response timeout.
async fn plain_conn(url: &str) -> MultiplexedConnection {
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// `s.sandboxes` hongbao sandboxes on the proxy: each its own [`Store`], connected (warm).
async fn sandbox_stores(proxy: &Proxy, s: Settings) -> Vec<Arc<Store>> {
    let mut stores = Vec::with_capacity(s.sandboxes);
    for _ in 0..s.sandboxes {
        let store = Arc::new(Store::new(config(proxy.url())));
        store.conn().await.expect("sandbox connect");
        stores.push(store);
    }
    stores
}

/// `s.sandboxes` baseline sandboxes on the proxy: one redis-rs connection each.
async fn sandbox_conns(proxy: &Proxy, s: Settings) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::with_capacity(s.sandboxes);
    for _ in 0..s.sandboxes {
        conns.push(plain_conn(&proxy.url()).await);
    }
    conns
}

/// `SCRIPT LOAD`s every hongbao script through the proxy, so that no storm call meets
/// `NOSCRIPT` (warm sandboxes on a warm server).
async fn load_scripts(proxy: &Proxy) {
    let mut conn = plain_conn(&proxy.url()).await;
    for (name, script) in scripts::all() {
        let sha = script
            .load_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("SCRIPT LOAD {name}: {e}"));
        assert_eq!(sha, script.get_hash(), "SCRIPT LOAD {name}");
    }
}

/// The path name of a hongbao grab result.
fn grab_path(result: &Result<GrabOutcome, Error>) -> &'static str {
    match result {
        Ok(GrabOutcome::Grabbed { .. }) => "grabbed",
        Ok(GrabOutcome::AlreadyGrabbed(_)) => "already grabbed",
        Ok(GrabOutcome::SoldOut) => "sold out",
        Ok(GrabOutcome::RateLimited { .. }) => "rate limited",
        Ok(GrabOutcome::Expired) => "expired",
        Ok(GrabOutcome::NotFound) => "not found",
        Ok(GrabOutcome::NotARecipient) => "not a recipient",
        Ok(GrabOutcome::NotOpenYet { .. }) => "not open yet",
        Ok(GrabOutcome::Cancelled) => "cancelled",
        Ok(GrabOutcome::WrongPassword) => "wrong password",
        Err(_) => "error",
    }
}

/// The `grab` scenario: setup (wallet, packet, scripts, sandboxes), then the storm.
async fn grab_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let admin = Store::new(config(proxy.url()));
    let total = i64::from(SHARES) * CENTS_PER_SHARE;
    wallet::deposit(&admin, "storm-sender", total, "storm-replay-fund")
        .await
        .expect("deposit");
    let req = NewPacket {
        total_cents: total,
        count: SHARES,
        mode: Mode::Lucky,
        split: LuckySplit::DoubleMean,
        expires_in_secs: 3600,
        greeting: None,
        recipients: Vec::new(),
        opens_in_secs: 0,
        cover: None,
        password: None,
    };
    let id: Arc<str> = match packets::create(&admin, "storm-sender", &req, None)
        .await
        .expect("create")
    {
        CreateOutcome::Created(p) => p.packet_id.into(),
        other => panic!("create failed: {other:?}"),
    };
    load_scripts(proxy).await;
    let stores = sandbox_stores(proxy, s).await;

    proxy.set_phase(Phase::Storm);
    let started = Instant::now();
    let packet = id.clone();
    let outs = run_sandboxes(&stores, s.grabbers, move |store: Arc<Store>, i| {
        let packet = packet.clone();
        async move {
            let user = grabber(i);
            let mut out = UserOut::default();
            let mut mine: Option<Share> = None;
            let presses = if repeats(i) { 2 } else { 1 };
            for press in 0..presses {
                let result = packets::grab(&store, &packet, &user).await;
                out.paths.push(grab_path(&result));
                match (&result, mine) {
                    (Ok(GrabOutcome::Grabbed { share, .. }), _) => {
                        out.wins += 1;
                        if press > 0 {
                            out.bad = Some(format!("{user}'s repeat won again: {result:?}"));
                        }
                        mine = Some(*share);
                    }
                    (Ok(GrabOutcome::AlreadyGrabbed(share)), Some(m)) if *share == m => {}
                    (Ok(GrabOutcome::RateLimited { .. }), Some(_)) => {}
                    (Err(e), _) => out.error = Some(format!("{user}: {e}")),
                    (Ok(GrabOutcome::AlreadyGrabbed(_)), _) | (Ok(_), Some(_)) => {
                        out.bad = Some(format!(
                            "{user} (won {mine:?}) press {}: {result:?}",
                            press + 1
                        ));
                    }
                    (Ok(_), None) => {}
                }
            }
            out
        }
    })
    .await;
    let secs = started.elapsed().as_secs_f64();
    drop(stores);
    let grabs = Keys::new(&admin.config().key_prefix).packet(&id).grabs;
    let checks = vec![Check::new(
        "packet handed out every share",
        &["HLEN", &grabs],
        s.expected_wins(),
    )];
    StormOut::from_users(outs, s.expected_wins(), checks, secs)
}

/// The `grab-seed` scenario: the pool of 300 JSON shares, the script, then the storm.
async fn grab_seed_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let mut conn = plain_conn(&proxy.url()).await;
    let [pool, _, users] = SEED_KEYS;
    let mut pipe = redis::pipe();
    for i in 0..SHARES {
        pipe.cmd("LPUSH")
            .arg(pool)
            .arg(json!({"id": i, "money": CENTS_PER_SHARE}).to_string())
            .ignore();
    }
    let _: () = pipe.query_async(&mut conn).await.expect("LPUSH");
    let seed = Arc::new(Script::new(SEED_GRAB));
    let sha = seed.load_async(&mut conn).await.expect("SCRIPT LOAD seed");
    assert_eq!(sha, seed.get_hash());
    let conns = sandbox_conns(proxy, s).await;

    proxy.set_phase(Phase::Storm);
    let started = Instant::now();
    let outs = run_sandboxes(
        &conns,
        s.grabbers,
        move |mut conn: MultiplexedConnection, i| {
            let seed = seed.clone();
            async move {
                let user = grabber(i);
                let mut out = UserOut::default();
                let mut won = false;
                let presses = if repeats(i) { 2 } else { 1 };
                for press in 0..presses {
                    let mut call = seed.prepare_invoke();
                    for k in SEED_KEYS {
                        call.key(k);
                    }
                    call.key(&user);
                    let reply: Result<String, _> = call.invoke_async(&mut conn).await;
                    let path = match reply.as_deref() {
                        Ok("1") => "already grabbed",
                        Ok("0") => "sold out",
                        Ok(r) if r.starts_with('{') => "grabbed",
                        Ok(_) => "unexpected",
                        Err(_) => "error",
                    };
                    out.paths.push(path);
                    match (path, won) {
                        ("grabbed", _) => {
                            out.wins += 1;
                            let record: serde_json::Value =
                                serde_json::from_str(reply.as_deref().unwrap_or_default())
                                    .unwrap_or_default();
                            if record["userId"] != user.as_str() || press > 0 {
                                out.bad = Some(format!("{user} press {}: {reply:?}", press + 1));
                            }
                            won = true;
                        }
                        ("already grabbed", true) | ("sold out", false) => {}
                        ("error", _) => out.error = Some(format!("{user}: {reply:?}")),
                        _ => out.bad = Some(format!("{user} press {}: {reply:?}", press + 1)),
                    }
                }
                out
            }
        },
    )
    .await;
    let secs = started.elapsed().as_secs_f64();
    drop(conns);
    let checks = vec![
        Check::new(
            "seed handed out every share",
            &["HLEN", users],
            s.expected_wins(),
        ),
        Check::new(
            "seed pool emptied",
            &["LLEN", pool],
            u64::from(SHARES) - s.expected_wins(),
        ),
    ];
    StormOut::from_users(outs, s.expected_wins(), checks, secs)
}

/// The `vote` scenario: the article posted, sandboxes connected, then the storm.
async fn vote_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let admin = Store::new(config(proxy.url()));
    let new = NewArticle::new("storm".into(), "https://example.com/".into()).expect("article");
    let article = match voting::post(&admin, "storm-poster", &new)
        .await
        .expect("post")
    {
        PostOutcome::Posted(a) => a,
        other => panic!("post failed: {other:?}"),
    };
    let id: Arc<str> = article.id.to_string().into();
    load_scripts(proxy).await;
    let stores = sandbox_stores(proxy, s).await;

    proxy.set_phase(Phase::Storm);
    let started = Instant::now();
    let article_id = id.clone();
    let outs = run_sandboxes(&stores, s.voters, move |store: Arc<Store>, i| {
        let id = article_id.clone();
        async move {
            let user = voter(i);
            let result = voting::vote(&store, &id, &user, Direction::Up).await;
            let mut out = UserOut::default();
            out.paths.push(match &result {
                Ok(VoteOutcome::Voted { changed: true, .. }) => "voted",
                Ok(VoteOutcome::Voted { changed: false, .. }) => "unchanged",
                Ok(VoteOutcome::RateLimited { .. }) => "rate limited",
                Ok(VoteOutcome::Closed { .. }) => "closed",
                Ok(VoteOutcome::NotFound) => "not found",
                Err(_) => "error",
            });
            match &result {
                Ok(VoteOutcome::Voted { changed: true, .. }) => out.wins = 1,
                Err(e) => out.error = Some(format!("{user}: {e}")),
                Ok(other) => out.bad = Some(format!("{user}: {other:?}")),
            }
            out
        }
    })
    .await;
    let secs = started.elapsed().as_secs_f64();
    drop(stores);
    let hash = SiteKeys::of(admin.config()).article(article.id);
    let checks = vec![Check::new(
        "article counted every vote",
        &["HGET", &hash, "votes"],
        1 + s.voters,
    )];
    StormOut::from_users(outs, s.voters, checks, secs)
}

/// The `vote-ch1` scenario: chapter 1's keys as `script_costs` sets them up, the script, then
/// the storm.
async fn vote_ch1_storm(proxy: &Proxy, s: Settings) -> StormOut {
    let mut conn = plain_conn(&proxy.url()).await;
    let [_, voted, _, hash] = CH1_KEYS;
    let cutoff: Arc<str> = ch1_article(&mut conn).await.to_string().into();
    let ch1 = Arc::new(Script::new(CH1_VOTE));
    let sha = ch1.load_async(&mut conn).await.expect("SCRIPT LOAD ch1");
    assert_eq!(sha, ch1.get_hash());
    let conns = sandbox_conns(proxy, s).await;

    proxy.set_phase(Phase::Storm);
    let started = Instant::now();
    let outs = run_sandboxes(
        &conns,
        s.voters,
        move |mut conn: MultiplexedConnection, i| {
            let (ch1, cutoff) = (ch1.clone(), cutoff.clone());
            async move {
                let user = voter(i);
                let mut call = ch1.prepare_invoke();
                for k in CH1_KEYS {
                    call.key(k);
                }
                call.arg("a").arg(&user).arg(&*cutoff);
                let reply: Result<i64, _> = call.invoke_async(&mut conn).await;
                let mut out = UserOut::default();
                match reply {
                    Ok(1) => {
                        out.paths.push("voted");
                        out.wins = 1;
                    }
                    Ok(n) => {
                        out.paths.push(if n == 0 { "closed" } else { "unexpected" });
                        out.bad = Some(format!("{user}: {n}"));
                    }
                    Err(e) => {
                        out.paths.push("error");
                        out.error = Some(format!("{user}: {e}"));
                    }
                }
                out
            }
        },
    )
    .await;
    let secs = started.elapsed().as_secs_f64();
    drop(conns);
    let checks = vec![
        Check::new(
            "ch1 article counted every vote",
            &["HGET", hash, "votes"],
            1 + s.voters,
        ),
        Check::new(
            "ch1 voted set holds every voter",
            &["SCARD", voted],
            s.voters,
        ),
    ];
    StormOut::from_users(outs, s.voters, checks, secs)
}

/// One scenario's recording, ready to replay.
struct Recording {
    /// The scenario.
    scenario: Scenario,
    /// The storm's outcome as its callers saw it.
    out: StormOut,
    /// Every setup chunk, in recorded order.
    setup: Vec<Step>,
    /// Every connection's storm chunks, in order, for each connection that sent any.
    storm: Vec<Vec<Step>>,
    /// Connections the clients opened.
    connections: usize,
    /// Commands in the setup chunks.
    setup_commands: usize,
    /// Commands in the storm chunks.
    storm_commands: usize,
    /// Storm chunks.
    storm_chunks: usize,
    /// Error replies the recorded server sent, `[setup, storm]`.
    errors: [u64; 2],
    /// The first error reply of each phase.
    first_errors: [Option<String>; 2],
}

impl Recording {
    /// Storm commands per request.
    fn commands_per_request(&self) -> f64 {
        self.storm_commands as f64 / self.out.requests as f64
    }
}

/// Records `scenario` on a fresh server through a fresh proxy; checks the recorded server's
/// state too.
async fn record(scenario: Scenario, server: &RedisServer, s: Settings) -> Recording {
    let upstream: SocketAddr = format!("127.0.0.1:{}", server.port())
        .parse()
        .expect("address");
    let proxy = Proxy::start(upstream).await;
    let mut out = match scenario {
        Scenario::Grab => grab_storm(&proxy, s).await,
        Scenario::GrabSeed => grab_seed_storm(&proxy, s).await,
        Scenario::Vote => vote_storm(&proxy, s).await,
        Scenario::VoteCh1 => vote_ch1_storm(&proxy, s).await,
    };
    let log = proxy.finish();
    let (errors, first_errors) = recorded_errors(&log.received)
        .unwrap_or_else(|e| panic!("{}: the server's replies: {e}", scenario.name()));
    let expected = match scenario {
        Scenario::Grab | Scenario::GrabSeed => s.grab_requests(),
        Scenario::Vote | Scenario::VoteCh1 => s.voters,
    };
    if out.requests != expected {
        out.problems
            .push(format!("{} requests, not {expected}", out.requests));
    }
    let mut direct = plain_conn(&server.url()).await;
    out.problems.extend(
        verify(&mut direct, &out.checks)
            .await
            .into_iter()
            .map(|p| format!("recorded server: {p}")),
    );

    // Commands per chunk, per connection: a command split over chunks counts in the chunk
    // that completes it.
    let mut pending: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut setup = Vec::new();
    let mut storm: BTreeMap<usize, Vec<Step>> = BTreeMap::new();
    let (mut setup_commands, mut storm_commands, mut storm_chunks) = (0, 0, 0);
    let mut connections = 0;
    for c in log.sent {
        connections = connections.max(c.conn + 1);
        if c.phase == Phase::After {
            continue;
        }
        let buf = pending.entry(c.conn).or_default();
        buf.extend_from_slice(&c.bytes);
        let (replies, used) = complete_commands(buf)
            .unwrap_or_else(|e| panic!("{}: connection {}: {e}", scenario.name(), c.conn));
        buf.drain(..used);
        let step = Step {
            conn: c.conn,
            bytes: c.bytes,
            replies,
        };
        if c.phase == Phase::Setup {
            setup_commands += replies;
            setup.push(step);
        } else {
            storm_commands += replies;
            storm_chunks += 1;
            storm.entry(c.conn).or_default().push(step);
        }
    }
    for (conn, rest) in &pending {
        if !rest.is_empty() {
            out.problems.push(format!(
                "connection {conn} ended inside a command ({} bytes)",
                rest.len()
            ));
        }
    }
    Recording {
        scenario,
        out,
        setup,
        storm: storm.into_values().collect(),
        connections,
        setup_commands,
        storm_commands,
        storm_chunks,
        errors,
        first_errors,
    }
}

/// One replay connection: writes recorded chunks and reads the replies they are owed.
struct ReplayConn {
    /// The socket.
    stream: TcpStream,
    /// Bytes read and not yet parsed from `pos` on.
    buf: Vec<u8>,
    /// Where the next reply starts in `buf`.
    pos: usize,
    /// Error replies read.
    errors: u64,
    /// The first error reply.
    first_error: Option<String>,
}

impl ReplayConn {
    /// Connects to `addr`.
    async fn open(addr: SocketAddr) -> ReplayConn {
        let stream = TcpStream::connect(addr).await.expect("replay connect");
        stream.set_nodelay(true).expect("nodelay");
        ReplayConn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            pos: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// Writes `step`'s bytes, then reads until its replies have arrived (pushes, which answer
    /// no command, are skipped).
    async fn exchange(&mut self, step: &Step) -> Result<(), String> {
        self.stream
            .write_all(&step.bytes)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut got = 0;
        while got < step.replies {
            if self.pos < self.buf.len() {
                if let Some(end) = value_end(&self.buf, self.pos)? {
                    match self.buf[self.pos] {
                        b'>' => {}
                        b'-' | b'!' => {
                            self.errors += 1;
                            self.first_error.get_or_insert_with(|| {
                                String::from_utf8_lossy(&self.buf[self.pos..end])
                                    .trim()
                                    .to_string()
                            });
                            got += 1;
                        }
                        _ => got += 1,
                    }
                    self.pos = end;
                    continue;
                }
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.buf.reserve(16 * 1024);
            let read = tokio::time::timeout(RESPONSE_TIMEOUT, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| {
                    format!(
                        "no reply within {RESPONSE_TIMEOUT:?} ({got} of {} read)",
                        step.replies
                    )
                })?
                .map_err(|e| format!("read: {e}"))?;
            if read == 0 {
                return Err(format!(
                    "the server closed the connection ({got} of {} replies read)",
                    step.replies
                ));
            }
        }
        Ok(())
    }
}

/// What one replay of one recording measured.
#[derive(Debug, Clone)]
struct Replay {
    /// Server main-thread CPU over the storm, microseconds.
    cpu_usec: f64,
    /// Whether `cpu_usec` is the main thread's (`*_main_thread` fields) or the process's.
    main_thread: bool,
    /// Wall time of the storm's replay, seconds.
    wall_secs: f64,
    /// `INFO commandstats` calls per command during the storm (`info` left out).
    commands: BTreeMap<String, u64>,
    /// Error replies during the setup.
    setup_errors: u64,
    /// Error replies during the storm.
    errors: u64,
    /// Checks that did not hold.
    problems: Vec<String>,
}

/// `INFO <section>` on `conn`.
async fn info(conn: &mut MultiplexedConnection, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("INFO {section}: {e}"))
}

/// Replays `rec` on `server` (fresh): the setup in order, then the storm saturated, measured.
async fn replay(rec: Arc<Recording>, server: &RedisServer) -> Replay {
    let addr: SocketAddr = format!("127.0.0.1:{}", server.port())
        .parse()
        .expect("address");
    let mut admin = plain_conn(&server.url()).await;
    let mut problems = Vec::new();

    // Setup: every chunk in recorded order, each on its own connection's replay connection.
    let mut conns: HashMap<usize, ReplayConn> = HashMap::new();
    for step in &rec.setup {
        let conn = match conns.entry(step.conn) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(ReplayConn::open(addr).await),
        };
        if let Err(e) = conn.exchange(step).await {
            panic!(
                "{}: setup replay, connection {}: {e}",
                rec.scenario.name(),
                step.conn
            );
        }
    }
    // The same error replies as the recording (e.g. `CLIENT SETINFO` on a server without it).
    let setup_errors: u64 = conns.values().map(|c| c.errors).sum();
    if setup_errors != rec.errors[0] {
        let first = conns.values().find_map(|c| c.first_error.clone());
        problems.push(format!(
            "{setup_errors} error replies in the setup replay (e.g. {first:?}), {} recorded \
             (e.g. {:?})",
            rec.errors[0], rec.first_errors[0]
        ));
    }
    // The storm's connections, opened (or kept) before the measurement; the others closed.
    let mut storm_conns = Vec::with_capacity(rec.storm.len());
    for (k, steps) in rec.storm.iter().enumerate() {
        let conn = match conns.remove(&steps[0].conn) {
            Some(mut c) => {
                c.errors = 0;
                c.first_error = None;
                c
            }
            None => ReplayConn::open(addr).await,
        };
        storm_conns.push((k, conn));
    }
    drop(conns);

    let stats_before = commandstats_calls(&info(&mut admin, "commandstats").await);
    let (cpu_before, main_thread) = server_main_thread_cpu_secs(&info(&mut admin, "cpu").await);
    let started = Instant::now();
    let handles: Vec<_> = storm_conns
        .into_iter()
        .map(|(k, mut conn)| {
            let rec = rec.clone();
            tokio::spawn(async move {
                for step in &rec.storm[k] {
                    conn.exchange(step).await?;
                }
                Ok::<_, String>((conn.errors, conn.first_error))
            })
        })
        .collect();
    let mut errors = 0;
    let mut first_error = None;
    for h in handles {
        match h.await.expect("replay task") {
            Ok((n, first)) => {
                errors += n;
                first_error = first_error.or(first);
            }
            Err(e) => problems.push(format!("storm replay: {e}")),
        }
    }
    let wall_secs = started.elapsed().as_secs_f64();
    let (cpu_after, _) = server_main_thread_cpu_secs(&info(&mut admin, "cpu").await);
    let stats_after = commandstats_calls(&info(&mut admin, "commandstats").await);
    if errors != rec.errors[1] {
        problems.push(format!(
            "{errors} error replies in the storm replay (e.g. {first_error:?}), {} recorded \
             (e.g. {:?})",
            rec.errors[1], rec.first_errors[1]
        ));
    }
    problems.extend(verify(&mut admin, &rec.out.checks).await);
    let commands = stats_after
        .into_iter()
        .filter(|(name, _)| name != "info")
        .map(|(name, calls)| {
            let before = stats_before.get(&name).copied().unwrap_or(0);
            (name, calls - before)
        })
        .filter(|(_, calls)| *calls > 0)
        .collect();
    Replay {
        cpu_usec: (cpu_after - cpu_before) * 1e6,
        main_thread,
        wall_secs,
        commands,
        setup_errors,
        errors,
        problems,
    }
}

/// One scenario over all rounds.
struct Summary {
    /// Median µs of server main-thread CPU per request.
    usec: f64,
    /// For a hongbao scenario: its baseline, the median, min and max of the per-round ratio
    /// to it, and the goal.
    ratio: Option<(Scenario, f64, f64, f64, f64)>,
    /// Median calls per request by command (`INFO commandstats`).
    commands: BTreeMap<String, f64>,
    /// Median wall time of a replayed storm, seconds.
    wall_secs: f64,
}

impl Summary {
    /// Whether the goal is met (`None` for a baseline).
    fn met(&self) -> Option<bool> {
        self.ratio.map(|(_, r, _, _, goal)| r <= goal)
    }
}

/// Summarizes `rounds` (each round's replays, in [`Scenario::ALL`] order).
fn summarize(recs: &[Arc<Recording>], rounds: &[Vec<Replay>]) -> Vec<Summary> {
    let per_request = |round: &[Replay], k: usize| round[k].cpu_usec / recs[k].out.requests as f64;
    recs.iter()
        .enumerate()
        .map(|(k, rec)| {
            let ratio = rec.scenario.baseline().map(|(base, goal)| {
                let b = Scenario::ALL
                    .iter()
                    .position(|&s| s == base)
                    .expect("baseline");
                let ratios: Vec<f64> = rounds
                    .iter()
                    .map(|r| per_request(r, k) / per_request(r, b))
                    .collect();
                (
                    base,
                    median(ratios.clone()),
                    ratios.iter().copied().fold(f64::INFINITY, f64::min),
                    ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    goal,
                )
            });
            let mut names: Vec<&String> =
                rounds.iter().flat_map(|r| r[k].commands.keys()).collect();
            names.sort();
            names.dedup();
            let commands = names
                .into_iter()
                .map(|name| {
                    let calls = rounds
                        .iter()
                        .map(|r| {
                            r[k].commands.get(name).copied().unwrap_or(0) as f64
                                / rec.out.requests as f64
                        })
                        .collect();
                    (name.clone(), median(calls))
                })
                .collect();
            Summary {
                usec: median(rounds.iter().map(|r| per_request(r, k)).collect()),
                ratio,
                commands,
                wall_secs: median(rounds.iter().map(|r| r[k].wall_secs).collect()),
            }
        })
        .collect()
}

/// Prints the tables.
fn print_tables(recs: &[Arc<Recording>], sums: &[Summary], s: Settings) {
    println!();
    println!(
        "| scenario | requests | commands/request | µs CPU/request (median) | baseline | ratio \
         median [min–max] | goal | met |"
    );
    println!("| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        let (baseline, ratio, goal, met) = match (sum.ratio, sum.met()) {
            (Some((base, r, lo, hi, goal)), Some(met)) => (
                base.name().to_string(),
                format!("{r:.2}× [{lo:.2}–{hi:.2}]"),
                format!("≤ {goal:.1}×"),
                if met { "met" } else { "not met" }.to_string(),
            ),
            _ => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        println!(
            "| {} | {} | {:.2} | {:.2} | {baseline} | {ratio} | {goal} | {met} |",
            rec.scenario.name(),
            rec.out.requests,
            rec.commands_per_request(),
            sum.usec,
        );
    }

    println!();
    println!("| scenario | function | recorded storm's outcomes | recorded storm (s) | replayed storm, median (ms) | checks |");
    println!("| --- | --- | --- | ---: | ---: | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        println!(
            "| {} | {} | {} | {:.2} | {:.1} | {} |",
            rec.scenario.name(),
            rec.scenario.function(),
            rec.out.mix.text(),
            rec.out.secs,
            sum.wall_secs * 1e3,
            if rec.out.problems.is_empty() {
                "ok".to_string()
            } else {
                format!("{} FAILED", rec.out.problems.len())
            }
        );
    }

    println!();
    println!("| scenario | recorded: connections, setup commands, storm chunks, storm commands | replayed storm's INFO commandstats calls per request (median) |");
    println!("| --- | --- | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        let calls: Vec<String> = sum
            .commands
            .iter()
            .map(|(name, n)| format!("{name} {n:.2}"))
            .collect();
        println!(
            "| {} | {}, {}, {}, {} | {} |",
            rec.scenario.name(),
            rec.connections,
            rec.setup_commands,
            rec.storm_chunks,
            rec.storm_commands,
            calls.join(", ")
        );
    }
    println!();
    println!(
        "µs CPU/request = the replayed server's main-thread CPU (INFO cpu used_cpu_user_main_thread \
         + used_cpu_sys_main_thread) over the storm / requests, median of {} rounds; ratio = \
         median of the per-round ratios hongbao / baseline, [min–max] their spread; requests = \
         calls of the scenario's function ({} sandboxes, one request at a time each; grab: {} \
         grabbers, every {REPEAT_EVERY}th twice; vote: {} voters); commands/request = the \
         recorded storm's commands / requests; commandstats calls include commands run inside \
         scripts",
        s.rounds, s.sandboxes, s.grabbers, s.voters
    );
}

/// One scenario's figures as JSON: its recording, its summary, and its replay `k` of every
/// round.
fn scenario_json(rec: &Recording, sum: &Summary, rounds: &[Vec<Replay>], k: usize) -> Value {
    let per_round: Vec<Value> = rounds
        .iter()
        .map(|r| {
            json!({
                "server_cpu_usec": r[k].cpu_usec,
                "usec_cpu_per_request": r[k].cpu_usec / rec.out.requests as f64,
                "wall_secs": r[k].wall_secs,
                "setup_error_replies": r[k].setup_errors,
                "storm_error_replies": r[k].errors,
                "commandstats_calls": r[k].commands,
                "problems": r[k].problems,
            })
        })
        .collect();
    let outcomes: serde_json::Map<String, Value> = rec
        .out
        .mix
        .0
        .iter()
        .map(|(p, n)| (p.to_string(), json!(n)))
        .collect();
    json!({
        "scenario": rec.scenario.name(),
        "function": rec.scenario.function(),
        "requests": rec.out.requests,
        "connections": rec.connections,
        "setup_commands": rec.setup_commands,
        "storm_chunks": rec.storm_chunks,
        "storm_commands": rec.storm_commands,
        "recorded_setup_error_replies": rec.errors[0],
        "recorded_storm_error_replies": rec.errors[1],
        "commands_per_request": rec.commands_per_request(),
        "recorded_storm_secs": rec.out.secs,
        "outcomes": outcomes,
        "usec_cpu_per_request_median": sum.usec,
        "replay_wall_secs_median": sum.wall_secs,
        "baseline": sum.ratio.map(|(b, ..)| b.name()),
        "ratio_median": sum.ratio.map(|(_, r, ..)| r),
        "ratio_min": sum.ratio.map(|(_, _, lo, ..)| lo),
        "ratio_max": sum.ratio.map(|(_, _, _, hi, _)| hi),
        "goal": sum.ratio.map(|(.., goal)| goal),
        "met": sum.met(),
        "commandstats_calls_per_request_median": sum.commands,
        "rounds": per_round,
        "problems": rec.out.problems,
    })
}

/// Restricts process `pid` (this thread and the threads it starts later, for `None`) to CPU
/// `cpu`; false if the machine has fewer than 2 CPUs or the call failed.
fn pin(pid: Option<u32>, cpu: usize) -> bool {
    if std::thread::available_parallelism().map_or(1, |c| c.get()) < 2 {
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

/// Records every scenario once, replays them all every round, prints the tables, writes the
/// JSON, and fails if a check did not hold.
fn main() {
    let s = Settings::from_env();
    let pinned = s.pin && pin(None, 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let load_before = loadavg();
    let started = Instant::now();

    let mut recs = Vec::with_capacity(Scenario::ALL.len());
    let mut version = String::new();
    for scenario in Scenario::ALL {
        let server = RedisServer::start();
        if pinned {
            pin(server.pid(), 0);
        }
        if version.is_empty() {
            let server_info =
                rt.block_on(async { info(&mut plain_conn(&server.url()).await, "server").await });
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
                .zip(&recs)
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

    let sums = summarize(&recs, &rounds);
    print_tables(&recs, &sums, s);

    let mut problems: Vec<String> = Vec::new();
    for rec in &recs {
        for p in &rec.out.problems {
            problems.push(format!("{} recording: {p}", rec.scenario.name()));
        }
    }
    for (n, round) in rounds.iter().enumerate() {
        for (r, rec) in round.iter().zip(&recs) {
            for p in &r.problems {
                problems.push(format!(
                    "{} replay, round {}: {p}",
                    rec.scenario.name(),
                    n + 1
                ));
            }
        }
    }
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
