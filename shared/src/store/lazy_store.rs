//! [`Store`]: the sandbox's one Redis handle, connected lazily and shared by every request.
//!
//! [`Store`] connects lazily on first use (or at cold start through
//! [`Store::connect_at_cold_start`]), so a cold start with Redis down or misconfigured still
//! answers (503, `Retry-After`) instead of failing `Init` in a loop; the failure is logged as
//! one clear error line, and the next request tries again.

use super::config::Config;
use super::conn::{Conn, REBUILD_AFTER_FAILURES};
use super::connect::connect;
use super::error::Error;
use crate::packets::gone::GonePackets;
use crate::voting::vote::memory::ArticleMemory;

/// A lazily connected, shared Redis handle plus the configuration that built it.
pub struct Store {
    config: Config,
    /// The current connection (cloned for each request).
    current: std::sync::RwLock<Option<Conn>>,
    /// Held while connecting, so concurrent requests share one connect.
    connecting: tokio::sync::Mutex<()>,
    /// Connect attempts so far.
    attempts: std::sync::atomic::AtomicU64,
    /// The red packets this sandbox saw sold out or expired (`store::packets::gone`).
    gone: GonePackets,
    /// The posters and groups of the articles this sandbox voted on (`voting::vote::memory`).
    articles: ArticleMemory,
}

impl Store {
    /// A store that will connect on first use.
    pub fn new(config: Config) -> Self {
        Store {
            config,
            current: std::sync::RwLock::new(None),
            connecting: tokio::sync::Mutex::new(()),
            attempts: std::sync::atomic::AtomicU64::new(0),
            gone: GonePackets::default(),
            articles: ArticleMemory::default(),
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

    /// The red packets this sandbox saw sold out or expired.
    pub(crate) fn gone_packets(&self) -> &GonePackets {
        &self.gone
    }

    /// The posters and groups of the articles this sandbox voted on.
    pub(crate) fn article_memory(&self) -> &ArticleMemory {
        &self.articles
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
