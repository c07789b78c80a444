//! The `reclaim-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! refunds expired red packets to their senders and returns the run's summary.
//!
//! Thin by design: [`hongbao::lambda::init`] builds the configuration and the Redis store once
//! per sandbox, then every scheduled event runs [`hongbao::handlers::reclaim_cron`].

use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let store = hongbao::lambda::init().await?;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<EventBridgeEvent<Value>>| async move {
            tracing::debug!(id = ?event.payload.id, "scheduled event");
            let deadline_ms = Some(event.context.deadline);
            Ok::<Value, Error>(hongbao::handlers::reclaim_cron(store, deadline_ms).await?)
        },
    ))
    .await
}
