//! A 3-master + 3-replica Redis Cluster of local `redis-server` processes, with a helper to
//! fail over (`CLUSTER FAILOVER` on the replica) the master that holds a key's slot.

use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::engine::Engine;
use crate::server::{log_tail, sync_conn, Mode, RedisServer};

/// How long the cluster may take to be ok (and a failover to finish).
const OK_TIMEOUT: Duration = Duration::from_secs(60);

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node id.
    pub id: String,
    /// Client port.
    pub port: u16,
    /// True for a master.
    pub master: bool,
    /// The master's id, for a replica.
    pub master_id: Option<String>,
    /// Slot ranges served (masters).
    pub slots: Vec<(u16, u16)>,
}

/// Three masters with one replica each. Dropping it kills all nodes.
pub struct ReplicatedCluster {
    nodes: Vec<RedisServer>,
}

impl ReplicatedCluster {
    /// Starts six nodes, `redis-cli --cluster create ... --cluster-replicas 1`, and waits until
    /// every node reports `cluster_state:ok` and every replica's link to its master is up.
    pub fn start() -> Self {
        let nodes: Vec<RedisServer> = (0..6)
            .map(|_| RedisServer::start_mode(Mode::ClusterNode))
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let cli = Engine::current().cli_program();
        let out = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "harness: cannot run {} --cluster create: {e}",
                    cli.to_string_lossy()
                )
            });
        let cluster = ReplicatedCluster { nodes };
        assert!(
            out.status.success(),
            "harness: cluster create failed:\n{}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            cluster.logs()
        );
        cluster.wait_until_ok();
        cluster
    }

    /// URL of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// URLs of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// URLs of the current masters (for whole-database commands such as `FLUSHALL` and
    /// `SCAN`, which replicas refuse or would answer twice).
    pub fn master_urls(&self) -> Vec<String> {
        self.topology()
            .into_iter()
            .filter(|n| n.master)
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect()
    }

    /// `CLUSTER NODES` as seen by the first reachable node.
    pub fn topology(&self) -> Vec<NodeInfo> {
        for n in &self.nodes {
            let Some(mut c) = sync_conn(n.port()) else {
                continue;
            };
            let Ok(text) = redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c) else {
                continue;
            };
            return text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let port = f[1]
                        .split('@')
                        .next()
                        .unwrap()
                        .rsplit(':')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let master = f[2].contains("master");
                    let slots = f[8..]
                        .iter()
                        .filter(|s| !s.starts_with('['))
                        .map(|s| match s.split_once('-') {
                            Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                            None => (s.parse().unwrap(), s.parse().unwrap()),
                        })
                        .collect();
                    NodeInfo {
                        id: f[0].to_string(),
                        port,
                        master,
                        master_id: (f[3] != "-").then(|| f[3].to_string()),
                        slots,
                    }
                })
                .collect();
        }
        panic!("harness: no cluster node answers CLUSTER NODES");
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`).
    pub fn slot(&self, key: &str) -> u16 {
        let mut c = sync_conn(self.nodes[0].port()).expect("node 0");
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut c)
            .expect("KEYSLOT")
    }

    /// (master port, replica port) for `key`'s slot.
    pub fn master_and_replica_of(&self, key: &str) -> (u16, u16) {
        let slot = self.slot(key);
        let topo = self.topology();
        let master = topo
            .iter()
            .find(|n| n.master && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .expect("a master serves the slot");
        let replica = topo
            .iter()
            .find(|n| n.master_id.as_deref() == Some(master.id.as_str()))
            .unwrap_or_else(|| panic!("the master {} has no replica in {topo:#?}", master.port));
        (master.port, replica.port)
    }

    /// Runs `CLUSTER FAILOVER` on the replica of the master holding `key`'s slot (a
    /// coordinated manual failover) and waits until the replica is master and the cluster is
    /// ok. Returns (old master port, new master port).
    pub fn failover_master_of(&self, key: &str) -> (u16, u16) {
        let (master, replica) = self.master_and_replica_of(key);
        let deadline = Instant::now() + OK_TIMEOUT;
        let mut asked = Instant::now() - Duration::from_secs(60);
        loop {
            // A manual failover times out after 5 s if the master has not yet learned of its
            // replica (just after a previous failover): ask again.
            if asked.elapsed() > Duration::from_secs(6) {
                let mut c = sync_conn(replica).expect("replica reachable");
                let _: () = redis::cmd("CLUSTER")
                    .arg("FAILOVER")
                    .query(&mut c)
                    .expect("CLUSTER FAILOVER");
                asked = Instant::now();
            }
            let role: Vec<redis::Value> = sync_conn(replica)
                .and_then(|mut c| redis::cmd("ROLE").query(&mut c).ok())
                .unwrap_or_default();
            if matches!(role.first(), Some(redis::Value::BulkString(b)) if b == b"master") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "harness: failover to {replica} did not finish\n{}",
                self.logs()
            );
            sleep(Duration::from_millis(20));
        }
        self.wait_until_ok();
        (master, replica)
    }

    /// Kills the node on `port` (SIGKILL: no shutdown, no last replication flush), as a crashed
    /// primary.
    pub fn kill(&mut self, port: u16) {
        self.nodes
            .iter_mut()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("harness: no node on port {port}"))
            .stop();
    }

    /// `CLUSTER FAILOVER TAKEOVER` on the replica on `port` (its master is gone: no agreement,
    /// no catch-up), then waits until it is a master that serves slots, as every other live
    /// node sees it. This is an unclean failover: writes its master acknowledged but never
    /// sent are lost.
    pub fn takeover(&self, port: u16) {
        let deadline = Instant::now() + OK_TIMEOUT;
        let mut c = sync_conn(port).expect("replica reachable");
        let _: () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .arg("TAKEOVER")
            .query(&mut c)
            .expect("CLUSTER FAILOVER TAKEOVER");
        loop {
            let seen_by_all = self.nodes.iter().filter(|n| n.is_running()).all(|n| {
                let Some(mut c) = sync_conn(n.port()) else {
                    return false;
                };
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(&mut c)
                    .unwrap_or_default();
                nodes.lines().any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 8
                        && f[1].starts_with(&format!("127.0.0.1:{port}@"))
                        && f[2].contains("master")
                })
            });
            if seen_by_all {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "harness: takeover by {port} not seen by every node\n{}",
                self.logs()
            );
            sleep(Duration::from_millis(50));
        }
    }

    /// The URL of a running node other than `port` (a seed for a new client).
    pub fn url_except(&self, port: u16) -> String {
        self.nodes
            .iter()
            .find(|n| n.is_running() && n.port() != port)
            .map(RedisServer::url)
            .expect("a running node")
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + OK_TIMEOUT;
        loop {
            let ok = self.nodes.iter().all(|n| {
                let Some(mut c) = sync_conn(n.port()) else {
                    return false;
                };
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut c)
                    .unwrap_or_default();
                let repl: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut c)
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains("cluster_slots_assigned:16384")
                    && info.contains("cluster_known_nodes:6")
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"))
            });
            let masters = ok && {
                let topo = self.topology();
                let masters: Vec<&NodeInfo> = topo
                    .iter()
                    .filter(|n| n.master && !n.slots.is_empty())
                    .collect();
                masters.len() == 3
                    && masters.iter().all(|m| {
                        topo.iter()
                            .any(|r| r.master_id.as_deref() == Some(m.id.as_str()))
                    })
            };
            if masters {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "harness: 3+3 cluster not ok\n{}",
                self.logs()
            );
            sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("=== node {} ===\n{}", n.port(), log_tail(n.dir())))
            .collect()
    }
}
