//! Configuration, read only from environment variables; every variable has a default.
//!
//! | variable | default | unit / meaning |
//! | --- | --- | --- |
//! | `REDIS_URL` | `redis://127.0.0.1:6379` | connection URL (`rediss://` for TLS) |
//! | `REDIS_CLUSTER` | `auto` | `true`: cluster client (ElastiCache Serverless); `false`: one server; `auto`: ask the server (`CLUSTER INFO`) at connect |
//! | `REDIS_CONNECT_TIMEOUT_MS` | `1000` | milliseconds to establish a connection (TCP + TLS + AUTH), see [`crate::store`] |
//! | `REDIS_RESPONSE_TIMEOUT_MS` | `1000` | milliseconds to wait for one reply, then 503 |
//! | `REDIS_WAIT_REPLICAS` | `0` | replicas that must acknowledge every money write (`WAIT`) before it is answered; `0`: off. See [`crate::store::Conn`] |
//! | `REDIS_WAIT_TIMEOUT_MS` | `100` | milliseconds `WAIT` may take (`>= 1`); fewer acknowledgements in time: 503 |
//! | `REDIS_AUTH` | `none` | `none`, `password` (`REDIS_PASSWORD`) or `iam` (ElastiCache IAM token), see [`crate::auth`] |
//! | `REDIS_USERNAME` | (none) | ACL user name; with `iam`, the ElastiCache user id (required) |
//! | `REDIS_PASSWORD` | (none) | the password / AUTH token for `REDIS_AUTH=password`; never logged |
//! | `REDIS_CA_CERT` | (none) | a PEM file path or PEM text of the CA(s) to trust for `rediss://` instead of the public web PKI roots |
//! | `REDIS_IAM_CACHE_NAME` | (none) | with `iam`: the ElastiCache replication group id or serverless cache name, or the MemoryDB cluster name (required) |
//! | `REDIS_IAM_SERVICE` | `auto` | with `iam`: `elasticache` or `memorydb` (the token's SigV4 service); `auto`: `memorydb` when the URL host contains `.memorydb.` |
//! | `REDIS_IAM_SERVERLESS` | `auto` | with `iam`: `true` for a serverless cache (`ResourceType=ServerlessCache`); `auto`: the URL host contains `.serverless.` |
//! | `HONGBAO_KEY_PREFIX` | `hb` | first segment of every key |
//! | `HONGBAO_AUTH_MODE` | `jwt` | `jwt` (claim `sub`) or `header` (`x-user-id`, local development only) |
//! | `HONGBAO_MAX_COUNT` | `10000` | most shares in one packet |
//! | `HONGBAO_MAX_TOTAL_CENTS` | `20000` | largest packet total, cents |
//! | `HONGBAO_GRAB_RATE_LIMIT` | `10` | grab attempts allowed per user and packet per window (0 = off) |
//! | `HONGBAO_GRAB_RATE_WINDOW_MS` | `1000` | rate-limit window, milliseconds |
//! | `HONGBAO_RECLAIM_BATCH` | `500` | due packets one reclaim step reads from the index (`>= 1`); a run takes batches until nothing is due or its time is up |
//! | `HONGBAO_RECLAIM_LOCK_TTL_MS` | `55000` | reclaim lock lifetime, milliseconds (`>= 1000`); a run stops taking batches 5 s before it |
//! | `HONGBAO_RETENTION_SECS` | `604800` | how long a settled packet's records are kept, seconds (`>= HONGBAO_IDEMPOTENCY_TTL_SECS`) |
//! | `HONGBAO_IDEMPOTENCY_TTL_SECS` | `86400` | how long an `Idempotency-Key` of create-packet is remembered, seconds (`>= 1`) |
//! | `HONGBAO_DEPOSIT_DEDUP_SECS` | `2592000` | how long a deposit `reference` is remembered, seconds (`>= 1`) |
//! | `HONGBAO_MAX_BALANCE_CENTS` | `10000000000000` | largest balance a deposit may produce, cents (`1..=10^15`); over it: 409 `balance_limit` |
//! | `HONGBAO_DEPOSIT_PRINCIPALS` | (none) | comma-separated IAM `userArn`s allowed to deposit; an entry ending in `*` is a prefix. Unset: every deposit is refused (403) |
//! | `HONGBAO_ORDER_CODE_TZ` | `Asia/Shanghai` | IANA time zone whose local date is the order codes' business day |
//! | `HONGBAO_ORDER_CODE_DIGITS` | `5` | width of an order code's random suffix, `5..=7` digits: `9 * 10^(digits - 1)` codes a day |
//! | `HONGBAO_VOTE_SITE` | `news` | the voting site's name, 1 to 32 of `[a-z0-9-]`: its keys' hash tag is `{vote:<site>}` |
//! | `HONGBAO_VOTE_RATE_LIMIT` | `30` | vote attempts allowed per user (on the whole site) per window (0 = off) |
//! | `HONGBAO_VOTE_RATE_WINDOW_MS` | `60000` | vote rate-limit window, milliseconds |
//! | `HONGBAO_VOTE_GROUP_CACHE_SECS` | `60` | how long a group's article ranking is cached, seconds |

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

/// The highest `HONGBAO_MAX_BALANCE_CENTS` accepted: 10^15 cents, a safe distance below
/// 2^53 (the largest integer a Lua script's numbers hold exactly), so claim credits and
/// refunds on top of a full balance stay exact.
pub const MAX_BALANCE_LIMIT_CENTS: i64 = 1_000_000_000_000_000;

/// The IAM callers allowed to deposit: exact `userArn`s, or prefixes (entries that end in `*`,
/// e.g. `arn:aws:sts::123456789012:assumed-role/payments/*`). Empty: nobody.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DepositPrincipals {
    entries: Vec<String>,
}

impl DepositPrincipals {
    /// Parses a comma-separated list; blanks around entries are ignored.
    ///
    /// # Errors
    /// A reason when an entry is empty, is a bare `*`, or has a `*` anywhere but at its end.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for raw in list.split(',') {
            let e = raw.trim();
            if e.is_empty() {
                return Err("an entry is empty".into());
            }
            let stem = e.strip_suffix('*').unwrap_or(e);
            if stem.is_empty() || stem.contains('*') {
                return Err(format!(
                    "entry {e:?}: `*` may only end an entry that names an ARN prefix"
                ));
            }
            entries.push(e.to_string());
        }
        Ok(DepositPrincipals { entries })
    }

    /// Whether no principal is allowed (the variable is unset).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `user_arn` matches an entry exactly, or starts with an entry's text before its
    /// trailing `*`.
    pub fn allows(&self, user_arn: &str) -> bool {
        self.entries.iter().any(|e| match e.strip_suffix('*') {
            Some(prefix) => user_arn.starts_with(prefix),
            None => user_arn == e,
        })
    }
}

/// Settings of every hongbao function. Build with [`Config::from_env`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Redis connection URL; for a cluster, any node's (the client discovers the rest).
    pub redis_url: String,
    /// Use the cluster client (required for ElastiCache Serverless and Redis Cluster).
    pub redis_cluster: bool,
    /// `REDIS_CLUSTER=auto` (the default): when `redis_cluster` is false, ask the server at
    /// connect time (`CLUSTER INFO`) whether it is a cluster. `Config { redis_cluster: true, .. }`
    /// always uses the cluster client.
    pub redis_cluster_auto: bool,
    /// Redis authentication and TLS trust (`REDIS_AUTH`, `REDIS_USERNAME`, `REDIS_PASSWORD`,
    /// `REDIS_CA_CERT`, `REDIS_IAM_*`); its `Debug` never shows the password.
    pub redis_auth: crate::auth::RedisAuth,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time to wait for one reply; past it the request answers 503.
    pub response_timeout: Duration,
    /// Replicas that must acknowledge (`WAIT`) every money write before it is answered
    /// (`REDIS_WAIT_REPLICAS`; 0: off).
    pub wait_replicas: u32,
    /// Milliseconds one `WAIT` may take (`REDIS_WAIT_TIMEOUT_MS`).
    pub wait_timeout_ms: u64,
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
    /// Largest balance a deposit may produce, cents (`HONGBAO_MAX_BALANCE_CENTS`, at most
    /// [`MAX_BALANCE_LIMIT_CENTS`]). Claim credits and refunds are never refused: they move
    /// money that already exists, and refusing them would strand it.
    pub max_balance_cents: i64,
    /// IAM principals (`requestContext.authorizer.iam.userArn`) allowed to call
    /// `POST /wallet/deposits` (`HONGBAO_DEPOSIT_PRINCIPALS`); see [`DepositPrincipals`].
    pub deposit_principals: DepositPrincipals,
    /// IANA time zone of the order codes' business day (`HONGBAO_ORDER_CODE_TZ`).
    pub order_code_tz: chrono_tz::Tz,
    /// Digits of an order code's random suffix, `5..=7` (`HONGBAO_ORDER_CODE_DIGITS`).
    pub order_code_digits: u32,
    /// The voting site's name (`[a-z0-9-]`, 1 to 32 characters); every key of the site carries
    /// the hash tag `{vote:<site>}` (see [`crate::voting`]).
    pub vote_site: String,
    /// Vote attempts per user on the whole site per window; 0 disables the limit.
    pub vote_rate_limit: u32,
    /// Vote rate-limit window, milliseconds.
    pub vote_rate_window_ms: u64,
    /// Seconds a group's ranking (the `ZINTERSTORE` result) is cached: 60 in the book.
    pub vote_group_cache_secs: u64,
    /// Test clock: seconds added to Redis `TIME` by the voting scripts. Never read from the
    /// environment ([`Config::from_env`] and [`Config::from_lookup`] always set 0), so only code
    /// that builds a `Config` itself (the integration tests) can move the voting clock; no
    /// request can. See [`crate::voting`].
    pub vote_clock_offset_secs: i64,
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
            redis_cluster: crate::auth::cluster_setting(&lookup)? == Some(true),
            redis_cluster_auto: crate::auth::cluster_setting(&lookup)?.is_none(),
            redis_auth: crate::auth::RedisAuth::from_lookup(&lookup)?,
            connect_timeout: Duration::from_millis(get(&lookup, "REDIS_CONNECT_TIMEOUT_MS", 1000)?),
            response_timeout: Duration::from_millis(get(
                &lookup,
                "REDIS_RESPONSE_TIMEOUT_MS",
                1000,
            )?),
            wait_replicas: get(&lookup, "REDIS_WAIT_REPLICAS", 0)?,
            wait_timeout_ms: get(&lookup, "REDIS_WAIT_TIMEOUT_MS", 100)?,
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
            max_balance_cents: get(&lookup, "HONGBAO_MAX_BALANCE_CENTS", 10_000_000_000_000)?,
            deposit_principals: match lookup("HONGBAO_DEPOSIT_PRINCIPALS") {
                Some(v) if !v.trim().is_empty() => {
                    DepositPrincipals::parse(&v).map_err(|reason| ConfigError {
                        name: "HONGBAO_DEPOSIT_PRINCIPALS",
                        value: v.clone(),
                        reason,
                    })?
                }
                _ => DepositPrincipals::default(),
            },
            order_code_tz: get(&lookup, "HONGBAO_ORDER_CODE_TZ", chrono_tz::Asia::Shanghai)?,
            order_code_digits: get(&lookup, "HONGBAO_ORDER_CODE_DIGITS", 5)?,
            vote_site: get(&lookup, "HONGBAO_VOTE_SITE", "news".to_string())?,
            vote_rate_limit: get(&lookup, "HONGBAO_VOTE_RATE_LIMIT", 30)?,
            vote_rate_window_ms: get(&lookup, "HONGBAO_VOTE_RATE_WINDOW_MS", 60_000)?,
            vote_group_cache_secs: get(&lookup, "HONGBAO_VOTE_GROUP_CACHE_SECS", 60)?,
            vote_clock_offset_secs: 0,
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
        let positive: [(&'static str, u64); 5] = [
            ("REDIS_WAIT_TIMEOUT_MS", cfg.wait_timeout_ms),
            ("HONGBAO_IDEMPOTENCY_TTL_SECS", cfg.idempotency_ttl_secs),
            ("HONGBAO_DEPOSIT_DEDUP_SECS", cfg.deposit_dedup_secs),
            ("HONGBAO_RECLAIM_BATCH", cfg.reclaim_batch as u64),
            ("HONGBAO_GRAB_RATE_WINDOW_MS", cfg.grab_rate_window_ms),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ConfigError {
                    name,
                    value: "0".into(),
                    reason: "must be at least 1".into(),
                });
            }
        }
        if cfg.reclaim_lock_ttl_ms < 1000 {
            return Err(ConfigError {
                name: "HONGBAO_RECLAIM_LOCK_TTL_MS",
                value: cfg.reclaim_lock_ttl_ms.to_string(),
                reason: "must be at least 1000 (one second)".into(),
            });
        }
        if cfg.retention_secs < cfg.idempotency_ttl_secs {
            return Err(ConfigError {
                name: "HONGBAO_RETENTION_SECS",
                value: cfg.retention_secs.to_string(),
                reason: format!(
                    "must be at least HONGBAO_IDEMPOTENCY_TTL_SECS ({}): a retried create must \
                     find the packet its Idempotency-Key names",
                    cfg.idempotency_ttl_secs
                ),
            });
        }
        if !(1..=MAX_BALANCE_LIMIT_CENTS).contains(&cfg.max_balance_cents) {
            return Err(ConfigError {
                name: "HONGBAO_MAX_BALANCE_CENTS",
                value: cfg.max_balance_cents.to_string(),
                reason: format!("must be 1..={MAX_BALANCE_LIMIT_CENTS}"),
            });
        }
        for (name, value) in [
            ("REDIS_CONNECT_TIMEOUT_MS", cfg.connect_timeout),
            ("REDIS_RESPONSE_TIMEOUT_MS", cfg.response_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError {
                    name,
                    value: "0".into(),
                    reason: "must be at least 1".into(),
                });
            }
        }
        if !crate::voting::is_site_name(&cfg.vote_site) {
            return Err(ConfigError {
                name: "HONGBAO_VOTE_SITE",
                value: cfg.vote_site,
                reason: "must be 1 to 32 characters of [a-z0-9-]".into(),
            });
        }
        if cfg.vote_rate_window_ms == 0 {
            return Err(ConfigError {
                name: "HONGBAO_VOTE_RATE_WINDOW_MS",
                value: "0".into(),
                reason: "must be positive".into(),
            });
        }
        if cfg.vote_group_cache_secs == 0 {
            return Err(ConfigError {
                name: "HONGBAO_VOTE_GROUP_CACHE_SECS",
                value: "0".into(),
                reason: "must be positive".into(),
            });
        }
        if !crate::order_codes::DIGITS.contains(&cfg.order_code_digits) {
            return Err(ConfigError {
                name: "HONGBAO_ORDER_CODE_DIGITS",
                value: cfg.order_code_digits.to_string(),
                reason: "must be 5, 6 or 7".into(),
            });
        }
        Ok(cfg)
    }

    /// Milliseconds a claim's credit record is kept once the claim is done (claim step 4
    /// un-pins it; until then it is kept for ever): `HONGBAO_IDEMPOTENCY_TTL_SECS`, far longer
    /// than any request that saw the claim pending can still be running (a Lambda invocation
    /// lasts at most 15 minutes).
    pub fn claim_record_keep_ms(&self) -> u64 {
        self.idempotency_ttl_secs * 1000
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
        let err =
            Config::from_lookup(|n| (n == "REDIS_CLUSTER").then(|| "yes".into())).unwrap_err();
        assert_eq!(err.name, "REDIS_CLUSTER");
        assert!(
            Config::from_lookup(|n| (n == "HONGBAO_AUTH_MODE").then(|| "none".into())).is_err()
        );
        assert!(
            Config::from_lookup(|n| (n == "HONGBAO_KEY_PREFIX").then(|| "a{b".into())).is_err()
        );
        let c =
            Config::from_lookup(|n| (n == "HONGBAO_AUTH_MODE").then(|| "header".into())).unwrap();
        assert_eq!(c.auth_mode, AuthMode::Header);
    }

    #[test]
    fn numeric_settings_are_validated_and_named() {
        for (name, value) in [
            ("HONGBAO_RECLAIM_BATCH", "0"),
            ("HONGBAO_RECLAIM_LOCK_TTL_MS", "0"),
            ("HONGBAO_RECLAIM_LOCK_TTL_MS", "999"),
            ("HONGBAO_IDEMPOTENCY_TTL_SECS", "0"),
            ("HONGBAO_DEPOSIT_DEDUP_SECS", "0"),
            ("HONGBAO_RETENTION_SECS", "3600"),
            ("HONGBAO_MAX_BALANCE_CENTS", "0"),
            ("HONGBAO_MAX_BALANCE_CENTS", "1000000000000001"),
            ("HONGBAO_GRAB_RATE_WINDOW_MS", "0"),
            ("REDIS_RESPONSE_TIMEOUT_MS", "0"),
            ("REDIS_WAIT_TIMEOUT_MS", "0"),
            ("REDIS_WAIT_REPLICAS", "-1"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "arn:a,,arn:b"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "*"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "arn:*:x"),
        ] {
            let err = Config::from_lookup(|n| (n == name).then(|| value.into())).unwrap_err();
            assert_eq!(err.name, name, "{name}={value}");
        }
        let c = Config::from_lookup(|n| match n {
            "HONGBAO_RETENTION_SECS" => Some("86400".into()),
            "HONGBAO_MAX_BALANCE_CENTS" => Some("1000000000000000".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.max_balance_cents, MAX_BALANCE_LIMIT_CENTS);
        assert_eq!(Config::default().max_balance_cents, 10_000_000_000_000);
    }

    #[test]
    fn deposit_principals() {
        assert!(Config::default().deposit_principals.is_empty());
        assert!(!Config::default().deposit_principals.allows(""));
        let p = DepositPrincipals::parse(
            "arn:aws:iam::123456789012:user/ops, arn:aws:sts::123456789012:assumed-role/payments/*",
        )
        .unwrap();
        assert!(p.allows("arn:aws:iam::123456789012:user/ops"));
        assert!(!p.allows("arn:aws:iam::123456789012:user/ops2"));
        assert!(p.allows("arn:aws:sts::123456789012:assumed-role/payments/backend-1"));
        assert!(!p.allows("arn:aws:sts::123456789012:assumed-role/paymentsX/backend-1"));
        assert!(!p.allows("arn:aws:sts::123456789012:assumed-role/other/x"));
    }

    #[test]
    fn order_code_settings() {
        let c = Config::default();
        assert_eq!(c.order_code_tz, chrono_tz::Asia::Shanghai);
        assert_eq!(c.order_code_digits, 5);
        let c = Config::from_lookup(|n| match n {
            "HONGBAO_ORDER_CODE_TZ" => Some("America/New_York".into()),
            "HONGBAO_ORDER_CODE_DIGITS" => Some("7".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (c.order_code_tz, c.order_code_digits),
            (chrono_tz::America::New_York, 7)
        );
        for (name, value) in [
            ("HONGBAO_ORDER_CODE_TZ", "Mars/Olympus_Mons"),
            ("HONGBAO_ORDER_CODE_TZ", "+08:00"),
            ("HONGBAO_ORDER_CODE_DIGITS", "4"),
            ("HONGBAO_ORDER_CODE_DIGITS", "8"),
        ] {
            let err = Config::from_lookup(|n| (n == name).then(|| value.into())).unwrap_err();
            assert_eq!(err.name, name, "{value}");
        }
    }
}
