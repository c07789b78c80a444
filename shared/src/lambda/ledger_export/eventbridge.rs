//! ledger-export's [`EventSink`]: EventBridge `PutEvents` through the AWS SDK for Rust
//! (`aws-sdk-eventbridge`). Behind the cargo feature `eventbridge`, which only the
//! ledger-export function and the tests turn on: no other bootstrap links the SDK.

use aws_sdk_eventbridge::error::DisplayErrorContext;
use aws_sdk_eventbridge::primitives::DateTime;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_eventbridge::Client;

use super::{EventDetail, EventSink, SinkError, SinkFuture};
use crate::domain::journal::{Entry, EVENT_SOURCE};

/// Publishes journal entries to one EventBridge bus: `source` `hongbao`, `detail-type` the
/// kind's ([`crate::domain::journal::Kind::detail_type`]), `time` the movement's, `detail`
/// the [`EventDetail`] as JSON.
#[derive(Debug, Clone)]
pub struct EventBridgeSink {
    client: Client,
    bus: String,
}

impl EventBridgeSink {
    /// A sink publishing through `client` to `bus` (a name or an ARN).
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        EventBridgeSink {
            client,
            bus: bus.into(),
        }
    }

    /// A sink for `bus` configured as a Lambda sandbox is ([`crate::lambda::aws::sdk_config`]:
    /// the region, credentials and endpoint from the environment).
    pub async fn from_env(bus: impl Into<String>) -> Self {
        let config = crate::lambda::aws::sdk_config().await;
        Self::new(Client::new(&config), bus)
    }
}

impl EventSink for EventBridgeSink {
    fn publish<'a>(&'a self, entries: &'a [Entry]) -> SinkFuture<'a> {
        Box::pin(async move {
            let mut request = self.client.put_events();
            for e in entries {
                let detail = serde_json::to_string(&EventDetail::from(e))
                    .map_err(|err| SinkError(err.to_string()))?;
                request = request.entries(
                    PutEventsRequestEntry::builder()
                        .event_bus_name(&self.bus)
                        .source(EVENT_SOURCE)
                        .detail_type(e.kind.detail_type())
                        .time(DateTime::from_millis(e.at_ms))
                        .detail(detail)
                        .build(),
                );
            }
            let out = request
                .send()
                .await
                .map_err(|err| SinkError(DisplayErrorContext(err).to_string()))?;
            // One result per entry, in order: an event id, or an error code.
            Ok(out
                .entries()
                .iter()
                .map(|r| r.error_code().is_none() && r.event_id().is_some())
                .collect())
        })
    }
}
