//! The Redis connection: one client per Lambda sandbox, built once and reused.
//!
//! [`Store`] connects lazily on first use, so a cold start with Redis down still answers
//! (503) instead of failing `Init`. A standalone server is reached through
//! [`redis::aio::ConnectionManager`] (reconnects on its own); a cluster through
//! [`redis::cluster_async::ClusterConnection`], which routes each script by the hash slot of
//! its first key. Both are multiplexed: concurrent requests share one connection.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

use crate::config::Config;
use crate::error::Error;

/// A connected Redis handle: cheap to clone, all clones share one multiplexed connection.
#[derive(Clone)]
pub enum Conn {
    /// A standalone server (or a primary endpoint).
    Single(ConnectionManager),
    /// A Redis Cluster (or ElastiCache Serverless).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Connects to Redis as `config` says (URL, cluster or not, timeouts).
///
/// # Errors
/// [`Error::Unavailable`] when the URL is invalid or no connection can be made in time.
pub async fn connect(config: &Config) -> Result<Conn, Error> {
    if config.redis_cluster {
        let client = ClusterClientBuilder::new(vec![config.redis_url.as_str()])
            .connection_timeout(config.connect_timeout)
            .response_timeout(config.response_timeout)
            .retries(2)
            .build()?;
        Ok(Conn::Cluster(client.get_async_connection().await?))
    } else {
        let client = redis::Client::open(config.redis_url.as_str())?;
        let cm_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.response_timeout))
            .set_number_of_retries(1)
            .set_max_delay(std::time::Duration::from_millis(200));
        let fut = ConnectionManager::new_with_config(client, cm_config);
        match tokio::time::timeout(config.connect_timeout * 2, fut).await {
            Ok(conn) => Ok(Conn::Single(conn?)),
            Err(_) => Err(Error::Unavailable("timed out connecting to Redis".into())),
        }
    }
}

/// A lazily connected, shared Redis handle plus the configuration that built it.
pub struct Store {
    config: Config,
    conn: OnceCell<Conn>,
}

impl Store {
    /// A store that will connect on first use.
    pub fn new(config: Config) -> Self {
        Store { config, conn: OnceCell::new() }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The shared connection, connecting first if needed.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached; the next call tries again.
    pub async fn conn(&self) -> Result<Conn, Error> {
        self.conn.get_or_try_init(|| connect(&self.config)).await.cloned()
    }
}
