//! The nemesis: faults drawn from the run's seed, overlapping, on the proxied 3-master +
//! 3-replica cluster, until the run's deadline; then [`heal`] undoes every one of them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::ReplicatedCluster;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::Log;

/// The cluster, shared by the nemesis and the checker (its fault calls block: they run on
/// blocking threads).
pub type Cluster = Arc<Mutex<ReplicatedCluster>>;

/// Kinds of fault, as the report counts them.
pub const KINDS: &[&str] = &[
    "kill_primary_and_takeover",
    "pause_node",
    "client_kill",
    "script_flush",
    "delay_replies",
    "drop_reply_after_run",
    "cut_connections",
    "memory_pressure",
];

/// Injects faults until `deadline`, one every 150-600 ms (each kind drawn from the seed), and
/// returns how many of each kind it injected. A killed primary's replica takes over at once and
/// the killed node is restarted as a replica 1-3 s later; a pause lasts 1.2-3 s (longer than the
/// functions' 1 s response timeout, shorter than the cluster's 5 s node timeout); delays and
/// memory pressure last 0.5-2 s.
pub async fn run(
    cluster: Cluster,
    seed: u64,
    deadline: Instant,
    log: Log,
) -> BTreeMap<String, u64> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7300);
    let mut counts: BTreeMap<String, u64> = KINDS.iter().map(|k| (k.to_string(), 0)).collect();
    let mut pending: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    // One node out at a time (killed or paused): a second before the first is back would leave
    // a master with no replica for WAIT, or a just-promoted master with no replica paused past
    // the node timeout, which are outages, not faults the system is meant to ride through. It
    // also keeps a pause's resume from waiting on the cluster while a restart holds it.
    let one_out = Arc::new(tokio::sync::Mutex::new(()));
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(rng.random_range(150..600))).await;
        let kind = KINDS[rng.random_range(0..KINDS.len())];
        let pick = rng.random_range(0..6usize);
        let span = Duration::from_millis(rng.random_range(500..2_000));
        let c = cluster.clone();
        let l = log.clone();
        let done = match kind {
            "kill_primary_and_takeover" => {
                let Ok(guard) = one_out.clone().try_lock_owned() else {
                    continue;
                };
                let back = Duration::from_millis(rng.random_range(1_000..3_000));
                pending.push(tokio::task::spawn_blocking(move || {
                    let _one_at_a_time = guard;
                    kill_and_take_over(&c, pick, back, &l);
                }));
                true
            }
            "pause_node" => {
                let hold = Duration::from_millis(rng.random_range(1_200..3_000));
                let Ok(guard) = one_out.clone().try_lock_owned() else {
                    continue;
                };
                let Some(c0) = idle(&cluster) else { continue };
                let port = c0.ports()[pick];
                if c0.is_paused(port) || !c0.is_running(port) {
                    continue;
                }
                c0.pause(port);
                drop(c0);
                l.note(format!("fault pause_node {port} for {hold:?}"));
                pending.push(tokio::spawn(async move {
                    let _one_out = guard;
                    tokio::time::sleep(hold).await;
                    let c2 = c.clone();
                    tokio::task::spawn_blocking(move || {
                        let c = c2.lock().unwrap_or_else(|e| e.into_inner());
                        if c.is_paused(port) {
                            c.resume(port);
                        }
                    })
                    .await
                    .unwrap();
                    l.note(format!("heal resume {port}"));
                }));
                true
            }
            "client_kill" | "script_flush" => {
                let Some(port) = node(&cluster, pick) else {
                    continue;
                };
                let kind = kind.to_string();
                pending.push(tokio::task::spawn_blocking(move || {
                    let c = c.lock().unwrap_or_else(|e| e.into_inner());
                    if !c.is_running(port) || c.is_paused(port) {
                        return;
                    }
                    if kind == "client_kill" {
                        c.client_kill_all(port);
                    } else {
                        c.script_flush(port);
                    }
                    l.note(format!("fault {kind} {port}"));
                }));
                true
            }
            "delay_replies" => {
                let Some(c0) = idle(&cluster) else { continue };
                let port = c0.ports()[pick];
                let proxy = c0.proxy(port);
                drop(c0);
                let by = Duration::from_millis(rng.random_range(100..1_500));
                proxy.set_reply_delay(by);
                l.note(format!("fault delay_replies {port} by {by:?} for {span:?}"));
                pending.push(tokio::spawn(async move {
                    tokio::time::sleep(span).await;
                    proxy.set_reply_delay(Duration::ZERO);
                }));
                true
            }
            "drop_reply_after_run" => {
                let Some(c0) = idle(&cluster) else { continue };
                let port = c0.ports()[pick];
                c0.proxy(port).drop_next_reply();
                l.note(format!("fault drop_reply_after_run {port}"));
                true
            }
            "cut_connections" => {
                let Some(c0) = idle(&cluster) else { continue };
                let port = c0.ports()[pick];
                c0.proxy(port).cut_all();
                l.note(format!("fault cut_connections {port}"));
                true
            }
            "memory_pressure" => {
                let Some(port) = node(&cluster, pick) else {
                    continue;
                };
                pending.push(tokio::task::spawn_blocking(move || {
                    if memory_pressure(&c, port, span) {
                        l.note(format!("fault memory_pressure {port} for {span:?}"));
                    }
                }));
                true
            }
            _ => unreachable!(),
        };
        if done {
            *counts.get_mut(kind).unwrap() += 1;
        }
    }
    for p in pending {
        if let Err(e) = p.await {
            // The harness could not carry a fault out (a takeover not seen in time): said in the
            // log; heal() still brings every node back.
            log.note(format!("nemesis: a fault failed in the harness: {e}"));
            *counts.entry("harness_failures".into()).or_default() += 1;
        }
    }
    counts
}

/// Undoes every fault: resumes paused nodes, restarts killed ones, clears every proxy's faults,
/// lifts any memory limit, and waits until the cluster is settled.
pub async fn heal(cluster: &Cluster, log: &Log) {
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || {
        let mut c = c.lock().unwrap_or_else(|e| e.into_inner());
        for port in c.ports() {
            if c.is_paused(port) {
                c.resume(port);
            }
            c.proxy(port).clear_faults();
        }
        for port in c.ports() {
            if !c.is_running(port) {
                c.restart(port);
            }
            set_maxmemory(port, 0);
        }
    })
    .await
    .unwrap();
    log.note("heal: every node running, proxies clean, no memory limit".into());
}

/// The cluster, unless a kill, takeover or restart holds it (those block for seconds; the
/// nemesis loop runs on the async runtime and must not wait): then the fault is skipped.
fn idle(cluster: &Cluster) -> Option<std::sync::MutexGuard<'_, ReplicatedCluster>> {
    match cluster.try_lock() {
        Ok(c) => Some(c),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// The real port of node `i` (0..6), unless the cluster is busy ([`idle`]).
fn node(cluster: &Cluster, i: usize) -> Option<u16> {
    idle(cluster).map(|c| c.ports()[i])
}

/// SIGKILL of a master (the `pick`th that serves slots), `CLUSTER FAILOVER TAKEOVER` by its
/// replica, and the old master restarted (a replica now) after `back`.
fn kill_and_take_over(cluster: &Cluster, pick: usize, back: Duration, log: &Log) {
    let (master, replica) = {
        let c = cluster.lock().unwrap_or_else(|e| e.into_inner());
        let topology = c.topology();
        let masters: Vec<_> = topology
            .iter()
            .filter(|n| n.master && !n.slots.is_empty())
            .collect();
        if masters.is_empty() {
            return;
        }
        let m = masters[pick % masters.len()];
        let Some(r) = topology
            .iter()
            .find(|n| n.master_id.as_deref() == Some(m.id.as_str()))
        else {
            return;
        };
        let (m, r) = (m.port, r.port);
        if c.is_paused(m) || c.is_paused(r) || !c.is_running(r) {
            return;
        }
        (m, r)
    };
    cluster
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .kill(master);
    log.note(format!("fault kill_primary {master}"));
    cluster
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .takeover(replica);
    log.note(format!("fault takeover by {replica}"));
    std::thread::sleep(back);
    cluster
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .restart(master);
    log.note(format!("heal restart {master} (a replica now)"));
}

/// `maxmemory` just above the node's use, `noeviction` (the policy the functions require),
/// for `span`: scripts' first writes are refused with OOM once the node fills (503, nothing
/// half-applied); nothing is evicted. Returns false when the node was not reachable.
fn memory_pressure(cluster: &Cluster, port: u16, span: Duration) -> bool {
    {
        let c = cluster.lock().unwrap_or_else(|e| e.into_inner());
        if !c.is_running(port) || c.is_paused(port) {
            return false;
        }
    }
    let Ok(mut conn) = direct(port) else {
        return false;
    };
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut conn)
        .unwrap_or_default();
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    if used == 0 {
        return false;
    }
    let _: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query(&mut conn);
    set_maxmemory(port, used + 64 * 1024);
    std::thread::sleep(span);
    set_maxmemory(port, 0);
    true
}

fn set_maxmemory(port: u16, bytes: u64) {
    if let Ok(mut conn) = direct(port) {
        let _: redis::RedisResult<()> = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(bytes)
            .query(&mut conn);
    }
}

/// A direct connection to a node (not through its proxy), with short timeouts.
fn direct(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let conn = client.get_connection_with_timeout(Duration::from_millis(500))?;
    conn.set_read_timeout(Some(Duration::from_millis(500)))?;
    Ok(conn)
}
