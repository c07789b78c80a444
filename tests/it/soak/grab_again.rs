//! A grab call sent again after its reply was lost, another press of the same user between
//! (the cluster client re-sends a command whose reply it lost; the user pressed again
//! meanwhile), on the uploaded campaigns that give a user more than one code: the call's two
//! runs must answer alike (`coupon_grab.lua` records each call's outcome under its id).

use std::sync::Arc;

use hongbao::coupons::rules::{campaign_id, campaign_no, home_pool};
use hongbao::coupons::{self, CouponGrabOutcome, PoolKeys};
use hongbao::store::scripts::{text, Call, CouponGrabCall};
use hongbao::Store;
use serde_json::{json, Value};

use super::clients::{Op, Record};

/// The soak's campaigns' pools.
const POOLS: u32 = 24;

/// Step 1 of a grab (`coupon_grab.lua` on the user's home pool) under call id `call`.
async fn grab_step(
    store: &Store,
    campaign: &str,
    user: &str,
    call: &str,
) -> Result<String, String> {
    let no = campaign_no(campaign).ok_or("a campaign id")?;
    // The scripts name a campaign by its number's 5 characters, as the store passes it.
    let campaign = &campaign_id(no);
    let home = home_pool(no, user, POOLS);
    let keys = PoolKeys::new(&store.config().key_prefix, campaign, no, home, POOLS);
    let mut conn = store.conn().await.map_err(|e| e.to_string())?;
    let reply = CouponGrabCall {
        pool: &keys.pool,
        codes: &keys.codes,
        issued: &keys.issued,
        issued_by_time: &keys.issued_by_time,
        holders: &keys.holders,
        rate: &keys.visits(user),
        pending: &keys.pending,
        journal: &keys.journal,
        user_id: user,
        home,
        rate_limit: 0,
        rate_window_ms: 1_000,
        reservation: call,
        campaign_id: campaign,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    text("coupon_grab", reply).map_err(|e| e.to_string())
}

/// The call's first run, another press of the user, the call again: 200 with the two runs'
/// replies and the other press's code (`first`, `again`, `between`), or 503 when Redis failed
/// (the operation is then drawn again, under a new call id).
pub async fn send(store: &Arc<Store>, campaign: &str, user: &str) -> (u16, Value, Option<String>) {
    let call = format!("{:016x}", rand::random::<u64>());
    let visits = crate::coupons::NO_VISIT_LIMIT;
    let first = grab_step(store, campaign, user, &call).await;
    let between = coupons::grab(store, campaign, user, visits).await;
    let again = grab_step(store, campaign, user, &call).await;
    match (first, between, again) {
        (Ok(first), Ok(between), Ok(again)) => {
            let between = match between {
                CouponGrabOutcome::Grabbed { code, .. } => Some(code),
                _ => None,
            };
            (
                200,
                json!({"first": first, "again": again, "between": between}),
                None,
            )
        }
        (first, between, again) => (
            503,
            json!({"error": "unavailable", "message": format!("{first:?} {between:?} {again:?}")}),
            Some("1".into()),
        ),
    }
}

/// The codes an answered operation won (uploaded codes: the item after its pool), and whether
/// its call, sent again, answered as its first run: a first run that won must be answered the
/// same code again.
pub fn won(r: &Record, v: &mut Vec<String>) -> Vec<String> {
    let (Op::CouponGrabAgain { campaign, user }, Some((200, b))) = (&r.op, &r.answer) else {
        return Vec::new();
    };
    let first = b["first"].as_str().unwrap_or_default();
    let again = b["again"].as_str().unwrap_or_default();
    let mut codes: Vec<String> = b["between"]
        .as_str()
        .map(str::to_string)
        .into_iter()
        .collect();
    if let Some(rest) = first.strip_prefix("grabbed:") {
        if again != first {
            v.push(format!(
                "{user}'s grab of {campaign} sent again answered {again:?}, its first run {first:?}"
            ));
        }
        if let Some((_, code)) = rest.split(':').next().and_then(|item| item.split_once('/')) {
            codes.push(code.to_string());
        }
    }
    codes
}
