//! The Lambda side shared by every function's `main`: one-time initialisation (tracing,
//! configuration, the Redis store, a connection attempt during Init) and the HTTP event loop.
//!
//! Following the AWS Lambda Rust runtime examples: everything expensive is built once per
//! sandbox, before the first event, and reused by every invocation.

use std::future::Future;

use lambda_http::{service_fn, Body, Request, Response};

use crate::{Config, Store};

/// Initialises a sandbox: JSON tracing, [`Config::from_env`], a [`Store`] that lives for the
/// process, a first connection attempt (so a bad endpoint, CA or password is one clear log
/// line at cold start; requests then answer 503 while the store keeps retrying), and the
/// eviction-policy check ([`check_eviction`]).
///
/// # Errors
/// [`crate::config::ConfigError`] when an environment variable does not parse, and
/// [`InitError::Eviction`] when the server may evict any key: the function then fails Init
/// with that message instead of running misconfigured.
pub async fn init() -> Result<&'static Store, InitError> {
    crate::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    if store.config().deposit_principals.is_empty() {
        tracing::info!(
            "HONGBAO_DEPOSIT_PRINCIPALS is unset: POST /wallet/deposits refuses every caller (403)"
        );
    }
    match store.connect_at_cold_start().await {
        Ok(()) => check_eviction(store).await?,
        Err(e) => {
            tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
        }
    }
    Ok(store)
}

/// Why a sandbox refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// An environment variable is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The server's `maxmemory-policy` may evict a wallet or an idempotency record.
    #[error("{0}")]
    Eviction(String),
}

/// Checks the server's `maxmemory-policy` ([`Store::check_eviction_policy`]): `allkeys-*` is
/// refused, `volatile-*` logs one warning, and a refused `INFO` logs that the policy could not
/// be checked. A Redis error here is logged, not fatal (requests answer 503 meanwhile).
///
/// # Errors
/// [`InitError::Eviction`] for an `allkeys-*` policy.
pub async fn check_eviction(store: &Store) -> Result<(), InitError> {
    use crate::store::EvictionVerdict;
    match store.check_eviction_policy().await {
        Ok(EvictionVerdict::AllKeys(policy)) => Err(InitError::Eviction(format!(
            "the Redis server's maxmemory-policy is {policy}: it may evict any key, a wallet \
             balance or an idempotency record included, so money could be lost or paid twice. \
             Set maxmemory-policy to noeviction (or volatile-*) in the cache's parameter group"
        ))),
        Ok(EvictionVerdict::Volatile(policy)) => {
            tracing::warn!(
                policy,
                "maxmemory-policy evicts keys with a TTL: money records have none, but packet \
                 records and rate limits may vanish early under memory pressure; prefer noeviction"
            );
            Ok(())
        }
        Ok(EvictionVerdict::Safe(policy)) => {
            tracing::info!(policy, "maxmemory-policy checked");
            Ok(())
        }
        Ok(EvictionVerdict::Unknown(why)) => {
            tracing::warn!(reason = %why, "maxmemory-policy could not be checked (INFO not allowed)");
            Ok(())
        }
        Err(e) => {
            tracing::error!(error = %e, "maxmemory-policy could not be checked");
            Ok(())
        }
    }
}

/// Runs an HTTP function: [`init`], then every API Gateway HTTP API event goes to `handler`
/// (one of [`crate::handlers`]), whose answer (success or JSON error) is the response.
///
/// # Errors
/// Init errors (configuration) and Lambda runtime API errors.
pub async fn run_http<F, Fut>(handler: F) -> Result<(), lambda_http::Error>
where
    F: Fn(&'static Store, Request) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Response<Body>> + Send,
{
    let store = init().await?;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, lambda_http::Error>(handler(store, req).await)
    }))
    .await
}
