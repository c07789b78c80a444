//! Faults in the middle of grab storms (issue 6): `SCRIPT FLUSH`, `CLIENT KILL TYPE normal`, a
//! Redis restart (standalone and cluster), and `CLUSTER FAILOVER` of the master holding the
//! packet on a 3-master + 3-replica cluster. Grabbers behave like clients: on a 503
//! (`Error::Unavailable`) they retry. The checks: every answer is a business outcome
//! (`Grabbed`, `AlreadyGrabbed`, `SoldOut`, `Expired`) or `Unavailable` (never `Internal`);
//! winners = shares, each share once, amounts sum to the total; every winner's claim credits
//! once; and money is conserved (`hongbao::audit::totals`).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use harness::{Backend, RedisServer, ReplicatedCluster, TestRedis};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome, Packet};
use hongbao::{Config, Error, Store};

const USERS: usize = 600;
const SPREAD_MS: u64 = 1500;

/// What the grabbers were told, for the report.
#[derive(Default, Debug)]
struct Tally {
    grabbed: u64,
    already: u64,
    sold_out: u64,
    expired: u64,
    unavailable: AtomicU64,
}

async fn grab_until_answered(
    store: &Store,
    id: &str,
    user: &str,
    unavailable: &AtomicU64,
) -> GrabOutcome {
    for _ in 0..500 {
        match packets::grab(store, id, user).await {
            Ok(outcome) => return outcome,
            Err(Error::Unavailable(_)) => {
                unavailable.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(Error::Internal(m)) => panic!("a grab answered Internal: {m}"),
        }
    }
    panic!("{user}: no answer after 500 tries");
}

/// `op` until it is not `Unavailable` (what a client does on 503), at most 500 times.
async fn retried<T, F: std::future::Future<Output = Result<T, Error>>>(
    mut op: impl FnMut() -> F,
) -> T {
    for _ in 0..500 {
        match op().await {
            Ok(v) => return v,
            Err(Error::Unavailable(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(Error::Internal(m)) => panic!("Internal error under faults: {m}"),
        }
    }
    panic!("no answer after 500 tries");
}

async fn claim_until_answered(store: &Store, id: &str, user: &str) -> ClaimOutcome {
    for _ in 0..500 {
        match packets::claim(store, id, user).await {
            Ok(outcome) => return outcome,
            Err(Error::Unavailable(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(Error::Internal(m)) => panic!("a claim answered Internal: {m}"),
        }
    }
    panic!("{user}: claim has no answer after 500 tries");
}

/// `USERS` grabbers per packet, spread over `SPREAD_MS`, while `faults` runs; then checks the
/// outcome and claims every share; returns the tally.
async fn storm<F: std::future::Future<Output = ()>>(
    store: &Arc<Store>,
    packets: &[Packet],
    faults: F,
) -> Tally {
    let unavailable = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for p in packets {
        for i in 0..USERS {
            let (store, id, unavailable) =
                (store.clone(), p.packet_id.clone(), unavailable.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(rand::random_range(0..SPREAD_MS))).await;
                let user = format!("g{i}");
                let outcome = grab_until_answered(&store, &id, &user, &unavailable).await;
                (id, user, outcome)
            }));
        }
    }
    let (results, ()) = tokio::join!(join_all(tasks), faults);
    let mut tally = Tally::default();
    let mut winners: BTreeMap<String, Vec<(String, packets::Share)>> = BTreeMap::new();
    for r in results {
        let (id, user, outcome) = r.unwrap();
        match outcome {
            GrabOutcome::Grabbed { share, .. } => {
                tally.grabbed += 1;
                winners.entry(id).or_default().push((user, share));
            }
            // The first grab ran but its reply was lost to the fault; the retry sees the share.
            GrabOutcome::AlreadyGrabbed(share) => {
                tally.already += 1;
                winners.entry(id).or_default().push((user, share));
            }
            GrabOutcome::SoldOut => tally.sold_out += 1,
            GrabOutcome::Expired => tally.expired += 1,
            other => panic!("wrong business answer under faults: {other:?}"),
        }
    }
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
        let view = retried(|| packets::view(store, &p.packet_id))
            .await
            .unwrap();
        assert_eq!(
            (view.grabs.len(), view.packet.grabbed_cents),
            (p.count as usize, p.total_cents)
        );
        for (user, share) in &won {
            match claim_until_answered(store, &p.packet_id, user).await {
                ClaimOutcome::Claimed { share: s, .. } => {
                    assert_eq!(s.amount_cents, share.amount_cents)
                }
                other => panic!("claim of {user}: {other:?}"),
            }
        }
    }
    tally
}

async fn node(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// `SCRIPT FLUSH` and `CLIENT KILL TYPE normal` on every node, alternately, every 100 ms for
/// the storm's duration. Returns how many of each were injected.
async fn flush_and_kill(urls: Vec<String>, counts: Arc<(AtomicU64, AtomicU64)>) {
    for round in 0..(SPREAD_MS / 100 + 2) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for url in &urls {
            let mut c = node(url).await;
            if round % 2 == 0 {
                let _: () = redis::cmd("SCRIPT")
                    .arg("FLUSH")
                    .query_async(&mut c)
                    .await
                    .unwrap();
                counts.0.fetch_add(1, Ordering::Relaxed);
            } else {
                let killed: i64 = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .query_async(&mut c)
                    .await
                    .unwrap();
                counts.1.fetch_add(killed as u64, Ordering::Relaxed);
            }
        }
    }
}

async fn setup(store: &Arc<Store>, n: usize) -> (Vec<Packet>, Vec<String>, i64) {
    let deposits = 100_000;
    common::fund(store, "sender", deposits).await;
    let mut packets = Vec::new();
    for k in 0..n {
        packets.push(
            common::create(
                store,
                "sender",
                &common::lucky(5_000 + k as i64 * 100, 100, 600),
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
    c.grab_rate_limit = 0;
    c.connect_timeout = Duration::from_millis(500);
    c.response_timeout = Duration::from_millis(1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn script_flush_and_client_kill_mid_storm() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, relaxed);
        let (packets, users, deposits) = setup(&store, 3).await;
        let counts = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let tally = storm(
            &store,
            &packets,
            flush_and_kill(redis.urls(), counts.clone()),
        )
        .await;
        let ids: Vec<String> = packets.iter().map(|p| p.packet_id.clone()).collect();
        common::assert_conserved(&store, &users, &ids, deposits).await;
        eprintln!(
            "FAULTS {backend}: {} SCRIPT FLUSH, {} connections killed -> grabbed {}, already_grabbed {}, sold_out {}, expired {}, 503s retried {}",
            counts.0.load(Ordering::Relaxed),
            counts.1.load(Ordering::Relaxed),
            tally.grabbed,
            tally.already,
            tally.sold_out,
            tally.expired,
            tally.unavailable.load(Ordering::Relaxed)
        );
        assert!(
            counts.1.load(Ordering::Relaxed) > 0,
            "no connection was killed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_restart_mid_storm() {
    let server = RedisServer::start_persistent();
    let cfg = Config {
        redis_url: server.url(),
        ..Config::default()
    };
    let mut cfg = cfg;
    relaxed(&mut cfg);
    let store = Arc::new(Store::new(cfg));
    let (packets, users, deposits) = setup(&store, 2).await;
    let restart = async move {
        tokio::time::sleep(Duration::from_millis(SPREAD_MS / 3)).await;
        eprintln!("restart: stopping at {:?}", std::time::SystemTime::now());
        // Stop, stay down 1.2 s (longer than a connect attempt: some grabs answer 503), start
        // again from the AOF.
        tokio::task::spawn_blocking(move || {
            let mut server = server;
            let t = std::time::Instant::now();
            server.stop();
            eprintln!("restart: stopped after {:?}", t.elapsed());
            std::thread::sleep(Duration::from_millis(1200));
            server.restart();
            eprintln!("restart: up again after {:?}", t.elapsed());
            server
        })
        .await
        .unwrap()
    };
    let server_slot = Arc::new(std::sync::Mutex::new(None));
    let slot = server_slot.clone();
    let tally = storm(&store, &packets, async move {
        *slot.lock().unwrap() = Some(restart.await);
    })
    .await;
    let ids: Vec<String> = packets.iter().map(|p| p.packet_id.clone()).collect();
    common::assert_conserved(&store, &users, &ids, deposits).await;
    eprintln!(
        "FAULTS restart: grabbed {}, already_grabbed {}, sold_out {}, expired {}, 503s retried {}",
        tally.grabbed,
        tally.already,
        tally.sold_out,
        tally.expired,
        tally.unavailable.load(Ordering::Relaxed)
    );
    drop(server_slot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_failover_mid_storm() {
    let cluster = Arc::new(ReplicatedCluster::start());
    let mut cfg = Config {
        redis_url: cluster.url(),
        redis_cluster: true,
        ..Config::default()
    };
    relaxed(&mut cfg);
    let store = Arc::new(Store::new(cfg));
    let (packets, users, deposits) = setup(&store, 1).await;
    let id = packets[0].packet_id.clone();
    let key = format!("hb:{{{}}}:packet:{id}", &id[..4]);
    let c = cluster.clone();
    let k = key.clone();
    let (master_before, replica_before) = cluster.master_and_replica_of(&key);
    let failover = async move {
        tokio::time::sleep(Duration::from_millis(SPREAD_MS / 4)).await;
        let moved = tokio::task::spawn_blocking(move || c.failover_master_of(&k))
            .await
            .unwrap();
        eprintln!("FAILOVER (old master, new master) = {moved:?}");
    };
    let tally = storm(&store, &packets, failover).await;
    let slot_master = cluster
        .topology()
        .into_iter()
        .find(|n| n.port == replica_before)
        .unwrap();
    assert!(
        slot_master.master,
        "the replica {replica_before} took over from {master_before}"
    );
    common::assert_conserved(&store, &users, &[id], deposits).await;
    eprintln!(
        "FAULTS failover: grabbed {}, already_grabbed {}, sold_out {}, expired {}, 503s retried {}",
        tally.grabbed,
        tally.already,
        tally.sold_out,
        tally.expired,
        tally.unavailable.load(Ordering::Relaxed)
    );
}
