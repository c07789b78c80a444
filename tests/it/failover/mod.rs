//! Unclean failover, against real `redis-server` processes: a primary + replica
//! pair and a 3-master + 3-replica cluster. The replica is frozen (`DEBUG SLEEP`) and its
//! replication link cut (`CLIENT KILL TYPE replica` on the primary), money moves, the primary
//! is killed (SIGKILL) and the replica promoted (`REPLICAOF NO ONE` / `CLUSTER FAILOVER
//! TAKEOVER`): the writes the primary took after the cut are gone, as in a real crash.
//!
//! The scenarios: wallet deposits and claims, merchant budgets and their packets, coupon
//! payouts (a share issued as a coupon, a coupon redeemed), and a cluster's wallet master.
//!
//! With `REDIS_WAIT_REPLICAS=1` every movement answered 2xx is present afterwards, the ones
//! answered 503 are retried by the client, and money is conserved. With the setting off the
//! same scenario loses acknowledged movements, and the test shows that it sees the loss.

use std::sync::Arc;
use std::time::Duration;

use harness::{RedisServer, ReplicatedCluster};
use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::merchants;
use hongbao::packets::{self, ClaimOutcome, CreateOutcome, GrabOutcome, NewPacket};
use hongbao::store::keys::Keys;
use hongbao::wallet::{self, DepositOutcome, EntryKind};
use hongbao::{Config, Error, Store};

use crate::common::{self, create, fund};

mod draws;
mod merchant_money;

/// A money movement the functions answered 2xx.
#[derive(Debug, Clone)]
enum Movement {
    Deposit {
        user: String,
        reference: String,
    },
    Create {
        packet_id: String,
    },
    Claim {
        packet_id: String,
        user: String,
    },
    MerchantDeposit {
        reference: String,
    },
    /// A coupon packet's claim: the share issued as the user's coupon.
    CouponClaim {
        packet_id: String,
        user: String,
    },
    /// A redemption of a coupon packet's coupon, by its code.
    CouponRedeem {
        code: String,
    },
}

async fn conn_to(url: &str) -> redis::aio::MultiplexedConnection {
    let cfg =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(15)));
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap()
}

async fn info(url: &str, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query_async(&mut conn_to(url).await)
        .await
        .unwrap()
}

/// Waits until the replica at `replica_url` has everything the primary at `primary_url` wrote
/// (`master_repl_offset` = the replica's `slave_repl_offset`), so the "healthy" phase is
/// replicated whatever the setting under test.
async fn caught_up(primary_url: &str, replica_url: &str) {
    let field = |text: &str, name: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let primary = field(
            &info(primary_url, "replication").await,
            "master_repl_offset:",
        );
        let replica = field(
            &info(replica_url, "replication").await,
            "slave_repl_offset:",
        );
        if primary >= 0 && replica == primary {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "replica never caught up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long the replica is frozen: the faulty phase and the kill must fit inside (they take
/// well under a second); below the cluster's 5 s node timeout.
const FREEZE_SECS: f64 = 4.0;

/// The replica's freeze, running in the background.
struct Frozen {
    since: std::time::Instant,
    sleep: tokio::task::JoinHandle<()>,
}

impl Frozen {
    /// Called right after the primary was killed: the replica must still be frozen, or it may
    /// have fetched the writes under test and the scenario proves nothing.
    fn assert_still_frozen(&self) {
        let s = self.since.elapsed().as_secs_f64();
        assert!(
            s < FREEZE_SECS - 0.3 && !self.sleep.is_finished(),
            "the replica woke up ({s:.1} s) before the primary was killed: machine too slow for \
             this scenario"
        );
    }

    /// Waits until the replica is awake.
    async fn wake(self) {
        self.sleep.await.unwrap();
    }
}

/// Freezes the replica at `replica_url` for [`FREEZE_SECS`] (`DEBUG SLEEP`, in the
/// background) and cuts its link on the primary at `primary_url`.
async fn freeze_and_cut(replica_url: &str, primary_url: &str) -> Frozen {
    let secs = FREEZE_SECS;
    let since = std::time::Instant::now();
    let mut sleeper = conn_to(replica_url).await;
    let sleep = tokio::spawn(async move {
        let _: () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(secs)
            .query_async(&mut sleeper)
            .await
            .unwrap();
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query_async(&mut conn_to(primary_url).await)
        .await
        .unwrap();
    assert_eq!(killed, 1, "the replica link was not cut");
    Frozen { since, sleep }
}

/// The movements of `acked` that are missing from the store (after the failover).
async fn missing(store: &Store, acked: &[Movement]) -> Vec<Movement> {
    let keys = Keys::new("hb");
    let mut conn = store.conn().await.unwrap();
    let mut out = Vec::new();
    for m in acked {
        let present = match m {
            Movement::Deposit { user, reference } => {
                let w = wallet::get(store, user).await.unwrap();
                w.entries
                    .iter()
                    .any(|e| e.kind == EntryKind::Deposit && &e.reference == reference)
            }
            Movement::Create { packet_id } => {
                packets::view(store, packet_id).await.unwrap().is_some()
            }
            Movement::MerchantDeposit { reference } => {
                let m = merchants::get(store, SHOP, 0).await.unwrap();
                m.ledger.iter().any(|e| &e.reference == reference)
            }
            Movement::CouponClaim { packet_id, user } => {
                let pk = keys.packet(packet_id);
                let state: Option<String> = redis::cmd("HGET")
                    .arg(&pk.claims)
                    .arg(user)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let issued: Vec<String> = redis::cmd("HVALS")
                    .arg(&pk.coupons)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                state.is_some() && issued.iter().any(|r| r.starts_with(&format!("{user}\n")))
            }
            Movement::CouponRedeem { code } => {
                // The coupon's record (`lua/coupon_record.lua`) says `redeemed`.
                let (packet_id, share_id) = code.split_once('.').unwrap();
                let record: Option<String> = redis::cmd("HGET")
                    .arg(keys.packet(packet_id).coupons)
                    .arg(share_id)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                record.is_some_and(|r| r.split('\n').nth(4) == Some("redeemed"))
            }
            Movement::Claim { packet_id, user } => {
                let state: Option<String> = redis::cmd("HGET")
                    .arg(keys.packet(packet_id).claims)
                    .arg(user)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let w = wallet::get(store, user).await.unwrap();
                let credited = w
                    .entries
                    .iter()
                    .any(|e| e.kind == EntryKind::ClaimCredit && &e.reference == packet_id);
                state.is_some() && credited
            }
        };
        if !present {
            out.push(m.clone());
        }
    }
    out
}

fn fixed(total_cents: i64, count: u32) -> NewPacket {
    NewPacket {
        total_cents,
        count,
        mode: Mode::Fixed,
        split: LuckySplit::DoubleMean,
        expires_in_secs: 600,
        greeting: None,
        recipients: Vec::new(),
        opens_in_secs: 0,
        cover: None,
        password: None,
        draw: None,
    }
}

fn grabbed(out: GrabOutcome) {
    assert!(matches!(out, GrabOutcome::Grabbed { .. }), "{out:?}");
}

fn claimed(out: ClaimOutcome) {
    assert!(matches!(out, ClaimOutcome::Claimed { .. }), "{out:?}");
}

/// What the faulty phase answered: movements answered 2xx, and the count answered 503.
struct Faulty {
    acked: Vec<Movement>,
    refused: usize,
}

impl Faulty {
    /// Records an answer: 2xx (the movement `m` of the value is acknowledged) or 503.
    fn note<T>(&mut self, r: Result<T, Error>, m: impl FnOnce(&T) -> Movement) {
        match r {
            Ok(v) => self.acked.push(m(&v)),
            Err(Error::Unavailable(why)) => {
                assert!(why.contains("replicas"), "unexpected 503: {why}");
                self.refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A primary and its replica, synced.
async fn start_pair() -> (RedisServer, RedisServer) {
    let primary = RedisServer::start();
    let replica = RedisServer::start();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port())
        .query_async(&mut conn_to(&replica.url()).await)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !info(&replica.url(), "replication")
        .await
        .contains("master_link_status:up")
    {
        assert!(std::time::Instant::now() < deadline, "replica never synced");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (primary, replica)
}

/// A store on the standalone server at `url`, waiting for one replica when `wait`, 100 ms
/// at most (as a deployment would).
fn pair_config(url: &str, wait: bool) -> Config {
    Config {
        redis_url: url.to_string(),
        redis_cluster: false,
        redis_cluster_auto: false,
        wait_replicas: u32::from(wait),
        wait_timeout_ms: 100,
        ..Config::default()
    }
}

/// One primary + one replica; the replica is promoted with `REPLICAOF NO ONE`.
async fn primary_replica(wait: bool) {
    let (mut primary, replica) = start_pair().await;
    let cfg = |url: &str| pair_config(url, wait);
    // The healthy phase may wait longer for its acknowledgements (a busy CI machine); the
    // faulty phase uses the short timeout that a deployment would.
    let healthy = Arc::new(Store::new(Config {
        wait_timeout_ms: 5_000,
        ..cfg(&primary.url())
    }));
    let store = Arc::new(Store::new(cfg(&primary.url())));

    // Healthy: everything replicated.
    let mut acked = Vec::new();
    fund(&healthy, "alice", 1_000).await;
    let p = create(&healthy, "alice", &fixed(600, 3)).await;
    acked.push(Movement::Create {
        packet_id: p.packet_id.clone(),
    });
    for u in ["bob", "carol", "dave"] {
        grabbed(packets::grab(&healthy, &p.packet_id, u).await.unwrap());
    }
    claimed(packets::claim(&healthy, &p.packet_id, "bob").await.unwrap());
    acked.push(Movement::Claim {
        packet_id: p.packet_id.clone(),
        user: "bob".into(),
    });

    // The replica stops receiving; money keeps moving on the primary.
    caught_up(&primary.url(), &replica.url()).await;
    let sleeping = freeze_and_cut(&replica.url(), &primary.url()).await;
    let mut faulty = Faulty {
        acked: Vec::new(),
        refused: 0,
    };
    let dep = wallet::deposit(&store, "erin", 500, "d2").await;
    faulty.note(dep, |_| Movement::Deposit {
        user: "erin".into(),
        reference: "d2".into(),
    });
    let claim = packets::claim(&store, &p.packet_id, "carol").await;
    faulty.note(claim, |_| Movement::Claim {
        packet_id: p.packet_id.clone(),
        user: "carol".into(),
    });
    let created = packets::create(&store, "alice", &fixed(100, 1), Some("k2")).await;
    faulty.note(created, |c| match c {
        CreateOutcome::Created(p2) => Movement::Create {
            packet_id: p2.packet_id.clone(),
        },
        other => panic!("{other:?}"),
    });

    // Crash: the primary dies, the replica wakes up and is promoted.
    primary.stop();
    sleeping.assert_still_frozen();
    sleeping.wake().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut conn_to(&replica.url()).await)
        .await
        .unwrap();
    // The promoted replica has no replica of its own: check and retry without WAIT.
    let after_plain = Arc::new(Store::new(Config {
        wait_replicas: 0,
        ..cfg(&replica.url())
    }));

    let lost_before = missing(&after_plain, &acked).await;
    assert!(
        lost_before.is_empty(),
        "replicated movements lost: {lost_before:?}"
    );
    let lost = missing(&after_plain, &faulty.acked).await;
    if wait {
        assert_eq!(
            faulty.refused, 3,
            "every unreplicated write must be refused"
        );
        assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
        // The clients retry what was refused: each lands once.
        assert!(matches!(
            wallet::deposit(&after_plain, "erin", 500, "d2")
                .await
                .unwrap(),
            DepositOutcome::Applied { .. }
        ));
        claimed(
            packets::claim(&after_plain, &p.packet_id, "carol")
                .await
                .unwrap(),
        );
        let p2 = match packets::create(&after_plain, "alice", &fixed(100, 1), Some("k2"))
            .await
            .unwrap()
        {
            CreateOutcome::Created(p2) => p2,
            other => panic!("{other:?}"),
        };
        let users = ["alice", "bob", "carol", "dave", "erin"].map(String::from);
        common::assert_conserved(
            &after_plain,
            &users,
            &[p.packet_id.clone(), p2.packet_id],
            1_500,
        )
        .await;
    } else {
        assert_eq!(faulty.refused, 0);
        assert_eq!(
            lost.len(),
            3,
            "without WAIT the unclean failover must lose the acknowledged movements \
             (the test must be able to see the loss): {lost:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_replica_unclean_failover_with_wait() {
    primary_replica(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_replica_unclean_failover_without_wait_loses_money() {
    primary_replica(false).await;
}

/// The merchant of the merchant packet scenario.
const SHOP: &str = "shop-1042";

/// The master port serving `key`, from `CLUSTER KEYSLOT` and the harness topology.
fn master_of(cluster: &ReplicatedCluster, key: &str) -> (u16, u16) {
    cluster.master_and_replica_of(key)
}

/// 3 masters + 3 replicas: a claim's packet lives on one master, the grabber's wallet on
/// another; the wallet master's replica is frozen and cut, the wallet master killed and its
/// replica takes over.
async fn cluster_scenario(wait: bool) {
    let mut cluster = ReplicatedCluster::start();
    let keys = Keys::new("hb");
    let mut sender = String::new();
    let mut packet_master = 0;
    for i in 0.. {
        sender = format!("sender{i}");
        packet_master = master_of(&cluster, &keys.wallet(&sender).wallet).0;
        if packet_master != master_of(&cluster, &keys.reclaim_due()).0 {
            break;
        }
    }
    let mut grabbers = Vec::new();
    let mut wallet_master = 0;
    for i in 0.. {
        let u = format!("grabber{i}");
        let (m, _) = master_of(&cluster, &keys.wallet(&u).wallet);
        if m != packet_master && (grabbers.is_empty() || m == wallet_master) {
            wallet_master = m;
            grabbers.push(u);
            if grabbers.len() == 2 {
                break;
            }
        }
    }
    let (_, wallet_replica) = master_of(&cluster, &keys.wallet(&grabbers[0]).wallet);
    let cfg = |url: String, wait: bool| Config {
        redis_url: url,
        redis_cluster: true,
        wait_replicas: u32::from(wait),
        wait_timeout_ms: 100,
        response_timeout: Duration::from_millis(1000),
        ..Config::default()
    };
    let healthy = Arc::new(Store::new(Config {
        wait_timeout_ms: 5_000,
        ..cfg(cluster.url_except(wallet_master), wait)
    }));
    let store = Arc::new(Store::new(cfg(cluster.url_except(wallet_master), wait)));
    let (g1, g2) = (grabbers[0].clone(), grabbers[1].clone());

    fund(&healthy, &sender, 300).await;
    let p = create(&healthy, &sender, &fixed(300, 3)).await;
    grabbed(packets::grab(&healthy, &p.packet_id, &g1).await.unwrap());
    grabbed(packets::grab(&healthy, &p.packet_id, &g2).await.unwrap());
    claimed(packets::claim(&healthy, &p.packet_id, &g1).await.unwrap());
    let acked = vec![Movement::Claim {
        packet_id: p.packet_id.clone(),
        user: g1.clone(),
    }];

    for (m, r) in [
        (wallet_master, wallet_replica),
        master_of(&cluster, &keys.wallet(&sender).wallet),
    ] {
        caught_up(
            &format!("redis://127.0.0.1:{m}"),
            &format!("redis://127.0.0.1:{r}"),
        )
        .await;
    }
    let sleeping = freeze_and_cut(
        &format!("redis://127.0.0.1:{wallet_replica}"),
        &format!("redis://127.0.0.1:{wallet_master}"),
    )
    .await;
    let mut faulty = Faulty {
        acked: Vec::new(),
        refused: 0,
    };
    let claim = packets::claim(&store, &p.packet_id, &g2).await;
    faulty.note(claim, |_| Movement::Claim {
        packet_id: p.packet_id.clone(),
        user: g2.clone(),
    });
    let dep = wallet::deposit(&store, &g1, 50, "g1-dep").await;
    faulty.note(dep, |_| Movement::Deposit {
        user: g1.clone(),
        reference: "g1-dep".into(),
    });

    cluster.kill(wallet_master);
    sleeping.assert_still_frozen();
    sleeping.wake().await;
    cluster.takeover(wallet_replica);
    let after = Arc::new(Store::new(cfg(cluster.url_except(wallet_master), false)));
    let lost_before = missing(&after, &acked).await;
    assert!(
        lost_before.is_empty(),
        "replicated movements lost: {lost_before:?}"
    );
    let lost = missing(&after, &faulty.acked).await;
    let users = [sender.clone(), g1.clone(), g2.clone()];
    if wait {
        assert_eq!(
            faulty.refused, 2,
            "both unreplicated credits must be refused"
        );
        assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
        claimed(packets::claim(&after, &p.packet_id, &g2).await.unwrap());
        assert!(matches!(
            wallet::deposit(&after, &g1, 50, "g1-dep").await.unwrap(),
            DepositOutcome::Applied { .. }
        ));
        assert_eq!(wallet::balance(&after, &g2).await.unwrap(), 100);
        common::assert_conserved(&after, &users, std::slice::from_ref(&p.packet_id), 350).await;
    } else {
        assert_eq!(faulty.refused, 0);
        assert_eq!(lost.len(), 2, "the loss must be visible: {lost:?}");
        // The claim is done on the packet's shard but its credit vanished with the wallet's:
        // the books no longer balance.
        let t = hongbao::store::audit::totals(&after, &users, std::slice::from_ref(&p.packet_id))
            .await
            .unwrap();
        assert_ne!(t.total(), 350, "{t:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_unclean_failover_of_a_wallet_master_with_wait() {
    cluster_scenario(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_unclean_failover_without_wait_loses_money() {
    cluster_scenario(false).await;
}
