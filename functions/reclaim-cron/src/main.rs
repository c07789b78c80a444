//! The `reclaim-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! refunds expired red packets to their senders and returns the run's summary.
//!
//! Thin by design: build the settings and the Redis store once per sandbox, then every
//! scheduled event runs [`hongbao::api::reclaim::run`] until its deadline
//! ([`hongbao::api::reclaim::serve`]).

use hongbao::api::{lambda, reclaim};
use hongbao::store::Feature;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let state = lambda::init(&[Feature::Packets, Feature::Reclaim]).await?;
    reclaim::serve(state.store).await
}
