//! Key scans: `SCAN` on the server, or on every master of a cluster, for audits, operations
//! and the scheduled jobs that walk the keyspace in steps (never on a request path).

use redis::Value;

use super::conn::{Conn, Link};
use super::error::Error;

/// A master to scan: `None` for the one server of a standalone connection, else its address
/// (host, port) as `CLUSTER SLOTS` gives it.
pub type Master = Option<(String, u16)>;

impl Conn {
    /// The masters to scan, in the order `CLUSTER SLOTS` lists them (one `None` for a
    /// standalone connection).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the cluster cannot be reached; [`Error::Internal`] for a
    /// malformed `CLUSTER SLOTS` reply.
    pub async fn masters(&mut self) -> Result<Vec<Master>, Error> {
        let c = match &mut self.link {
            Link::Single(_) => return Ok(vec![None]),
            Link::Cluster(c) => c,
        };
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
        Ok(nodes)
    }

    /// One `SCAN cursor MATCH pattern COUNT count TYPE kind` on `master` ([`Conn::masters`]):
    /// the next cursor (0: the scan of that master is over) and the keys of this step (a key
    /// may come again in a later step; one present for the whole scan comes at least once).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the node cannot be reached; [`Error::Internal`] for a
    /// malformed reply, or a master address on a standalone connection.
    pub async fn scan_step(
        &mut self,
        master: &Master,
        cursor: u64,
        pattern: &str,
        kind: &str,
        count: usize,
    ) -> Result<(u64, Vec<String>), Error> {
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        let mut scan = redis::cmd("SCAN");
        scan.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count)
            .arg("TYPE")
            .arg(kind);
        let reply: Value = match (&mut self.link, master) {
            (Link::Single(c), None) => scan.query_async(c).await?,
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
            _ => {
                return Err(Error::Internal(
                    "a master address belongs to a cluster connection".into(),
                ))
            }
        };
        redis::FromRedisValue::from_redis_value(reply)
            .map_err(|e| Error::Internal(format!("malformed SCAN reply: {e}")))
    }

    /// Every key matching `pattern` (`SCAN ... MATCH pattern TYPE kind`) on the server, or on
    /// every master of a cluster. For audits and operations only, never on a request path.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when a node cannot be reached; [`Error::Internal`] for a malformed
    /// `CLUSTER SLOTS` or `SCAN` reply.
    #[cfg(feature = "ops")]
    pub async fn scan_keys(&mut self, pattern: &str, kind: &str) -> Result<Vec<String>, Error> {
        let mut keys = Vec::new();
        for master in self.masters().await? {
            let mut cursor = 0u64;
            loop {
                let (next, batch) = self.scan_step(&master, cursor, pattern, kind, 1000).await?;
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
