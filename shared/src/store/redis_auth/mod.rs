//! Redis authentication and TLS trust, and their settings: `REDIS_AUTH=none|password|iam`,
//! `REDIS_USERNAME`, `REDIS_PASSWORD`, `REDIS_CA_CERT`, `REDIS_IAM_*`, `AWS_REGION`.
//!
//! * `none`: no `AUTH` (a local `redis-server`, or a cache reachable only from the VPC).
//! * `password`: `REDIS_PASSWORD` (an ElastiCache AUTH token or an ACL user's password), or
//!   the Secrets Manager secret `REDIS_PASSWORD_SECRET_ARN` names, read at Init. With
//!   `REDIS_USERNAME` it is `AUTH <user> <password>` through the same
//!   [`StreamingCredentialsProvider`](redis::StreamingCredentialsProvider) path as IAM
//!   ([`RedisCredentials`]); without, the classic `AUTH <password>`.
//! * `iam`: ElastiCache or MemoryDB IAM authentication ([`IamTarget`]): the password is a
//!   token ([`iam_auth_token`], in `token.rs`) signed with the function's credentials and
//!   renewed on time ([`RedisCredentials`], in `credentials.rs`).
//!
//! Tokens and passwords are never logged: [`RedisAuth`]'s `Debug` redacts the password, and
//! no error message here contains a token or a password.

use std::fmt;

use super::error::Error;
use crate::domain::settings::{Setting, NO_DEFAULT};
use crate::domain::{ConfigError, Lookup};

mod credentials;
mod token;

pub use credentials::{RedisCredentials, REAUTH_INTERVAL, TOKEN_REUSE};
pub use token::{iam_auth_token, TOKEN_EXPIRY};

/// `REDIS_AUTH`.
pub const REDIS_AUTH: Setting = Setting {
    name: "REDIS_AUTH",
    default: "none",
    meaning: "`none`, `password` or `iam` (ElastiCache or MemoryDB IAM token; needs `rediss://`)",
};
/// `REDIS_USERNAME`.
pub const REDIS_USERNAME: Setting = Setting {
    name: "REDIS_USERNAME",
    default: NO_DEFAULT,
    meaning: "ACL user; with `iam`, the ElastiCache user id (required)",
};
/// `REDIS_PASSWORD`.
pub const REDIS_PASSWORD: Setting = Setting {
    name: "REDIS_PASSWORD",
    default: NO_DEFAULT,
    meaning: "password / AUTH token for `password`; never logged",
};
/// `REDIS_PASSWORD_SECRET_ARN`.
pub const REDIS_PASSWORD_SECRET_ARN: Setting = Setting {
    name: "REDIS_PASSWORD_SECRET_ARN",
    default: NO_DEFAULT,
    meaning: "with `password`, instead of `REDIS_PASSWORD`: the Secrets Manager secret (ARN or name) whose string is the password, read once at Init; the secret is never logged",
};
/// `REDIS_CA_CERT`.
pub const REDIS_CA_CERT: Setting = Setting {
    name: "REDIS_CA_CERT",
    default: NO_DEFAULT,
    meaning:
        "PEM path or PEM text of the CA to trust instead of the public roots (`rediss://` only)",
};
/// `REDIS_IAM_CACHE_NAME`.
pub const REDIS_IAM_CACHE_NAME: Setting = Setting {
    name: "REDIS_IAM_CACHE_NAME",
    default: NO_DEFAULT,
    meaning: "with `iam`: replication group id, serverless cache name or MemoryDB cluster name (required)",
};
/// `REDIS_IAM_SERVICE`.
pub const REDIS_IAM_SERVICE: Setting = Setting {
    name: "REDIS_IAM_SERVICE",
    default: "auto",
    meaning: "with `iam`: `elasticache` or `memorydb` (the token's SigV4 service); `auto`: `memorydb` when the URL's hosts contain `.memorydb.`",
};
/// `REDIS_IAM_SERVERLESS`.
pub const REDIS_IAM_SERVERLESS: Setting = Setting {
    name: "REDIS_IAM_SERVERLESS",
    default: "auto",
    meaning: "with `iam`: `true` adds `ResourceType=ServerlessCache`; `auto`: the URL's hosts contain `.serverless.`",
};
/// `AWS_REGION`.
pub const AWS_REGION: Setting = Setting {
    name: "AWS_REGION",
    default: NO_DEFAULT,
    meaning: "set by Lambda; with `iam`, the region the tokens are signed for (a connect without it: 503 and one error line)",
};

/// Which `AUTH` a connection sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthKind {
    /// No `AUTH`.
    #[default]
    None,
    /// `REDIS_PASSWORD` (with `REDIS_USERNAME` if set).
    Password,
    /// An ElastiCache IAM token for `REDIS_USERNAME`.
    Iam,
}

/// Authentication and TLS trust settings of the Redis connection (part of
/// [`Config`](crate::Config)).
#[derive(Clone, Default)]
pub struct RedisAuth {
    /// `REDIS_AUTH`.
    pub kind: AuthKind,
    /// `REDIS_USERNAME`: the ACL user, or with IAM the ElastiCache user id.
    pub username: Option<String>,
    /// `REDIS_PASSWORD` (never printed by `Debug`), or the string of the secret
    /// `password_secret` names once Init has read it (`hongbao::lambda::init`).
    pub password: Option<String>,
    /// `REDIS_PASSWORD_SECRET_ARN`: the Secrets Manager secret holding the password (ARN or
    /// name), read at Init into `password`.
    pub password_secret: Option<String>,
    /// `REDIS_CA_CERT`: a PEM file path or PEM text; `None` trusts the public web PKI roots
    /// (which ElastiCache's certificates chain to).
    pub ca_cert: Option<String>,
    /// `REDIS_IAM_CACHE_NAME`: the ElastiCache replication group id or serverless cache name,
    /// or the MemoryDB cluster name.
    pub iam_cache_name: Option<String>,
    /// Which service the IAM token is for (`REDIS_IAM_SERVICE`, `REDIS_IAM_SERVERLESS`).
    pub iam_target: IamTarget,
    /// `AWS_REGION`: the region IAM tokens are signed for (Lambda sets it).
    pub region: Option<String>,
}

/// The service an IAM auth token is signed for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IamTarget {
    /// A node-based ElastiCache replication group (service `elasticache`).
    #[default]
    ElastiCache,
    /// An ElastiCache serverless cache (service `elasticache`, `ResourceType=ServerlessCache`).
    ElastiCacheServerless,
    /// A MemoryDB cluster (service `memorydb`, no resource type).
    MemoryDb,
}

impl IamTarget {
    /// The SigV4 signing name.
    pub fn service(self) -> &'static str {
        match self {
            IamTarget::ElastiCache | IamTarget::ElastiCacheServerless => "elasticache",
            IamTarget::MemoryDb => "memorydb",
        }
    }

    /// The `ResourceType` query parameter, if any.
    pub fn resource_type(self) -> Option<&'static str> {
        match self {
            IamTarget::ElastiCacheServerless => Some("ServerlessCache"),
            IamTarget::ElastiCache | IamTarget::MemoryDb => None,
        }
    }
}

impl fmt::Debug for RedisAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisAuth")
            .field("kind", &self.kind)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("password_secret", &self.password_secret)
            .field(
                "ca_cert",
                &self
                    .ca_cert
                    .as_ref()
                    .map(|c| if is_pem(c) { "<pem>" } else { c }),
            )
            .field("iam_cache_name", &self.iam_cache_name)
            .field("iam_target", &self.iam_target)
            .field("region", &self.region)
            .finish()
    }
}

fn is_pem(s: &str) -> bool {
    s.trim_start().starts_with("-----BEGIN")
}

/// One of `allowed` (`setting`'s value, or its default when unset).
fn choice<'v>(
    lookup: &Lookup<'_>,
    setting: &Setting,
    allowed: &[&'v str],
) -> Result<&'v str, ConfigError> {
    let value: String = lookup.get(setting)?;
    allowed
        .iter()
        .find(|a| **a == value)
        .copied()
        .ok_or_else(|| {
            let expected: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
            ConfigError::new(setting, &value, format!("expected {}", expected.join(", ")))
        })
}

impl RedisAuth {
    /// Reads its settings (in [`crate::store::config::SETTINGS`]) through `lookup`, for a
    /// `REDIS_URL` whose nodes are `hosts` (lower case) and whose scheme is `rediss://` when `tls`; the `auto` IAM service and resource
    /// type are derived from the hosts. [`crate::store::Config::load`] calls it, then refuses
    /// `iam` without TLS (a token must never travel in clear text).
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown mode, a missing password / user / cache name, `auto`
    /// hosts that disagree, MemoryDB with serverless, or a CA without `rediss://`.
    pub(crate) fn load(
        lookup: &Lookup<'_>,
        hosts: &[String],
        tls: bool,
    ) -> Result<Self, ConfigError> {
        let kind = match choice(lookup, &REDIS_AUTH, &["none", "password", "iam"])? {
            "password" => AuthKind::Password,
            "iam" => AuthKind::Iam,
            _ => AuthKind::None,
        };
        let username = lookup.raw(&REDIS_USERNAME);
        let password = lookup.secret(&REDIS_PASSWORD);
        let password_secret = lookup.raw(&REDIS_PASSWORD_SECRET_ARN);
        let ca_cert = lookup.raw(&REDIS_CA_CERT);
        let iam_cache_name = lookup.raw(&REDIS_IAM_CACHE_NAME);
        // `auto`: what the hosts say, when they all say the same (a node list mixing a MemoryDB
        // or serverless host with others names no one service).
        let derive = |setting: &Setting, marker: &str| -> Result<bool, ConfigError> {
            let marked = hosts.iter().filter(|h| h.contains(marker)).count();
            if marked == 0 || marked == hosts.len() {
                Ok(marked > 0)
            } else if kind == AuthKind::Iam {
                Err(ConfigError::new(
                    setting,
                    "auto",
                    format!(
                        "{marked} of the {} REDIS_URL hosts contain `{marker}`: they do not \
                         agree, set it",
                        hosts.len()
                    ),
                ))
            } else {
                Ok(false)
            }
        };
        let memorydb = match choice(
            lookup,
            &REDIS_IAM_SERVICE,
            &["auto", "elasticache", "memorydb"],
        )? {
            "elasticache" => false,
            "memorydb" => true,
            _ => derive(&REDIS_IAM_SERVICE, ".memorydb.")?,
        };
        let serverless = match choice(lookup, &REDIS_IAM_SERVERLESS, &["auto", "true", "false"])? {
            "true" => true,
            "false" => false,
            _ => derive(&REDIS_IAM_SERVERLESS, ".serverless.")?,
        };
        let iam_target = match (memorydb, serverless) {
            (true, true) => {
                return Err(ConfigError::new(
                    &REDIS_IAM_SERVERLESS,
                    "true",
                    "MemoryDB has no serverless caches (REDIS_IAM_SERVICE is memorydb)",
                ))
            }
            (true, false) => IamTarget::MemoryDb,
            (false, true) => IamTarget::ElastiCacheServerless,
            (false, false) => IamTarget::ElastiCache,
        };
        match kind {
            AuthKind::None => {}
            AuthKind::Password if password.is_none() && password_secret.is_none() => {
                return Err(ConfigError::new(
                    &REDIS_PASSWORD,
                    "",
                    "required with REDIS_AUTH=password (or REDIS_PASSWORD_SECRET_ARN)",
                ))
            }
            AuthKind::Password if password.is_some() && password_secret.is_some() => {
                return Err(ConfigError::new(
                    &REDIS_PASSWORD_SECRET_ARN,
                    "",
                    "set beside REDIS_PASSWORD: set one of them",
                ))
            }
            AuthKind::Password => {}
            AuthKind::Iam => {
                if username.is_none() {
                    return Err(ConfigError::new(
                        &REDIS_USERNAME,
                        "",
                        "required with REDIS_AUTH=iam (the ElastiCache user id)",
                    ));
                }
                if iam_cache_name.is_none() {
                    return Err(ConfigError::new(
                        &REDIS_IAM_CACHE_NAME,
                        "",
                        "required with REDIS_AUTH=iam",
                    ));
                }
            }
        }
        if ca_cert.is_some() && !tls {
            return Err(ConfigError::new(
                &REDIS_CA_CERT,
                "",
                "set, but REDIS_URL is not rediss://",
            ));
        }
        Ok(RedisAuth {
            kind,
            username,
            password,
            password_secret: password_secret.filter(|_| kind == AuthKind::Password),
            ca_cert,
            iam_cache_name,
            iam_target,
            region: lookup.raw(&AWS_REGION),
        })
    }

    /// The CA bundle to trust, PEM bytes: `REDIS_CA_CERT` itself when it is PEM text, else the
    /// file it names.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the file cannot be read or holds no certificate.
    pub fn ca_pem(&self) -> Result<Option<Vec<u8>>, Error> {
        let Some(ca) = &self.ca_cert else {
            return Ok(None);
        };
        let pem = if is_pem(ca) {
            ca.clone().into_bytes()
        } else {
            std::fs::read(ca.trim()).map_err(|e| {
                Error::Unavailable(format!("REDIS_CA_CERT: cannot read {:?}: {e}", ca.trim()))
            })?
        };
        if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::Unavailable(
                "REDIS_CA_CERT holds no PEM certificate".into(),
            ));
        }
        Ok(Some(pem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    /// The authentication settings as the real loader reads them ([`Config::from_lookup`]).
    fn auth(vars: &[(&str, &str)]) -> Result<RedisAuth, ConfigError> {
        Config::from_lookup(lookup(vars)).map(|c| c.redis_auth)
    }

    #[test]
    fn a_password_may_come_from_its_secret() {
        let vars = [
            ("REDIS_AUTH", "password"),
            ("REDIS_PASSWORD_SECRET_ARN", "hongbao/redis"),
        ];

        let a = auth(&vars).unwrap();

        assert_eq!(
            (a.password, a.password_secret.as_deref()),
            (None, Some("hongbao/redis"))
        );
    }

    #[test]
    fn a_password_and_its_secret_together_are_refused() {
        let vars = [
            ("REDIS_AUTH", "password"),
            ("REDIS_PASSWORD", "s3cret"),
            ("REDIS_PASSWORD_SECRET_ARN", "hongbao/redis"),
        ];

        let e = auth(&vars).unwrap_err().to_string();

        assert!(
            e.contains("REDIS_PASSWORD_SECRET_ARN") && !e.contains("s3cret"),
            "{e}"
        );
    }

    #[test]
    fn settings() {
        let a = auth(&[]).unwrap();
        assert_eq!(a.kind, AuthKind::None);
        let vars = [
            ("REDIS_AUTH", "password"),
            ("REDIS_PASSWORD", "s3cret"),
            ("REDIS_USERNAME", "app"),
        ];
        let a = auth(&vars).unwrap();
        assert_eq!(
            (a.kind, a.username.as_deref()),
            (AuthKind::Password, Some("app"))
        );
        assert!(!format!("{a:?}").contains("s3cret"));
        assert!(auth(&[("REDIS_AUTH", "password")]).is_err());
        assert!(auth(&[("REDIS_AUTH", "kerberos")]).is_err());
        // A cold-start configuration error never prints a password from the URL.
        let clear = [
            ("REDIS_AUTH", "iam"),
            ("REDIS_USERNAME", "app"),
            ("REDIS_IAM_CACHE_NAME", "hb"),
            (
                "REDIS_URL",
                "redis://app:hunter2-s3cret@cache.internal:6379",
            ),
        ];
        let e = auth(&clear).unwrap_err();
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(
                shown.contains("redis://app:REDACTED@cache.internal:6379"),
                "{shown}"
            );
        }
        let iam = [
            ("REDIS_AUTH", "iam"),
            ("REDIS_USERNAME", "app"),
            ("REDIS_IAM_CACHE_NAME", "hb"),
            (
                "REDIS_URL",
                "rediss://hb-abc.serverless.use1.cache.amazonaws.com:6379",
            ),
        ];
        let a = auth(&iam).unwrap();
        assert_eq!(a.iam_target, IamTarget::ElastiCacheServerless);
        let mdb = [
            ("REDIS_AUTH", "iam"),
            ("REDIS_USERNAME", "app"),
            ("REDIS_IAM_CACHE_NAME", "hb"),
            (
                "REDIS_URL",
                "rediss://clustercfg.hb.abc123.memorydb.us-east-1.amazonaws.com:6379",
            ),
        ];
        let a = auth(&mdb).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        let mut forced = mdb.to_vec();
        forced.push(("REDIS_IAM_SERVICE", "elasticache"));
        let a = auth(&forced).unwrap();
        assert_eq!(a.iam_target, IamTarget::ElastiCache);
        let mut wrong = mdb.to_vec();
        wrong.push(("REDIS_IAM_SERVICE", "dynamodb"));
        assert_eq!(auth(&wrong).unwrap_err().name, "REDIS_IAM_SERVICE");
        let plain = [
            ("REDIS_AUTH", "iam"),
            ("REDIS_USERNAME", "app"),
            ("REDIS_IAM_CACHE_NAME", "hb"),
        ];
        assert_eq!(auth(&plain).unwrap_err().name, "REDIS_URL");
        // A node list: the `auto` service and resource type from every host.
        let mut list = mdb.to_vec();
        list[3].1 = "rediss://a.hb.abc123.memorydb.us-east-1.amazonaws.com:6379,\
                     rediss://b.hb.abc123.memorydb.us-east-1.amazonaws.com:6379";
        let a = auth(&list).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        list[3].1 = "rediss://a.hb.abc123.memorydb.us-east-1.amazonaws.com:6379,\
                     rediss://b.hb.abc123.cache.amazonaws.com:6379";
        assert_eq!(
            auth(&list).unwrap_err().name,
            "REDIS_IAM_SERVICE",
            "hosts that disagree name no one service"
        );
        list.push(("REDIS_IAM_SERVICE", "memorydb"));
        let a = auth(&list).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        list[3].1 = "rediss://a.serverless.use1.cache.amazonaws.com:6379,\
                     rediss://b.use1.cache.amazonaws.com:6379";
        list.pop();
        assert_eq!(auth(&list).unwrap_err().name, "REDIS_IAM_SERVERLESS");
        list[3].1 =
            "rediss://a.use1.cache.amazonaws.com:6379,rediss://b.use1.cache.amazonaws.com:6379";
        let a = auth(&list).unwrap();
        assert_eq!(a.iam_target, IamTarget::ElastiCache);
        // IAM needs TLS on every node: a list has one scheme, so a plain entry is refused.
        list[3].1 =
            "rediss://a.use1.cache.amazonaws.com:6379,redis://b.use1.cache.amazonaws.com:6379";
        assert_eq!(auth(&list).unwrap_err().name, "REDIS_URL");
        let err = auth(&[("REDIS_CA_CERT", "/x.pem")]).unwrap_err();
        assert_eq!(err.name, "REDIS_CA_CERT");
    }
}
