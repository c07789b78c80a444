//! Configuration, read only from environment variables; every variable has a default.
//!
//! | variable | default | unit / meaning |
//! | --- | --- | --- |
//! | `REDIS_URL` | `redis://127.0.0.1:6379` | connection URL (`rediss://` for TLS) |
//! | `REDIS_CLUSTER` | `false` | `true` uses the Redis Cluster client (ElastiCache Serverless) |
//! | `REDIS_CONNECT_TIMEOUT_MS` | `1000` | milliseconds to establish a connection |
//! | `REDIS_RESPONSE_TIMEOUT_MS` | `1000` | milliseconds to wait for one reply |
//! | `HONGBAO_KEY_PREFIX` | `hb` | first segment of every key |
//! | `HONGBAO_AUTH_MODE` | `jwt` | `jwt` (claim `sub`) or `header` (`x-user-id`, local development only) |
//! | `HONGBAO_MAX_COUNT` | `10000` | most shares in one packet |
//! | `HONGBAO_MAX_TOTAL_CENTS` | `20000` | largest packet total, cents |
//! | `HONGBAO_GRAB_RATE_LIMIT` | `10` | grab attempts allowed per user and packet per window (0 = off) |
//! | `HONGBAO_GRAB_RATE_WINDOW_MS` | `1000` | rate-limit window, milliseconds |
//! | `HONGBAO_RECLAIM_BATCH` | `500` | most due packets one reclaim run handles |
//! | `HONGBAO_RECLAIM_LOCK_TTL_MS` | `55000` | reclaim lock lifetime, milliseconds |
//! | `HONGBAO_RETENTION_SECS` | `604800` | how long a settled packet's records are kept, seconds |
//! | `HONGBAO_IDEMPOTENCY_TTL_SECS` | `86400` | how long an `Idempotency-Key` of create-packet is remembered, seconds |
//! | `HONGBAO_DEPOSIT_DEDUP_SECS` | `2592000` | how long a deposit `reference` is remembered, seconds |

use std::time::Duration;

use thiserror::Error;

/// How the caller's user id is found in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// The verified JWT claim `sub` (`requestContext.authorizer.jwt.claims.sub`). The default.
    Jwt,
    /// The `x-user-id` header. For local development only: anyone can send any header.
    Header,
}

/// The longest a packet may stay open: 7 days, in seconds (the API's `expires_in_secs` bound).
pub const MAX_EXPIRES_IN_SECS: u64 = 604_800;

/// Ledger entries kept per wallet (the API returns the newest 50).
pub const LEDGER_CAP: u32 = 1000;

/// Settings of every hongbao function. Build with [`Config::from_env`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Redis connection URL; for a cluster, any node's (the client discovers the rest).
    pub redis_url: String,
    /// Use the cluster client (required for ElastiCache Serverless and Redis Cluster).
    pub redis_cluster: bool,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time to wait for one reply; past it the request answers 503.
    pub response_timeout: Duration,
    /// First segment of every key (`<prefix>:{<tag>}:...`).
    pub key_prefix: String,
    /// Where the caller's identity comes from.
    pub auth_mode: AuthMode,
    /// Most shares in one packet.
    pub max_count: u32,
    /// Largest packet total, cents.
    pub max_total_cents: i64,
    /// Grab attempts per user and packet per window; 0 disables the limit.
    pub grab_rate_limit: u32,
    /// Rate-limit window, milliseconds.
    pub grab_rate_window_ms: u64,
    /// Most due packets settled per reclaim run.
    pub reclaim_batch: usize,
    /// Reclaim lock lifetime, milliseconds.
    pub reclaim_lock_ttl_ms: u64,
    /// Seconds a settled packet's keys are kept.
    pub retention_secs: u64,
    /// Seconds a create-packet `Idempotency-Key` is remembered.
    pub idempotency_ttl_secs: u64,
    /// Seconds a deposit `reference` is remembered.
    pub deposit_dedup_secs: u64,
}

/// A configuration variable that is set but cannot be parsed.
#[derive(Debug, Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    /// The variable's name.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_lookup(|_| None).expect("defaults are valid")
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// # Errors
    /// [`ConfigError`] when a variable is set to a value that does not parse.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable name to its value), for tests.
    ///
    /// # Errors
    /// [`ConfigError`] when a value does not parse.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        fn get<T: std::str::FromStr>(
            lookup: &impl Fn(&str) -> Option<String>,
            name: &'static str,
            default: T,
        ) -> Result<T, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            match lookup(name) {
                None => Ok(default),
                Some(v) if v.trim().is_empty() => Ok(default),
                Some(v) => v.trim().parse().map_err(|e: T::Err| ConfigError {
                    name,
                    value: v.clone(),
                    reason: e.to_string(),
                }),
            }
        }
        let auth_mode = match lookup("HONGBAO_AUTH_MODE").as_deref().map(str::trim) {
            None | Some("") | Some("jwt") => AuthMode::Jwt,
            Some("header") => AuthMode::Header,
            Some(other) => {
                return Err(ConfigError {
                    name: "HONGBAO_AUTH_MODE",
                    value: other.to_string(),
                    reason: "expected `jwt` or `header`".into(),
                })
            }
        };
        let cfg = Config {
            redis_url: get(&lookup, "REDIS_URL", "redis://127.0.0.1:6379".to_string())?,
            redis_cluster: get(&lookup, "REDIS_CLUSTER", false)?,
            connect_timeout: Duration::from_millis(get(&lookup, "REDIS_CONNECT_TIMEOUT_MS", 1000)?),
            response_timeout: Duration::from_millis(get(&lookup, "REDIS_RESPONSE_TIMEOUT_MS", 1000)?),
            key_prefix: get(&lookup, "HONGBAO_KEY_PREFIX", "hb".to_string())?,
            auth_mode,
            max_count: get(&lookup, "HONGBAO_MAX_COUNT", 10_000)?,
            max_total_cents: get(&lookup, "HONGBAO_MAX_TOTAL_CENTS", 20_000)?,
            grab_rate_limit: get(&lookup, "HONGBAO_GRAB_RATE_LIMIT", 10)?,
            grab_rate_window_ms: get(&lookup, "HONGBAO_GRAB_RATE_WINDOW_MS", 1000)?,
            reclaim_batch: get(&lookup, "HONGBAO_RECLAIM_BATCH", 500)?,
            reclaim_lock_ttl_ms: get(&lookup, "HONGBAO_RECLAIM_LOCK_TTL_MS", 55_000)?,
            retention_secs: get(&lookup, "HONGBAO_RETENTION_SECS", 604_800)?,
            idempotency_ttl_secs: get(&lookup, "HONGBAO_IDEMPOTENCY_TTL_SECS", 86_400)?,
            deposit_dedup_secs: get(&lookup, "HONGBAO_DEPOSIT_DEDUP_SECS", 2_592_000)?,
        };
        if cfg.key_prefix.is_empty() || cfg.key_prefix.contains(['{', '}']) {
            return Err(ConfigError {
                name: "HONGBAO_KEY_PREFIX",
                value: cfg.key_prefix,
                reason: "must be non-empty and contain no braces".into(),
            });
        }
        if cfg.max_count == 0 || cfg.max_total_cents < i64::from(cfg.max_count) {
            return Err(ConfigError {
                name: "HONGBAO_MAX_TOTAL_CENTS",
                value: cfg.max_total_cents.to_string(),
                reason: "must be at least HONGBAO_MAX_COUNT (each share is >= 1 cent)".into(),
            });
        }
        if cfg.retention_secs == 0 || cfg.idempotency_ttl_secs == 0 || cfg.deposit_dedup_secs == 0 {
            return Err(ConfigError {
                name: "HONGBAO_RETENTION_SECS",
                value: "0".into(),
                reason: "retention and idempotency periods must be positive".into(),
            });
        }
        Ok(cfg)
    }

    /// Seconds a claim's wallet transfer record is kept: the longest a claim can stay
    /// pending (a packet's lifetime) plus the retention, plus a day of margin.
    pub fn claim_transfer_ttl_secs(&self) -> u64 {
        MAX_EXPIRES_IN_SECS + self.retention_secs + 86_400
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = Config::default();
        assert_eq!(c.redis_url, "redis://127.0.0.1:6379");
        assert!(!c.redis_cluster);
        assert_eq!(c.auth_mode, AuthMode::Jwt);
        assert_eq!(c.grab_rate_limit, 10);
        assert_eq!(c.reclaim_batch, 500);
        assert_eq!(c.retention_secs, 604_800);
    }

    #[test]
    fn bad_values_are_errors() {
        let err = Config::from_lookup(|n| (n == "REDIS_CLUSTER").then(|| "yes".into())).unwrap_err();
        assert_eq!(err.name, "REDIS_CLUSTER");
        assert!(Config::from_lookup(|n| (n == "HONGBAO_AUTH_MODE").then(|| "none".into())).is_err());
        assert!(Config::from_lookup(|n| (n == "HONGBAO_KEY_PREFIX").then(|| "a{b".into())).is_err());
        let c = Config::from_lookup(|n| (n == "HONGBAO_AUTH_MODE").then(|| "header".into())).unwrap();
        assert_eq!(c.auth_mode, AuthMode::Header);
    }
}
