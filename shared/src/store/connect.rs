//! Connecting: [`connect`] turns a [`Config`] into a [`Conn`] (URL or node list, cluster or
//! not or `auto`, TLS trust, AUTH, timeouts), within a time budget, with one clear error
//! naming the endpoint(s) and the cause (never a password or token).
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

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Client, ConnectionAddr, ConnectionInfo, TlsCertificates, Value};

use super::config::Config;
use super::conn::{Conn, Link, WaitPolicy};
use super::error::Error;
use super::redis_auth::{AuthKind, RedisCredentials};

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
/// [`Store`](super::Store) rebuilding its connection comes here too, so it also gets past a dead first node.
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
    let wait = (config.wait_replicas > 0).then(|| WaitPolicy {
        replicas: config.wait_replicas,
        timeout_ms: config.wait_timeout_ms,
        keys: super::keys::Keys::new(&config.key_prefix),
    });
    match tokio::time::timeout(budget, attempt).await {
        Ok(Ok(link)) => Ok(Conn::new(link, wait)),
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
