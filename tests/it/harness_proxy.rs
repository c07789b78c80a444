//! Smoke tests of the harness's fault injection: the [`FaultProxy`] in front of one server,
//! and the 3-master + 3-replica cluster behind one proxy per node
//! ([`ReplicatedCluster::start_proxied`]), reached by a cluster client seeded with the
//! proxies' URLs only.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use harness::{FaultProxy, RedisServer, ReplicatedCluster};
use hongbao::store::journal::hash_slot;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, RedisResult};

/// Per-request timeout of the test clients: short, so that a request into a paused node
/// fails fast.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client may take to work again after a fault heals.
const RECOVERY: Duration = Duration::from_secs(60);

async fn proxied_client(cluster: &ReplicatedCluster) -> ClusterConnection {
    let urls = cluster.proxied_urls();
    redis::cluster::ClusterClient::builder(urls.clone())
        .response_timeout(CLIENT_TIMEOUT)
        .build()
        .unwrap_or_else(|e| panic!("bad urls {urls:?}: {e}"))
        .get_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot connect through {urls:?}: {e}"))
}

async fn direct(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {port}: {e}"))
}

/// Retries `op` until it succeeds, for at most [`RECOVERY`].
async fn eventually<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = RedisResult<T>>,
{
    let deadline = Instant::now() + RECOVERY;
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("{what}: {e}, retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{what} still fails after {RECOVERY:?}: {e}"),
        }
    }
}

/// The length of a command's RESP encoding.
fn resp_len(args: &[&str]) -> u64 {
    let mut n = format!("*{}\r\n", args.len()).len();
    for a in args {
        n += format!("${}\r\n{a}\r\n", a.len()).len();
    }
    n as u64
}

/// The real port of the master serving `slot`.
fn master_of_slot(cluster: &ReplicatedCluster, slot: u16) -> u16 {
    cluster
        .topology()
        .into_iter()
        .find(|n| n.master && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
        .map(|n| n.port)
        .unwrap_or_else(|| panic!("no master serves slot {slot}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_slot_goes_through_the_proxies() {
    let cluster = ReplicatedCluster::start_proxied();
    let proxy_ports: Vec<u16> = cluster
        .ports()
        .iter()
        .map(|&p| cluster.proxy_port(p))
        .collect();
    let mut conn = proxied_client(&cluster).await;

    // What clients are told: proxy ports only. A range is [start, end, master, replicas...],
    // a node [ip, port, id, metadata...].
    let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!ranges.is_empty());
    for range in ranges {
        let (start, end): (u16, u16) = (
            redis::from_redis_value_ref(&range[0]).unwrap(),
            redis::from_redis_value_ref(&range[1]).unwrap(),
        );
        // A replica is listed only once the node asked knows a replication offset for it.
        assert!(range.len() >= 3, "a master serves {start}-{end}");
        for node in &range[2..] {
            let node: Vec<redis::Value> = redis::from_redis_value_ref(node).unwrap();
            let port: u16 = redis::from_redis_value_ref(&node[1]).unwrap();
            assert!(
                proxy_ports.contains(&port),
                "slots {start}-{end} name port {port}, not a proxy's ({proxy_ports:?})"
            );
        }
    }

    // One key per slot, each SET and read back through the cluster client.
    let mut keys: BTreeMap<u16, String> = BTreeMap::new();
    for i in 0u64.. {
        let key = format!("slot-probe-{i}");
        keys.entry(hash_slot(&key)).or_insert(key);
        if keys.len() == 16_384 {
            break;
        }
    }
    let before: BTreeMap<u16, u64> = cluster
        .ports()
        .into_iter()
        .map(|p| (p, cluster.proxy(p).stats().bytes_to_server))
        .collect();
    futures::stream::iter(keys.values())
        .map(|key| {
            let mut conn = conn.clone();
            async move {
                let _: () = conn.set(key, key).await.unwrap();
                let got: String = conn.get(key).await.unwrap();
                assert_eq!(&got, key);
            }
        })
        .buffer_unordered(128)
        .collect::<Vec<()>>()
        .await;

    // Every command went through the proxy of the master that serves its key.
    let mut expected: BTreeMap<u16, u64> = BTreeMap::new();
    let topology = cluster.topology();
    for (slot, key) in &keys {
        let master = topology
            .iter()
            .find(|n| n.master && n.slots.iter().any(|(a, b)| (*a..=*b).contains(slot)))
            .expect("a master serves the slot")
            .port;
        *expected.entry(master).or_default() +=
            resp_len(&["SET", key, key]) + resp_len(&["GET", key]);
    }
    assert_eq!(expected.len(), 3, "three masters serve the slots");
    let mut stored = 0;
    for (master, bytes) in &expected {
        let stats = cluster.proxy(*master).stats();
        eprintln!("master {master}: {stats:?}");
        assert!(stats.connections_accepted >= 1);
        assert!(stats.bytes_to_client > 0);
        assert!(
            stats.bytes_to_server - before[master] >= *bytes,
            "master {master}'s proxy forwarded {} bytes, the commands take {bytes}",
            stats.bytes_to_server - before[master]
        );
        let n: u64 = redis::cmd("DBSIZE")
            .query_async(&mut direct(*master).await)
            .await
            .unwrap();
        stored += n;
    }
    assert_eq!(stored, 16_384, "one key per slot on the masters");
    for port in cluster.ports() {
        let stats = cluster.proxy(port).stats();
        assert_eq!(stats.replies_dropped + stats.connections_cut, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_reply_after_the_command_ran() {
    let cluster = ReplicatedCluster::start_proxied();
    let mut conn = proxied_client(&cluster).await;
    let key = "dropped-reply-counter";
    let (master, _) = cluster.master_and_replica_of(key);
    let control = cluster.proxy(master);
    // The client's connection to the master exists before the fault is armed.
    let none: Option<i64> = conn.get(key).await.unwrap();
    assert_eq!(none, None);

    control.drop_next_reply();
    let seen: RedisResult<i64> = redis::cmd("INCR").arg(key).query_async(&mut conn).await;
    let ran: i64 = direct(master).await.get(key).await.unwrap();
    eprintln!(
        "INCR with its reply dropped: the client saw {seen:?}; the server's counter is {ran}; \
         proxy {:?}",
        control.stats()
    );
    assert_eq!(control.drops_done(), 1);
    assert_eq!(control.pending_drops(), 0);
    assert!(ran >= 1, "the INCR ran although its reply was lost");
    match &seen {
        // The client retried on a new connection: it saw the last INCR's reply.
        Ok(n) => assert_eq!(*n, ran),
        // The client gave up: exactly one INCR ran.
        Err(_) => assert_eq!(ran, 1),
    }

    // The client keeps working on a new connection through the same proxy.
    let next: i64 = conn.incr(key, 1).await.unwrap();
    assert_eq!(next, ran + 1);
    assert_eq!(control.drops_done(), 1);

    // Server-side faults on the same node: its client connections (the proxy's) closed, its
    // script cache emptied; replication and the client recover.
    let killed = cluster.client_kill_all(master);
    assert!(
        killed >= 1,
        "the proxy's connection to {master} was a client"
    );
    cluster.script_flush(master);
    let script = redis::Script::new("return redis.call('INCR', KEYS[1])");
    let after: i64 = eventually("EVALSHA after CLIENT KILL and SCRIPT FLUSH", || {
        let (mut conn, script) = (conn.clone(), script.clone());
        async move { script.key(key).invoke_async(&mut conn).await }
    })
    .await;
    assert!(after > next, "{after} after {next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_takeover_restart_behind_proxies() {
    let mut cluster = ReplicatedCluster::start_proxied();
    let mut conn = proxied_client(&cluster).await;
    let key = "takeover-key";
    let _: () = conn.set(key, "before").await.unwrap();
    let (master, replica) = cluster.master_and_replica_of(key);

    cluster.kill(master);
    cluster.takeover(replica);
    let _: () = eventually("SET after takeover", || {
        let mut conn = conn.clone();
        async move { conn.set(key, "after").await }
    })
    .await;
    assert_eq!(
        master_of_slot(&cluster, hash_slot(key)),
        replica,
        "the replica serves the slot"
    );

    let t = Instant::now();
    cluster.restart(master);
    eprintln!("restart of {master} took {:?}", t.elapsed());
    let topology = cluster.topology();
    let new_master = topology.iter().find(|n| n.port == replica).unwrap();
    let old_master = topology.iter().find(|n| n.port == master).unwrap();
    assert!(new_master.master);
    assert!(!old_master.master, "{topology:#?}");
    assert_eq!(
        old_master.master_id.as_deref(),
        Some(new_master.id.as_str())
    );

    // The old client and a new one both work through the proxies, on every master.
    let got: String = eventually("GET after restart", || {
        let mut conn = conn.clone();
        async move { conn.get(key).await }
    })
    .await;
    assert_eq!(got, "after");
    let mut fresh = proxied_client(&cluster).await;
    for i in 0..64 {
        let k = format!("after-restart-{i}");
        let _: () = fresh.set(&k, i).await.unwrap();
        let n: i64 = conn.get(&k).await.unwrap();
        assert_eq!(n, i);
    }
    let replica_proxy = cluster.proxy(replica).stats();
    eprintln!("new master's proxy: {replica_proxy:?}");
    assert!(replica_proxy.bytes_to_server > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_a_master() {
    let cluster = ReplicatedCluster::start_proxied();
    let mut conn = proxied_client(&cluster).await;
    let key = "paused-key";
    let _: () = conn.set(key, "v").await.unwrap();
    let (master, _) = cluster.master_and_replica_of(key);

    cluster.pause(master);
    assert!(cluster.is_paused(master));
    let t = Instant::now();
    let during = tokio::time::timeout(Duration::from_secs(3), async {
        let got: RedisResult<String> = conn.clone().get(key).await;
        got
    })
    .await;
    eprintln!(
        "GET from a paused master: {during:?} after {:?}",
        t.elapsed()
    );
    assert!(
        !matches!(during, Ok(Ok(_))),
        "a paused master must not answer"
    );
    // Resumed before cluster-node-timeout (5 s): no failover needed.
    cluster.resume(master);
    assert!(!cluster.is_paused(master));

    let got: String = eventually("GET after resume", || {
        let mut conn = conn.clone();
        async move { conn.get(key).await }
    })
    .await;
    assert_eq!(got, "v");
    let pong: String = redis::cmd("PING")
        .query_async(&mut direct(master).await)
        .await
        .unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_faults_on_one_server() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port());
    let control = proxy.control();
    assert_eq!(control.target_port(), server.port());
    let client = redis::Client::open(proxy.url()).unwrap();
    // Far above the faults' durations (the default, 500 ms, is not).
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let _: () = conn.set("k", 1).await.unwrap();

    // Reply delay: each reply is held, in order.
    control.set_reply_delay(Duration::from_millis(300));
    let t = Instant::now();
    let (mut first, mut second) = (conn.clone(), conn.clone());
    let (a, b): (i64, i64) = tokio::try_join!(first.incr("k", 1), second.incr("k", 1)).unwrap();
    let held = t.elapsed();
    assert!(held >= Duration::from_millis(300), "{held:?}");
    assert!(held < Duration::from_millis(1_500), "{held:?}");
    assert_eq!(a.min(b), 2);
    assert_eq!(a.max(b), 3);
    control.set_reply_delay(Duration::ZERO);
    assert!(control.stats().delayed_chunks >= 1);

    // Blackhole: nothing passes, then everything does.
    control.set_blackhole(true);
    let pending = tokio::spawn({
        let mut conn = conn.clone();
        async move { conn.incr::<_, _, i64>("k", 1).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!pending.is_finished(), "held while blackholed");
    let direct_value: i64 = direct(server.port()).await.get("k").await.unwrap();
    assert_eq!(direct_value, 3, "the request is held, not forwarded");
    control.set_blackhole(false);
    assert_eq!(pending.await.unwrap().unwrap(), 4);
    assert_eq!(control.stats().blackholes, 1);

    // Cut: the open connection is closed (by the proxy's thread, right after the call); a new
    // one works.
    control.cut_all();
    let deadline = Instant::now() + Duration::from_secs(5);
    while control.stats().connections_open > 0 {
        assert!(Instant::now() < deadline, "{:?}", control.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after_cut: RedisResult<i64> = conn.incr("k", 1).await;
    eprintln!("INCR after cut_all: {after_cut:?}");
    assert!(after_cut.is_err());
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let n: i64 = conn.get("k").await.unwrap();
    assert_eq!(n, 4, "the cut connection forwarded nothing more");
    let stats = control.stats();
    assert_eq!(stats.cuts, 1);
    assert!(stats.connections_cut >= 1, "{stats:?}");

    // Dropped reply: the plain multiplexed connection does not retry, so it sees an error,
    // and the INCR ran once.
    control.drop_next_reply();
    let seen: RedisResult<i64> = conn.incr("k", 1).await;
    eprintln!("INCR with its reply dropped: {seen:?}");
    assert!(seen.is_err());
    let after: i64 = direct(server.port()).await.get("k").await.unwrap();
    assert_eq!(after, n + 1);
    assert_eq!(control.drops_done(), 1);

    let stats = control.stats();
    eprintln!("{stats:?}");
    assert!(stats.connections_accepted >= 2);
    assert!(stats.bytes_to_server > 0 && stats.bytes_to_client > 0);
    drop(proxy);
    assert_eq!(control.stats().connections_open, 0);
}
