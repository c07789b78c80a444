//! A 3-master + 3-replica Redis Cluster of local `redis-server` processes, with a helper to
//! fail over (`CLUSTER FAILOVER` on the replica) the master that holds a key's slot, and node
//! faults (kill, pause, restart) for fault tests.
//!
//! [`ReplicatedCluster::start_proxied`] puts a [`FaultProxy`] in front of every node and makes
//! every node announce its proxy's port (`cluster-announce-port`), so that cluster clients,
//! which connect to the addresses of `CLUSTER SLOTS`, `CLUSTER SHARDS` and `MOVED` replies, go
//! through the proxies, while the cluster bus stays direct (`cluster-announce-bus-port` is the
//! node's real bus port). Replicas replicate from their master's announced port, so
//! replication links run through the proxies too; the proxies leave them untouched by faults
//! (see [`crate::proxy`]). Every method takes and returns nodes by their real port.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::engine::Engine;
use crate::ports::CLUSTER_BUS_OFFSET;
use crate::proxy::{FaultProxy, ProxyControl};
use crate::server::{log_tail, sync_conn, Mode, RedisServer};

/// How long the cluster may take to be ok (and a failover to finish).
const OK_TIMEOUT: Duration = Duration::from_secs(60);

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node id.
    pub id: String,
    /// Client port: the node's real port, also when it announces its proxy's.
    pub port: u16,
    /// True for a master.
    pub master: bool,
    /// The master's id, for a replica.
    pub master_id: Option<String>,
    /// Slot ranges served (masters).
    pub slots: Vec<(u16, u16)>,
}

/// Three masters with one replica each, optionally behind one [`FaultProxy`] per node.
/// Dropping it kills all nodes (paused ones included) and stops the proxies.
pub struct ReplicatedCluster {
    nodes: Vec<RedisServer>,
    /// `proxies[i]` forwards to `nodes[i]` ([`start_proxied`](Self::start_proxied)); empty for
    /// a cluster started with [`start`](Self::start).
    proxies: Vec<FaultProxy>,
    /// Real ports of the nodes stopped with `SIGSTOP` ([`pause`](Self::pause)) and not resumed.
    paused: Mutex<BTreeSet<u16>>,
}

/// One line of `CLUSTER NODES`, as shown (ports as announced).
struct NodeLine {
    id: String,
    /// Announced client port.
    port: u16,
    /// Announced cluster bus port.
    cport: u16,
    flags: String,
    master_id: Option<String>,
    /// `connected` or `disconnected`.
    link: String,
    slots: Vec<(u16, u16)>,
}

impl NodeLine {
    /// Parses the text of `CLUSTER NODES`.
    fn parse_all(text: &str) -> Vec<NodeLine> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // `ip:port@cport` or, with a hostname, `ip:port@cport,hostname`.
                let (addr, bus) = f[1].split_once('@').unwrap_or((f[1], "0"));
                let port = addr.rsplit(':').next().unwrap_or("0").parse().unwrap_or(0);
                let cport = bus.split(',').next().unwrap_or("0").parse().unwrap_or(0);
                let slots = f[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .map(|s| match s.split_once('-') {
                        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                        None => (s.parse().unwrap(), s.parse().unwrap()),
                    })
                    .collect();
                NodeLine {
                    id: f[0].to_string(),
                    port,
                    cport,
                    flags: f[2].to_string(),
                    master_id: (f[3] != "-").then(|| f[3].to_string()),
                    link: f[7].to_string(),
                    slots,
                }
            })
            .collect()
    }

    fn master(&self) -> bool {
        self.flags.split(',').any(|f| f == "master")
    }

    /// Flagged failing, failed, or not yet (or no longer) a full member.
    fn troubled(&self) -> bool {
        self.flags
            .split(',')
            .any(|f| matches!(f, "fail?" | "fail" | "handshake" | "noaddr"))
    }
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
        let cluster = ReplicatedCluster {
            nodes,
            proxies: Vec::new(),
            paused: Mutex::new(BTreeSet::new()),
        };
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

    /// Starts the cluster as [`start`](Self::start) does, then a [`FaultProxy`] per node, and
    /// makes every node announce its proxy's port to clients (`CONFIG SET
    /// cluster-announce-bus-port <real port + 10000>`, then `CONFIG SET cluster-announce-port
    /// <proxy port>`; a [`restart`](Self::restart)ed node gets both on its command line). Waits
    /// until every node's `CLUSTER NODES` and `CLUSTER SLOTS` show proxy ports only, with the
    /// real bus ports, and the cluster is ok. Give clients [`proxied_urls`](Self::proxied_urls).
    pub fn start_proxied() -> Self {
        let mut cluster = Self::start();
        cluster.proxies = cluster
            .nodes
            .iter()
            .map(|n| FaultProxy::start(n.port()))
            .collect();
        for (node, proxy) in cluster.nodes.iter_mut().zip(&cluster.proxies) {
            let (real, bus, announced) =
                (node.port(), node.port() + CLUSTER_BUS_OFFSET, proxy.port());
            // The bus port first: it is what other nodes connect to, and it must stay the
            // real one whatever the client port announced.
            node.set_extra_args(vec![
                "--cluster-announce-bus-port".into(),
                bus.to_string(),
                "--cluster-announce-port".into(),
                announced.to_string(),
            ]);
            let mut c = sync_conn(real)
                .unwrap_or_else(|| panic!("harness: node {real} unreachable to announce"));
            for (name, value) in [
                ("cluster-announce-bus-port", bus),
                ("cluster-announce-port", announced),
            ] {
                let _: () = redis::cmd("CONFIG")
                    .arg("SET")
                    .arg(name)
                    .arg(value)
                    .query(&mut c)
                    .unwrap_or_else(|e| panic!("harness: CONFIG SET {name} on {real}: {e}"));
            }
        }
        cluster.wait_until_settled();
        cluster
    }

    /// True for a cluster started with [`start_proxied`](Self::start_proxied).
    pub fn is_proxied(&self) -> bool {
        !self.proxies.is_empty()
    }

    /// The real client ports of all six nodes (running or not), in start order.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(RedisServer::port).collect()
    }

    /// The fault control of the proxy in front of the node on (real) `port`. Panics if the
    /// cluster is not proxied.
    pub fn proxy(&self, port: u16) -> ProxyControl {
        self.proxy_at(self.index(port)).control()
    }

    /// The port of the proxy in front of the node on (real) `port`: the port the node
    /// announces. Panics if the cluster is not proxied.
    pub fn proxy_port(&self, port: u16) -> u16 {
        self.proxy_at(self.index(port)).port()
    }

    /// The real port of the node behind the proxy on `proxy_port`. Panics if no proxy of this
    /// cluster listens there.
    pub fn real_port(&self, proxy_port: u16) -> u16 {
        self.proxies
            .iter()
            .find(|p| p.port() == proxy_port)
            .map(FaultProxy::target_port)
            .unwrap_or_else(|| panic!("harness: no proxy of this cluster on port {proxy_port}"))
    }

    /// `redis://127.0.0.1:<proxy port>` for every node: the seeds to give a cluster client, so
    /// that every connection it makes goes through a proxy. Panics if the cluster is not
    /// proxied.
    pub fn proxied_urls(&self) -> Vec<String> {
        assert!(self.is_proxied(), "harness: the cluster is not proxied");
        self.proxies.iter().map(FaultProxy::url).collect()
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

    /// `CLUSTER NODES` as seen by the first reachable node (paused nodes are skipped), with
    /// real ports.
    pub fn topology(&self) -> Vec<NodeInfo> {
        for n in self.live_nodes() {
            let Some(text) = cluster_nodes(n.port()) else {
                continue;
            };
            return NodeLine::parse_all(&text)
                .into_iter()
                .map(|l| NodeInfo {
                    port: self.shown_to_real(l.port),
                    master: l.master(),
                    id: l.id,
                    master_id: l.master_id,
                    slots: l.slots,
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
        let i = self.index(port);
        self.nodes[i].stop();
        self.paused_set().remove(&port);
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
            let seen_by_all = self.live_nodes().all(|n| {
                let Some(text) = cluster_nodes(n.port()) else {
                    return false;
                };
                NodeLine::parse_all(&text).iter().any(|l| {
                    self.shown_to_real(l.port) == port && l.master() && !l.slots.is_empty()
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

    /// The URL of a running, unpaused node other than `port` (a direct seed for a new client).
    pub fn url_except(&self, port: u16) -> String {
        self.live_nodes()
            .find(|n| n.port() != port)
            .map(RedisServer::url)
            .expect("a running node")
    }

    /// Whether the node on `port` runs (it may be paused): not [`kill`](Self::kill)ed, or
    /// [`restart`](Self::restart)ed since.
    pub fn is_running(&self, port: u16) -> bool {
        self.nodes[self.index(port)].is_running()
    }

    /// Whether the node on `port` is [`pause`](Self::pause)d.
    pub fn is_paused(&self, port: u16) -> bool {
        self.paused_set().contains(&port)
    }

    /// Freezes the node on `port` with `SIGSTOP`: its sockets stay open (connections are
    /// still accepted by the kernel) but it answers nothing, sends no cluster heartbeats, and
    /// after `cluster-node-timeout` (5 s) the others mark it failing, and fail a master over.
    /// Panics if the node is not running.
    pub fn pause(&self, port: u16) {
        self.signal(port, libc::SIGSTOP);
        self.paused_set().insert(port);
    }

    /// Lets the node on `port` run again (`SIGCONT`) after [`pause`](Self::pause).
    pub fn resume(&self, port: u16) {
        self.signal(port, libc::SIGCONT);
        self.paused_set().remove(&port);
    }

    /// Starts the node on `port` again, after [`kill`](Self::kill) (a running or paused node is
    /// killed first), from its own directory and `nodes.conf`, on the same port and with the
    /// same command line (a proxied node announces its proxy's port from the start). It
    /// rejoins the cluster with its old node id, as a replica of whoever took over its slots
    /// meanwhile. Waits until every live node sees the same topology, with no node failing, the
    /// cluster is ok, every replica's replication link (the restarted node's included) is up,
    /// and, for a proxied cluster, every node shows proxy ports only.
    pub fn restart(&mut self, port: u16) {
        let i = self.index(port);
        self.paused_set().remove(&port);
        self.nodes[i].restart();
        self.wait_until_settled();
    }

    /// `CLIENT KILL TYPE normal` on the node on `port`, through a direct connection (which the
    /// command skips): closes every client connection, the proxy's included (the proxy then
    /// closes the client's side too); replication links are kept. Returns how many it closed.
    pub fn client_kill_all(&self, port: u16) -> u64 {
        let mut c = sync_conn(port).unwrap_or_else(|| panic!("harness: node {port} unreachable"));
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .query(&mut c)
            .unwrap_or_else(|e| panic!("harness: CLIENT KILL on {port}: {e}"))
    }

    /// `SCRIPT FLUSH` on the node on `port` (as after a restart: the next `EVALSHA` of every
    /// script fails with `NOSCRIPT`).
    pub fn script_flush(&self, port: u16) {
        let mut c = sync_conn(port).unwrap_or_else(|| panic!("harness: node {port} unreachable"));
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut c)
            .unwrap_or_else(|e| panic!("harness: SCRIPT FLUSH on {port}: {e}"));
    }

    fn index(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port() == port)
            .unwrap_or_else(|| panic!("harness: no node on port {port}"))
    }

    fn proxy_at(&self, i: usize) -> &FaultProxy {
        self.proxies
            .get(i)
            .expect("harness: the cluster is not proxied (use ReplicatedCluster::start_proxied)")
    }

    fn paused_set(&self) -> MutexGuard<'_, BTreeSet<u16>> {
        self.paused.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Running nodes that are not paused: the ones that can answer.
    fn live_nodes(&self) -> impl Iterator<Item = &RedisServer> {
        let paused = self.paused_set().clone();
        self.nodes
            .iter()
            .filter(move |n| n.is_running() && !paused.contains(&n.port()))
    }

    /// The real port of a port that `CLUSTER NODES` shows: a proxy's port maps to its node's;
    /// any other port is already real.
    fn shown_to_real(&self, shown: u16) -> u16 {
        self.proxies
            .iter()
            .find(|p| p.port() == shown)
            .map_or(shown, FaultProxy::target_port)
    }

    fn signal(&self, port: u16, signal: libc::c_int) {
        let pid = self.nodes[self.index(port)]
            .pid()
            .unwrap_or_else(|| panic!("harness: node {port} is not running"));
        let pid = libc::pid_t::try_from(pid).expect("pid fits pid_t");
        // SAFETY: `kill` only sends a signal; `pid` is our own child's, which `RedisServer`
        // has not reaped (it runs), so the pid cannot have been reused by another process.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(
            rc,
            0,
            "harness: signal {signal} to node {port} (pid {pid}) failed: {}",
            std::io::Error::last_os_error()
        );
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + OK_TIMEOUT;
        loop {
            if self.ok_now() {
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

    /// Every live node: cluster ok with all slots and six known nodes, and a replica's link to
    /// its master up; the topology has three masters with slots, each with a replica.
    fn ok_now(&self) -> bool {
        let ok = self.live_nodes().all(|n| {
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
        ok && {
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
        }
    }

    /// Waits until [`settled`](Self::settled) holds.
    fn wait_until_settled(&self) {
        let deadline = Instant::now() + OK_TIMEOUT;
        loop {
            let why = match self.settled() {
                Ok(()) => return,
                Err(why) => why,
            };
            assert!(
                Instant::now() < deadline,
                "harness: cluster not settled: {why}\n{}",
                self.logs()
            );
            sleep(Duration::from_millis(50));
        }
    }

    /// [`ok_now`](Self::ok_now), and every live node's `CLUSTER NODES` agrees on the live
    /// nodes (roles, masters, slots) and shows none of them failing or disconnected; for a
    /// proxied cluster, every node's `CLUSTER NODES` and `CLUSTER SLOTS` show proxy ports only
    /// and real bus ports. Errs with what does not hold yet.
    fn settled(&self) -> Result<(), String> {
        if !self.ok_now() {
            return Err("cluster not ok".into());
        }
        let live: BTreeSet<u16> = self.live_nodes().map(RedisServer::port).collect();
        let proxy_ports: BTreeSet<u16> = self.proxies.iter().map(FaultProxy::port).collect();
        let mut first_view: Option<(u16, Vec<String>)> = None;
        for &port in &live {
            let text = cluster_nodes(port).ok_or(format!("{port}: no CLUSTER NODES"))?;
            let lines = NodeLine::parse_all(&text);
            let mut view = Vec::new();
            for l in &lines {
                let real = self.shown_to_real(l.port);
                if self.is_proxied() {
                    if !proxy_ports.contains(&l.port) {
                        return Err(format!("{port} shows {} at port {}", l.id, l.port));
                    }
                    if l.cport != real + CLUSTER_BUS_OFFSET {
                        return Err(format!("{port} shows {} at bus port {}", l.id, l.cport));
                    }
                }
                if !live.contains(&real) {
                    continue;
                }
                if l.troubled() || l.link != "connected" {
                    return Err(format!("{port} shows {real} as {} {}", l.flags, l.link));
                }
                view.push(format!(
                    "{} {real} {} {:?} {:?}",
                    l.id,
                    l.master(),
                    l.master_id,
                    l.slots
                ));
            }
            view.sort();
            match &first_view {
                None => first_view = Some((port, view)),
                Some((other, first)) if *first != view => {
                    return Err(format!("{port} sees {view:?} but {other} sees {first:?}"));
                }
                Some(_) => {}
            }
            if self.is_proxied() {
                let slots = cluster_slot_ports(port).ok_or(format!("{port}: no CLUSTER SLOTS"))?;
                if let Some(p) = slots.iter().find(|p| !proxy_ports.contains(p)) {
                    return Err(format!("{port}: CLUSTER SLOTS shows port {p}"));
                }
            }
        }
        Ok(())
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let _ = writeln!(out, "=== node {} ===\n{}", n.port(), log_tail(n.dir()));
            if let Some(p) = self.proxies.get(i) {
                let _ = writeln!(out, "proxy {}: {:?}", p.port(), p.stats());
            }
        }
        out
    }
}

/// `CLUSTER NODES` of the node on `port`, or `None` if it does not answer.
fn cluster_nodes(port: u16) -> Option<String> {
    let mut c = sync_conn(port)?;
    redis::cmd("CLUSTER").arg("NODES").query(&mut c).ok()
}

/// Every node port in `CLUSTER SLOTS` of the node on `port`, or `None` if it does not answer.
fn cluster_slot_ports(port: u16) -> Option<Vec<u16>> {
    use redis::Value;
    let mut c = sync_conn(port)?;
    let Value::Array(ranges) = redis::cmd("CLUSTER").arg("SLOTS").query(&mut c).ok()? else {
        return None;
    };
    let mut ports = Vec::new();
    for range in ranges {
        let Value::Array(fields) = range else {
            return None;
        };
        // [start, end, [ip, port, id, ...] for the master, then one per replica].
        for node in fields.into_iter().skip(2) {
            let Value::Array(node) = node else {
                return None;
            };
            match node.get(1) {
                Some(Value::Int(p)) => ports.push(u16::try_from(*p).ok()?),
                _ => return None,
            }
        }
    }
    Some(ports)
}
