//! Support look-ups (`GET /support/packets/{id}`, `GET /support/wallets/{user_id}`,
//! `GET /support/coupons/{code}`, AWS_IAM)
//! through the wallet function's router, on standalone and on the 3-master cluster: a packet
//! in every state (open with claims unclaimed, pending before and after their credit, and
//! done; sold out; cancelled; expired; settled with a claim re-driven by reclaim-cron), a
//! wallet mid-claim and its ledger a page at a time; a coupon at every checkout step; every look-up writes nothing and shows
//! no secret; callers outside `HONGBAO_SUPPORT_PRINCIPALS` are refused.

mod coupons;
mod packets;
mod wallets;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{call, claim_step_one, event, with_placeholder, with_query, Function};
use hongbao::history::rules::{year_of, ReceivedEntry};
use hongbao::packets as store_packets;
use hongbao::packets::rules::Share;
use hongbao::wallet;
use hongbao::Store;

/// An IAM principal outside the test stores' `HONGBAO_SUPPORT_PRINCIPALS`.
pub const STRANGER: &str = "arn:aws:sts::123456789012:assumed-role/marketing/intern";

/// `GET /support/packets/{packet_id}` as `arn` (`None`: the fixture's support role).
pub async fn look_up_packet(
    store: &Arc<Store>,
    packet_id: &str,
    arn: Option<&str>,
) -> (u16, Value) {
    look_up_packet_page(store, packet_id, "", arn).await
}

/// `GET /support/packets/{packet_id}?<query>` as `arn` (`None`: the fixture's support role).
pub async fn look_up_packet_page(
    store: &Arc<Store>,
    packet_id: &str,
    query: &str,
    arn: Option<&str>,
) -> (u16, Value) {
    let ev = with_placeholder(event("wallet-support-packet"), "PACKET_ID", packet_id);
    let ev = with_query(ev, query);
    let (s, b, _) = call(store, Function::Wallet, &signed(ev, arn)).await;
    (s, b)
}

/// `GET /support/wallets/{user_id}` (`user_id` percent-encoded as a client sends it) with the
/// raw query `query`, as `arn` (`None`: the fixture's support role).
pub async fn look_up_wallet(
    store: &Arc<Store>,
    user_id: &str,
    query: &str,
    arn: Option<&str>,
) -> (u16, Value) {
    let encoded: String = url::form_urlencoded::byte_serialize(user_id.as_bytes()).collect();
    let encoded = encoded.replace('+', "%20");
    let mut ev = event("wallet-support-wallet");
    ev["rawPath"] = json!(format!("/support/wallets/{encoded}"));
    ev["requestContext"]["http"]["path"] = json!(format!("/support/wallets/{encoded}"));
    ev["pathParameters"] = json!({ "user_id": user_id });
    let (s, b, _) = call(store, Function::Wallet, &signed(with_query(ev, query), arn)).await;
    (s, b)
}

/// The event signed by `arn` instead of the fixture's role (`None`: unchanged).
fn signed(mut ev: Value, arn: Option<&str>) -> Value {
    if let Some(arn) = arn {
        ev["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    }
    ev
}

/// Claim steps 1 and 2 of `user`'s share of `packet_id`, as if the Lambda died before step 3:
/// the claim is `pending`, the credit landed and its record pinned. Returns the share.
pub async fn claim_until_credited(
    store: &Store,
    packet_id: &str,
    sender: &str,
    user: &str,
) -> Share {
    let step1 = claim_step_one(store, packet_id, user).await;
    assert_eq!(step1[0], "claimed", "{step1:?}");
    let share = Share::parse(&step1[1]).unwrap();
    let claimed_at_ms: i64 = step1[2].strip_prefix("pending:").unwrap().parse().unwrap();
    let entry = ReceivedEntry {
        packet_id: packet_id.to_string(),
        sender_id: sender.to_string(),
        amount_cents: share.amount_cents,
        share_id: share.share_id,
        claimed_at_ms,
    }
    .member(year_of(&store.config().history.tz, claimed_at_ms));
    let transfer_id = wallet::claim_transfer_id(packet_id);
    let fingerprint = share.amount_cents.to_string();
    let credit = store_packets::claim_credit(
        packet_id,
        &transfer_id,
        share.amount_cents,
        &fingerprint,
        &entry,
    );
    let credited = wallet::credit(store, user, &credit).await.unwrap();
    assert!(credited.applied, "{credited:?}");
    share
}

/// `(user_id, claim, credited)` of every grab of a packet look-up, in share-id order.
pub fn claims(body: &Value) -> Vec<(String, String, bool)> {
    body["grabs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["user_id"].as_str().unwrap().to_string(),
                g["claim"].as_str().unwrap().to_string(),
                g["credited"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// `(kind, user_id, amount_cents)` of a look-up's journal entries, oldest first.
pub fn journal(body: &Value) -> Vec<(String, String, i64)> {
    body["journal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["user_id"].as_str().unwrap().to_string(),
                e["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect()
}
