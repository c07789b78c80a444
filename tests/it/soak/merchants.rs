//! Merchant packets in the soak: two merchants' budgets funded during the run (deposits retried
//! with their reference), orders' packets created from them (each body retried as is, some sent
//! twice on purpose: one packet per order; half paid out to wallets, half as coupons), then
//! grabbed, claimed and settled with every other packet; the coupons claimed go through the
//! checkouts with the campaigns' coupons, many after their `redeem_by`. The checker (`check`)
//! closes each merchant's books, counts their deposits and the coupons' value in the money's
//! conservation, holds each order to one packet and one debit, and each merchant's coupons to
//! what the journal issued and refunded.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::{json, Value};

use hongbao::domain::journal::Kind;
use hongbao::merchants::rules::Books;
use hongbao::store::journal::Entry;

use super::clients::{Op, Record, World};
use crate::common::{event, with_body};

/// The merchants of the run.
pub const MERCHANTS: [&str; 2] = ["soak-shop-a", "soak-shop-b"];

/// The longest `redeem_within_secs` of a coupon packet of the run, seconds.
pub const COUPON_SECS: u64 = 3;

/// A merchant's operation for client `id`'s `n`-th draw, now and then (`None`: none this time):
/// a deposit into a budget, or an order's packet for `user` to share (every fifth one sent
/// twice, as a backend retrying a create whose answer it lost).
pub fn draw(rng: &mut StdRng, id: usize, n: u64, user: &str) -> Option<Vec<Op>> {
    let merchant = MERCHANTS.choose(rng).unwrap().to_string();
    if rng.random_bool(0.03) {
        return Some(vec![Op::MerchantDeposit {
            merchant,
            cents: rng.random_range(2_000..20_000),
            reference: format!("mdep-{id}-{n}"),
        }]);
    }
    if rng.random_bool(0.05) {
        let count = rng.random_range(1..=6u32);
        let mut body = json!({
            "merchant_id": merchant,
            "order_reference": format!("mo-{id}-{n}"),
            "sharer_id": user,
            "total_cents": i64::from(count) * rng.random_range(20..300),
            "count": count,
            "mode": "lucky",
            "payout": "wallet",
            "sharer_first": rng.random_bool(0.5),
            "expires_in_secs": rng.random_range(3..8),
        });
        if rng.random_bool(0.5) {
            // Redeemable for at most `COUPON_SECS` after the packet expires: the run's
            // checkouts reach many of them after that, and the quiesce settles them all.
            body["payout"] = json!("coupon");
            body["coupon"] = json!({"redeem_within_secs": rng.random_range(1..=COUPON_SECS)});
        }
        let create = Op::MerchantCreate { body };
        let mut ops = vec![create.clone()];
        if rng.random_bool(0.2) {
            ops.push(create);
        }
        return Some(ops);
    }
    None
}

/// `POST /merchants/{merchant}/deposits`'s event (AWS_IAM, the fixtures' principal).
pub fn deposit_event(merchant: &str, cents: i64, reference: &str) -> Value {
    let mut v = event("merchant-deposit");
    let path = format!("/merchants/{merchant}/deposits");
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["pathParameters"]["merchant_id"] = json!(merchant);
    let body = json!({"amount_cents": cents, "reference": reference});
    with_body(v, &body.to_string())
}

/// `POST /merchant-packets`' event with `body`.
pub fn create_event(body: &Value) -> Value {
    with_body(event("merchant-create-packet"), &body.to_string())
}

/// Records the packet a create answered (201, or 200 for the order's packet made before) as
/// one to grab, with its sharer.
pub fn note_packet(world: &World, op: &Op, status: u16, body: &Value) {
    if let (Op::MerchantCreate { body: sent }, 201 | 200) = (op, status) {
        let id = body["packet_id"].as_str().unwrap_or_default().to_string();
        let sharer = sent["sharer_id"].as_str().unwrap_or_default().to_string();
        world.packets.lock().unwrap().push((id, sharer));
    }
}

/// The merchants' side of the money, for the conservation check: (deposited, kept), cents,
/// kept = balances + outstanding coupons + coupons redeemed (a redeemed coupon's value was
/// spent on an order: it leaves the system as a withdrawal does). Deposits acknowledged count,
/// each journaled once; ambiguous ones count as the journal says. Each merchant's books close;
/// once every packet is settled nothing stays reserved, and nothing outstanding once every
/// coupon packet's coupons are (`all_settled` means both); the coupons the journal issued from
/// a merchant's packets (`coupon_issued`, worth their share) = its outstanding + redeemed +
/// refunded (`merchant_coupon_refund`); each order has one packet (every answer about it names
/// the same one) and one debit.
pub fn check(
    history: &[Record],
    books: &BTreeMap<String, BTreeMap<String, String>>,
    journal: &[Entry],
    all_settled: bool,
    v: &mut Vec<String>,
) -> (i64, i64) {
    let count = |k: Kind, who: &str, reference: &str| {
        journal
            .iter()
            .filter(|e| e.kind == k && e.user_id == who && e.reference == reference)
            .count()
    };
    let mut deposited = 0i64;
    let mut orders: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in history {
        match (&r.op, &r.answer) {
            (
                Op::MerchantDeposit {
                    merchant,
                    cents,
                    reference,
                },
                answer,
            ) => {
                let n = count(Kind::MerchantDeposit, merchant, reference);
                match answer {
                    Some((201, _)) if n != 1 => v.push(format!(
                        "acknowledged merchant deposit {reference} of {merchant} journaled {n} times"
                    )),
                    Some((201, _)) | None => deposited += cents * n as i64,
                    _ => {}
                }
            }
            (Op::MerchantCreate { body }, Some((201 | 200, b))) => {
                let order = body["order_reference"].as_str().unwrap_or_default();
                let id = b["packet_id"].as_str().unwrap_or_default();
                orders
                    .entry(order.to_string())
                    .or_default()
                    .push(id.to_string());
            }
            _ => {}
        }
    }
    for (order, ids) in &orders {
        let first = &ids[0];
        let merchant = journal
            .iter()
            .find(|e| e.kind == Kind::MerchantPacketDebit && e.reference == *first)
            .map(|e| e.user_id.clone());
        if ids.iter().any(|id| id != first) {
            v.push(format!("order {order} answered several packets: {ids:?}"));
        }
        let debits = journal
            .iter()
            .filter(|e| e.kind == Kind::MerchantPacketDebit && e.reference == *first)
            .count();
        if debits != 1 || merchant.is_none() {
            v.push(format!(
                "order {order}'s packet {first} debited {debits} times"
            ));
        }
    }
    let mut kept = 0i64;
    for m in MERCHANTS {
        let fields: std::collections::HashMap<String, String> = books
            .get(m)
            .map(|b| b.clone().into_iter().collect())
            .unwrap_or_default();
        let b = match Books::from_fields(&fields) {
            Ok(b) => b,
            Err(e) => {
                v.push(format!("merchant {m}'s books do not parse: {e:?}"));
                continue;
            }
        };
        if !b.close() {
            v.push(format!("merchant {m}'s books do not close: {b:?}"));
        }
        if all_settled && (b.reserved_cents, b.outstanding_coupon_cents) != (0, 0) {
            v.push(format!(
                "merchant {m}: {} cents still reserved, {} outstanding after every packet and \
                 coupon settled",
                b.reserved_cents, b.outstanding_coupon_cents
            ));
        }
        let issued: i64 = journal
            .iter()
            .filter(|e| e.kind == Kind::CouponIssued)
            .filter_map(|e| e.share_coupon.as_ref())
            .filter(|s| s.merchant_id == m)
            .map(|s| s.amount_off_cents)
            .sum();
        let refunded: i64 = journal
            .iter()
            .filter(|e| e.kind == Kind::MerchantCouponRefund && e.user_id == m)
            .map(|e| e.amount_cents)
            .sum();
        if issued != b.outstanding_coupon_cents + b.paid_coupon_cents + refunded {
            v.push(format!(
                "merchant {m}: coupons issued {issued} != outstanding {} + redeemed {} + \
                 refunded {refunded}",
                b.outstanding_coupon_cents, b.paid_coupon_cents
            ));
        }
        kept += b.balance_cents + b.outstanding_coupon_cents + b.paid_coupon_cents;
    }
    (deposited, kept)
}
