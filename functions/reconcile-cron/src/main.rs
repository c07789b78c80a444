//! The `reconcile-cron` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! checks the next batch of wallets against their ledgers and the money journal, and returns
//! the run's summary.
//!
//! Thin by design: build the settings and the Redis store once per sandbox, then every
//! scheduled event runs [`hongbao::lambda::reconcile::run`] until its deadline
//! ([`hongbao::lambda::reconcile::serve`]).

use hongbao::lambda::reconcile;
use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let state = lambda::init(Function::ReconcileCron).await?;
    reconcile::serve(state.store).await
}
