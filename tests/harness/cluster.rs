//! A 3-master Redis Cluster (no replicas) of local `redis-server` processes.

use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::engine::Engine;
use crate::server::{log_tail, sync_conn, Mode, RedisServer};

/// Number of master nodes.
const MASTERS: usize = 3;
/// How long the cluster may take to report `cluster_state:ok` after creation.
const CLUSTER_OK_TIMEOUT: Duration = Duration::from_secs(30);

/// A 3-master Redis Cluster without replicas; each node has its own temp dir
/// and free port (with a free bus port at `port + 10000`). Dropping it kills
/// all nodes.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three cluster-enabled nodes, joins them with
    /// `redis-cli --cluster create` and waits until every node reports
    /// `cluster_state:ok` with all 16384 slots assigned.
    pub fn start() -> Self {
        let nodes = (0..MASTERS)
            .map(|_| RedisServer::start_mode(Mode::ClusterNode))
            .collect();
        let cluster = RedisCluster { nodes };
        cluster.create();
        cluster.wait_until_ok();
        cluster
    }

    /// URLs of all nodes (`redis://127.0.0.1:PORT`), usable as cluster seeds.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// URL of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The nodes (all masters).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// All keys of each node, in node order (SCAN per node; for assertions).
    pub async fn keys_per_node(&self) -> Vec<Vec<String>> {
        let mut out = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            out.push(crate::scan_keys(&node.url()).await);
        }
        out
    }

    fn create(&self) {
        let addrs: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let cli = Engine::current().cli_program();
        let out = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "harness: cannot run {} --cluster create: {e}",
                    cli.to_string_lossy()
                )
            });
        if !out.status.success() {
            panic!(
                "harness: `{} --cluster create {}` failed ({})\nstdout:\n{}\nstderr:\n{}\n{}",
                cli.to_string_lossy(),
                addrs.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                self.logs(),
            );
        }
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + CLUSTER_OK_TIMEOUT;
        let mut last = String::new();
        loop {
            let mut all_ok = true;
            for node in &self.nodes {
                let info = sync_conn(node.port())
                    .and_then(|mut c| {
                        redis::cmd("CLUSTER")
                            .arg("INFO")
                            .query::<String>(&mut c)
                            .ok()
                    })
                    .unwrap_or_default();
                let ok = info.lines().any(|l| l.trim() == "cluster_state:ok")
                    && info
                        .lines()
                        .any(|l| l.trim() == "cluster_slots_assigned:16384");
                if !ok {
                    all_ok = false;
                    last = format!("node {}:\n{info}", node.port());
                    break;
                }
            }
            if all_ok {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "harness: cluster not ok after {CLUSTER_OK_TIMEOUT:?}; last CLUSTER INFO of {last}\n{}",
                    self.logs()
                );
            }
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
