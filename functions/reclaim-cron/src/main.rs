//! The `reclaim-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! refunds expired red packets to their senders and returns the run's summary.
//!
//! Thin by design: build the settings and the Redis store once per sandbox, then every
//! scheduled event runs [`hongbao::lambda::reclaim::run`] until its deadline
//! ([`hongbao::lambda::reclaim::serve`]).

use hongbao::lambda::reclaim;
use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let state = lambda::init(Function::ReclaimCron).await?;
    reclaim::serve(state.store).await
}
