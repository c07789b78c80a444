//! The Redis connection: one client per Lambda sandbox, built once and reused.
//!
//! [`Store`] connects lazily on first use (or at cold start through
//! [`Store::connect_at_cold_start`]), so a cold start with Redis down or misconfigured still
//! answers (503, `Retry-After`) instead of failing `Init` in a loop; the failure is logged as
//! one clear error line, and the next request tries again.
//!
//! * **Standalone or cluster** (`REDIS_CLUSTER`): `true` uses
//!   [`redis::cluster_async::ClusterConnection`], which routes each script by the hash slot of
//!   its first key and follows `MOVED`/`ASK`; `false` uses [`redis::aio::ConnectionManager`]
//!   (reconnects on its own); `auto` (the default) connects a `ConnectionManager`, asks
//!   `CLUSTER INFO`, and keeps it when the server answers "cluster support disabled", or
//!   switches to the cluster client when it answers (ElastiCache Serverless always does).
//!   Both are multiplexed: concurrent requests share one connection per node.
//! * **Discovery from any live node** (`REDIS_URL` listing several nodes of one cluster,
//!   comma-separated): one dead node must not stop a cold start, nor the rebuild of a
//!   connection ([`Store::conn`] after [`REBUILD_AFTER_FAILURES`]), while the rest of the
//!   cluster serves. The cluster client is seeded with every listed node; redis-rs 1.8 connects
//!   to all of them at once and needs one to answer, then reads the slot map from a connected
//!   node. `auto` probes the listed nodes in order (each within a connect and a response
//!   timeout) until one answers `CLUSTER INFO`; a node list whose answering node has cluster
//!   support disabled is refused, as is a node list with `REDIS_CLUSTER=false`. The list's
//!   rules (full URLs, one scheme, the same credentials) are checked at settings load.
//! * **TLS**: `rediss://` URLs, server certificates checked by rustls (`ring`) against the
//!   public web PKI roots, or against `REDIS_CA_CERT` alone when it is set.
//! * **Authentication**: see [`super::redis_auth`] (`none`, `password`, ElastiCache `iam`, with
//!   re-authentication before the token or the 12-hour connection limit runs out).
//! * **Timeouts** (`REDIS_CONNECT_TIMEOUT_MS`, `REDIS_RESPONSE_TIMEOUT_MS`, both 1000 ms by
//!   default). Inside one VPC a TCP + TLS + AUTH connect to ElastiCache takes a few
//!   milliseconds and a script a fraction of one, so 1 s is two orders of magnitude of slack for
//!   a busy node or a slow cold start, yet short enough that a dead endpoint costs a request at
//!   most a couple of seconds (the API Gateway integration timeout is 30 s, and a caller that
//!   waits longer gains nothing: it is told 503 + `Retry-After: 1` and retries). The response
//!   timeout is 1 s rather than redis-rs's 500 ms because a serverless cache scaling out, or a
//!   cluster node under a grab storm, can stall a reply for some hundreds of milliseconds, and a
//!   spurious 503 costs a client round trip; a failover takes seconds, which no reasonable
//!   timeout hides, so longer gains nothing. A cluster request may retry (`MOVED`, `TRYAGAIN`,
//!   a reconnect) within twice the response timeout.
//! * **Faults**: every failure (connect, TLS, AUTH, timeout, a dropped connection) is
//!   [`Error::Unavailable`], never a business answer. A connection dropped by the server or
//!   frozen by Lambda fails at most the one request that meets it; the connection is rebuilt
//!   at once and the next request uses the new one. Scripts are sent with EVALSHA and reloaded
//!   on `NOSCRIPT` (after `SCRIPT FLUSH`, a restart or a failover) by [`redis::Script`].

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{
    Client, Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisFuture, TlsCertificates, Value,
};

use super::config::Config;
use super::error::Error;
use super::redis_auth::{AuthKind, RedisCredentials};

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
struct WaitPolicy {
    replicas: u32,
    timeout_ms: u64,
    keys: super::keys::Keys,
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
    link: Link,
    wait: Option<std::sync::Arc<WaitPolicy>>,
    /// Calls in a row that got no reply at all (timeout, I/O, no connection to the node).
    failures: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

/// Calls in a row without any reply after which [`Store::conn`] replaces a cluster connection
/// with a new one. redis-rs 1.8's cluster client can stop answering for good after a failover
/// when many calls are in flight on one connection (`tests/faults.rs`: a burst of concurrent
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

    /// Whether [`Store::conn`] should replace this connection.
    fn wedged(&self) -> bool {
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

/// Where a connection goes, for messages: `host:port` and TLS, never user or password.
fn endpoint(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{host}:{port}"),
        ConnectionAddr::Unix(path) => format!("unix:{}", path.display()),
        other => format!("{other:?}"),
    }
}

/// Everything a connection needs, prepared once per connect.
struct Setup {
    /// Every node `REDIS_URL` lists, in order (one for a standalone server), each with the
    /// password of `REDIS_AUTH=password` when there is no user name.
    nodes: Vec<ConnectionInfo>,
    ca_pem: Option<Vec<u8>>,
    credentials: Option<RedisCredentials>,
}

impl Setup {
    async fn new(config: &Config) -> Result<Self, Error> {
        // Checked at settings load too; a `Config` built in code skips the load. The reason
        // names entries by position only: the URL may hold a password.
        let mut nodes = super::nodes::parse(&config.redis_url)
            .map_err(|why| Error::Unavailable(format!("REDIS_URL is not usable: {why}")))?;
        let auth = &config.redis_auth;
        if auth.kind == AuthKind::Password && auth.username.is_none() {
            // `AUTH <password>`: ElastiCache AUTH tokens, `requirepass`.
            let password = auth.password.clone().unwrap_or_default();
            for info in &mut nodes {
                *info = info
                    .clone()
                    .set_redis_settings(info.redis_settings().clone().set_password(&password));
            }
        }
        let ca_pem = auth.ca_pem()?;
        let credentials = RedisCredentials::from_config(auth, config.connect_timeout).await?;
        Ok(Setup {
            nodes,
            ca_pem,
            credentials,
        })
    }

    /// The listed nodes, for messages: `redis://host:port, ...`, never user or password.
    fn endpoints(&self) -> String {
        self.nodes
            .iter()
            .map(endpoint)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn certificates(&self) -> Option<TlsCertificates> {
        self.ca_pem.clone().map(|root| TlsCertificates {
            client_tls: None,
            root_cert: Some(root),
        })
    }

    fn client(&self, info: &ConnectionInfo) -> redis::RedisResult<Client> {
        match self.certificates() {
            Some(certs) => Client::build_with_tls(info.clone(), certs),
            None => Client::open(info.clone()),
        }
    }

    /// A standalone connection to one node.
    async fn single(
        &self,
        config: &Config,
        info: &ConnectionInfo,
    ) -> redis::RedisResult<ConnectionManager> {
        let mut cm_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.response_timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        if let Some(credentials) = &self.credentials {
            cm_config = cm_config.set_credentials_provider(credentials.clone());
        }
        ConnectionManager::new_with_config(self.client(info)?, cm_config).await
    }

    /// The cluster client, seeded with every listed node: redis-rs 1.8 connects to all of them
    /// at once and needs one to answer (`create_initial_connections`), then reads the slot map
    /// from the first connected node that answers `CLUSTER SLOTS` (`refresh_slots`).
    async fn cluster(&self, config: &Config) -> redis::RedisResult<ClusterConnection> {
        let mut builder = ClusterClientBuilder::new(self.nodes.clone())
            .connection_timeout(config.connect_timeout)
            .response_timeout(config.response_timeout)
            // Room for a retry after MOVED/TRYAGAIN/a reconnect (failover, resharding).
            .overall_response_timeout(Some(config.response_timeout * 2))
            .retries(3)
            .min_retry_wait(20)
            .max_retry_wait(250)
            .retry_wait_formula(20, 2);
        if let Some(password) = self.nodes[0].redis_settings().password() {
            builder = builder.password(password);
        }
        if let Some(certs) = self.certificates() {
            builder = builder.certs(certs);
        }
        if let Some(credentials) = &self.credentials {
            builder = builder.set_credentials_provider(credentials.clone());
        }
        builder.build()?.get_async_connection().await
    }

    /// `REDIS_CLUSTER=auto`: asks the listed nodes in order (`CLUSTER INFO`) until one answers,
    /// each within a connect and a response timeout when there are several, and connects the
    /// cluster client (seeded with every node) or, for a lone server that answers "cluster
    /// support disabled", keeps the standalone connection.
    ///
    /// # Errors
    /// Per node tried: its endpoint and why it did not answer.
    async fn probe(&self, config: &Config) -> Result<Link, Vec<(String, redis::RedisError)>> {
        let several = self.nodes.len() > 1;
        let mut failed = Vec::new();
        for info in &self.nodes {
            let asked = async {
                let single = self.single(config, info).await?;
                let mut probe = single.clone();
                let reply = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async::<Value>(&mut probe)
                    .await;
                Ok::<_, redis::RedisError>((single, reply))
            };
            let asked = if several {
                let limit = config.connect_timeout + config.response_timeout;
                match tokio::time::timeout(limit, asked).await {
                    Ok(asked) => asked,
                    Err(_) => Err(redis::RedisError::from((
                        redis::ErrorKind::Io,
                        "no answer",
                        format!("within {limit:?}"),
                    ))),
                }
            } else {
                asked.await
            };
            match asked {
                Ok((single, Ok(_))) => {
                    drop(single);
                    return self
                        .cluster(config)
                        .await
                        .map(Link::Cluster)
                        .map_err(|e| vec![(self.endpoints(), e)]);
                }
                Ok((single, Err(e)))
                    if e.kind()
                        == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                        && e.to_string()
                            .to_ascii_lowercase()
                            .contains("cluster support disabled") =>
                {
                    if !several {
                        return Ok(Link::Single(single));
                    }
                    // A list names a cluster's nodes; a lone server among them is a mistake
                    // that no other node can correct.
                    return Err(vec![(
                        endpoint(info),
                        redis::RedisError::from((
                            redis::ErrorKind::InvalidClientConfig,
                            "not a cluster node",
                            "REDIS_URL lists several nodes, but this one has cluster support \
                             disabled"
                                .to_string(),
                        )),
                    )]);
                }
                Ok((_, Err(e))) | Err(e) => failed.push((endpoint(info), e)),
            }
        }
        Err(failed)
    }
}

/// What to check when a connect fails with `e`.
fn hint(e: &redis::RedisError) -> &'static str {
    let text = e.to_string();
    if e.kind() == redis::ErrorKind::AuthenticationFailed
        || text.contains("NOAUTH")
        || text.contains("WRONGPASS")
    {
        "; check REDIS_AUTH, REDIS_USERNAME and the password or IAM user"
    } else if text.contains("certificate") {
        "; check REDIS_CA_CERT (unset: the public web PKI roots)"
    } else {
        ""
    }
}

/// Connects to Redis as `config` says (URL or node list, cluster or not or auto, TLS trust,
/// AUTH, timeouts). Takes at most twice the connect timeout plus the response timeout; with
/// `REDIS_CLUSTER=auto` and a node list, plus one connect and one response timeout per listed
/// node (the probe's limit on each).
///
/// A node list starts from any live node: the cluster client is seeded with all of them (it
/// needs one to answer), and `auto` probes them in order until one answers. A
/// [`Store`] rebuilding its connection comes here too, so it also gets past a dead first node.
///
/// # Errors
/// [`Error::Unavailable`], with the endpoint(s) and the cause (never a password or token), when
/// the URL or CA is invalid, or no authenticated connection can be made in time.
pub async fn connect(config: &Config) -> Result<Conn, Error> {
    let setup = Setup::new(config).await?;
    let where_ = setup.endpoints();
    let several = setup.nodes.len() > 1;
    let mode = if config.redis_cluster {
        "cluster"
    } else if config.redis_cluster_auto {
        "auto"
    } else {
        "standalone"
    };
    if several && !config.redis_cluster && !config.redis_cluster_auto {
        return Err(Error::Unavailable(format!(
            "REDIS_URL lists {} nodes ({where_}) and REDIS_CLUSTER=false: a node list needs the \
             cluster client",
            setup.nodes.len()
        )));
    }
    let attempt = async {
        if config.redis_cluster {
            return setup
                .cluster(config)
                .await
                .map(Link::Cluster)
                .map_err(|e| vec![(where_.clone(), e)]);
        }
        if config.redis_cluster_auto {
            return setup.probe(config).await;
        }
        setup
            .single(config, &setup.nodes[0])
            .await
            .map(Link::Single)
            .map_err(|e| vec![(where_.clone(), e)])
    };
    let mut budget = config.connect_timeout * 2 + config.response_timeout;
    if several && config.redis_cluster_auto && !config.redis_cluster {
        let per_node = config.connect_timeout + config.response_timeout;
        budget += per_node * u32::try_from(setup.nodes.len()).unwrap_or(u32::MAX);
    }
    let wait = (config.wait_replicas > 0).then(|| {
        std::sync::Arc::new(WaitPolicy {
            replicas: config.wait_replicas,
            timeout_ms: config.wait_timeout_ms,
            keys: super::keys::Keys::new(&config.key_prefix),
        })
    });
    match tokio::time::timeout(budget, attempt).await {
        Ok(Ok(link)) => Ok(Conn {
            link,
            wait,
            failures: Default::default(),
        }),
        Ok(Err(failed)) => {
            let cause = match failed.as_slice() {
                // One node, or one cluster connect over all of them: as before.
                [(_, e)] => format!("{e}{}", hint(e)),
                _ => {
                    let each = failed
                        .iter()
                        .map(|(at, e)| format!("{at}: {e}"))
                        .collect::<Vec<_>>()
                        .join("; ");
                    let hint = failed.iter().map(|(_, e)| hint(e)).find(|h| !h.is_empty());
                    format!("{each}{}", hint.unwrap_or_default())
                }
            };
            let at = match failed.as_slice() {
                [(at, _)] if several => at.clone(),
                _ => where_.clone(),
            };
            Err(Error::Unavailable(format!(
                "cannot connect to Redis at {at} ({mode}): {cause}"
            )))
        }
        Err(_) => Err(Error::Unavailable(format!(
            "timed out after {budget:?} connecting to Redis at {where_} ({mode})"
        ))),
    }
}

/// A lazily connected, shared Redis handle plus the configuration that built it.
pub struct Store {
    config: Config,
    /// The current connection (cloned for each request).
    current: std::sync::RwLock<Option<Conn>>,
    /// Held while connecting, so concurrent requests share one connect.
    connecting: tokio::sync::Mutex<()>,
    /// Connect attempts so far.
    attempts: std::sync::atomic::AtomicU64,
}

impl Store {
    /// A store that will connect on first use.
    pub fn new(config: Config) -> Self {
        Store {
            config,
            current: std::sync::RwLock::new(None),
            connecting: tokio::sync::Mutex::new(()),
            attempts: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn healthy(&self) -> Option<Conn> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|c| !c.wedged())
            .cloned()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The shared connection, connecting first if needed, and connecting anew when a cluster
    /// connection got no reply to [`REBUILD_AFTER_FAILURES`] calls in a row.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached; the next call tries again.
    pub async fn conn(&self) -> Result<Conn, Error> {
        if let Some(conn) = self.healthy() {
            return Ok(conn);
        }
        use std::sync::atomic::Ordering;
        let seen = self.attempts.load(Ordering::SeqCst);
        let _connecting = self.connecting.lock().await;
        if let Some(conn) = self.healthy() {
            return Ok(conn);
        }
        if self.attempts.load(Ordering::SeqCst) != seen {
            // Another request tried while this one waited, and failed: do not queue a second
            // full connect behind it; the client retries (503).
            return Err(Error::Unavailable(
                "the Redis connection is being re-established; retry".into(),
            ));
        }
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            tracing::warn!(
                failures = REBUILD_AFTER_FAILURES,
                "replacing the Redis cluster connection after calls in a row got no reply"
            );
        }
        let conn = connect(&self.config)
            .await
            .inspect_err(|e| tracing::error!(error = %e, "redis connect failed"))?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
        Ok(conn)
    }

    /// Connects now, during the Lambda `Init` phase, and logs the outcome (one `error` line
    /// with the endpoint and cause on failure). A `main` should log and ignore the `Err`: with
    /// Redis down or misconfigured the function still starts, answers 503 and tries again on
    /// the next request, instead of failing `Init` in a loop.
    ///
    /// # Errors
    /// [`Error::Unavailable`] as [`Store::conn`].
    pub async fn connect_at_cold_start(&self) -> Result<(), Error> {
        match self.conn().await {
            Ok(conn) => {
                let kind = if conn.is_cluster() {
                    "cluster"
                } else {
                    "standalone"
                };
                tracing::info!(kind, "redis connected");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// What the server's `maxmemory-policy` means for money (see [`Store::check_eviction_policy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionVerdict {
    /// `noeviction` (or a policy this code does not know): full memory refuses writes (503),
    /// nothing is evicted.
    Safe(String),
    /// `volatile-*`: only keys with a TTL can be evicted. hongbao keeps no money-guarding state
    /// in such keys (idempotency records have no TTL), but a packet's or a rate limit's records
    /// can vanish early; worth one warning.
    Volatile(String),
    /// `allkeys-*`: any key, a wallet included, can be evicted. The functions refuse to start.
    AllKeys(String),
    /// `INFO` is not allowed (an ACL without `+info`, a managed service that hides it).
    Unknown(String),
}

/// Classifies a `maxmemory-policy` value.
pub(crate) fn eviction_verdict(policy: &str) -> EvictionVerdict {
    let p = policy.trim().to_ascii_lowercase();
    if p.starts_with("allkeys-") {
        EvictionVerdict::AllKeys(p)
    } else if p.starts_with("volatile-") {
        EvictionVerdict::Volatile(p)
    } else {
        EvictionVerdict::Safe(p)
    }
}

/// Every `maxmemory_policy:` value in an `INFO` reply (one per node on a cluster).
fn policies_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(b) => policies_in_text(&String::from_utf8_lossy(b), out),
        Value::VerbatimString { text, .. } | Value::SimpleString(text) => {
            policies_in_text(text, out)
        }
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| policies_in(v, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| policies_in(v, out)),
        _ => {}
    }
}

fn policies_in_text(text: &str, out: &mut Vec<String>) {
    out.extend(
        text.lines()
            .filter_map(|l| l.strip_prefix("maxmemory_policy:"))
            .map(|p| p.trim().to_string()),
    );
}

impl Store {
    /// Reads `maxmemory_policy` from `INFO memory` (every master on a cluster) and classifies
    /// the worst one. Money-guarding state (balances, idempotency and transfer records) must
    /// never be evicted: `allkeys-*` policies can evict any key.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached. An `INFO` the server refuses is
    /// [`EvictionVerdict::Unknown`], not an error.
    pub async fn check_eviction_policy(&self) -> Result<EvictionVerdict, Error> {
        let mut conn = self.conn().await?;
        let reply = match redis::cmd("INFO")
            .arg("memory")
            .query_async::<Value>(&mut conn)
            .await
        {
            Ok(v) => v,
            Err(e)
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    || e.to_string().contains("NOPERM") =>
            {
                return Ok(EvictionVerdict::Unknown(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        let mut found = Vec::new();
        policies_in(&reply, &mut found);
        let verdicts: Vec<EvictionVerdict> = found.iter().map(|p| eviction_verdict(p)).collect();
        Ok(verdicts
            .iter()
            .find(|v| matches!(v, EvictionVerdict::AllKeys(_)))
            .or_else(|| {
                verdicts
                    .iter()
                    .find(|v| matches!(v, EvictionVerdict::Volatile(_)))
            })
            .or(verdicts.first())
            .cloned()
            .unwrap_or_else(|| EvictionVerdict::Unknown("no maxmemory_policy in INFO".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_policies() {
        assert!(matches!(
            eviction_verdict("allkeys-lru"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("allkeys-lfu"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("allkeys-random"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("volatile-ttl"),
            EvictionVerdict::Volatile(_)
        ));
        assert!(matches!(
            eviction_verdict("noeviction"),
            EvictionVerdict::Safe(_)
        ));
        let mut out = Vec::new();
        policies_in(
            &Value::Map(vec![
                (
                    Value::SimpleString("a:1".into()),
                    Value::BulkString(b"# Memory\r\nmaxmemory_policy:noeviction\r\n".to_vec()),
                ),
                (
                    Value::SimpleString("b:2".into()),
                    Value::VerbatimString {
                        format: redis::VerbatimFormat::Text,
                        text: "maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n".into(),
                    },
                ),
            ]),
            &mut out,
        );
        assert_eq!(out, ["noeviction", "allkeys-lru"]);
    }
}
