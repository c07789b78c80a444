//! Redis authentication and TLS trust: `REDIS_AUTH=none|password|iam`, `REDIS_CA_CERT`.
//!
//! * `none`: no `AUTH` (a local `redis-server`, or a cache reachable only from the VPC).
//! * `password`: `REDIS_PASSWORD` (an ElastiCache AUTH token or an ACL user's password). With
//!   `REDIS_USERNAME` it is `AUTH <user> <password>` through the same
//!   [`StreamingCredentialsProvider`] path as IAM; without, the classic `AUTH <password>`.
//! * `iam`: ElastiCache or MemoryDB IAM authentication ([`IamTarget`]). The password is a
//!   token: a SigV4 query-string presign ([`iam_auth_token`]) of
//!   `GET http://<cache or cluster name>/?Action=connect&User=<user id>` (plus
//!   `&ResourceType=ServerlessCache` for an ElastiCache serverless cache), service
//!   `elasticache` or `memorydb`, the function's region, 900 s expiry, without the `http://`
//!   prefix, signed with the function's credentials from `aws-config`'s default chain (in
//!   Lambda: the execution role's variables). Sources: the ElastiCache and MemoryDB developer
//!   guides, "Authenticating with IAM" (their `IAMAuthTokenRequest` examples). A token is only
//!   checked by `AUTH`, which must happen within its 15 minutes; both services then close an
//!   IAM-authenticated connection after 12 hours unless it authenticates again.
//!   [`RedisCredentials`] therefore hands every new connection a token at most
//!   [`TOKEN_REUSE`] old, and re-authenticates every open connection every [`REAUTH_INTERVAL`]
//!   with a fresh one (redis-rs runs the `AUTH` from its credentials subscription).
//!
//! Tokens and passwords are never logged: [`RedisAuth`]'s `Debug` redacts the password, and
//! no error message here contains a token.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

// tokio's clock (the real one in production), so the refresh timing can be tested with paused time.
use tokio::time::Instant;

use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::Credentials;
use futures::{Stream, StreamExt};
use redis::{BasicAuth, RedisResult, StreamingCredentialsProvider};

use super::error::Error;
use crate::domain::ConfigError;

/// An IAM token's validity (the presign's `X-Amz-Expires`): ElastiCache's fixed 15 minutes.
pub const TOKEN_EXPIRY: Duration = Duration::from_secs(900);
/// How long a token is handed to new connections before a fresh one is signed: it then still
/// has at least 10 of its 15 minutes, more than any connect takes.
pub const TOKEN_REUSE: Duration = Duration::from_secs(300);
/// How often an open IAM connection re-authenticates with a fresh token: well inside both the
/// token's 15 minutes and ElastiCache's 12-hour limit for an IAM-authenticated connection.
pub const REAUTH_INTERVAL: Duration = Duration::from_secs(600);

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
    /// `REDIS_PASSWORD` (never printed by `Debug`).
    pub password: Option<String>,
    /// `REDIS_CA_CERT`: a PEM file path or PEM text; `None` trusts the public web PKI roots
    /// (which ElastiCache's certificates chain to).
    pub ca_cert: Option<String>,
    /// `REDIS_IAM_CACHE_NAME`: the ElastiCache replication group id or serverless cache name,
    /// or the MemoryDB cluster name.
    pub iam_cache_name: Option<String>,
    /// Which service the IAM token is for (`REDIS_IAM_SERVICE`, `REDIS_IAM_SERVERLESS`).
    pub iam_target: IamTarget,
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
            .field(
                "ca_cert",
                &self
                    .ca_cert
                    .as_ref()
                    .map(|c| if is_pem(c) { "<pem>" } else { c }),
            )
            .field("iam_cache_name", &self.iam_cache_name)
            .field("iam_target", &self.iam_target)
            .finish()
    }
}

fn is_pem(s: &str) -> bool {
    s.trim_start().starts_with("-----BEGIN")
}

fn non_empty(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).filter(|v| !v.trim().is_empty())
}

fn bad(name: &'static str, value: impl Into<String>, reason: &str) -> ConfigError {
    ConfigError::named(name, value, reason)
}

/// `REDIS_CLUSTER`: `Some(true)`, `Some(false)` or `None` for `auto` (the default).
///
/// # Errors
/// [`ConfigError`] for any other value.
pub(crate) fn cluster_setting(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Option<bool>, ConfigError> {
    match non_empty(lookup, "REDIS_CLUSTER").as_deref().map(str::trim) {
        None | Some("auto") => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(bad(
            "REDIS_CLUSTER",
            other,
            "expected `true`, `false` or `auto`",
        )),
    }
}

impl RedisAuth {
    /// Reads `REDIS_AUTH`, `REDIS_USERNAME`, `REDIS_PASSWORD`, `REDIS_CA_CERT`,
    /// `REDIS_IAM_CACHE_NAME`, `REDIS_IAM_SERVICE` and `REDIS_IAM_SERVERLESS` (and `REDIS_URL`
    /// to check them and to derive the `auto` values from its host).
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown mode, a missing password / user / cache name, IAM or a CA
    /// without `rediss://` (a token must never travel in clear text).
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let url = non_empty(lookup, "REDIS_URL").unwrap_or_default();
        // A node list has one scheme, so its first entry says whether it is TLS.
        let tls = url.trim().starts_with("rediss://");
        // Every listed node's host (none when REDIS_URL is unset: the local default).
        let hosts: Vec<String> = if url.trim().is_empty() {
            Vec::new()
        } else {
            super::nodes::parse(&url)
                .map_err(|why| bad("REDIS_URL", url.as_str(), &why))?
                .iter()
                .filter_map(|node| super::nodes::host(node).map(str::to_ascii_lowercase))
                .collect()
        };
        let kind = match non_empty(lookup, "REDIS_AUTH").as_deref().map(str::trim) {
            None | Some("none") => AuthKind::None,
            Some("password") => AuthKind::Password,
            Some("iam") => AuthKind::Iam,
            Some(other) => {
                return Err(bad(
                    "REDIS_AUTH",
                    other,
                    "expected `none`, `password` or `iam`",
                ))
            }
        };
        let username = non_empty(lookup, "REDIS_USERNAME").map(|u| u.trim().to_string());
        let password = non_empty(lookup, "REDIS_PASSWORD");
        let ca_cert = non_empty(lookup, "REDIS_CA_CERT");
        let iam_cache_name =
            non_empty(lookup, "REDIS_IAM_CACHE_NAME").map(|c| c.trim().to_string());
        // `auto`: what the hosts say, when they all say the same (a node list mixing a MemoryDB
        // or serverless host with others names no one service).
        let derive = |setting: &'static str, marker: &str| -> Result<bool, ConfigError> {
            let marked = hosts.iter().filter(|h| h.contains(marker)).count();
            if marked == 0 || marked == hosts.len() {
                Ok(marked > 0)
            } else if kind == AuthKind::Iam {
                Err(bad(
                    setting,
                    "auto",
                    &format!(
                        "{marked} of the {} REDIS_URL hosts contain `{marker}`: they do not \
                         agree, set it",
                        hosts.len()
                    ),
                ))
            } else {
                Ok(false)
            }
        };
        let memorydb = match non_empty(lookup, "REDIS_IAM_SERVICE")
            .as_deref()
            .map(str::trim)
        {
            None | Some("auto") => derive("REDIS_IAM_SERVICE", ".memorydb.")?,
            Some("elasticache") => false,
            Some("memorydb") => true,
            Some(other) => {
                return Err(bad(
                    "REDIS_IAM_SERVICE",
                    other,
                    "expected `elasticache`, `memorydb` or `auto`",
                ))
            }
        };
        let serverless = match non_empty(lookup, "REDIS_IAM_SERVERLESS")
            .as_deref()
            .map(str::trim)
        {
            None | Some("auto") => derive("REDIS_IAM_SERVERLESS", ".serverless.")?,
            Some("true") => true,
            Some("false") => false,
            Some(other) => {
                return Err(bad(
                    "REDIS_IAM_SERVERLESS",
                    other,
                    "expected `true`, `false` or `auto`",
                ))
            }
        };
        let iam_target = match (memorydb, serverless) {
            (true, true) => {
                return Err(bad(
                    "REDIS_IAM_SERVERLESS",
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
            AuthKind::Password if password.is_none() => {
                return Err(bad(
                    "REDIS_PASSWORD",
                    "",
                    "required with REDIS_AUTH=password",
                ))
            }
            AuthKind::Password => {}
            AuthKind::Iam => {
                if username.is_none() {
                    return Err(bad(
                        "REDIS_USERNAME",
                        "",
                        "required with REDIS_AUTH=iam (the ElastiCache user id)",
                    ));
                }
                if iam_cache_name.is_none() {
                    return Err(bad(
                        "REDIS_IAM_CACHE_NAME",
                        "",
                        "required with REDIS_AUTH=iam",
                    ));
                }
                if !tls {
                    return Err(bad(
                        "REDIS_URL",
                        url,
                        "REDIS_AUTH=iam needs a rediss:// (TLS) URL",
                    ));
                }
            }
        }
        if ca_cert.is_some() && !tls {
            return Err(bad(
                "REDIS_CA_CERT",
                "",
                "set, but REDIS_URL is not rediss://",
            ));
        }
        Ok(RedisAuth {
            kind,
            username,
            password,
            ca_cert,
            iam_cache_name,
            iam_target,
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

/// RFC 3986 percent-encoding of everything but `A-Z a-z 0-9 - _ . ~` (what SigV4 and
/// botocore's `percent_encode` do).
fn uri_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The IAM auth token for `user_id` on `cache_name` (an ElastiCache cache or a MemoryDB
/// cluster, as `target` says), signed at `time`.
///
/// A SigV4 query-string presign (service [`IamTarget::service`], `region`, 900 s) of
/// `GET http://<cache_name>/?Action=connect&User=<user_id>` (plus
/// `&ResourceType=ServerlessCache` for [`IamTarget::ElastiCacheServerless`]), without the
/// `http://` prefix. The
/// parameters are in botocore's order (the request's, then `X-Amz-Algorithm`, `-Credential`,
/// `-Date`, `-Expires`, `-SignedHeaders`, `-Security-Token`, `-Signature`), so the token is
/// byte for byte the one `botocore.signers.RequestSigner.generate_presigned_url` makes.
///
/// # Errors
/// [`Error::Unavailable`] if signing fails (it only can for malformed input).
pub fn iam_auth_token(
    credentials: &Credentials,
    region: &str,
    cache_name: &str,
    user_id: &str,
    target: IamTarget,
    time: SystemTime,
) -> Result<String, Error> {
    use aws_sigv4::http_request::{
        sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    };
    use aws_sigv4::sign::v4;

    let mut query = format!("Action=connect&User={}", uri_encode(user_id));
    if let Some(resource_type) = target.resource_type() {
        query.push_str("&ResourceType=");
        query.push_str(resource_type);
    }
    let url = format!("http://{cache_name}/?{query}");
    let identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(TOKEN_EXPIRY);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(target.service())
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| Error::Unavailable(format!("IAM token: bad signing parameters: {e}")))?
        .into();
    let request = SignableRequest::new("GET", &url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(|e| {
        Error::Unavailable(format!(
            "IAM token: bad request for cache {cache_name:?}: {e}"
        ))
    })?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| Error::Unavailable(format!("IAM token: signing failed: {e}")))?
        .into_parts();
    let (_headers, mut signed) = instructions.into_parts();
    // botocore puts the signature last, after the security token.
    signed.sort_by_key(|(name, _)| *name == "X-Amz-Signature");
    let mut token = format!("{cache_name}/?{query}");
    for (name, value) in signed {
        token.push('&');
        token.push_str(name);
        token.push('=');
        token.push_str(&uri_encode(&value));
    }
    Ok(token)
}

/// Makes IAM tokens with the function's credentials and region (from `aws-config`).
struct IamSigner {
    credentials: aws_credential_types::provider::SharedCredentialsProvider,
    region: String,
    cache_name: String,
    user_id: String,
    target: IamTarget,
    timeout: Duration,
    cached: Mutex<Option<(Instant, String)>>,
}

impl IamSigner {
    async fn token(&self) -> RedisResult<String> {
        if let Some((at, token)) = &*self.cached.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < TOKEN_REUSE {
                return Ok(token.clone());
            }
        }
        let creds = tokio::time::timeout(self.timeout, self.credentials.provide_credentials())
            .await
            .map_err(|_| auth_error("IAM auth: timed out getting AWS credentials".into()))?
            .map_err(|e| auth_error(format!("IAM auth: no AWS credentials: {e}")))?;
        let token = iam_auth_token(
            &creds,
            &self.region,
            &self.cache_name,
            &self.user_id,
            self.target,
            SystemTime::now(),
        )
        .map_err(|e| auth_error(e.to_string()))?;
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), token.clone()));
        Ok(token)
    }
}

fn auth_error(msg: String) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::AuthenticationFailed,
        "Redis authentication",
        msg,
    ))
}

#[derive(Clone)]
enum Source {
    Static(BasicAuth),
    Iam(Arc<IamSigner>),
}

/// The credentials of every Redis connection, as a redis-rs [`StreamingCredentialsProvider`]:
/// each connection subscribes, authenticates with the first item and re-authenticates with
/// each later one. A static user/password yields once; IAM yields a token now and a fresh one
/// every [`REAUTH_INTERVAL`].
#[derive(Clone)]
pub struct RedisCredentials {
    source: Source,
    reauth_interval: Duration,
}

impl fmt::Debug for RedisCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Static(_) => "static",
            Source::Iam(_) => "iam",
        };
        f.debug_struct("RedisCredentials")
            .field("source", &kind)
            .finish_non_exhaustive()
    }
}

impl RedisCredentials {
    /// A fixed user and password.
    pub fn fixed(username: &str, password: &str) -> Self {
        RedisCredentials {
            source: Source::Static(BasicAuth::new(username.to_string(), password.to_string())),
            reauth_interval: REAUTH_INTERVAL,
        }
    }

    /// The credentials `auth` asks for, or `None` when the connection needs no credentials
    /// provider (`none`, or a password without a user name: `AUTH <password>` from the URL).
    /// For IAM, reads the region and the credentials from the environment (as Lambda provides
    /// them) and signs a first token, so a missing region or role fails here, at cold start,
    /// with a clear message.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when IAM credentials or the region cannot be found.
    pub async fn from_config(auth: &RedisAuth, timeout: Duration) -> Result<Option<Self>, Error> {
        match auth.kind {
            AuthKind::None => Ok(None),
            AuthKind::Password => Ok(auth
                .username
                .as_deref()
                .map(|user| Self::fixed(user, auth.password.as_deref().unwrap_or_default()))),
            AuthKind::Iam => {
                // Lambda hands the execution role's credentials and the region to the runtime
                // as environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
                // AWS_SESSION_TOKEN, AWS_REGION). Only those are read: the default chain's
                // profile, SSO, STS, IMDS and container sources and the HTTPS client they
                // need would be dead weight in every bootstrap.
                let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
                    .iter()
                    .find_map(|name| std::env::var(name).ok().filter(|r| !r.is_empty()))
                    .ok_or_else(|| {
                        Error::Unavailable("REDIS_AUTH=iam: no AWS region (set AWS_REGION)".into())
                    })?;
                let credentials = aws_credential_types::provider::SharedCredentialsProvider::new(
                    aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
                );
                let signer = IamSigner {
                    credentials,
                    region,
                    cache_name: auth.iam_cache_name.clone().unwrap_or_default(),
                    user_id: auth.username.clone().unwrap_or_default(),
                    target: auth.iam_target,
                    timeout,
                    cached: Mutex::new(None),
                };
                signer
                    .token()
                    .await
                    .map_err(|e| Error::Unavailable(e.to_string()))?;
                Ok(Some(RedisCredentials {
                    source: Source::Iam(Arc::new(signer)),
                    reauth_interval: REAUTH_INTERVAL,
                }))
            }
        }
    }

    /// The current credentials (for IAM: a token at most [`TOKEN_REUSE`] old).
    ///
    /// # Errors
    /// An `AuthenticationFailed` error when no token can be made.
    pub async fn current(&self) -> RedisResult<BasicAuth> {
        match &self.source {
            Source::Static(auth) => Ok(auth.clone()),
            Source::Iam(signer) => Ok(BasicAuth::new(
                signer.user_id.clone(),
                signer.token().await?,
            )),
        }
    }
}

impl StreamingCredentialsProvider for RedisCredentials {
    fn subscribe(&self) -> Pin<Box<dyn Stream<Item = RedisResult<BasicAuth>> + Send + 'static>> {
        match &self.source {
            Source::Static(auth) => Box::pin(
                futures::stream::once(futures::future::ready(Ok(auth.clone())))
                    .chain(futures::stream::pending()),
            ),
            Source::Iam(_) => {
                let this = self.clone();
                Box::pin(futures::stream::unfold(true, move |first| {
                    let this = this.clone();
                    async move {
                        if !first {
                            tokio::time::sleep(this.reauth_interval).await;
                        }
                        Some((this.current().await, false))
                    }
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn settings() {
        let a = RedisAuth::from_lookup(&lookup(&[])).unwrap();
        assert_eq!(a.kind, AuthKind::None);
        let vars = [
            ("REDIS_AUTH", "password"),
            ("REDIS_PASSWORD", "s3cret"),
            ("REDIS_USERNAME", "app"),
        ];
        let a = RedisAuth::from_lookup(&lookup(&vars)).unwrap();
        assert_eq!(
            (a.kind, a.username.as_deref()),
            (AuthKind::Password, Some("app"))
        );
        assert!(!format!("{a:?}").contains("s3cret"));
        assert!(RedisAuth::from_lookup(&lookup(&[("REDIS_AUTH", "password")])).is_err());
        assert!(RedisAuth::from_lookup(&lookup(&[("REDIS_AUTH", "kerberos")])).is_err());
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
        let e = RedisAuth::from_lookup(&lookup(&clear)).unwrap_err();
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
        let a = RedisAuth::from_lookup(&lookup(&iam)).unwrap();
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
        let a = RedisAuth::from_lookup(&lookup(&mdb)).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        let mut forced = mdb.to_vec();
        forced.push(("REDIS_IAM_SERVICE", "elasticache"));
        let a = RedisAuth::from_lookup(&lookup(&forced)).unwrap();
        assert_eq!(a.iam_target, IamTarget::ElastiCache);
        let mut wrong = mdb.to_vec();
        wrong.push(("REDIS_IAM_SERVICE", "dynamodb"));
        assert_eq!(
            RedisAuth::from_lookup(&lookup(&wrong)).unwrap_err().name,
            "REDIS_IAM_SERVICE"
        );
        let plain = [
            ("REDIS_AUTH", "iam"),
            ("REDIS_USERNAME", "app"),
            ("REDIS_IAM_CACHE_NAME", "hb"),
        ];
        assert_eq!(
            RedisAuth::from_lookup(&lookup(&plain)).unwrap_err().name,
            "REDIS_URL"
        );
        // A node list: the `auto` service and resource type from every host.
        let mut list = mdb.to_vec();
        list[3].1 = "rediss://a.hb.abc123.memorydb.us-east-1.amazonaws.com:6379,\
                     rediss://b.hb.abc123.memorydb.us-east-1.amazonaws.com:6379";
        let a = RedisAuth::from_lookup(&lookup(&list)).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        list[3].1 = "rediss://a.hb.abc123.memorydb.us-east-1.amazonaws.com:6379,\
                     rediss://b.hb.abc123.cache.amazonaws.com:6379";
        assert_eq!(
            RedisAuth::from_lookup(&lookup(&list)).unwrap_err().name,
            "REDIS_IAM_SERVICE",
            "hosts that disagree name no one service"
        );
        list.push(("REDIS_IAM_SERVICE", "memorydb"));
        let a = RedisAuth::from_lookup(&lookup(&list)).unwrap();
        assert_eq!(a.iam_target, IamTarget::MemoryDb);
        list[3].1 = "rediss://a.serverless.use1.cache.amazonaws.com:6379,\
                     rediss://b.use1.cache.amazonaws.com:6379";
        list.pop();
        assert_eq!(
            RedisAuth::from_lookup(&lookup(&list)).unwrap_err().name,
            "REDIS_IAM_SERVERLESS"
        );
        list[3].1 =
            "rediss://a.use1.cache.amazonaws.com:6379,rediss://b.use1.cache.amazonaws.com:6379";
        let a = RedisAuth::from_lookup(&lookup(&list)).unwrap();
        assert_eq!(a.iam_target, IamTarget::ElastiCache);
        // IAM needs TLS on every node: a list has one scheme, so a plain entry is refused.
        list[3].1 =
            "rediss://a.use1.cache.amazonaws.com:6379,redis://b.use1.cache.amazonaws.com:6379";
        assert_eq!(
            RedisAuth::from_lookup(&lookup(&list)).unwrap_err().name,
            "REDIS_URL"
        );
        let err = RedisAuth::from_lookup(&lookup(&[("REDIS_CA_CERT", "/x.pem")])).unwrap_err();
        assert_eq!(err.name, "REDIS_CA_CERT");
        assert_eq!(cluster_setting(&lookup(&[])).unwrap(), None);
        assert_eq!(
            cluster_setting(&lookup(&[("REDIS_CLUSTER", "true")])).unwrap(),
            Some(true)
        );
        assert!(cluster_setting(&lookup(&[("REDIS_CLUSTER", "yes")])).is_err());
    }

    /// New connections get a cached token until it is [`TOKEN_REUSE`] old, then a fresh one;
    /// open connections get a fresh token every [`REAUTH_INTERVAL`] (tokio's paused clock).
    #[tokio::test(start_paused = true)]
    async fn iam_tokens_are_refreshed_on_time() {
        let signer = Arc::new(IamSigner {
            credentials: aws_credential_types::provider::SharedCredentialsProvider::new(
                Credentials::new("AKIDEXAMPLE", "secret", None, None, "test"),
            ),
            region: "us-east-1".into(),
            cache_name: "hb".into(),
            user_id: "app".into(),
            target: IamTarget::MemoryDb,
            timeout: Duration::from_secs(1),
            cached: Mutex::new(None),
        });
        let signed_at = || signer.cached.lock().unwrap().as_ref().map(|(at, _)| *at);
        let creds = RedisCredentials {
            source: Source::Iam(signer.clone()),
            reauth_interval: REAUTH_INTERVAL,
        };
        let t0 = Instant::now();
        // A connection polls its subscription all the time (redis-rs drives it in a task).
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut stream = creds.subscribe();
        tokio::spawn(async move {
            while let Some(auth) = stream.next().await {
                let _ = tx.send((Instant::now(), auth.unwrap().username().to_string()));
            }
        });
        let (at, user) = rx.recv().await.unwrap();
        assert_eq!((at, user.as_str()), (t0, "app"));
        assert_eq!(signed_at(), Some(t0));

        tokio::time::advance(TOKEN_REUSE - Duration::from_secs(1)).await;
        creds.current().await.unwrap();
        assert_eq!(signed_at(), Some(t0), "reused within TOKEN_REUSE");
        tokio::time::advance(Duration::from_secs(2)).await;
        creds.current().await.unwrap();
        let resigned = t0 + TOKEN_REUSE + Duration::from_secs(1);
        assert_eq!(signed_at(), Some(resigned), "re-signed after TOKEN_REUSE");

        let (at, _) = rx.recv().await.unwrap();
        assert_eq!(at - t0, REAUTH_INTERVAL, "re-auth exactly on schedule");
        let age = at - signed_at().unwrap();
        assert!(age <= TOKEN_REUSE, "re-auth with a token {age:?} old");
        let (at, _) = rx.recv().await.unwrap();
        assert_eq!(at - t0, REAUTH_INTERVAL * 2);
        assert!(REAUTH_INTERVAL < TOKEN_EXPIRY);
        assert!(TOKEN_REUSE + Duration::from_secs(60) < TOKEN_EXPIRY);
    }

    #[test]
    fn token_shape() {
        let creds = Credentials::new(
            "AKIDEXAMPLE",
            "secret",
            Some("tok/en+=".into()),
            None,
            "test",
        );
        let t = iam_auth_token(
            &creds,
            "us-east-1",
            "my-cache",
            "app-user",
            IamTarget::ElastiCacheServerless,
            SystemTime::UNIX_EPOCH,
        )
        .unwrap();
        assert!(t.starts_with("my-cache/?Action=connect&User=app-user&ResourceType=ServerlessCache&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F19700101%2Fus-east-1%2Felasticache%2Faws4_request&X-Amz-Date=19700101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok%2Fen%2B%3D&X-Amz-Signature="), "{t}");
    }
}
