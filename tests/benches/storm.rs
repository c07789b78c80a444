//! Storm: a flash crowd of 100,000 distinct grabbers on red packets of 1,000 shares, through
//! `hongbao::packets::grab` (the grab function's call path), on a private standalone
//! `redis-server` (one packet) and on the harness's local 3-master Redis Cluster (30 packets
//! spread over the masters).
//!
//! ```text
//! cargo bench -p hongbao-tests --bench storm
//! BENCH_GRABBERS=20000 BENCH_TASKS=256 cargo bench -p hongbao-tests --bench storm
//! ```
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `BENCH_GRABBERS` | `100000` | distinct grabbers (user ids) per backend |
//! | `BENCH_TASKS` | `64` | concurrent tokio tasks, all over one `Store` |
//! | `BENCH_REPEAT_EVERY` | `10` | every n-th grabber of a packet grabs twice in a row (`0`: nobody) |
//! | `BENCH_SHARES` | `1000` | shares of every packet |
//! | `BENCH_PACKETS` | `30` | packets on the cluster (the standalone server always gets one) |
//!
//! Grabber `i` is the user `storm-<i>` and grabs packet `i mod packets`; the 1st, (n+1)-th,
//! (2n+1)-th... grabber of every packet asks again right after its first answer (a double
//! tap), so the mix shows the `already grabbed` path. `BENCH_TASKS` tokio tasks take the
//! grabbers in order from a shared counter, on a multi-thread runtime with one worker per core
//! and one `Store` (one multiplexed connection per node, as in a Lambda sandbox), so every
//! packet is stormed at once. The wall time of the whole storm gives requests per second;
//! `last share` is when the last share of any packet was handed out.
//!
//! A packet's keys carry its sender's wallet tag (`hongbao::store::keys`): all packets of one
//! sender share one hash slot, i.e. one master. The cluster's packets therefore come from as
//! many senders (`storm-sender-<k>`), and land on the masters as those senders' tags fall;
//! the table gives how many each master holds (`CLUSTER KEYSLOT`, `CLUSTER NODES`) and each
//! master's share of the grab calls (`cmdstat_hget` of every node's `INFO commandstats`: every
//! grab runs one `HGET`, in the script or alone,
//! after `CONFIG RESETSTAT` on every node). The grab script is `SCRIPT LOAD`ed on every node
//! before the storm, so every call is exactly one `EVALSHA` or, once the `Store` has seen its
//! packet sold out, one `HGET`.
//!
//! Checked after each storm (the bench prints and writes its figures, then fails if any check
//! does not hold): every packet handed out exactly as many shares as it has, or as it has
//! grabbers if fewer, to distinct users, adding up to its `grabbed_cents` and, once sold out,
//! to its total (`packets::view`); these are the users and amounts the callers were told;
//! every winner's repeat got its own share back and no loser's repeat got one; no call failed;
//! the `HGET` calls over all nodes equal the requests (a grab of a packet the `Store` saw sold
//! out is one `HGET` alone, `store/packets/gone.rs`), no `EVALSHA` failed and none fell back to
//! `EVAL`. Writes the figures to `target/bench/storm.json` too.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::{RedisCluster, RedisServer};
use hongbao::packets::{self, GrabOutcome};
use hongbao::store::keys::Keys;
use hongbao::store::scripts;
use hongbao::wallet;
use hongbao::{Error, Store};
use serde_json::{json, Value};

#[path = "support/mod.rs"]
mod support;
use support::{
    bench_config, create_packet, env_num, info_field, lucky_packet, node_conn, nodes, pct, query,
    write_json, Started,
};

/// Default number of distinct grabbers per backend (`BENCH_GRABBERS` overrides it).
const DEFAULT_GRABBERS: u64 = 100_000;
/// Default number of concurrent tasks (`BENCH_TASKS` overrides it).
const DEFAULT_TASKS: usize = 64;
/// By default every 10th grabber of a packet grabs twice (`BENCH_REPEAT_EVERY` overrides it).
const DEFAULT_REPEAT_EVERY: u64 = 10;
/// Default shares per packet (`BENCH_SHARES` overrides it).
const DEFAULT_SHARES: u32 = 1_000;
/// Default number of packets on the cluster (`BENCH_PACKETS` overrides it).
const DEFAULT_CLUSTER_PACKETS: usize = 30;
/// A packet's total is this many cents per share (a lucky, double-mean split).
const CENTS_PER_SHARE: i64 = 100;

/// The paths a grab call can take, in table order: the [`GrabOutcome`] variants, then an
/// error of the call itself. Each as (table label, JSON key).
const PATHS: [(&str, &str); 7] = [
    ("grabbed", "grabbed"),
    ("already grabbed", "already_grabbed"),
    ("sold out", "sold_out"),
    ("rate limited", "rate_limited"),
    ("expired", "expired"),
    ("not found", "not_found"),
    ("error", "error"),
];

/// Calls per path, indexed like [`PATHS`].
type Mix = [u64; PATHS.len()];

/// The [`PATHS`] index of a grab call's result.
fn path(result: &Result<GrabOutcome, Error>) -> usize {
    match result {
        Ok(GrabOutcome::Grabbed { .. }) => 0,
        Ok(GrabOutcome::AlreadyGrabbed(_)) => 1,
        Ok(GrabOutcome::SoldOut) => 2,
        Ok(GrabOutcome::RateLimited { .. }) => 3,
        Ok(GrabOutcome::Expired) => 4,
        Ok(
            GrabOutcome::NotFound
            | GrabOutcome::NotARecipient
            | GrabOutcome::NotOpenYet { .. }
            | GrabOutcome::Cancelled
            | GrabOutcome::WrongPassword
            | GrabOutcome::GuessesExhausted
            | GrabOutcome::Entered { .. }
            | GrabOutcome::NotDrawn,
        ) => 5,
        Err(_) => 6,
    }
}

/// The bench's settings, from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    /// Distinct grabbers per backend.
    grabbers: u64,
    /// Concurrent tasks.
    tasks: usize,
    /// Every n-th grabber of a packet grabs twice; 0: nobody.
    repeat_every: u64,
    /// Shares of every packet.
    shares: u32,
    /// Packets on the cluster.
    cluster_packets: usize,
}

impl Settings {
    /// Reads the `BENCH_*` variables.
    fn from_env() -> Self {
        Settings {
            grabbers: env_num("BENCH_GRABBERS").unwrap_or(DEFAULT_GRABBERS).max(1),
            tasks: env_num("BENCH_TASKS").unwrap_or(DEFAULT_TASKS).max(1),
            repeat_every: env_num("BENCH_REPEAT_EVERY").unwrap_or(DEFAULT_REPEAT_EVERY),
            shares: env_num("BENCH_SHARES").unwrap_or(DEFAULT_SHARES).max(1),
            cluster_packets: env_num("BENCH_PACKETS")
                .unwrap_or(DEFAULT_CLUSTER_PACKETS)
                .max(1),
        }
    }

    /// Whether grabber `i`, on a deployment of `packets` packets, asks twice.
    fn repeats(&self, i: u64, packets: usize) -> bool {
        self.repeat_every > 0 && (i / packets as u64).is_multiple_of(self.repeat_every)
    }
}

/// The user id of grabber `i`.
fn user(i: u64) -> String {
    format!("storm-{i:06}")
}

/// One share a caller was told it grabbed.
#[derive(Debug, Clone, Copy)]
struct Win {
    /// Index of the packet.
    packet: usize,
    /// The grabber.
    grabber: u64,
    /// The share's amount, cents.
    amount: i64,
}

/// What one task saw.
#[derive(Debug, Default)]
struct TaskOut {
    /// Its calls per path.
    mix: Mix,
    /// Every share it was told it grabbed.
    wins: Vec<Win>,
    /// Repeats whose answer broke the rules (a winner not getting its share back, a loser
    /// getting one).
    bad_repeats: u64,
    /// Time from the start of the storm to its last share.
    last_win: Duration,
}

/// One master's line of the table.
#[derive(Debug, Clone)]
struct Master {
    /// `host:port`.
    addr: String,
    /// The hash slots it serves.
    slots: String,
    /// Packets whose keys it holds.
    packets: usize,
    /// `cmdstat_evalsha` calls during the storm.
    evalsha_calls: u64,
    /// `cmdstat_hget` calls during the storm (commandstats counts the commands scripts run):
    /// every grab sends exactly one, inside `grab.lua` or, for a packet the `Store` saw sold
    /// out, alone (`store/packets/gone.rs`).
    hget_calls: u64,
    /// The server's own time per `EVALSHA`, microseconds.
    usec_per_call: f64,
}

/// What one backend's storm measured.
#[derive(Debug)]
struct Storm {
    /// `standalone` or `cluster`.
    backend: &'static str,
    /// Packets stormed.
    packets: usize,
    /// Grab calls made (first grabs and repeats).
    requests: u64,
    /// Wall time of the storm, seconds.
    seconds: f64,
    /// Time from the start to the last share handed out, seconds.
    last_share: f64,
    /// Calls per path.
    mix: Mix,
    /// Every master, in node order.
    masters: Vec<Master>,
    /// The checks that did not hold.
    problems: Vec<String>,
}

impl Master {
    /// Its grab calls: one `HGET` each, in the script or alone.
    fn calls(&self) -> u64 {
        self.hget_calls
    }

    /// Its grab calls answered by one `HGET` without the script.
    fn hget_only(&self) -> u64 {
        self.hget_calls.saturating_sub(self.evalsha_calls)
    }
}

impl Storm {
    /// Grab calls per second.
    fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    /// The grab calls of all masters.
    fn calls(&self) -> u64 {
        self.masters.iter().map(Master::calls).sum()
    }
}

/// Funds `sender` and creates a lucky packet of `shares` shares; returns its id.
async fn new_packet(store: &Store, sender: &str, shares: u32) -> String {
    let total = i64::from(shares) * CENTS_PER_SHARE;
    let reference = format!("storm-{}", rand::random::<u64>());
    wallet::deposit(store, sender, total, &reference)
        .await
        .expect("deposit");
    create_packet(store, sender, &lucky_packet(total, shares)).await
}

/// One task of the storm: takes grabbers from `next` until `s.grabbers` are taken; each grabs
/// its packet once, and again right after when [`Settings::repeats`] says so.
async fn grabber(
    store: Arc<Store>,
    ids: Arc<Vec<String>>,
    next: Arc<AtomicU64>,
    s: Settings,
    started: Instant,
) -> TaskOut {
    let mut out = TaskOut::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= s.grabbers {
            return out;
        }
        let p = (i % ids.len() as u64) as usize;
        let user = user(i);
        let attempts = if s.repeats(i, ids.len()) { 2 } else { 1 };
        let mut mine = None;
        for attempt in 0..attempts {
            let result = packets::grab(&store, &ids[p], &user).await;
            out.mix[path(&result)] += 1;
            match (&result, mine) {
                (Ok(GrabOutcome::Grabbed { share, .. }), _) => {
                    out.bad_repeats += u64::from(attempt > 0);
                    mine = Some(*share);
                    out.wins.push(Win {
                        packet: p,
                        grabber: i,
                        amount: share.amount_cents,
                    });
                    out.last_win = started.elapsed();
                }
                (Ok(GrabOutcome::AlreadyGrabbed(share)), Some(m)) if *share == m => {}
                (_, Some(_)) => out.bad_repeats += 1,
                _ => {}
            }
        }
    }
}

/// Checks packet `id` (index `p`) after the storm, which should have handed out `expected`
/// shares, against what the callers were told; returns the problems found.
async fn check_packet(
    store: &Store,
    p: usize,
    id: &str,
    wins: &[Win],
    expected: u32,
) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(view) = packets::view(store, id).await.expect("view") else {
        return vec![format!("packet {p} ({id}) is gone")];
    };
    let (packet, grabs) = (&view.packet, &view.grabs);
    if packet.grabbed_count != expected || grabs.len() != expected as usize {
        problems.push(format!(
            "packet {p}: grabbed_count {} and {} grabs, not {expected}",
            packet.grabbed_count,
            grabs.len()
        ));
    }
    let users: HashSet<&str> = grabs.iter().map(|g| g.user_id.as_str()).collect();
    if users.len() != grabs.len() {
        problems.push(format!(
            "packet {p}: {} grabs by only {} distinct users",
            grabs.len(),
            users.len()
        ));
    }
    // A sold-out packet handed out its whole total; every packet's grabs add up to its
    // `grabbed_cents`.
    let sum: i64 = grabs.iter().map(|g| g.share.amount_cents).sum();
    let sold_out = packet.grabbed_count == packet.count;
    if sum != packet.grabbed_cents || (sold_out && sum != packet.total_cents) {
        problems.push(format!(
            "packet {p}: grabs add up to {sum}, grabbed_cents {}, total {}",
            packet.grabbed_cents, packet.total_cents
        ));
    }
    let mut told: Vec<(String, i64)> = wins
        .iter()
        .filter(|w| w.packet == p)
        .map(|w| (user(w.grabber), w.amount))
        .collect();
    let mut stored: Vec<(String, i64)> = grabs
        .iter()
        .map(|g| (g.user_id.clone(), g.share.amount_cents))
        .collect();
    told.sort();
    stored.sort();
    if told != stored {
        problems.push(format!(
            "packet {p}: the {} shares callers were told differ from the {} stored",
            told.len(),
            stored.len()
        ));
    }
    problems
}

/// Storms `packet_count` fresh packets on the deployment at `urls` (a cluster when `cluster`)
/// and measures it.
async fn storm(
    backend: &'static str,
    urls: &[String],
    cluster: bool,
    packet_count: usize,
    s: Settings,
) -> Storm {
    let store = Arc::new(Store::new(bench_config(urls[0].clone(), cluster)));
    let mut nodes = nodes(urls, cluster).await;
    let keys = Keys::new(&store.config().key_prefix);

    // The packets, one sender each (a sender's packets all share its hash slot), and the
    // master that holds each.
    let mut ids = Vec::with_capacity(packet_count);
    let mut owners = Vec::with_capacity(packet_count);
    for k in 0..packet_count {
        let sender = if packet_count == 1 {
            "storm-sender".to_string()
        } else {
            format!("storm-sender-{k:02}")
        };
        let id = new_packet(&store, &sender, s.shares).await;
        let owner = if cluster {
            let meta = keys.packet(&id).meta;
            let slot: u16 = query(&mut nodes[0].conn, &["CLUSTER", "KEYSLOT", &meta]).await;
            nodes
                .iter()
                .position(|n| n.ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot)))
                .unwrap_or_else(|| panic!("no master serves slot {slot}"))
        } else {
            0
        };
        ids.push(id);
        owners.push(owner);
    }

    // Every call an EVALSHA that hits the script cache; statistics from zero; connected.
    for n in &mut nodes {
        let sha: String = query(&mut n.conn, &["SCRIPT", "LOAD", scripts::GRAB.source()]).await;
        assert_eq!(sha, scripts::GRAB.get_hash(), "SCRIPT LOAD on {}", n.addr);
        let _: () = query(&mut n.conn, &["CONFIG", "RESETSTAT"]).await;
    }
    store.conn().await.expect("connect");

    let ids = Arc::new(ids);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let handles: Vec<_> = (0..s.tasks)
        .map(|_| {
            tokio::spawn(grabber(
                store.clone(),
                ids.clone(),
                next.clone(),
                s,
                started,
            ))
        })
        .collect();
    let mut outs = Vec::with_capacity(handles.len());
    for h in handles {
        outs.push(h.await.expect("grab task"));
    }
    let seconds = started.elapsed().as_secs_f64();

    let mut mix = Mix::default();
    for o in &outs {
        for (total, n) in mix.iter_mut().zip(o.mix) {
            *total += n;
        }
    }
    let requests: u64 = mix.iter().sum();
    let mut masters = Vec::with_capacity(nodes.len());
    let mut problems = Vec::new();
    for (k, n) in nodes.iter_mut().enumerate() {
        let stats: String = query(&mut n.conn, &["INFO", "commandstats"]).await;
        let failed = info_field(&stats, "cmdstat_evalsha", Some("failed_calls")) as u64;
        let evals = info_field(&stats, "cmdstat_eval", Some("calls")) as u64;
        if failed > 0 || evals > 0 {
            problems.push(format!(
                "{}: {failed} failed EVALSHA calls, {evals} EVAL calls",
                n.addr
            ));
        }
        masters.push(Master {
            addr: n.addr.clone(),
            slots: n.slots.clone(),
            packets: owners.iter().filter(|&&o| o == k).count(),
            evalsha_calls: info_field(&stats, "cmdstat_evalsha", Some("calls")) as u64,
            hget_calls: info_field(&stats, "cmdstat_hget", Some("calls")) as u64,
            usec_per_call: info_field(&stats, "cmdstat_evalsha", Some("usec_per_call")),
        });
    }

    let wins: Vec<Win> = outs.iter().flat_map(|o| o.wins.iter().copied()).collect();
    for (p, id) in ids.iter().enumerate() {
        // Grabbers `i` with `i mod packets == p`; every one of them wins while shares last.
        let (n, count) = (s.grabbers, ids.len() as u64);
        let grabbers = n / count + u64::from((p as u64) < n % count);
        let expected = grabbers.min(u64::from(s.shares)) as u32;
        problems.extend(check_packet(&store, p, id, &wins, expected).await);
    }
    let bad_repeats: u64 = outs.iter().map(|o| o.bad_repeats).sum();
    if bad_repeats > 0 {
        problems.push(format!("{bad_repeats} repeats broke the rules"));
    }
    if mix[6] > 0 {
        problems.push(format!("{} grab calls failed", mix[6]));
    }
    let calls: u64 = masters.iter().map(Master::calls).sum();
    if calls != requests {
        problems.push(format!("{calls} HGET calls for {requests} requests"));
    }
    Storm {
        backend,
        packets: packet_count,
        requests,
        seconds,
        last_share: outs
            .iter()
            .map(|o| o.last_win)
            .max()
            .unwrap_or_default()
            .as_secs_f64(),
        mix,
        masters,
        problems,
    }
}

/// Prints the tables.
fn print_tables(storms: &[Storm], s: Settings) {
    println!();
    println!(
        "| backend | packets × shares | requests | seconds | requests/s | last share after (s) \
         | checks |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for r in storms {
        println!(
            "| {} | {} × {} | {} | {:.2} | {:.0} | {:.2} | {} |",
            r.backend,
            r.packets,
            s.shares,
            r.requests,
            r.seconds,
            r.requests_per_sec(),
            r.last_share,
            if r.problems.is_empty() {
                "ok".to_string()
            } else {
                format!("{} FAILED", r.problems.len())
            }
        );
    }

    println!();
    let header: Vec<String> = storms
        .iter()
        .map(|r| format!("{} calls | %", r.backend))
        .collect();
    println!("| path | {} |", header.join(" | "));
    println!("| --- |{}", " ---: | ---: |".repeat(storms.len()));
    for (k, (label, _)) in PATHS.iter().enumerate() {
        let cells: Vec<String> = storms
            .iter()
            .map(|r| {
                format!(
                    "{} | {:.1}%",
                    r.mix[k],
                    pct(r.mix[k] as f64, r.requests as f64)
                )
            })
            .collect();
        println!("| {label} | {} |", cells.join(" | "));
    }

    println!();
    println!(
        "| backend | master | slots | packets | share of packets | EVALSHA calls | HGET alone \
         | share of calls | calls/s | EVALSHA µs/call |"
    );
    println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in storms {
        let calls = r.calls() as f64;
        for m in &r.masters {
            println!(
                "| {} | {} | {} | {} | {:.1}% | {} | {} | {:.1}% | {:.0} | {:.2} |",
                r.backend,
                m.addr,
                m.slots,
                m.packets,
                pct(m.packets as f64, r.packets as f64),
                m.evalsha_calls,
                m.hget_only(),
                pct(m.calls() as f64, calls),
                m.calls() as f64 / r.seconds,
                m.usec_per_call,
            );
        }
    }
    println!();
    println!(
        "requests = grab calls (first grabs and repeats), all over one Store; requests/s = \
         requests / wall time of the storm; last share after = wall time to the last share \
         handed out; EVALSHA calls, µs/call = each node's INFO commandstats cmdstat_evalsha \
         (the script's own server time); HGET alone = cmdstat_hget - cmdstat_evalsha (every grab \
         runs one HGET, in grab.lua or alone for a packet the Store saw sold out); share of \
         calls = of all nodes' grabs (HGETs)"
    );
    for r in storms {
        for p in &r.problems {
            println!("{} check failed: {p}", r.backend);
        }
    }
}

/// The bench's figures as JSON.
fn to_json(storms: &[Storm], s: Settings, version: &str, cores: usize) -> Value {
    json!({
        "bench": "storm",
        "grabbers": s.grabbers,
        "tasks": s.tasks,
        "repeat_every": s.repeat_every,
        "shares_per_packet": s.shares,
        "cores": cores,
        "redis_version": version,
        "runs": storms.iter().map(|r| {
            let calls = r.calls() as f64;
            json!({
                "backend": r.backend,
                "packets": r.packets,
                "requests": r.requests,
                "seconds": r.seconds,
                "requests_per_sec": r.requests_per_sec(),
                "last_share_secs": r.last_share,
                "paths": PATHS
                    .iter()
                    .zip(r.mix)
                    .map(|((_, key), n)| (key.to_string(), json!(n)))
                    .collect::<serde_json::Map<_, _>>(),
                "masters": r.masters.iter().map(|m| json!({
                    "node": m.addr,
                    "slots": m.slots,
                    "packets": m.packets,
                    "share_of_packets": m.packets as f64 / r.packets as f64,
                    "evalsha_calls": m.evalsha_calls,
                    "hget_alone_calls": m.hget_only(),
                    "share_of_calls": if calls > 0.0 { m.calls() as f64 / calls } else { 0.0 },
                    "evalsha_usec_per_call": m.usec_per_call,
                })).collect::<Vec<_>>(),
                "problems": r.problems,
            })
        }).collect::<Vec<_>>(),
    })
}

/// Storms a standalone server, then the 3-master cluster; prints the tables, writes the JSON,
/// and fails if a check did not hold.
fn main() {
    let s = Settings::from_env();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Started::now();

    let server = RedisServer::start();
    let version = rt.block_on(async {
        let info: String = query(&mut node_conn(&server.url()).await, &["INFO", "server"]).await;
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .trim()
            .to_string()
    });
    println!(
        "storm: {} grabbers per backend ({} of a packet's grabbers ask twice), {} shares per \
         packet, {} tasks over one Store, {cores} cores, redis-server {version}",
        s.grabbers,
        match s.repeat_every {
            0 => "none".to_string(),
            n => format!("1 in {n}"),
        },
        s.shares,
        s.tasks,
    );
    let standalone = rt.block_on(storm("standalone", &[server.url()], false, 1, s));
    drop(server);
    eprintln!(
        "  standalone: {:.0} requests/s",
        standalone.requests_per_sec()
    );

    let cluster = RedisCluster::start();
    let clustered = rt.block_on(storm(
        "cluster",
        &cluster.urls(),
        true,
        s.cluster_packets,
        s,
    ));
    drop(cluster);
    eprintln!("  cluster: {:.0} requests/s", clustered.requests_per_sec());

    let storms = [standalone, clustered];
    print_tables(&storms, s);
    let path = write_json("storm", &to_json(&storms, s, &version, cores));
    println!("figures: {}", path.display());
    started.print_total();
    let failed: usize = storms.iter().map(|r| r.problems.len()).sum();
    assert_eq!(failed, 0, "{failed} checks failed (see above)");
}
