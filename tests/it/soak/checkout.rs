//! The soak's checkouts: the coupons clients won are held, redeemed and released by a few
//! orders each (`POST /coupons/hold`, `/coupons/redeem`, `/coupons/release`, IAM), orders
//! repeating as a checkout retries or a second order tries the same coupon, holds of 30 s (the
//! shortest) that lapse within a run; and the checks of what they were answered: a code held
//! by one order at a time, never redeemed while another order's hold runs, redeemed at most
//! once per redemption not released, and the feed's `CouponRedeemed` and `CouponReleased`
//! events adding up to the pools' redemptions.
//!
//! One step in five is sent through the store under a call id of its own and sent again with
//! that id 0.3-2.5 s later ([`Resent`]), as the cluster client re-sends a command whose reply
//! was lost while other orders move the coupon on: the second answer must be the first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hongbao::coupons::{self, HoldOutcome, RedeemOutcome, ReleaseOutcome};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

use super::clients::{Op, Record};
use crate::common::{call, event, with_body, Function};

/// The shortest hold the API accepts, seconds.
const HOLD_SECS: u32 = 30;

/// A checkout step sent under call id `call` and, `stall_ms` later, sent again with it.
#[derive(Debug, Clone)]
pub struct Resent {
    /// The call id (16 hex digits).
    pub call: String,
    /// How long after its answer the step is sent again, ms.
    pub stall_ms: u64,
}

/// A checkout step for `code` (won by `holder`; `user` another user, now and then named at
/// checkout instead: 404), under one of a few orders (they repeat: a retried checkout, or a
/// second order trying the same coupon); a release mostly of a hold or redemption answered
/// before (`held`: code and order).
pub fn draw(
    rng: &mut StdRng,
    code: String,
    holder: String,
    user: String,
    n: u64,
    held: Option<(String, String)>,
) -> Op {
    let user = if rng.random_bool(0.9) { holder } else { user };
    let order = format!("ord-{}", rng.random_range(0..3) + n % 7);
    let resent = rng.random_bool(0.2).then(|| Resent {
        call: format!("{:016x}", rng.random::<u64>()),
        stall_ms: rng.random_range(300..2_500),
    });
    match rng.random_range(0..100) {
        0..20 if held.is_some() => {
            let (code, order) = held.unwrap_or_default();
            Op::CouponRelease {
                code,
                order,
                resent,
            }
        }
        0..35 => Op::CouponHold {
            code,
            user,
            order,
            hold_secs: HOLD_SECS,
            resent,
        },
        35..75 => Op::CouponRedeem {
            code,
            user,
            order,
            resent,
        },
        _ => Op::CouponRelease {
            code,
            order,
            resent,
        },
    }
}

/// `POST /coupons/hold` (IAM).
pub async fn send_hold(
    store: &Arc<Store>,
    code: &str,
    user: &str,
    order: &str,
    hold_secs: u32,
) -> (u16, Value, Option<String>) {
    let body = json!({"code": code, "user_id": user, "order_reference": order,
                      "hold_secs": hold_secs});
    let ev = with_body(event("coupon-hold"), &body.to_string());
    call(store, Function::Coupon, &ev).await
}

/// A step's answer through the store: its outcome as text (what a re-send must answer again)
/// and the answer the API would give, as far as the checks read it (the status; `held_until`
/// or `redeemed_at`).
async fn store_step(store: &Store, op: &Op, call: &str) -> Result<(String, u16, Value), String> {
    let rfc = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default()
    };
    let refused = |text: String| (text, 409, json!({"error": "refused"}));
    let answer = match op {
        Op::CouponHold {
            code,
            user,
            order,
            hold_secs,
            ..
        } => {
            let ms = u64::from(*hold_secs) * 1000;
            match coupons::hold_as(store, code, user, order, ms, None, call).await {
                Ok(o @ HoldOutcome::Held { held_until_ms, .. }) => (
                    format!("{o:?}"),
                    200,
                    json!({"held_until": rfc(held_until_ms)}),
                ),
                Ok(o) => refused(format!("{o:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        Op::CouponRedeem {
            code, user, order, ..
        } => match coupons::redeem_as(store, code, user, order, None, call).await {
            Ok(o @ RedeemOutcome::Redeemed { redeemed_at_ms, .. }) => (
                format!("{o:?}"),
                200,
                json!({"redeemed_at": rfc(redeemed_at_ms)}),
            ),
            Ok(o) => refused(format!("{o:?}")),
            Err(e) => return Err(e.to_string()),
        },
        Op::CouponRelease { code, order, .. } => {
            match coupons::release_as(store, code, order, call).await {
                Ok(o @ ReleaseOutcome::Released { .. }) => (format!("{o:?}"), 200, json!({})),
                Ok(o) => refused(format!("{o:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        other => return Err(format!("not a checkout step: {other:?}")),
    };
    Ok(answer)
}

/// A [`Resent`] step: sent under its call id (a 503 when Redis did not answer: the client sends
/// it again, with the same id), then, `stall_ms` after its answer, sent again with the same id;
/// the answer carries both outcomes (`resent`: `first`, `again`), which [`check_resent`] judges.
pub async fn send_resent(
    store: &Arc<Store>,
    op: &Op,
    resent: &Resent,
) -> (u16, Value, Option<String>) {
    let (first, status, mut body) = match store_step(store, op, &resent.call).await {
        Ok(answer) => answer,
        Err(e) => {
            return (
                503,
                json!({"error": "unavailable", "message": e}),
                Some("1".into()),
            )
        }
    };
    tokio::time::sleep(Duration::from_millis(resent.stall_ms)).await;
    let mut again = None;
    for _ in 0..20 {
        match store_step(store, op, &resent.call).await {
            Ok((text, ..)) => {
                again = Some(text);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    body["resent"] = json!({"first": first, "again": again});
    (status, body, None)
}

/// Every [`Resent`] step's second answer is its first (one that got none, Redis unreachable
/// for 5 s, is not judged), but a hold's or a redeem's refusal that no transition made, which
/// may be answered by another such refusal (docs/design.md: a refusal that writes nothing).
pub fn check_resent(history: &[Record]) -> Vec<String> {
    let mut v = Vec::new();
    // A refusal no transition made (no such coupon for the user, expired, below the minimum,
    // the total required) is not recorded: its re-send answers the coupon's state then, a
    // refusal as true at that later moment (the pool's keys gone by then: not found).
    let unrecorded = |v: &Value| {
        v.as_str().is_some_and(|s| {
            ["NotFound", "Expired", "BelowMinimum", "OrderTotalRequired"]
                .iter()
                .any(|r| s.starts_with(r))
        })
    };
    for r in history {
        let Some((_, body)) = &r.answer else { continue };
        let resent = &body["resent"];
        let first_unrecorded =
            unrecorded(&resent["first"]) && !matches!(r.op, Op::CouponRelease { .. });
        if first_unrecorded && unrecorded(&resent["again"]) {
            continue;
        }
        if !resent["again"].is_null() && resent["again"] != resent["first"] {
            v.push(format!(
                "{:?}: re-sent with its call id, answered {} first and {} again",
                r.op, resent["first"], resent["again"]
            ));
        }
    }
    v
}

/// `POST /coupons/release` (IAM).
pub async fn send_release(
    store: &Arc<Store>,
    code: &str,
    order: &str,
) -> (u16, Value, Option<String>) {
    let body = json!({"code": code, "order_reference": order});
    let ev = with_body(event("coupon-release"), &body.to_string());
    call(store, Function::Coupon, &ev).await
}

/// Unix ms of an RFC 3339 time of an answer.
fn ms(v: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Each code held by one order at a time: a hold or a redemption of an order while another
/// order's hold (answered 200) had not lapsed, and that order released nothing of the code, is
/// a violation. A hold's start is its `held_until` less its length, or, when `held_until` was
/// cut to the coupon's `redeem_by`, when its answered attempt was sent (`started_epoch_ms`,
/// Unix ms, plus the attempt's `at_ms`): never earlier than the hold was made.
pub fn check_holds(history: &[Record], started_epoch_ms: i64) -> Vec<String> {
    let mut v = Vec::new();
    // code -> (order, start, until) of each hold; code -> orders that released it; code ->
    // (order, at) of each redemption.
    let mut holds: BTreeMap<&str, Vec<(&str, i64, i64)>> = BTreeMap::new();
    let mut released: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut redeemed: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
    for r in history {
        match (&r.op, &r.answer) {
            (
                Op::CouponHold {
                    code,
                    order,
                    hold_secs,
                    ..
                },
                Some((200, b)),
            ) => {
                if let Some(until) = ms(&b["held_until"]) {
                    let sent = r.attempts.last().map_or(0, |a| a.at_ms as i64);
                    let start = (until - i64::from(*hold_secs) * 1000).max(started_epoch_ms + sent);
                    holds.entry(code).or_default().push((order, start, until));
                }
            }
            (Op::CouponRelease { code, order, .. }, Some((200, _))) => {
                released.entry(code).or_default().push(order);
            }
            (Op::CouponRedeem { code, order, .. }, Some((200, b))) => {
                if let Some(at) = ms(&b["redeemed_at"]) {
                    redeemed.entry(code).or_default().push((order, at));
                }
            }
            _ => {}
        }
    }
    for (code, hs) in &holds {
        let free = |order: &str| released.get(code).is_some_and(|o| o.contains(&order));
        for &(a, start_a, until_a) in hs {
            if free(a) {
                continue;
            }
            for &(b, start_b, _) in hs {
                if b != a && start_a < start_b && start_b < until_a {
                    v.push(format!(
                        "{code}: held by {b} at {start_b} while {a}'s hold ran ({start_a}..{until_a})"
                    ));
                }
            }
            for &(b, at) in redeemed.get(code).map(Vec::as_slice).unwrap_or_default() {
                if b != a && start_a < at && at < until_a {
                    v.push(format!(
                        "{code}: redeemed by {b} at {at} while {a}'s hold ran ({start_a}..{until_a})"
                    ));
                }
            }
        }
    }
    v
}

/// From the feed's `CouponRedeemed` and `CouponReleased` events (de-duplicated), in the order
/// of their Redis times: each code redeemed at most once per redemption not released, and
/// each release naming the order whose redemption it reverses. Returns per campaign the codes
/// redeemed in the end (code -> order) and the violations.
pub fn redemptions(events: &[Value]) -> (BTreeMap<String, BTreeMap<String, String>>, Vec<String>) {
    let mut v = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    // (at, 0 redeem / 1 release, campaign, code, order)
    let mut steps: Vec<(i64, u8, String, String, String)> = Vec::new();
    for e in events {
        let d = &e["detail"];
        if !seen.insert(d["event_id"].as_str().unwrap_or_default().to_string()) {
            continue;
        }
        let rank = match e["detail-type"].as_str() {
            Some("CouponRedeemed") => 0,
            Some("CouponReleased") => 1,
            _ => continue,
        };
        let field = |k: &str| d[k].as_str().unwrap_or_default().to_string();
        steps.push((
            d["at_ms"].as_i64().unwrap_or(0),
            rank,
            field("campaign_id"),
            field("code"),
            field("order_reference"),
        ));
    }
    steps.sort();
    let mut now: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (at, rank, campaign, code, order) in steps {
        let redeemed = now.entry(campaign).or_default();
        match (rank, redeemed.get(&code)) {
            (0, Some(other)) => v.push(format!(
                "feed: coupon {code} redeemed by {order} at {at}, while redeemed by {other}"
            )),
            (0, None) => {
                redeemed.insert(code, order);
            }
            (_, Some(o)) if *o == order => {
                redeemed.remove(&code);
            }
            (_, other) => v.push(format!(
                "feed: coupon {code} released for {order} at {at}, redeemed by {other:?}"
            )),
        }
    }
    (now, v)
}
