//! Key scans for audits and operations (the `ops` feature): never on a request path, and not
//! in the functions' bootstraps.

use redis::Value;

use super::conn::{Conn, Link};
use super::error::Error;

impl Conn {
    /// Every key matching `pattern` (`SCAN ... MATCH pattern TYPE kind`) on the server, or on
    /// every master of a cluster. For audits and operations only, never on a request path.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when a node cannot be reached; [`Error::Internal`] for a malformed
    /// `CLUSTER SLOTS` or `SCAN` reply.
    pub async fn scan_keys(&mut self, pattern: &str, kind: &str) -> Result<Vec<String>, Error> {
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        let masters: Vec<Option<(String, u16)>> = match &mut self.link {
            Link::Single(_) => vec![None],
            Link::Cluster(c) => {
                let slots: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query_async(c).await?;
                let mut nodes = Vec::new();
                for range in slots {
                    let bad = || Error::Internal("malformed CLUSTER SLOTS reply".into());
                    let Value::Array(parts) = range else {
                        return Err(bad());
                    };
                    let Some(Value::Array(master)) = parts.get(2) else {
                        return Err(bad());
                    };
                    let host = match master.first() {
                        Some(Value::BulkString(h)) => String::from_utf8_lossy(h).into_owned(),
                        _ => return Err(bad()),
                    };
                    let port = match master.get(1) {
                        Some(Value::Int(p)) => u16::try_from(*p).map_err(|_| bad())?,
                        _ => return Err(bad()),
                    };
                    if !nodes.contains(&Some((host.clone(), port))) {
                        nodes.push(Some((host, port)));
                    }
                }
                nodes
            }
        };
        let mut keys = Vec::new();
        for node in masters {
            let mut cursor = 0u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .arg("TYPE")
                    .arg(kind);
                let reply: Value = match (&mut self.link, &node) {
                    (Link::Single(c), _) => scan.query_async(c).await?,
                    (Link::Cluster(c), Some((host, port))) => {
                        c.route_command(
                            scan,
                            RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                                host: host.clone(),
                                port: *port,
                            }),
                        )
                        .await?
                    }
                    (Link::Cluster(_), None) => unreachable!("cluster nodes have addresses"),
                };
                let (next, batch): (u64, Vec<String>) =
                    redis::FromRedisValue::from_redis_value(reply)
                        .map_err(|e| Error::Internal(format!("malformed SCAN reply: {e}")))?;
                keys.extend(batch);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(keys)
    }
}
