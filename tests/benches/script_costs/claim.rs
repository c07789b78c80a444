//! The claim rows: `claim.lua` on a merchant packet paid out as coupons (the whole claim
//! in one step: the coupon issued, the books moved, the issue journaled) beside its step 1 on
//! a merchant packet paid into wallets (the share reserved; `wallet_credit.lua` and
//! `claim_done.lua` follow on other calls).

use hongbao::merchants;
use hongbao::merchants::rules::{MerchantPacketOutcome, MerchantPacketRequest};
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{self, Call, ClaimCall};
use hongbao::Store;
use serde_json::json;

use crate::grab::grab_call;
use crate::{Bench, Row};

/// The merchant of the claim rows.
const SHOP: &str = "bench-claim-shop";

/// A fixed merchant packet of `n` shares of 1 cent for `order`, paid out as `payout`
/// (`wallet` | `coupon`), grabbed by `n` winners `<order>-<i>`; its id.
async fn grabbed_packet(b: &mut Bench, store: &Store, order: &str, payout: &str) -> String {
    let n = b.calls;
    let mut body = json!({
        "merchant_id": SHOP, "order_reference": order, "sharer_id": "bench-sharer",
        "total_cents": n, "count": n, "mode": "fixed", "payout": payout
    });
    if payout == "coupon" {
        body["coupon"] = json!({"redeem_within_secs": 86_400});
    }
    let req: MerchantPacketRequest = serde_json::from_value(body).expect("request");
    let new = req
        .check(&store.config().packets)
        .expect("a valid merchant packet");
    let MerchantPacketOutcome::Created { packet, .. } = merchants::create_packet(store, &new)
        .await
        .expect("create a merchant packet")
    else {
        panic!("merchant packet {order} not created")
    };
    let keys = Keys::new(&store.config().key_prefix);
    let grabs: Vec<_> = (0..n)
        .map(|i| {
            grab_call(
                &keys,
                &packet.packet_id,
                &format!("{order}-{i}"),
                0,
                "",
                &format!("{i:08x}"),
            )
        })
        .collect();
    let replies = b.run(&scripts::GRAB, &grabs).await;
    assert!(
        replies.iter().all(|r| r.starts_with("grabbed:")),
        "{order}: {:?}",
        &replies[..3]
    );
    packet.packet_id
}

/// The `n` claims of packet `packet_id`'s winners (`<order>-<i>`) as `claim.lua` calls:
/// with the merchant's books (`books_of` the merchant) for a coupon packet, without for a
/// wallet packet, as `packets::claim` sends them.
fn claims(
    b: &Bench,
    store: &Store,
    packet_id: &str,
    order: &str,
    coupon: bool,
) -> Vec<(Vec<String>, Vec<String>)> {
    let keys = Keys::new(&store.config().key_prefix);
    let pk = keys.packet(packet_id);
    let journal = keys.journal_of_tag(&packet_id[..4]);
    let books = keys.merchant(SHOP).merchant;
    (0..b.calls)
        .map(|i| {
            ClaimCall {
                meta: &pk.meta,
                grabs: &pk.grabs,
                claims: &pk.claims,
                coupons: &pk.coupons,
                books: if coupon { &books } else { &pk.meta },
                journal: &journal,
                user_id: &format!("{order}-{i}"),
                books_of: if coupon { SHOP } else { "" },
                call: "00000000000000c1",
            }
            .texts()
        })
        .collect()
}

/// A coupon packet's claim beside a wallet packet's step 1, both claimed by `b.calls` winners.
pub async fn claim_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    merchants::deposit(store, SHOP, b.calls as i64 * 2, "bench-claim-budget")
        .await
        .expect("merchant deposit");
    let wallet = grabbed_packet(b, store, "bench-claim-wallet", "wallet").await;
    let coupon = grabbed_packet(b, store, "bench-claim-coupon", "coupon").await;
    let calls = claims(b, store, &wallet, "bench-claim-wallet", false);
    let wallet_usec = b
        .phase("claim, wallet packet", &scripts::CLAIM, &calls, "claimed")
        .await;
    let calls = claims(b, store, &coupon, "bench-claim-coupon", true);
    let coupon_usec = b
        .phase("claim, coupon packet", &scripts::CLAIM, &calls, "claimed")
        .await;
    vec![Row {
        path: "claim: coupon packet (the whole claim: coupon issued, books moved, journaled)",
        usec: coupon_usec,
        baseline: "claim: wallet packet (step 1 of 3: the share reserved)",
        baseline_usec: wallet_usec,
        goal: f64::INFINITY,
    }]
}
