//! The credentials of every Redis connection, as a redis-rs
//! [`StreamingCredentialsProvider`]: a fixed ACL user and password, or ElastiCache / MemoryDB
//! IAM tokens ([`super::iam_auth_token`]) signed with the function's credentials.
//!
//! A token is only checked by `AUTH`, which must happen within its 15 minutes; both services
//! then close an IAM-authenticated connection after 12 hours unless it authenticates again.
//! [`RedisCredentials`] therefore hands every new connection a token at most [`TOKEN_REUSE`]
//! old, and re-authenticates every open connection every [`REAUTH_INTERVAL`] with a fresh one
//! (redis-rs runs the `AUTH` from its credentials subscription). No error message here
//! contains a token.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

// tokio's clock (the real one in production), so the refresh timing can be tested with paused time.
use tokio::time::Instant;

use aws_credential_types::provider::ProvideCredentials;
use futures::{Stream, StreamExt};
use redis::{BasicAuth, RedisResult, StreamingCredentialsProvider};

use super::{iam_auth_token, AuthKind, IamTarget, RedisAuth};
use crate::store::error::Error;

/// How long a token is handed to new connections before a fresh one is signed: it then still
/// has at least 10 of its 15 minutes ([`super::TOKEN_EXPIRY`]), more than any connect takes.
pub const TOKEN_REUSE: Duration = Duration::from_secs(300);
/// How often an open IAM connection re-authenticates with a fresh token: well inside both the
/// token's 15 minutes and ElastiCache's 12-hour limit for an IAM-authenticated connection.
pub const REAUTH_INTERVAL: Duration = Duration::from_secs(600);

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
                // AWS_SESSION_TOKEN; AWS_REGION, read at settings load into `auth.region`).
                // Only those are read: the default chain's profile, SSO, STS, IMDS and
                // container sources and the HTTPS client they need would be dead weight in
                // every bootstrap.
                let region = auth.region.clone().ok_or_else(|| {
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
    use aws_credential_types::Credentials;

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
        assert!(REAUTH_INTERVAL < super::super::TOKEN_EXPIRY);
        assert!(TOKEN_REUSE + Duration::from_secs(60) < super::super::TOKEN_EXPIRY);
    }
}
