//! [`Conn`], the transport every script call goes through: a standalone
//! [`ConnectionManager`] or a cluster connection ([`Link`]), `NOSCRIPT` answered with `EVAL`
//! on the same node, money scripts acknowledged by replicas (`WAIT`), and the count of calls
//! without a reply that makes [`Store`](super::Store) rebuild a wedged cluster connection.
//!
//! * **Faults**: every failure (connect, TLS, AUTH, timeout, a dropped connection) is
//!   [`Error::Unavailable`], never a business answer. A connection dropped by the server or
//!   frozen by Lambda fails at most the one request that meets it; the connection is rebuilt
//!   at once and the next request uses the new one. Scripts are sent with EVALSHA and reloaded
//!   on `NOSCRIPT` (after `SCRIPT FLUSH`, a restart or a failover) by [`redis::Script`].

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::error::Error;

/// The transport under a [`Conn`].
#[derive(Clone)]
pub(crate) enum Link {
    /// A standalone server (or a primary endpoint).
    Single(ConnectionManager),
    /// A Redis Cluster (or ElastiCache Serverless).
    Cluster(ClusterConnection),
}

/// `REDIS_WAIT_REPLICAS` / `REDIS_WAIT_TIMEOUT_MS`, and the key prefix for the fence keys.
#[derive(Debug)]
pub(super) struct WaitPolicy {
    pub(super) replicas: u32,
    pub(super) timeout_ms: u64,
    pub(super) keys: super::keys::Keys,
}

/// A connected Redis handle: cheap to clone, all clones share one multiplexed connection.
///
/// Two things happen here, below every script call, so that no caller can forget them:
///
/// * **`NOSCRIPT`** (a new node, a failover, `SCRIPT FLUSH`): the `EVALSHA` of a hongbao script
///   is re-sent as `EVAL` on the same key's node (`scripts::eval_for`). redis-rs would
///   send `SCRIPT LOAD` to every node of a cluster, so one node being down would fail scripts
///   on all the others.
/// * **Acknowledged means replicated** (`REDIS_WAIT_REPLICAS` > 0): a script that moves money
///   or hands out order codes (`scripts::acknowledged_call`, the list `scripts::ACKNOWLEDGED`) is sent in one pipeline
///   with `SET <fence>` and `WAIT <n> <REDIS_WAIT_TIMEOUT_MS>`, on one connection to the
///   slot's master. Redis replication is asynchronous, and a primary that dies before its
///   replica has a write loses it in the failover: a credit answered 201 would vanish, or a
///   claim step would be lost while the next one, on another shard, stays. Replication is one
///   ordered stream per primary, so the fence (a write after the script) makes the `WAIT` cover
///   the script's write and also an earlier call's write that a retry only read (`repeat`).
///   Fewer acknowledgements in time is [`Error::Unavailable`] (503 + `Retry-After`): the write
///   may survive or not, and the client's retry, which every route allows, settles it. Because
///   the pipeline is one batch on one connection, the `WAIT` can never be answered by another
///   node (after a reconnect or a failover) than the one that ran the script.
#[derive(Clone)]
pub struct Conn {
    pub(super) link: Link,
    wait: Option<std::sync::Arc<WaitPolicy>>,
    /// Calls in a row that got no reply at all (timeout, I/O, no connection to the node).
    failures: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

/// Calls in a row without any reply after which [`Store::conn`](super::Store::conn) replaces a cluster connection
/// with a new one. redis-rs 1.8's cluster client can stop answering for good after a failover
/// when many calls are in flight on one connection (`tests/it/faults.rs`: a burst of concurrent
/// calls right after `CLUSTER FAILOVER` left every later call timing out); a fresh connection
/// with a fresh slot map recovers. A standalone `ConnectionManager` reconnects by itself.
pub const REBUILD_AFTER_FAILURES: u32 = 3;

impl Conn {
    /// Counts a call's result toward [`REBUILD_AFTER_FAILURES`]: no reply at all counts, any
    /// reply (an error reply included: the node is talking) resets the count.
    fn note<T>(&self, result: &redis::RedisResult<T>) {
        use std::sync::atomic::Ordering;
        match result {
            Err(e)
                if e.is_timeout()
                    || e.is_io_error()
                    || e.is_connection_dropped()
                    || e.kind() == redis::ErrorKind::ClusterConnectionNotFound =>
            {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
            _ => self.failures.store(0, Ordering::Relaxed),
        }
    }

    /// Whether [`Store::conn`](super::Store::conn) should replace this connection.
    pub(super) fn wedged(&self) -> bool {
        self.is_cluster()
            && self.failures.load(std::sync::atomic::Ordering::Relaxed) >= REBUILD_AFTER_FAILURES
    }
}

fn is_noscript(reply: &redis::RedisResult<Value>) -> bool {
    match reply {
        Err(e) => e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript),
        Ok(v) => is_noscript_value(v),
    }
}

fn is_noscript_value(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.kind() == Some(redis::ServerErrorKind::NoScript))
}

impl Link {
    async fn one(&mut self, cmd: &Cmd) -> redis::RedisResult<Value> {
        match self {
            Link::Single(c) => c.req_packed_command(cmd).await,
            Link::Cluster(c) => c.req_packed_command(cmd).await,
        }
    }

    async fn many(
        &mut self,
        p: &Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<Value>> {
        match self {
            Link::Single(c) => c.req_packed_commands(p, offset, count).await,
            Link::Cluster(c) => c.req_packed_commands(p, offset, count).await,
        }
    }
}

impl Conn {
    /// Whether this is a cluster connection.
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// `EVALSHA` (or, after `NOSCRIPT`, `EVAL`) of `cmd` + `SET fence` + `WAIT`, as one pipeline.
    async fn acknowledged(
        &mut self,
        cmd: &Cmd,
        key: &[u8],
        wait: &WaitPolicy,
    ) -> redis::RedisResult<Value> {
        let fence = wait.keys.fence_of(&String::from_utf8_lossy(key));
        let batch = |script: Cmd| {
            let mut p = redis::pipe();
            p.add_command(script)
                .cmd("SET")
                .arg(&fence)
                .arg(1)
                .cmd("WAIT")
                .arg(wait.replicas)
                .arg(wait.timeout_ms);
            p
        };
        let mut replies = self.link.many(&batch(cmd.clone()), 0, 3).await?;
        if replies.first().is_some_and(is_noscript_value) {
            if let Some(eval) = super::scripts::eval_for(cmd) {
                replies = self.link.many(&batch(eval), 0, 3).await?;
            }
        }
        let [script, _fence, acked] = <[Value; 3]>::try_from(replies).map_err(|r| {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "short pipeline reply",
                format!("{r:?}"),
            ))
        })?;
        let acked = match acked {
            Value::Int(n) => n,
            other => {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "WAIT failed",
                    format!("{other:?}"),
                )))
            }
        };
        if acked < i64::from(wait.replicas) {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "write not acknowledged by enough replicas",
                format!(
                    "{acked} of {} replicas within {} ms (REDIS_WAIT_REPLICAS); retry",
                    wait.replicas, wait.timeout_ms
                ),
            )));
        }
        Ok(script)
    }
}

impl Conn {
    async fn send(&mut self, cmd: &Cmd) -> redis::RedisResult<Value> {
        if let Some(wait) = self.wait.clone() {
            if let Some(key) = super::scripts::acknowledged_call(cmd) {
                return self.acknowledged(cmd, &key, &wait).await;
            }
        }
        let reply = self.link.one(cmd).await;
        if !is_noscript(&reply) {
            return reply;
        }
        match super::scripts::eval_for(cmd) {
            Some(eval) => self.link.one(&eval).await,
            None => reply,
        }
    }
}

impl ConnectionLike for Conn {
    /// Sends `cmd`: acknowledged by replicas when it is a money script and
    /// `REDIS_WAIT_REPLICAS` > 0, with `NOSCRIPT` answered by `EVAL` (see [`Conn`]).
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let reply = self.send(cmd).await;
            self.note(&reply);
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = self.link.many(pipeline, offset, count).await;
            self.note(&replies);
            replies
        })
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
        }
    }
}

impl Conn {
    /// A connection over `link`, acknowledging money scripts as `wait` says (`None`: off).
    pub(super) fn new(link: Link, wait: Option<WaitPolicy>) -> Self {
        Conn {
            link,
            wait: wait.map(std::sync::Arc::new),
            failures: Default::default(),
        }
    }

    /// Runs a keyless command (`TIME`) on the master that serves `key`'s hash slot; on a
    /// standalone server, on the server. A cluster would otherwise send it to a random node,
    /// which may be one that is down although the slot's own master is up.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when that node cannot be reached; [`Error::Internal`] when the reply
    /// does not convert to `T`.
    pub(crate) async fn query_on_slot_of<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        cmd: &Cmd,
    ) -> Result<T, Error> {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        let value = match &mut self.link {
            Link::Single(c) => cmd.query_async::<Value>(c).await?,
            Link::Cluster(c) => {
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                c.route_command(
                    cmd.clone(),
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                )
                .await?
            }
        };
        T::from_redis_value(value).map_err(|e| Error::Internal(format!("unexpected reply: {e}")))
    }
}
