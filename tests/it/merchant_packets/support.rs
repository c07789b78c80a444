//! The support look-up of a merchant packet: its merchant, sharer and payout, every share
//! with its claim, and the merchant's journal entries beside the grabbers'.

use serde_json::json;

use crate::common::{self, Function};
use crate::support::look_up_packet;
use harness::{Backend, TestRedis};

use super::*;

/// Test: `GET /support/packets/{id}` of a `sharer_first` merchant packet shows its merchant,
/// sharer and payout, the sharer's share unclaimed and a member's share claimed and credited,
/// and the journal's `merchant_packet_debit` (the merchant's, with the budget's balance) and
/// the member's `claim_credit`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_support_look_up_shows_every_share_and_the_merchants_entries() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund_merchant(&store, SHOP, 5_000).await;
        let mut body = order("order-3", 1_200, 4);
        body["sharer_first"] = json!(true);
        let (s, made) = create(&store, &body).await;
        assert_eq!(s, 201, "{made}");
        let id = made["packet_id"].as_str().unwrap().to_string();
        let (s, _) = as_user(&store, Function::Grab, "grab-grab", &id, "ivy").await;
        assert_eq!(s, 200);
        let (s, _) = as_user(&store, Function::Claim, "claim-claim", &id, "ivy").await;
        assert_eq!(s, 200);

        // Act
        let (s, found) = look_up_packet(&store, &id, None).await;

        // Assert
        assert_eq!(s, 200, "{backend}: {found}");
        let p = &found["packet"];
        assert_eq!(
            (&p["merchant_id"], &p["sharer_id"], &p["payout"]),
            (&json!(SHOP), &json!("carol"), &json!("wallet")),
            "{backend}: {p}"
        );
        let grabs: Vec<(String, String, bool)> = found["grabs"]
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
            .collect();
        assert_eq!(
            grabs,
            [
                ("carol".to_string(), "unclaimed".to_string(), false),
                ("ivy".to_string(), "done".to_string(), true)
            ],
            "{backend}"
        );
        let kinds: Vec<(&str, &str, i64)> = found["journal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["kind"].as_str().unwrap(),
                    e["user_id"].as_str().unwrap(),
                    e["balance_cents"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            kinds[0],
            ("merchant_packet_debit", SHOP, 3_800),
            "{backend}: {kinds:?}"
        );
        assert_eq!(
            (kinds[1].0, kinds[1].1),
            ("claim_credit", "ivy"),
            "{backend}"
        );
        assert!(found["journal_complete"].as_bool().unwrap());
    }
}
