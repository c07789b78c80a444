//! What a [`Store`](super::Store) is built from: the connection settings (`REDIS_*`,
//! `HONGBAO_KEY_PREFIX`) and the rules of the features one function serves.
//!
//! [`Config::load`] reads the connection settings and only the listed [`Feature`]s' settings;
//! the other features keep their defaults and are never read, so a function is never stopped
//! by a setting it does not use. Every variable is declared once, as a
//! [`Setting`], next to the code that reads it; the configuration
//! table of `docs/configuration.md` is checked against them (`crate::lambda::all_settings`).

use std::time::Duration;

use crate::coupons::rules::CouponRules;
use crate::domain::journal::ExportRules;
use crate::domain::settings::{defaults, Setting};
use crate::domain::{ConfigError, Lookup};
use crate::history::rules::HistoryRules;
use crate::merchants::rules::MerchantRules;
use crate::order_codes::rules::OrderCodeRules;
use crate::packets::rules::{PacketRules, ReclaimRules};
use crate::voting::rules::VotingRules;
use crate::wallet::rules::WalletRules;

use super::nodes;
use super::redis_auth::{self, AuthKind, RedisAuth};

/// `REDIS_URL`.
pub const REDIS_URL: Setting = Setting {
    name: "REDIS_URL",
    default: "redis://127.0.0.1:6379",
    meaning: "connection URL (`rediss://` for TLS); for a cluster, any node, or several nodes comma-separated so that the client starts from any live one (`rediss://a:6379,rediss://b:6379`: full URLs, one scheme; not with `REDIS_CLUSTER=false`)",
};
/// `REDIS_CLUSTER`.
pub const REDIS_CLUSTER: Setting = Setting {
    name: "REDIS_CLUSTER",
    default: "auto",
    meaning: "`true`: cluster client; `false`: one server; `auto`: ask the server (`CLUSTER INFO`) at connect",
};
/// `REDIS_CONNECT_TIMEOUT_MS`.
pub const REDIS_CONNECT_TIMEOUT_MS: Setting = Setting {
    name: "REDIS_CONNECT_TIMEOUT_MS",
    default: "1000",
    meaning: "ms to connect (TCP + TLS + AUTH), ≥ 1",
};
/// `REDIS_RESPONSE_TIMEOUT_MS`.
pub const REDIS_RESPONSE_TIMEOUT_MS: Setting = Setting {
    name: "REDIS_RESPONSE_TIMEOUT_MS",
    default: "1000",
    meaning: "ms to wait for one reply, then 503 (cluster retries fit within 2×), ≥ 1",
};
/// `REDIS_WAIT_REPLICAS`.
pub const REDIS_WAIT_REPLICAS: Setting = Setting {
    name: "REDIS_WAIT_REPLICAS",
    default: "0",
    meaning: "replicas that must acknowledge (`WAIT`) every money write before it is answered; `0`: off. See \"What each deployment guarantees\"",
};
/// `REDIS_WAIT_TIMEOUT_MS`.
pub const REDIS_WAIT_TIMEOUT_MS: Setting = Setting {
    name: "REDIS_WAIT_TIMEOUT_MS",
    default: "100",
    meaning: "ms one `WAIT` may take (≥ 1); fewer acknowledgements in time: 503 `unavailable` + `Retry-After`",
};
/// `HONGBAO_KEY_PREFIX`.
pub const KEY_PREFIX: Setting = Setting {
    name: "HONGBAO_KEY_PREFIX",
    default: "hb",
    meaning: "first segment of every key (no braces)",
};

/// The connection settings, in the order of docs/configuration.md (every function reads them).
pub const SETTINGS: &[Setting] = &[
    REDIS_URL,
    REDIS_CLUSTER,
    REDIS_CONNECT_TIMEOUT_MS,
    REDIS_RESPONSE_TIMEOUT_MS,
    REDIS_WAIT_REPLICAS,
    REDIS_WAIT_TIMEOUT_MS,
    redis_auth::REDIS_AUTH,
    redis_auth::REDIS_USERNAME,
    redis_auth::REDIS_PASSWORD,
    redis_auth::REDIS_PASSWORD_SECRET_ARN,
    redis_auth::REDIS_CA_CERT,
    redis_auth::REDIS_IAM_CACHE_NAME,
    redis_auth::REDIS_IAM_SERVICE,
    redis_auth::REDIS_IAM_SERVERLESS,
    redis_auth::AWS_REGION,
    KEY_PREFIX,
];

/// A feature whose settings a function reads (see [`Config::load`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// [`PacketRules`] and [`HistoryRules`]: create-packet, grab, claim, reclaim-cron.
    Packets,
    /// [`ReclaimRules`]: reclaim-cron.
    Reclaim,
    /// [`WalletRules`]: wallet.
    Wallet,
    /// [`OrderCodeRules`]: next-order-code.
    OrderCodes,
    /// [`VotingRules`]: vote.
    Voting,
    /// [`ExportRules`]: ledger-export.
    LedgerExport,
    /// [`CouponRules`]: coupon.
    Coupons,
    /// [`MerchantRules`]: merchant.
    Merchants,
}

impl Feature {
    /// The feature's name in `functions.json` (`packets`, `order_codes`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Feature::Packets => "packets",
            Feature::Reclaim => "reclaim",
            Feature::Wallet => "wallet",
            Feature::OrderCodes => "order_codes",
            Feature::Voting => "voting",
            Feature::LedgerExport => "ledger_export",
            Feature::Coupons => "coupons",
            Feature::Merchants => "merchants",
        }
    }
}

/// Everything a [`Store`](super::Store) needs: how to connect, and the rules of the features
/// its function serves (the others at their defaults).
#[derive(Debug, Clone)]
pub struct Config {
    /// Redis connection URL; for a cluster, any node's (the client discovers the rest), or
    /// several nodes' URLs, comma-separated, so that the client starts from any live one (each
    /// entry a full URL, all with the same scheme; see `REDIS_URL`'s rules at [`Config::load`]).
    pub redis_url: String,
    /// Use the cluster client (required for ElastiCache Serverless and Redis Cluster).
    pub redis_cluster: bool,
    /// `REDIS_CLUSTER=auto` (the default): when `redis_cluster` is false, ask the server at
    /// connect time (`CLUSTER INFO`) whether it is a cluster. `Config { redis_cluster: true, .. }`
    /// always uses the cluster client.
    pub redis_cluster_auto: bool,
    /// Redis authentication and TLS trust (`REDIS_AUTH`, `REDIS_USERNAME`, `REDIS_PASSWORD`,
    /// `REDIS_CA_CERT`, `REDIS_IAM_*`); its `Debug` never shows the password.
    pub redis_auth: RedisAuth,
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
    /// Red-packet limits ([`Feature::Packets`]).
    pub packets: PacketRules,
    /// Sent/received history: retention and business year ([`Feature::Packets`]).
    pub history: HistoryRules,
    /// Reclaim batches and lock ([`Feature::Reclaim`]).
    pub reclaim: ReclaimRules,
    /// Deposit rules ([`Feature::Wallet`]).
    pub wallet: WalletRules,
    /// Order-code zone and width ([`Feature::OrderCodes`]).
    pub order_codes: OrderCodeRules,
    /// The voting site ([`Feature::Voting`]).
    pub voting: VotingRules,
    /// The event bus and the export lock ([`Feature::LedgerExport`]).
    pub ledger_export: ExportRules,
    /// Coupon principals and the visit limit ([`Feature::Coupons`]).
    pub coupons: CouponRules,
    /// Who may call the merchant routes ([`Feature::Merchants`]).
    pub merchants: MerchantRules,
}

impl Default for Config {
    /// Every setting at its default: a local `redis-server` on port 6379.
    fn default() -> Self {
        Config::load(&defaults(), &[]).expect("the defaults are valid")
    }
}

impl Config {
    /// Reads the connection settings and the settings of `features` from the process
    /// environment.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first variable that is set to a value that cannot be used.
    pub fn from_env(features: &[Feature]) -> Result<Self, ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        Self::load(&Lookup::new(&env), features)
    }

    /// Reads the connection settings and every feature's settings but ledger-export's (its bus
    /// has no default) through `lookup` (a variable name to its value), for tests and tools.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        use Feature::*;
        Self::load(
            &Lookup::new(&lookup),
            &[
                Packets, Reclaim, Wallet, OrderCodes, Voting, Coupons, Merchants,
            ],
        )
    }

    /// Reads the connection settings and the settings of `features` through `lookup`; the
    /// other features' settings are not read and keep their defaults.
    ///
    /// `REDIS_URL` is one URL or a comma-separated list of a cluster's nodes: every entry a full
    /// URL (no bare `host:port`, no empty entry), all `redis://` or all `rediss://`, all with
    /// the same user, password and database; a list needs the cluster client (`REDIS_CLUSTER`
    /// `true` or `auto`).
    ///
    /// # Errors
    /// [`ConfigError`] naming the first variable that does not parse or breaks a bound (the
    /// value shown with any password redacted).
    pub fn load(lookup: &Lookup<'_>, features: &[Feature]) -> Result<Self, ConfigError> {
        let cluster = match lookup.get::<String>(&REDIS_CLUSTER)?.as_str() {
            "auto" => None,
            "true" => Some(true),
            "false" => Some(false),
            other => {
                return Err(ConfigError::new(
                    &REDIS_CLUSTER,
                    other,
                    "expected `true`, `false` or `auto`",
                ))
            }
        };
        let redis_url: String = lookup.get(&REDIS_URL)?;
        let nodes = nodes::parse(&redis_url)
            .map_err(|why| ConfigError::new(&REDIS_URL, &redis_url, why))?;
        if nodes.len() > 1 && cluster == Some(false) {
            return Err(ConfigError::new(
                &REDIS_CLUSTER,
                "false",
                format!(
                    "REDIS_URL lists {} nodes, and a node list needs the cluster client \
                     (REDIS_CLUSTER=true or auto)",
                    nodes.len()
                ),
            ));
        }
        // A node list has one scheme, so its first entry says whether it is TLS.
        let tls = redis_url.starts_with("rediss://");
        let hosts: Vec<String> = nodes
            .iter()
            .filter_map(|node| nodes::host(node).map(str::to_ascii_lowercase))
            .collect();
        let redis_auth = RedisAuth::load(lookup, &hosts, tls)?;
        if redis_auth.kind == AuthKind::Iam && !tls {
            return Err(ConfigError::new(
                &REDIS_URL,
                &redis_url,
                "REDIS_AUTH=iam needs a rediss:// (TLS) URL",
            ));
        }
        let key_prefix: String = lookup.get(&KEY_PREFIX)?;
        if key_prefix.is_empty() || key_prefix.contains(['{', '}']) {
            return Err(ConfigError::new(
                &KEY_PREFIX,
                key_prefix,
                "must be non-empty and contain no braces",
            ));
        }
        let has = |f: Feature| features.contains(&f);
        Ok(Config {
            redis_url,
            redis_cluster: cluster == Some(true),
            redis_cluster_auto: cluster.is_none(),
            redis_auth,
            connect_timeout: Duration::from_millis(lookup.at_least(&REDIS_CONNECT_TIMEOUT_MS, 1)?),
            response_timeout: Duration::from_millis(
                lookup.at_least(&REDIS_RESPONSE_TIMEOUT_MS, 1)?,
            ),
            wait_replicas: lookup.get(&REDIS_WAIT_REPLICAS)?,
            wait_timeout_ms: lookup.at_least(&REDIS_WAIT_TIMEOUT_MS, 1)?,
            key_prefix,
            packets: if has(Feature::Packets) {
                PacketRules::from_lookup(lookup)?
            } else {
                PacketRules::default()
            },
            history: if has(Feature::Packets) {
                HistoryRules::from_lookup(lookup)?
            } else {
                HistoryRules::default()
            },
            reclaim: if has(Feature::Reclaim) {
                ReclaimRules::from_lookup(lookup)?
            } else {
                ReclaimRules::default()
            },
            wallet: if has(Feature::Wallet) {
                WalletRules::from_lookup(lookup)?
            } else {
                WalletRules::default()
            },
            order_codes: if has(Feature::OrderCodes) {
                OrderCodeRules::from_lookup(lookup)?
            } else {
                OrderCodeRules::default()
            },
            voting: if has(Feature::Voting) {
                VotingRules::from_lookup(lookup)?
            } else {
                VotingRules::default()
            },
            ledger_export: if has(Feature::LedgerExport) {
                ExportRules::from_lookup(lookup)?
            } else {
                ExportRules::default()
            },
            coupons: if has(Feature::Coupons) {
                CouponRules::from_lookup(lookup)?
            } else {
                CouponRules::default()
            },
            merchants: if has(Feature::Merchants) {
                MerchantRules::from_lookup(lookup)?
            } else {
                MerchantRules::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &'static str, value: &'static str) -> impl Fn(&str) -> Option<String> {
        move |n: &str| (n == name).then(|| value.to_string())
    }

    #[test]
    fn defaults() {
        let c = Config::default();
        assert_eq!(c.redis_url, "redis://127.0.0.1:6379");
        assert!(!c.redis_cluster && c.redis_cluster_auto);
        assert_eq!((c.wait_replicas, c.wait_timeout_ms), (0, 100));
        assert_eq!(c.key_prefix, "hb");
        assert_eq!(c.packets.grab_rate_limit, 10);
    }

    #[test]
    fn bad_values_are_named() {
        for (name, value) in [
            ("REDIS_CLUSTER", "yes"),
            ("HONGBAO_KEY_PREFIX", "a{b"),
            ("REDIS_RESPONSE_TIMEOUT_MS", "0"),
            ("REDIS_CONNECT_TIMEOUT_MS", "0"),
            ("REDIS_WAIT_TIMEOUT_MS", "0"),
            ("REDIS_WAIT_REPLICAS", "-1"),
            ("HONGBAO_MAX_BALANCE_CENTS", "0"),
            ("HONGBAO_MAX_BALANCE_CENTS", "1000000000000001"),
            ("HONGBAO_DEPOSIT_DEDUP_SECS", "0"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "arn:a,,arn:b"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "*"),
            ("HONGBAO_DEPOSIT_PRINCIPALS", "arn:*:x"),
            ("HONGBAO_VOTE_SITE", "News"),
            ("HONGBAO_VOTE_SITE", "a{b}"),
            ("HONGBAO_VOTE_RATE_WINDOW_MS", "0"),
        ] {
            let err = Config::from_lookup(one(name, value)).unwrap_err();
            assert_eq!(err.name, name, "{name}={value}");
        }
        let c = Config::from_lookup(one("HONGBAO_MAX_BALANCE_CENTS", "1000000000000000")).unwrap();
        assert_eq!(c.wallet.max_balance_cents, 1_000_000_000_000_000);
        let c = Config::from_lookup(one("HONGBAO_VOTE_SITE", "my-site-2")).unwrap();
        assert_eq!(c.voting.site, "my-site-2");
    }

    /// `REDIS_URL` may list a cluster's nodes; a list that cannot be used stops the
    /// function at settings load, naming the variable, and never shows a password.
    #[test]
    fn redis_url_node_lists() {
        fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        }
        let list = "rediss://a.example:6379,rediss://b.example:6379";
        let c = Config::from_lookup(one("REDIS_URL", list)).unwrap();
        assert_eq!(c.redis_url, list);
        assert!(c.redis_cluster_auto);
        let c =
            Config::from_lookup(vars(&[("REDIS_URL", list), ("REDIS_CLUSTER", "true")])).unwrap();
        assert!(c.redis_cluster);
        // One URL still works with every REDIS_CLUSTER value.
        Config::from_lookup(vars(&[
            ("REDIS_URL", "redis://h:6379"),
            ("REDIS_CLUSTER", "false"),
        ]))
        .unwrap();

        for (value, reason) in [
            ("redis://a:6379,not a url", "entry 2 of 2 is not a URL"),
            ("redis://a:6379,b:6379", "not a bare host:port"),
            ("redis://a:6379,,redis://b:6379", "entry 2 of 3 is empty"),
            ("redis://a:6379,", "entry 2 of 2 is empty"),
            (
                "redis://a:6379,redis://b:x",
                "entry 2 of 2 is not a valid URL",
            ),
            (
                "rediss://a:6379,redis://b:6379",
                "all `redis://` or all `rediss://`",
            ),
            (
                "redis://a:6379,rediss://b:6379",
                "all `redis://` or all `rediss://`",
            ),
            ("not-a-url", "the URL is not a URL"),
        ] {
            let err = Config::from_lookup(one("REDIS_URL", value)).unwrap_err();
            assert_eq!(err.name, "REDIS_URL", "{value}");
            assert!(err.reason.contains(reason), "{value}: {err}");
        }

        let err = Config::from_lookup(vars(&[("REDIS_URL", list), ("REDIS_CLUSTER", "false")]))
            .unwrap_err();
        assert_eq!(err.name, "REDIS_CLUSTER");
        assert!(
            err.to_string()
                .contains("a node list needs the cluster client"),
            "{err}"
        );

        // Passwords in the entries: never in the error, whatever is wrong.
        for value in [
            "redis://app:hunter2@a:6379,rediss://app:hunter2@b:6379",
            "redis://app:hunter2@a:6379,redis://app:swordfish@b:6379",
            "redis://app:hunter2@a:6379,,redis://app:swordfish@b:6379",
            "redis://app:hunter2@a:6379,b:6379,redis://app:swordfish@c:6379",
            "redis://app:hunter2,swordfish@a:6379",
        ] {
            let err = Config::from_lookup(one("REDIS_URL", value)).unwrap_err();
            assert_eq!(err.name, "REDIS_URL", "{value}");
            for shown in [err.to_string(), format!("{err:?}")] {
                assert!(
                    !shown.contains("hunter2") && !shown.contains("swordfish"),
                    "{shown}"
                );
            }
        }
        let err = Config::from_lookup(vars(&[
            (
                "REDIS_URL",
                "redis://app:hunter2@a:6379,redis://app:hunter2@b:6379",
            ),
            ("REDIS_CLUSTER", "false"),
        ]))
        .unwrap_err();
        assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
    }

    /// A function reads only its features' settings: a broken voting or order-code setting
    /// does not stop the red-packet functions, and stops the function that uses it.
    #[test]
    fn a_function_reads_only_its_features() {
        let broken = |n: &str| match n {
            "HONGBAO_VOTE_SITE" => Some("Not A Site".to_string()),
            "HONGBAO_ORDER_CODE_DIGITS" => Some("9".to_string()),
            "HONGBAO_MAX_COUNT" => Some("5".to_string()),
            _ => None,
        };
        let lookup = Lookup::new(&broken);
        let grab = Config::load(&lookup, &[Feature::Packets]).unwrap();
        assert_eq!(grab.packets.max_count, 5);
        assert_eq!(grab.voting, VotingRules::default());
        let err = Config::load(&lookup, &[Feature::Voting]).unwrap_err();
        assert_eq!(err.name, "HONGBAO_VOTE_SITE");
        let err = Config::load(&lookup, &[Feature::OrderCodes]).unwrap_err();
        assert_eq!(err.name, "HONGBAO_ORDER_CODE_DIGITS");
        // Settings of an unread feature keep their defaults.
        assert_eq!(
            Config::load(&lookup, &[]).unwrap().packets.max_count,
            10_000
        );
    }
}
