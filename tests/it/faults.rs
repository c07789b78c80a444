//! Faults in the middle of grab storms: `SCRIPT FLUSH` + `CLIENT KILL TYPE normal`
//! (standalone and 3-master cluster), a restart of a standalone Redis with an AOF, and `CLUSTER
//! FAILOVER` of the master holding the packet on a 3-master + 3-replica cluster.
//!
//! **Timing.** Each fault hits while shares are still being handed out. Per packet, `SCHEDULED`
//! grabbers (fewer than the shares, so the packet cannot sell out before the fault has ended)
//! arrive on a schedule; the fault starts once every packet has a winner; the other `USERS -
//! SCHEDULED` grabbers arrive in one burst when the fault has ended. Every share carries the
//! moment Redis handed it out (`grabbed_at_ms`, Redis `TIME`, the same clock as the test's), and
//! every grabber the moment its first grab call went out, so each test counts the shares handed
//! out before, during and after its fault, and those won by grabs in flight during it (first
//! call before the fault ended, share after it began), and asserts them.
//!
//! Grabbers behave like clients: on a 503 (`Error::Unavailable`) they retry. Every storm checks:
//! every grabber gets an answer within 30 s, and it is `Grabbed`, `SoldOut` or `AlreadyGrabbed`
//! (only after a 503 of that grabber: the reply to its first grab was lost); never `Expired`
//! (the packets expire in 600 s) nor `Internal`; winners = shares, each share once, amounts sum
//! to the total; every winner's claim credits once; money is conserved
//! (`hongbao::store::audit::totals`). Per fault, beyond shares handed out before and after it:
//!
//! * `SCRIPT FLUSH` / `CLIENT KILL` (12 rounds, 100 ms apart): shares are handed out between the
//!   first and the last injection; at least one connection is killed; and the flushes force
//!   reloads: the grab script is loaded on every node before the storm, so every `EVAL` (`INFO
//!   commandstats`) and `NOSCRIPT` (`INFO errorstats`) during the fault is a reload after a
//!   flush, and there is at least one of each.
//! * Restart (stop, 1.2 s down, start from the AOF): at least one grab is answered 503, and at
//!   least one grab that met the outage (a 503, first call before the restart ended) wins a
//!   share after it.
//! * Failover: at least one grab in flight during it (first call before the cluster was ok
//!   again, share after `CLUSTER FAILOVER` was sent) wins a share, shares are handed out after
//!   it by the new master, and the replica is now the slot's master. Shares stamped strictly
//!   inside the window are counted, not required: a coordinated failover pauses writes on the
//!   old master until the replica has taken over, and here it is over in milliseconds.
//!
//! The first two share one `Store` among all grabbers, with their calls concurrent: a harder
//! test of one connection than production. The failover storm runs as deployed: grabbers spread
//! over `SANDBOXES` Lambda sandboxes, each its own `Store` serving one call at a time. (With
//! redis 1.8.1, one cluster connection hit by a burst of about 80 or more concurrent calls right
//! after a failover stops answering for good; a sandbox never sends more than one at a time.)
//!
//! No cluster node is restarted: the harness's cluster nodes have no persistence, so the
//! packet's node would come back empty (losing a node's data is the `failover` suite's subject),
//! and any other node takes no part in the storm.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::future::join_all;
use harness::{Backend, RedisServer, ReplicatedCluster, TestRedis};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome, Packet, Share};
use hongbao::{Config, Error, Store};

use crate::common;

/// Shares per packet.
const SHARES: u32 = 100;
/// Grabbers per packet.
const USERS: usize = 200;
/// Grabbers per packet that arrive on the schedule; the rest arrive when the fault has ended.
/// Fewer than `SHARES`: every one of them wins, and shares are left after the fault.
const SCHEDULED: usize = 90;
/// How long a grab, a view or a claim retries 503s before the test fails: far longer than any
/// fault here lasts.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// Lambda sandboxes of the failover storm.
const SANDBOXES: usize = 10;

/// When the scheduled grabbers of each packet arrive: `wave` of them every `gap`.
#[derive(Clone, Copy)]
struct Schedule {
    wave: usize,
    gap: Duration,
}

/// 5 grabbers per packet every 100 ms: the 90 arrive over 1.8 s.
const WAVES: Schedule = Schedule {
    wave: 5,
    gap: Duration::from_millis(100),
};

/// Unix milliseconds, the clock Redis `TIME` (and thus `grabbed_at_ms`) reads.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Where the grabbers' calls go: one `Store` taking every call at once, or Lambda sandboxes,
/// each a `Store` that serves one call at a time.
struct Clients {
    stores: Vec<Arc<Store>>,
    /// One turn per sandbox; `None` for the shared store.
    turns: Option<Vec<tokio::sync::Mutex<()>>>,
}

impl Clients {
    fn shared(store: Arc<Store>) -> Self {
        Clients {
            stores: vec![store],
            turns: None,
        }
    }

    fn sandboxes(cfg: &Config, n: usize) -> Self {
        Clients {
            stores: (0..n).map(|_| Arc::new(Store::new(cfg.clone()))).collect(),
            turns: Some((0..n).map(|_| tokio::sync::Mutex::new(())).collect()),
        }
    }

    /// The store for setup, views, claims and audits.
    fn store(&self) -> &Store {
        &self.stores[0]
    }

    /// One grab call of grabber number `n`, in its sandbox's turn; `issued` is called with the
    /// moment the call goes out.
    async fn grab(
        &self,
        n: usize,
        id: &str,
        user: &str,
        issued: impl FnOnce(i64),
    ) -> Result<GrabOutcome, Error> {
        let k = n % self.stores.len();
        let _turn = match &self.turns {
            Some(turns) => Some(turns[k].lock().await),
            None => None,
        };
        issued(now_ms());
        packets::grab(&self.stores[k], id, user).await
    }
}

/// When the fault was active, Unix ms: after `begin_ms` it had begun, before `end_ms` it had
/// not ended.
#[derive(Debug, Clone, Copy)]
struct Window {
    begin_ms: i64,
    end_ms: i64,
}

/// Shares handed out so far, per packet (in `packets` order); the fault waits on it.
struct Progress(Vec<AtomicU64>);

impl Progress {
    /// Waits until every packet has handed out at least one share.
    async fn every_packet_has_a_winner(&self) {
        let t = Instant::now();
        while self.0.iter().any(|n| n.load(Ordering::Relaxed) == 0) {
            assert!(t.elapsed() < ANSWER_WITHIN, "no share handed out");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// What the grabbers were told.
#[derive(Default, Debug)]
struct Tally {
    grabbed: u64,
    already: u64,
    sold_out: u64,
    /// 503s answered (and retried), over all grabbers.
    unavailable: u64,
}

/// Shares by when Redis handed them out, relative to the fault [`Window`] (a share at the very
/// millisecond of an edge counts in none).
#[derive(Default, Debug)]
struct Phases {
    before: u64,
    during: u64,
    after: u64,
    /// Winners whose first grab call went out before the fault ended and whose share was handed
    /// out after it began: their grab was in flight during the fault.
    in_flight: u64,
    /// Winners that were answered 503 at least once before their share.
    won_after_503: u64,
}

struct Outcome {
    tally: Tally,
    phases: Phases,
    window: Window,
}

/// What one grabber was told: the answer, how many 503s came first, and when (Unix ms) its
/// first grab call went out.
struct Answer {
    outcome: GrabOutcome,
    unavailable: u64,
    first_call_ms: i64,
}

/// Grab calls until the answer is not `Unavailable` (what a client does on 503), for at most
/// `ANSWER_WITHIN`; the answer, or why there is none.
async fn grab_until_answered(
    clients: &Clients,
    n: usize,
    id: &str,
    user: &str,
) -> Result<Answer, String> {
    let started = Instant::now();
    let mut unavailable = 0;
    let mut first_call_ms = None;
    loop {
        let issued = |ms| {
            first_call_ms.get_or_insert(ms);
        };
        match clients.grab(n, id, user, issued).await {
            Ok(outcome) => {
                return Ok(Answer {
                    outcome,
                    unavailable,
                    first_call_ms: first_call_ms.unwrap(),
                })
            }
            Err(Error::Unavailable(m)) => {
                unavailable += 1;
                if started.elapsed() > ANSWER_WITHIN {
                    return Err(format!(
                        "{user}: no answer within {ANSWER_WITHIN:?} ({unavailable} 503s, the last: {m})"
                    ));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(Error::Internal(m)) => panic!("a grab answered Internal: {m}"),
        }
    }
}

/// `op` until it is not `Unavailable` (what a client does on 503), for at most `ANSWER_WITHIN`.
async fn retried<T, F: std::future::Future<Output = Result<T, Error>>>(
    what: &str,
    mut op: impl FnMut() -> F,
) -> T {
    let started = Instant::now();
    loop {
        match op().await {
            Ok(v) => return v,
            Err(Error::Unavailable(m)) => {
                assert!(
                    started.elapsed() < ANSWER_WITHIN,
                    "{what}: no answer within {ANSWER_WITHIN:?} (the last 503: {m})"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(Error::Internal(m)) => panic!("{what} answered Internal: {m}"),
        }
    }
}

/// `USERS` grabbers per packet while `fault` runs: `SCHEDULED` of them on `schedule` from the
/// start, the rest in one burst once the fault has ended (see the module doc). `fault` gets the
/// progress (to start once shares are being handed out) and returns when it was active. Then
/// checks the outcome, claims every share and returns the tally and the shares per phase.
async fn storm<F, Fut>(
    clients: &Arc<Clients>,
    packets: &[Packet],
    schedule: Schedule,
    fault: F,
) -> Outcome
where
    F: FnOnce(Arc<Progress>) -> Fut,
    Fut: std::future::Future<Output = Window>,
{
    let progress = Arc::new(Progress(
        packets.iter().map(|_| AtomicU64::new(0)).collect(),
    ));
    let (ended_tx, ended_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for (k, p) in packets.iter().enumerate() {
        for i in 0..USERS {
            let (clients, id, progress) = (clients.clone(), p.packet_id.clone(), progress.clone());
            let mut ended = ended_rx.clone();
            tasks.push(tokio::spawn(async move {
                let fault_ended = async move {
                    // An error means the sender is gone, i.e. the storm is over: go ahead.
                    let _ = ended.wait_for(|&e| e).await;
                };
                if i < SCHEDULED {
                    let at = schedule.gap * (i / schedule.wave) as u32;
                    tokio::select! {
                        () = tokio::time::sleep(at) => {}
                        () = fault_ended => {}
                    }
                } else {
                    fault_ended.await;
                }
                let user = format!("g{i}");
                let answer = grab_until_answered(&clients, k * USERS + i, &id, &user).await;
                if let Ok(Answer {
                    outcome: GrabOutcome::Grabbed { .. } | GrabOutcome::AlreadyGrabbed(_),
                    ..
                }) = answer
                {
                    progress.0[k].fetch_add(1, Ordering::Relaxed);
                }
                (id, user, answer)
            }));
        }
    }
    let fault = async {
        let window = fault(progress.clone()).await;
        ended_tx.send_replace(true);
        window
    };
    let (results, window) = tokio::join!(join_all(tasks), fault);
    assert!(
        window.begin_ms <= window.end_ms,
        "fault window {window:?} is backwards"
    );
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    let (tally, phases, winners) = tally_answers(results, window);
    assert_eq!(
        (tally.grabbed + tally.already + tally.sold_out) as usize,
        USERS * packets.len(),
        "every grabber has one answer"
    );
    every_share_won_once_and_claimed(clients.store(), packets, &winners).await;
    Outcome {
        tally,
        phases,
        window,
    }
}

/// Each packet's winners: (user, share).
type Winners = BTreeMap<String, Vec<(String, Share)>>;

/// Every grabber was answered; the answers counted, and the shares placed before, during or
/// after the fault `window`. Returns the tally, the phases and each packet's winners.
fn tally_answers(
    results: Vec<(String, String, Result<Answer, String>)>,
    window: Window,
) -> (Tally, Phases, Winners) {
    let unanswered: Vec<&String> = results
        .iter()
        .filter_map(|(_, _, answer)| answer.as_ref().err())
        .collect();
    assert!(
        unanswered.is_empty(),
        "{} of {} grabbers got no answer (fault window {window:?}); the first: {}",
        unanswered.len(),
        results.len(),
        unanswered[0]
    );
    let mut tally = Tally::default();
    let mut phases = Phases::default();
    let mut winners = Winners::new();
    for (id, user, answer) in results {
        let Answer {
            outcome,
            unavailable,
            first_call_ms,
        } = answer.unwrap();
        tally.unavailable += unavailable;
        let share = match outcome {
            GrabOutcome::Grabbed { share, .. } => {
                tally.grabbed += 1;
                share
            }
            // The first grab ran but its reply was lost to the fault; the retry sees the share.
            // Each grabber grabs once, so this can only follow a 503.
            GrabOutcome::AlreadyGrabbed(share) => {
                assert!(
                    unavailable > 0,
                    "{user} was told AlreadyGrabbed without a 503 before: {share:?}"
                );
                tally.already += 1;
                share
            }
            GrabOutcome::SoldOut => {
                tally.sold_out += 1;
                continue;
            }
            GrabOutcome::Expired => {
                panic!("{user}: spurious Expired on packet {id}, which expires in 600 s")
            }
            other => panic!("wrong business answer under faults: {other:?}"),
        };
        if unavailable > 0 {
            phases.won_after_503 += 1;
        }
        if first_call_ms < window.end_ms && share.grabbed_at_ms > window.begin_ms {
            phases.in_flight += 1;
        }
        // The window's end is read once the fault is over, and the burst of grabbers released
        // then can win shares within that same millisecond (Redis `TIME` is stamped in whole
        // ms): a share stamped at `end_ms` was handed out once the fault was over, so after it.
        if share.grabbed_at_ms < window.begin_ms {
            phases.before += 1;
        } else if share.grabbed_at_ms >= window.end_ms {
            phases.after += 1;
        } else if share.grabbed_at_ms > window.begin_ms {
            phases.during += 1;
        }
        winners.entry(id).or_default().push((user, share));
    }
    (tally, phases, winners)
}

/// Each packet's shares went to exactly its `count` winners, once each, adding up to its
/// total, as its view says; every winner claims their share.
async fn every_share_won_once_and_claimed(store: &Store, packets: &[Packet], winners: &Winners) {
    for p in packets {
        let won = winners.get(&p.packet_id).cloned().unwrap_or_default();
        let ids: HashSet<u32> = won.iter().map(|(_, s)| s.share_id).collect();
        assert_eq!(
            won.len(),
            p.count as usize,
            "winners != shares for {}",
            p.packet_id
        );
        assert_eq!(ids, (1..=p.count).collect(), "a share given twice or lost");
        assert_eq!(
            won.iter().map(|(_, s)| s.amount_cents).sum::<i64>(),
            p.total_cents
        );
        let view = retried("view", || packets::view(store, &p.packet_id))
            .await
            .unwrap();
        assert_eq!(
            (view.grabs.len(), view.packet.grabbed_cents),
            (p.count as usize, p.total_cents)
        );
        for (user, share) in &won {
            match retried(user, || packets::claim(store, &p.packet_id, user)).await {
                ClaimOutcome::Claimed { share: s, .. } => {
                    assert_eq!(s.amount_cents, share.amount_cents)
                }
                other => panic!("claim of {user}: {other:?}"),
            }
        }
    }
}

/// Prints the outcome (`extra` first) and asserts that shares were handed out before the fault
/// and after it, i.e. that the fault hit mid-storm.
fn report_and_check_mid_storm(name: &str, o: &Outcome, extra: &str) {
    eprintln!(
        "FAULTS {name}: {extra}fault active {} ms -> grabbed {}, already_grabbed {}, sold_out {}, \
         503s retried {}; shares handed out before/during/after the fault {}/{}/{}, to grabs in \
         flight during it {}, won after a 503 {}",
        o.window.end_ms - o.window.begin_ms,
        o.tally.grabbed,
        o.tally.already,
        o.tally.sold_out,
        o.tally.unavailable,
        o.phases.before,
        o.phases.during,
        o.phases.after,
        o.phases.in_flight,
        o.phases.won_after_503
    );
    assert!(
        o.phases.before > 0,
        "{name}: no share handed out before the fault ({:?})",
        o.phases
    );
    assert!(
        o.phases.after > 0,
        "{name}: no share handed out after the fault ({:?})",
        o.phases
    );
}

async fn node(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// (`EVAL` calls, `NOSCRIPT` errors) summed over the nodes at `urls`.
async fn script_stats(urls: &[String]) -> (u64, u64) {
    let (mut evals, mut noscripts) = (0, 0);
    for url in urls {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .arg("errorstats")
            .query_async(&mut node(url).await)
            .await
            .unwrap();
        for line in info.lines() {
            if let Some(rest) = line.strip_prefix("cmdstat_eval:calls=") {
                evals += rest.split(',').next().unwrap().parse::<u64>().unwrap();
            }
            if let Some(rest) = line.strip_prefix("errorstat_NOSCRIPT:count=") {
                noscripts += rest.trim().parse::<u64>().unwrap();
            }
        }
    }
    (evals, noscripts)
}

/// What [`flush_and_kill`] did.
#[derive(Default)]
struct Injected {
    flushes: AtomicU64,
    killed: AtomicU64,
    /// `EVAL` calls from before the first round to after the last, summed over the nodes.
    evals: AtomicU64,
    /// `NOSCRIPT` errors, likewise.
    noscripts: AtomicU64,
}

/// Once every packet has a winner: `SCRIPT FLUSH` (even rounds) and `CLIENT KILL TYPE normal`
/// (odd rounds) on every node, 12 rounds 100 ms apart. The window runs from after the first
/// flush to before the last kill.
async fn flush_and_kill(urls: Vec<String>, progress: Arc<Progress>, did: Arc<Injected>) -> Window {
    const ROUNDS: u32 = 12;
    progress.every_packet_has_a_winner().await;
    let (evals_before, noscripts_before) = script_stats(&urls).await;
    let (mut begin_ms, mut end_ms) = (0, 0);
    for round in 0..ROUNDS {
        if round > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if round == ROUNDS - 1 {
            end_ms = now_ms();
        }
        for url in &urls {
            let mut c = node(url).await;
            if round % 2 == 0 {
                let _: () = redis::cmd("SCRIPT")
                    .arg("FLUSH")
                    .query_async(&mut c)
                    .await
                    .unwrap();
                did.flushes.fetch_add(1, Ordering::Relaxed);
            } else {
                let killed: u64 = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .query_async(&mut c)
                    .await
                    .unwrap();
                did.killed.fetch_add(killed, Ordering::Relaxed);
            }
        }
        if round == 0 {
            // `grabbed_at_ms` is whole milliseconds: a share stamped later than this was
            // handed out after the flush.
            begin_ms = now_ms() + 1;
        }
    }
    let (evals_after, noscripts_after) = script_stats(&urls).await;
    did.evals
        .store(evals_after - evals_before, Ordering::Relaxed);
    did.noscripts
        .store(noscripts_after - noscripts_before, Ordering::Relaxed);
    Window { begin_ms, end_ms }
}

async fn setup(store: &Store, n: usize) -> (Vec<Packet>, Vec<String>, i64) {
    let deposits = 100_000;
    common::fund(store, "sender", deposits).await;
    let mut packets = Vec::new();
    for k in 0..n {
        packets.push(
            common::create(
                store,
                "sender",
                &common::lucky(5_000 + k as i64 * 100, SHARES, 600),
            )
            .await,
        );
    }
    let users: Vec<String> = std::iter::once("sender".to_string())
        .chain((0..USERS).map(|i| format!("g{i}")))
        .collect();
    (packets, users, deposits)
}

fn relaxed(c: &mut Config) {
    c.packets.grab_rate_limit = 0;
    c.connect_timeout = Duration::from_millis(500);
    c.response_timeout = Duration::from_millis(1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn script_flush_and_client_kill_mid_storm() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let clients = Arc::new(Clients::shared(common::store(&redis, relaxed)));
        let (packets, users, deposits) = setup(clients.store(), 3).await;
        // The grab script is cached on every node before the storm: from here on, an `EVAL`
        // only follows a `NOSCRIPT`, and a `NOSCRIPT` only a `SCRIPT FLUSH`.
        for url in redis.urls() {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(hongbao::store::scripts::GRAB.source())
                .query_async(&mut node(&url).await)
                .await
                .unwrap();
            assert_eq!(sha, hongbao::store::scripts::GRAB.get_hash());
        }
        let did = Arc::new(Injected::default());
        let (urls, d) = (redis.urls(), did.clone());
        let outcome = storm(&clients, &packets, WAVES, move |progress| {
            flush_and_kill(urls, progress, d)
        })
        .await;
        let ids: Vec<String> = packets.iter().map(|p| p.packet_id.clone()).collect();
        common::assert_conserved(clients.store(), &users, &ids, deposits).await;
        let [flushes, killed, evals, noscripts] =
            [&did.flushes, &did.killed, &did.evals, &did.noscripts]
                .map(|n| n.load(Ordering::Relaxed));
        report_and_check_mid_storm(
            &backend.to_string(),
            &outcome,
            &format!(
                "{flushes} SCRIPT FLUSH, {killed} connections killed, {evals} EVAL, \
                 {noscripts} NOSCRIPT; "
            ),
        );
        assert!(
            outcome.phases.during > 0,
            "{backend}: no share handed out between the first and the last injection ({:?})",
            outcome.phases
        );
        assert!(flushes > 0, "no SCRIPT FLUSH");
        assert!(killed > 0, "no connection was killed");
        assert!(
            evals > 0 && noscripts > 0,
            "{backend}: SCRIPT FLUSH caused no reload ({evals} EVAL, {noscripts} NOSCRIPT)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_restart_mid_storm() {
    let server = RedisServer::start_persistent();
    let mut cfg = Config {
        redis_url: server.url(),
        ..Config::default()
    };
    relaxed(&mut cfg);
    let clients = Arc::new(Clients::shared(Arc::new(Store::new(cfg))));
    let (packets, users, deposits) = setup(clients.store(), 2).await;
    let server_slot = Arc::new(std::sync::Mutex::new(None));
    let slot = server_slot.clone();
    // Once shares are being handed out: stop, stay down 1.2 s (longer than a connect attempt:
    // grabs answer 503), start again from the AOF.
    let outcome = storm(&clients, &packets, WAVES, move |progress| async move {
        progress.every_packet_has_a_winner().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (server, window) = tokio::task::spawn_blocking(move || {
            let mut server = server;
            let begin_ms = now_ms();
            server.stop();
            std::thread::sleep(Duration::from_millis(1200));
            server.restart();
            (
                server,
                Window {
                    begin_ms,
                    end_ms: now_ms(),
                },
            )
        })
        .await
        .unwrap();
        *slot.lock().unwrap() = Some(server);
        window
    })
    .await;
    let ids: Vec<String> = packets.iter().map(|p| p.packet_id.clone()).collect();
    common::assert_conserved(clients.store(), &users, &ids, deposits).await;
    report_and_check_mid_storm("restart", &outcome, "");
    assert!(
        outcome.tally.unavailable > 0,
        "no grab was answered 503 across the restart"
    );
    assert!(
        outcome.phases.won_after_503 > 0 && outcome.phases.in_flight > 0,
        "no grab that met the outage won a share after the restart ({:?})",
        outcome.phases
    );
    drop(server_slot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_failover_mid_storm() {
    failover_storm(false).await;
}

/// The same storm through ONE store taking every call at once (a bench, a long-running server,
/// reclaim's concurrent settlements). redis-rs 1.8's cluster connection can stop answering for
/// good after a failover under such a burst; the store replaces a connection whose calls got no
/// reply [`hongbao::store::REBUILD_AFTER_FAILURES`] times in a row, so every grabber is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_failover_mid_storm_one_shared_connection() {
    failover_storm(true).await;
}

async fn failover_storm(shared: bool) {
    let cluster = Arc::new(ReplicatedCluster::start());
    let mut cfg = Config {
        redis_url: cluster.url(),
        redis_cluster: true,
        ..Config::default()
    };
    relaxed(&mut cfg);
    let clients = Arc::new(if shared {
        Clients::shared(Arc::new(Store::new(cfg.clone())))
    } else {
        Clients::sandboxes(&cfg, SANDBOXES)
    });
    let (packets, users, deposits) = setup(clients.store(), 1).await;
    let id = packets[0].packet_id.clone();
    let key = format!("hb:{{{}}}:packet:{id}", &id[..4]);
    let c = cluster.clone();
    let k = key.clone();
    let (master_before, replica_before) = cluster.master_and_replica_of(&key);
    // On an idle machine a failover is over in 7 to 30 ms: one grabber every millisecond (the 90
    // arrive over 90 ms) keeps grabs in flight while it runs; it starts 30 ms into the storm.
    let steady = Schedule {
        wave: 1,
        gap: Duration::from_millis(1),
    };
    let outcome = storm(&clients, &packets, steady, move |progress| async move {
        progress.every_packet_has_a_winner().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        tokio::task::spawn_blocking(move || {
            let begin_ms = now_ms();
            let moved = c.failover_master_of(&k);
            let end_ms = now_ms();
            eprintln!("FAILOVER (old master, new master) = {moved:?}");
            Window { begin_ms, end_ms }
        })
        .await
        .unwrap()
    })
    .await;
    let slot_master = cluster
        .topology()
        .into_iter()
        .find(|n| n.port == replica_before)
        .unwrap();
    assert!(
        slot_master.master,
        "the replica {replica_before} took over from {master_before}"
    );
    common::assert_conserved(clients.store(), &users, &[id], deposits).await;
    report_and_check_mid_storm("failover", &outcome, "");
    assert!(
        outcome.phases.in_flight > 0,
        "no grab in flight during the failover won a share ({:?})",
        outcome.phases
    );
}
