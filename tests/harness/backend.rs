//! Backend-agnostic wrapper: run the same test against standalone and cluster.

use std::fmt;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::{node_conn, scan_keys, RedisCluster, RedisServer, ReplicatedCluster, RESPONSE_TIMEOUT};

/// Set to `1` to run [`Backend::Cluster`] tests on a 3-master + 3-replica cluster instead of
/// 3 masters, and only those ([`Backend::all`]): `make replicas` runs the suites that way,
/// after `make unit` ran them on standalone and on 3 masters.
pub const REPLICAS_ENV: &str = "HONGBAO_TEST_CLUSTER_REPLICAS";

/// Set to `standalone` or `cluster` to run the tests' [`Backend::all`] loops on that backend
/// only: `make valkey` runs the suites on Valkey 8 standalone only (its cluster code is Valkey
/// 9's, which runs both).
pub const BACKENDS_ENV: &str = "HONGBAO_TEST_BACKENDS";

/// Which kind of Redis deployment a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// A single standalone `redis-server`.
    Standalone,
    /// A 3-master Redis Cluster (3 masters + 3 replicas when [`REPLICAS_ENV`] is `1`).
    Cluster,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 2] = [Backend::Standalone, Backend::Cluster];

    /// The backends a test runs on, for `for backend in Backend::all() { .. }` loops: both, or
    /// the one [`BACKENDS_ENV`] names, or only [`Backend::Cluster`] when [`REPLICAS_ENV`] is `1`
    /// (`make replicas` runs the suites again for their cluster half on replicas; their
    /// standalone half would be the same run as `make unit`'s).
    ///
    /// # Panics
    /// When [`BACKENDS_ENV`] is neither `standalone` nor `cluster`.
    pub fn all() -> Vec<Backend> {
        if std::env::var(REPLICAS_ENV).as_deref() == Ok("1") {
            return vec![Backend::Cluster];
        }
        match std::env::var(BACKENDS_ENV).as_deref() {
            Err(_) => Backend::ALL.to_vec(),
            Ok("standalone") => vec![Backend::Standalone],
            Ok("cluster") => vec![Backend::Cluster],
            Ok(other) => panic!("{BACKENDS_ENV}={other}: expected standalone or cluster"),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Standalone => "standalone",
            Backend::Cluster => "cluster",
        })
    }
}

/// A private Redis of either [`Backend`]; dropping it stops all processes.
pub struct TestRedis {
    inner: Inner,
}

enum Inner {
    Standalone(RedisServer),
    Cluster(RedisCluster),
    Replicated(ReplicatedCluster),
}

impl TestRedis {
    /// Starts a fresh, empty, non-persistent Redis of the given backend.
    pub fn start(backend: Backend) -> Self {
        let inner = match backend {
            Backend::Standalone => Inner::Standalone(RedisServer::start()),
            Backend::Cluster if std::env::var(REPLICAS_ENV).as_deref() == Ok("1") => {
                Inner::Replicated(ReplicatedCluster::start())
            }
            Backend::Cluster => Inner::Cluster(RedisCluster::start()),
        };
        TestRedis { inner }
    }

    /// The backend this Redis was started with.
    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Standalone(_) => Backend::Standalone,
            Inner::Cluster(_) | Inner::Replicated(_) => Backend::Cluster,
        }
    }

    /// True for [`Backend::Cluster`].
    pub fn is_cluster(&self) -> bool {
        self.backend() == Backend::Cluster
    }

    /// URL of the server (standalone) or of the first node (cluster).
    pub fn url(&self) -> String {
        match &self.inner {
            Inner::Standalone(s) => s.url(),
            Inner::Cluster(c) => c.url(),
            Inner::Replicated(c) => c.url(),
        }
    }

    /// URLs of every node (one element for standalone).
    pub fn urls(&self) -> Vec<String> {
        match &self.inner {
            Inner::Standalone(s) => vec![s.url()],
            Inner::Cluster(c) => c.urls(),
            Inner::Replicated(c) => c.urls(),
        }
    }

    /// URLs of the nodes that own data: the server, or every cluster master.
    fn master_urls(&self) -> Vec<String> {
        match &self.inner {
            Inner::Replicated(c) => c.master_urls(),
            _ => self.urls(),
        }
    }

    /// The standalone server, if this is [`Backend::Standalone`].
    pub fn server(&self) -> Option<&RedisServer> {
        match &self.inner {
            Inner::Standalone(s) => Some(s),
            Inner::Cluster(_) | Inner::Replicated(_) => None,
        }
    }

    /// The 3-master cluster, if this is [`Backend::Cluster`] without replicas.
    pub fn cluster(&self) -> Option<&RedisCluster> {
        match &self.inner {
            Inner::Standalone(_) | Inner::Replicated(_) => None,
            Inner::Cluster(c) => Some(c),
        }
    }

    /// `FLUSHALL` on the server, or on every cluster master.
    pub async fn flushall(&self) {
        self.on_every_node(redis::cmd("FLUSHALL")).await;
    }

    /// Runs `cmd` on the server, or on every cluster master (bypassing
    /// cluster routing), and returns the replies in node order. Panics on error.
    pub async fn on_every_node(&self, cmd: Cmd) -> Vec<Value> {
        let mut replies = Vec::new();
        for url in self.master_urls() {
            let mut conn = node_conn(&url).await;
            let reply = cmd
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("harness: {cmd:?} on {url} failed: {e}"));
            replies.push(reply);
        }
        replies
    }

    /// Every key in the whole database (SCAN on each node), sorted.
    pub async fn all_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for url in self.master_urls() {
            keys.extend(scan_keys(&url).await);
        }
        keys.sort();
        keys
    }

    /// A new async connection for assertions: a multiplexed connection
    /// (standalone) or a cluster connection that routes by key (cluster).
    pub async fn raw_conn(&self) -> RawConn {
        match &self.inner {
            Inner::Standalone(s) => RawConn::Standalone(node_conn(&s.url()).await),
            Inner::Cluster(_) | Inner::Replicated(_) => {
                let urls = self.urls();
                let conn = redis::cluster::ClusterClient::builder(urls.clone())
                    .response_timeout(RESPONSE_TIMEOUT)
                    .build()
                    .unwrap_or_else(|e| panic!("harness: bad cluster urls {urls:?}: {e}"))
                    .get_async_connection()
                    .await
                    .unwrap_or_else(|e| panic!("harness: cannot connect to cluster {urls:?}: {e}"));
                RawConn::Cluster(conn)
            }
        }
    }
}

/// An async connection to either backend; implements
/// [`redis::aio::ConnectionLike`], so `cmd.query_async(&mut raw)` and
/// `redis::AsyncCommands` work on both.
#[derive(Clone)]
pub enum RawConn {
    /// Connection to a standalone server.
    Standalone(MultiplexedConnection),
    /// Cluster connection routing each command by its key's slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for RawConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RawConn::Standalone(c) => c.req_packed_command(cmd),
            RawConn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RawConn::Standalone(c) => c.req_packed_commands(pipeline, offset, count),
            RawConn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RawConn::Standalone(c) => c.get_db(),
            RawConn::Cluster(c) => c.get_db(),
        }
    }
}
