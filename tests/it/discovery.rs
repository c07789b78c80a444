//! Cluster discovery from a node list, against real `redis-server` processes: a
//! 3-master + 3-replica cluster, `REDIS_URL` listing two masters, and the FIRST listed one
//! killed (SIGKILL) while the rest of the cluster serves.
//!
//! * A function that cold-starts then (`REDIS_CLUSTER=auto` and `true`) connects through the
//!   second node and answers.
//! * A function connected before the kill gets no reply for the dead master's slots, replaces
//!   its connection after [`REBUILD_AFTER_FAILURES`] such calls, and the new connection starts
//!   from the second node: it answers again within a bounded number of calls.
//!
//! Every [`Config`] is read through [`Config::from_lookup`] from environment-like variables, so
//! the real settings parsing runs. After the dead master's replica takes over, its wallets
//! answer too (`REDIS_WAIT_REPLICAS=1`: every deposit before the kill is on the replica).

use std::time::{Duration, Instant};

use harness::ReplicatedCluster;
use hongbao::store::keys::Keys;
use hongbao::store::REBUILD_AFTER_FAILURES;
use hongbao::wallet::{self, DepositOutcome};
use hongbao::{Config, Error, Store};

/// The cluster, the two listed masters (the first one to be killed), its replica, and a user
/// whose wallet lives on each listed master.
struct Scene {
    cluster: ReplicatedCluster,
    first: u16,
    first_replica: u16,
    second: u16,
    /// A wallet on the first listed master (unreachable until its replica takes over).
    victim: String,
    /// A wallet on the second listed master (always reachable).
    live: String,
}

impl Scene {
    fn start() -> Self {
        let cluster = ReplicatedCluster::start();
        let topo = cluster.topology();
        let masters: Vec<u16> = topo
            .iter()
            .filter(|n| n.master && !n.slots.is_empty())
            .map(|n| n.port)
            .collect();
        assert_eq!(masters.len(), 3, "{topo:#?}");
        let (first, second) = (masters[0], masters[1]);
        let keys = Keys::new("hb");
        let owner = |user: &str| cluster.master_and_replica_of(&keys.wallet(user).wallet);
        let on = |master: u16, name: &str| {
            (0..1000)
                .map(|i| format!("{name}{i}"))
                .find(|u| owner(u).0 == master)
                .expect("a user on every master")
        };
        let victim = on(first, "victim");
        let live = on(second, "live");
        let first_replica = owner(&victim).1;
        Scene {
            cluster,
            first,
            first_replica,
            second,
            victim,
            live,
        }
    }

    /// `REDIS_URL`: the first master, then the second.
    fn redis_url(&self) -> String {
        format!(
            "redis://127.0.0.1:{},redis://127.0.0.1:{}",
            self.first, self.second
        )
    }

    /// A store as a function builds it: settings from environment-like variables.
    fn store(&self, cluster: &str) -> Store {
        let vars = [
            ("REDIS_URL", self.redis_url()),
            ("REDIS_CLUSTER", cluster.to_string()),
            ("REDIS_CONNECT_TIMEOUT_MS", "500".to_string()),
            ("REDIS_RESPONSE_TIMEOUT_MS", "500".to_string()),
            ("REDIS_WAIT_REPLICAS", "1".to_string()),
            ("REDIS_WAIT_TIMEOUT_MS", "400".to_string()),
        ];
        let config = Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        })
        .expect("the settings load");
        assert_eq!(config.redis_url, self.redis_url());
        Store::new(config)
    }

    /// SIGKILLs the first listed master.
    fn kill_first(&mut self) {
        self.cluster.kill(self.first);
        eprintln!(
            "killed the first listed node 127.0.0.1:{} (its replica: {})",
            self.first, self.first_replica
        );
    }

    /// The dead master's replica takes over (`CLUSTER FAILOVER TAKEOVER`), as ElastiCache's
    /// automatic failover would.
    async fn take_over(&self) {
        let cluster = &self.cluster;
        let replica = self.first_replica;
        tokio::task::block_in_place(|| cluster.takeover(replica));
    }
}

async fn deposit(store: &Store, user: &str, cents: i64, reference: &str) -> i64 {
    match wallet::deposit(store, user, cents, reference).await {
        Ok(DepositOutcome::Applied { balance_cents }) => balance_cents,
        other => panic!("deposit {reference} for {user}: {other:?}"),
    }
}

/// Calls `balance(user)` until it answers, at most `calls` times (100 ms apart); the balance and
/// how many calls it took. Panics with every error seen when it never answers.
async fn balance_within(store: &Store, who: &str, user: &str, calls: u32) -> (i64, u32) {
    let mut errors = Vec::new();
    for call in 1..=calls {
        match wallet::balance(store, user).await {
            Ok(cents) => return (cents, call),
            Err(e) => errors.push(e.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    errors.dedup();
    panic!("{who}: no answer for {user}'s wallet in {calls} calls:\n{errors:#?}");
}

/// Reads `user`'s wallet (on the dead master) through the store's current connection until
/// [`REBUILD_AFTER_FAILURES`] calls in a row got no reply at all (what the store counts: a
/// timeout, an I/O error, no connection to the node; a `MOVED` reply from a live node resets
/// the count), so the store's next call must replace the connection. Every error seen.
async fn no_reply(store: &Store, user: &str) -> Vec<String> {
    let key = Keys::new(&store.config().key_prefix).wallet(user).wallet;
    // Held, so no call here rebuilds the connection: they all count on it.
    let mut conn = store.conn().await.expect("connected before the kill");
    let (mut in_a_row, mut seen) = (0, Vec::new());
    for _ in 0..20 {
        let reply: redis::RedisResult<Option<i64>> = redis::cmd("HGET")
            .arg(&key)
            .arg("balance")
            .query_async(&mut conn)
            .await;
        let e = match reply {
            Ok(v) => panic!("the dead master's wallet answered {v:?}"),
            Err(e) => e,
        };
        let no_reply = e.is_timeout()
            || e.is_io_error()
            || e.is_connection_dropped()
            || e.kind() == redis::ErrorKind::ClusterConnectionNotFound;
        seen.push(e.to_string());
        in_a_row = if no_reply { in_a_row + 1 } else { 0 };
        if in_a_row == REBUILD_AFTER_FAILURES {
            return seen;
        }
    }
    panic!("never {REBUILD_AFTER_FAILURES} calls in a row without a reply: {seen:#?}");
}

/// (a) Cold start with the first listed node dead: `connect_at_cold_start` succeeds in both
/// modes, and a deposit and a read answer at once; after the takeover the dead master's wallets
/// answer too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_start_with_the_first_listed_node_dead() {
    let mut scene = Scene::start();
    let before = scene.store("auto");
    before
        .connect_at_cold_start()
        .await
        .expect("healthy cluster");
    deposit(&before, &scene.victim, 700, "victim-before").await;
    deposit(&before, &scene.live, 500, "live-before").await;
    drop(before);

    scene.kill_first();
    let mut live = 500;
    for mode in ["auto", "true"] {
        let cold = scene.store(mode);
        let t = Instant::now();
        cold.connect_at_cold_start()
            .await
            .unwrap_or_else(|e| panic!("REDIS_CLUSTER={mode}: cold start failed: {e}"));
        eprintln!("REDIS_CLUSTER={mode}: cold start in {:?}", t.elapsed());
        assert!(cold.conn().await.unwrap().is_cluster(), "{mode}");
        assert_eq!(
            balance_within(&cold, mode, &scene.live, 1).await,
            (live, 1),
            "{mode}"
        );
        live += 1;
        let balance = deposit(&cold, &scene.live, 1, &format!("live-cold-{mode}")).await;
        assert_eq!(balance, live, "{mode}");
    }

    scene.take_over().await;
    let cold = scene.store("auto");
    cold.connect_at_cold_start().await.expect("after takeover");
    assert_eq!(
        balance_within(&cold, "after takeover", &scene.victim, 50)
            .await
            .0,
        700
    );
    assert_eq!(
        balance_within(&cold, "after takeover", &scene.live, 1).await,
        (502, 1)
    );
}

/// (b) A store connected before the kill, whose first listed node is the killed one: its calls
/// to the dead master's slots get no reply, after [`REBUILD_AFTER_FAILURES`] of them the
/// connection is rebuilt through `connect()`, which must start from the second node, so a call
/// to a live master answers on the next call; after the takeover, every wallet answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_store_rebuilds_past_the_first_listed_node_dead() {
    let mut scene = Scene::start();
    let warm = [("auto", scene.store("auto")), ("true", scene.store("true"))];
    for (mode, store) in &warm {
        store
            .connect_at_cold_start()
            .await
            .expect("healthy cluster");
        assert!(store.conn().await.unwrap().is_cluster(), "{mode}");
    }
    deposit(&warm[0].1, &scene.victim, 700, "victim-before").await;
    deposit(&warm[1].1, &scene.live, 500, "live-before").await;

    scene.kill_first();
    // No reply from the dead master's slots, REBUILD_AFTER_FAILURES times in a row (both stores
    // at once: this must be over long before the cluster would fail over by itself, 5 s).
    let t = Instant::now();
    let (auto, true_) = tokio::join!(
        no_reply(&warm[0].1, &scene.victim),
        no_reply(&warm[1].1, &scene.victim)
    );
    eprintln!(
        "no reply {REBUILD_AFTER_FAILURES} times in a row, in {:?}; auto: {auto:?}; true: {true_:?}",
        t.elapsed()
    );

    // The next call rebuilds the connection; it must answer within a few calls.
    for (mode, store) in &warm {
        let (cents, calls) = balance_within(store, mode, &scene.live, 5).await;
        eprintln!("REDIS_CLUSTER={mode}: the live master's wallet answered on call {calls}");
        assert_eq!(cents, 500, "{mode}");
        assert!(store.conn().await.unwrap().is_cluster(), "{mode}");
    }
    let balance = deposit(&warm[0].1, &scene.live, 1, "live-after").await;
    assert_eq!(balance, 501);

    scene.take_over().await;
    for (mode, store) in &warm {
        let (cents, calls) = balance_within(store, mode, &scene.victim, 50).await;
        eprintln!("REDIS_CLUSTER={mode}: after the takeover, the victim's wallet answered on call {calls}");
        assert_eq!(cents, 700, "{mode}");
    }
}

/// Every listed node dead: a cold start is [`Error::Unavailable`] naming each node, and a
/// request would answer 503 (as for one dead node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listed_node_dead_names_each() {
    let ports = [
        harness::ports::free_port(false),
        harness::ports::free_port(false),
    ];
    let url = format!(
        "redis://127.0.0.1:{},redis://127.0.0.1:{}",
        ports[0], ports[1]
    );
    for mode in ["auto", "true"] {
        let vars = [("REDIS_URL", url.clone()), ("REDIS_CLUSTER", mode.into())];
        let config = Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        })
        .unwrap();
        let store = Store::new(config);
        let msg = match store.connect_at_cold_start().await {
            Err(Error::Unavailable(msg)) => msg,
            other => panic!("{mode}: {other:?}"),
        };
        eprintln!("{mode}: {msg}");
        for port in ports {
            assert!(
                msg.contains(&format!("redis://127.0.0.1:{port}")),
                "{mode}: {msg}"
            );
        }
        let label = if mode == "auto" {
            "(auto)"
        } else {
            "(cluster)"
        };
        assert!(msg.contains(label), "{msg}");
    }
}
