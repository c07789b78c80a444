//! The Lambda side shared by every function's `main`: one-time initialisation (tracing,
//! configuration, the Redis store, a connection attempt during Init) and the HTTP event loop.
//!
//! Following the AWS Lambda Rust runtime examples: everything expensive is built once per
//! sandbox, before the first event, and reused by every invocation.

use std::future::Future;

use lambda_http::{service_fn, Body, Request, Response};

use crate::{Config, Store};

/// Initialises a sandbox: JSON tracing, [`Config::from_env`], a [`Store`] that lives for the
/// process, and a first connection attempt (so a bad endpoint, CA or password is one clear log
/// line at cold start; requests then answer 503 while the store keeps retrying).
///
/// # Errors
/// [`crate::config::ConfigError`] when an environment variable does not parse: the function
/// then fails Init with that message instead of running misconfigured.
pub async fn init() -> Result<&'static Store, crate::config::ConfigError> {
    crate::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    if let Err(e) = store.connect_at_cold_start().await {
        tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
    }
    Ok(store)
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
