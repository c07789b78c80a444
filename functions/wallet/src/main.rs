//! The `wallet` Lambda function: GET /wallet, POST /wallet/deposits.
//!
//! Thin by design: build the configuration and the Redis store once per sandbox, then hand
//! every API Gateway HTTP API event to [`hongbao::handlers::wallet`].

use hongbao::{Config, Store};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hongbao::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    // Connect during Init so a bad endpoint, CA or password is one clear log line at cold
    // start; requests then answer 503 and the store keeps retrying.
    if let Err(e) = store.connect_at_cold_start().await {
        tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
    }
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(hongbao::handlers::wallet(store, req).await)
    }))
    .await
}
