//! Handler tests: API Gateway HTTP API (v2) events from `events/` (made with `sam local
//! generate-event apigateway http-api-proxy`, then edited) go through each function's real
//! handler against real `redis-server` processes (standalone and cluster).
//!
//! One file a topic: the fixtures' happy path, the bad-inputs table, identity-provider
//! subjects, the abuse quotas, targeted packets, Redis outages, the wallet's limits.

mod bad_inputs;
mod fixtures;
mod identities;
mod outages;
mod quotas;
mod targeted;
mod wallet;

use std::sync::Arc;

use harness::TestRedis;
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{call, event, snapshot, with_body, with_placeholder, Function};

/// [`snapshot`] without the reclaim index: a refused create changes nothing else, and leaves
/// the index entry it wrote before the script ran (brought forward, for reclaim-cron to drop
/// within two minutes), because a late first run of the same call may still create the packet
/// within its delivery window (`store::packets::create`).
pub(crate) async fn snapshot_but_reclaim_index(
    redis: &TestRedis,
) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all = snapshot(redis).await;
    all.retain(|(key, _)| !key.ends_with("{reclaim}:due"));
    all
}

/// Replaces the `PACKET_ID` placeholder everywhere in the event.
pub(super) fn with_packet(v: Value, id: &str) -> Value {
    with_placeholder(v, "PACKET_ID", id)
}

pub(super) fn with_route(mut v: Value, method: &str, path: &str) -> Value {
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(method);
    v["requestContext"]["http"]["path"] = json!(path);
    v["routeKey"] = json!(format!("{method} {path}"));
    v
}

pub(super) async fn deposit(
    store: &Arc<Store>,
    user: &str,
    cents: i64,
    reference: &str,
) -> (u16, Value) {
    let body = json!({"user_id": user, "amount_cents": cents, "reference": reference}).to_string();
    let (s, b, _) = call(
        store,
        Function::Wallet,
        &with_body(event("wallet-deposit"), &body),
    )
    .await;
    (s, b)
}
