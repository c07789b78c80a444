//! The deployment under test, node by node: plain connections, commands as words, and each
//! master's hash slots (`CLUSTER NODES`).

use harness::RESPONSE_TIMEOUT;
use redis::aio::{ConnectionLike, MultiplexedConnection};

/// One node (master) of the deployment under test.
pub struct Node {
    /// `host:port`.
    pub addr: String,
    /// The hash slots it serves, as `CLUSTER NODES` gives them (`all` for a standalone server).
    pub slots: String,
    /// Its slot ranges, inclusive (empty for a standalone server).
    pub ranges: Vec<(u16, u16)>,
    /// A plain connection to it, for statistics.
    pub conn: MultiplexedConnection,
}

impl Node {
    /// Its port.
    pub fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap_or_default()
    }
}

/// A plain connection to the node at `url`, with the harness's response timeout.
pub async fn node_conn(url: &str) -> MultiplexedConnection {
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    redis::Client::open(url)
        .expect("node url")
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// Runs `args` (a Redis command as its words) on `conn`.
pub async fn query<T: redis::FromRedisValue>(conn: &mut impl ConnectionLike, args: &[&str]) -> T {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Connects to every node at `urls`; for a cluster, reads each node's slots from
/// `CLUSTER NODES` (and panics if a node serves none).
pub async fn nodes(urls: &[String], cluster: bool) -> Vec<Node> {
    let mut nodes = Vec::with_capacity(urls.len());
    for url in urls {
        nodes.push(Node {
            addr: url.trim_start_matches("redis://").to_string(),
            slots: "all".into(),
            ranges: Vec::new(),
            conn: node_conn(url).await,
        });
    }
    if cluster {
        let map: String = query(&mut nodes[0].conn, &["CLUSTER", "NODES"]).await;
        for line in map.lines() {
            // <id> <ip:port@bus-port[,hostname]> <flags> <master> <ping> <pong> <epoch> <link>
            // <slot or range>...
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(addr) = fields.get(1).and_then(|a| a.split('@').next()) else {
                continue;
            };
            let Some(node) = nodes.iter_mut().find(|n| n.addr == addr) else {
                continue;
            };
            for slot in fields.iter().skip(8).filter(|s| !s.starts_with('[')) {
                let (lo, hi) = slot.split_once('-').unwrap_or((slot, slot));
                node.ranges
                    .push((lo.parse().expect("slot"), hi.parse().expect("slot")));
            }
            node.slots = fields.get(8..).unwrap_or_default().join(" ");
        }
        for n in &nodes {
            assert!(!n.ranges.is_empty(), "{} serves no slots:\n{map}", n.addr);
        }
    }
    nodes
}

/// The node (index in `nodes`) serving `slot` at the start.
pub fn owner_of(nodes: &[Node], slot: u16) -> usize {
    nodes
        .iter()
        .position(|n| n.ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot)))
        .unwrap_or_else(|| panic!("no master serves slot {slot}"))
}
