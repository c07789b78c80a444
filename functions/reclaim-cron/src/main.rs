//! The `reclaim-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! refunds expired red packets to their senders and returns the run's summary.
//!
//! Thin by design: build the settings and the Redis store once per sandbox, then every
//! scheduled event runs [`hongbao::api::reclaim::run`] until its deadline.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use hongbao::api::{lambda, reclaim};
use hongbao::store::Feature;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let state = lambda::init(&[Feature::Packets, Feature::Reclaim]).await?;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<EventBridgeEvent<Value>>| {
            let store = state.store.clone();
            async move {
                tracing::debug!(id = ?event.payload.id, "scheduled event");
                let summary = reclaim::run(&store, Some(event.context.deadline)).await?;
                Ok::<_, Error>(summary)
            }
        },
    ))
    .await
}
