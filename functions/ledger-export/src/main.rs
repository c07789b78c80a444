//! The `ledger-export` Lambda function, run by an EventBridge schedule (`rate(1 minute)`):
//! publishes the money journal's entries to the stack's EventBridge bus
//! (`HONGBAO_EVENT_BUS_NAME`) and deletes each once `PutEvents` accepted it.
//!
//! Thin by design: build the settings, the Redis store and the EventBridge client once per
//! sandbox, then every scheduled event runs [`hongbao::lambda::ledger_export::run`] until its
//! deadline ([`hongbao::lambda::ledger_export::serve`]).

use std::sync::Arc;

use hongbao::lambda::ledger_export::{self, eventbridge::EventBridgeSink};
use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let state = lambda::init(Function::LedgerExport).await?;
    let bus = state.store.config().ledger_export.event_bus_name.clone();
    let sink = Arc::new(EventBridgeSink::from_env(bus).await);
    ledger_export::serve(state.store, sink).await
}
