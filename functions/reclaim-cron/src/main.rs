//! The `reclaim-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! refunds expired red packets to their senders and returns the run's summary.
//!
//! Thin by design: build the configuration and the Redis store once per sandbox, then run
//! [`hongbao::handlers::reclaim_cron`] for every scheduled event.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use hongbao::{Config, Store};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hongbao::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    // Connect during Init so a bad endpoint, CA or password is one clear log line at cold
    // start; requests then answer 503 and the store keeps retrying.
    if let Err(e) = store.connect_at_cold_start().await {
        tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
    }
    lambda_runtime::run(service_fn(move |event: LambdaEvent<EventBridgeEvent<Value>>| async move {
        tracing::debug!(id = ?event.payload.id, "scheduled event");
        Ok::<Value, Error>(hongbao::handlers::reclaim_cron(store).await?)
    }))
    .await
}
