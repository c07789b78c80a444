//! The soak's coupon drops: the campaigns it creates, the batches of uploaded codes its clients
//! send around a campaign's start, and what the checker holds the campaigns to once they are
//! closed.
//!
//! Five campaigns, each spread over 24 pools, open until 3 s after the run:
//! * 40 uploaded codes planned as 60,000, two per user: most home pools are empty, so grabs
//!   borrow from the others (steps 2 and 3 of a grab);
//! * 60,001 generated codes, one per user;
//! * 20 uploaded codes, one per user: the 30 users run them out;
//! * 4 uploaded codes planned as 60,000, a draw campaign: clients enter its draw for its first
//!   10 s (more users than codes), then its winners grab their codes
//!   (`soak::draws::check_campaign`);
//! * 6 uploaded codes, three per user, starting a third of the way into the run: clients send
//!   batches of 8 codes to it from the start of the run (some twice at once), so batches race
//!   the start under the nemesis's faults (a master paused mid-batch, replies dropped after
//!   the script ran, cut connections) and are sent again before the start, after it, and once
//!   more after the close; a fifth of them are cut off in their first attempt (the sandbox
//!   killed after 1–15 ms) and sent again only after the close.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hongbao::coupons::keys::directory;
use hongbao::coupons::rules::{campaign_id, campaign_no, pool_count, CodeKey};
use hongbao::coupons::PoolKeys;
use hongbao::Store;
use serde_json::{json, Value};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::clients::{Op, Record, World};
use crate::common::{call, event, with_body, Function};

/// A campaign of the soak.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Its id.
    pub id: String,
    /// Codes per user.
    pub per_user: u32,
    /// Its pools.
    pub pools: u32,
    /// The codes uploaded at its creation (none for generated codes).
    pub uploaded: Vec<String>,
    /// Whether clients send it batches (it starts during the run).
    pub takes_batches: bool,
    /// Whether it is a draw campaign (`soak::draws::check_campaign`).
    pub draw: bool,
}

/// Creates the soak's campaigns (see the module documentation) for a run of `secs` seconds.
pub async fn create_campaigns(store: &Arc<Store>, secs: u64) -> Vec<Plan> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let ends = hongbao::api::error::rfc3339(now + secs as i64 * 1000 + 3_000);
    // Redeemable for an hour after: no hold of the run is cut short by redeem_by.
    let redeem_by = hongbao::api::error::rfc3339(now + secs as i64 * 1000 + 3_603_000);
    let starts = hongbao::api::error::rfc3339(now + secs as i64 * 1000 / 3);
    let codes = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
    };
    let plans = [
        (
            json!({"title": "soak uploaded", "codes": codes("SOAK", 40), "per_user": 2,
                   "codes_planned": 60_000, "ends_at": ends, "redeem_by": redeem_by, "reference": "soak-uploaded"}),
            2,
            codes("SOAK", 40),
            false,
        ),
        (
            json!({"title": "soak generated", "generate": 60_001, "ends_at": ends,
                   "redeem_by": redeem_by, "reference": "soak-generated"}),
            1,
            vec![],
            false,
        ),
        (
            json!({"title": "soak scarce", "codes": codes("SCARCE", 20), "per_user": 1,
                   "codes_planned": 60_000, "ends_at": ends, "redeem_by": redeem_by, "reference": "soak-scarce"}),
            1,
            codes("SCARCE", 20),
            false,
        ),
        (
            json!({"title": "soak batches", "codes": codes("FIRST", 6), "per_user": 3,
                   "codes_planned": 60_000, "starts_at": starts, "ends_at": ends,
                   "redeem_by": redeem_by, "reference": "soak-batches"}),
            3,
            codes("FIRST", 6),
            true,
        ),
        (
            json!({"title": "soak draw", "codes": codes("DRAW", 4), "per_user": 1,
                   "codes_planned": 60_000, "ends_at": ends, "redeem_by": redeem_by,
                   "reference": "soak-draw", "draw": {"entry_secs": super::draws::ENTRY_SECS}}),
            1,
            codes("DRAW", 4),
            false,
        ),
    ];
    let mut out = Vec::new();
    for (body, per_user, uploaded, takes_batches) in plans {
        let ev = with_body(event("coupon-create-campaign"), &body.to_string());
        let (status, b, _) = call(store, Function::Coupon, &ev).await;
        assert!(
            status == 201 || status == 200,
            "campaign not created: {status} {b}"
        );
        out.push(Plan {
            id: b["campaign_id"].as_str().unwrap().to_string(),
            per_user,
            pools: pool_count(60_000),
            draw: body.get("draw").is_some(),
            uploaded,
            takes_batches,
        });
    }
    out
}

/// How the reference of a batch ends whose merchant is cut off in the middle of its first
/// attempt (the sandbox killed after 1–15 ms) and sends it again only after the campaign's
/// close, with every other batch (`resend_batches_after_the_close`).
const LATE: &str = "-late";

/// Whether `op` is a batch sent again only after the close (see [`LATE`]).
pub fn abandoned(op: &Op) -> bool {
    matches!(op, Op::CouponBatch { reference, .. } if reference.ends_with(LATE))
}

/// A batch for the campaign that takes them: 8 codes named after the client and its draw.
pub fn batch(campaign: &str, client: usize, n: u64) -> Op {
    Op::CouponBatch {
        campaign: campaign.to_string(),
        reference: format!("sb-{client}-{n}"),
        codes: (0..8).map(|i| format!("SB{client:02}N{n}X{i}")).collect(),
    }
}

/// A client's next coupon operations, if its draw (`n`th of client `id`, for `user`) is one: a
/// batch to the campaign that takes them (until its time), a checkout step of a coupon won, or
/// a grab (now and then pressed twice at once).
pub fn draw(rng: &mut StdRng, world: &World, id: usize, n: u64, user: &str) -> Option<Vec<Op>> {
    if let Some((campaign, until_ms)) = &world.batches {
        if world.ms() < *until_ms && rng.random_bool(0.04) {
            let batch = batch(campaign, id, n);
            if rng.random_bool(0.2) {
                let Op::CouponBatch {
                    campaign,
                    reference,
                    codes,
                } = batch
                else {
                    unreachable!("a batch")
                };
                let reference = format!("{reference}{LATE}");
                return Some(vec![Op::CouponBatch {
                    campaign,
                    reference,
                    codes,
                }]);
            }
            if rng.random_bool(0.3) {
                return Some(vec![batch.clone(), batch]); // the same batch sent twice at once
            }
            return Some(vec![batch]);
        }
    }
    if !world.campaigns.is_empty() && rng.random_bool(0.08) {
        let won = {
            let c = world.coupons.lock().unwrap();
            c.iter()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .choose(rng)
                .map(|w| (*w).clone())
        };
        if let (true, Some((code, holder))) = (rng.random_bool(0.5), won) {
            let held = {
                let c = world.checkouts.lock().unwrap();
                c.iter()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .choose(rng)
                    .map(|w| (*w).clone())
            };
            return Some(vec![super::checkout::draw(
                rng,
                code,
                holder,
                user.to_string(),
                n,
                held,
            )]);
        }
        let campaign = world.campaigns.choose(rng).unwrap().clone();
        if world.grab_again.contains(&campaign) && rng.random_bool(0.25) {
            return Some(vec![Op::CouponGrabAgain {
                campaign,
                user: user.to_string(),
            }]);
        }
        let grab = Op::CouponGrab {
            campaign,
            user: user.to_string(),
        };
        let mut ops = vec![grab.clone()];
        if rng.random_bool(0.3) {
            ops.push(grab); // a double press
        }
        return Some(ops);
    }
    None
}

/// `POST /campaigns/{id}/codes` (IAM) of a batch.
pub async fn send_batch(
    store: &Arc<Store>,
    campaign: &str,
    reference: &str,
    codes: &[String],
) -> (u16, Value, Option<String>) {
    let body = json!({"codes": codes, "reference": reference});
    let mut ev = with_body(event("coupon-add-codes"), &body.to_string());
    let path = format!("/campaigns/{campaign}/codes");
    ev["rawPath"] = json!(path);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["pathParameters"]["id"] = json!(campaign);
    call(store, Function::Coupon, &ev).await
}

/// After the close: every batch of the history sent once more (each answered as before, and
/// nothing pushed into a closed pool), and a new batch sent to each campaign that takes them
/// (refused: the campaign has started), their records added to the history.
pub async fn resend_batches_after_the_close(
    history: &mut Vec<Record>,
    auditor: &Arc<Store>,
    plans: &[Plan],
) {
    let batches: Vec<Record> = history
        .iter()
        .filter(|r| matches!(r.op, Op::CouponBatch { .. }))
        .cloned()
        .collect();
    for mut r in batches {
        let Op::CouponBatch {
            campaign,
            reference,
            codes,
        } = &r.op
        else {
            continue;
        };
        let (status, body, _) = send_batch(auditor, campaign, reference, codes).await;
        r.attempts.clear();
        r.answer = Some((status, body));
        history.push(r);
    }
    for plan in plans.iter().filter(|p| p.takes_batches) {
        let op = batch(&plan.id, 99, 0);
        let Op::CouponBatch {
            campaign,
            reference,
            codes,
        } = &op
        else {
            continue;
        };
        let (status, body, _) = send_batch(auditor, campaign, reference, codes).await;
        history.push(Record {
            client: 99,
            op,
            attempts: Vec::new(),
            answer: Some((status, body)),
        });
    }
}

/// What the pools of a closed campaign hold.
#[derive(Debug, Default)]
struct Pools {
    /// Un-issued codes still listed (none once closed).
    listed: u64,
    /// Issued codes (uploaded code or generated index) -> their user.
    issued: BTreeMap<String, String>,
    /// Each user's items (`<pool>/<code or index>`, `?<id>` an open reservation).
    items: BTreeMap<String, Vec<String>>,
    /// The issued records as the feed names them: code -> user (a generated index turned
    /// into its code).
    as_codes: BTreeMap<String, String>,
    /// The codes whose record says redeemed, as the feed names them.
    redeemed: BTreeSet<String>,
}

async fn read_pools(store: &Store, plan: &Plan) -> Result<Pools, String> {
    let no = campaign_no(&plan.id).ok_or("a campaign id")?;
    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await.map_err(|e| e.to_string())?;
    let mut out = Pools::default();
    let mut redeemed = BTreeSet::new();
    let secret: Option<String> = redis::cmd("HGET")
        .arg(PoolKeys::new(prefix, &plan.id, no, 0, plan.pools).pool)
        .arg("secret")
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let key = secret
        .map(|s| CodeKey::new(&s).map_err(|e| e.to_string()))
        .transpose()?;
    for k in 0..plan.pools {
        let keys = PoolKeys::new(prefix, &plan.id, no, k, plan.pools);
        type Fields = Vec<(String, String)>;
        let (listed, issued, holders): (u64, Fields, Fields) = redis::pipe()
            .cmd("LLEN")
            .arg(&keys.codes)
            .cmd("HGETALL")
            .arg(&keys.issued)
            .cmd("HGETALL")
            .arg(&keys.holders)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        out.listed += listed;
        for (code, record) in issued.into_iter().filter(|(c, _)| !c.contains('\n')) {
            let fields: Vec<&str> = record.split('\n').collect();
            // `lua/coupon_record.lua`: 4 fields (a redemption written before holds), or the
            // state in the fifth.
            if fields.len() == 4 || fields.get(4) == Some(&"redeemed") {
                redeemed.insert(code.clone());
            }
            out.issued.insert(code, fields[0].to_string());
        }
        for (user, items) in holders.into_iter().filter(|(u, _)| !u.contains('\n')) {
            out.items
                .entry(user)
                .or_default()
                .extend(items.split_whitespace().map(str::to_string));
        }
    }
    let as_code = |item: &String| match (&key, item.parse::<u64>()) {
        (Some(key), Ok(index)) => key.code(no, index),
        _ => item.clone(),
    };
    out.as_codes = out
        .issued
        .iter()
        .map(|(item, user)| (as_code(item), user.clone()))
        .collect();
    out.redeemed = redeemed.iter().map(as_code).collect();
    Ok(out)
}

/// The checks of the closed campaigns against the history and the feed's `events` (see the
/// soak's documentation): a code answered to one user, no user above `per_user` or with more
/// codes than grab calls, `codes_left` + issued = `codes_total`, each issued code one the
/// user's items show (and no reservation left open), every uploaded code in exactly one place
/// (a pool of its campaign, counted in `codes_total`, or free in the directory), no code listed
/// in a closed pool, the feed's `CouponIssued` and `CouponRedeemed` events the pools' records,
/// and one `CampaignEnded` with the campaign's counts.
pub async fn check(
    store: &Store,
    plans: &[Plan],
    history: &[Record],
    events: &[Value],
    started_epoch_ms: i64,
) -> Vec<String> {
    let mut v = Vec::new();
    let Answers {
        sold_out,
        per_user,
        calls,
        batched,
    } = answers(history, started_epoch_ms, &mut v);
    let (issued, ended) = feed(events, &mut v);
    let (redeemed, redemption_violations) = super::checkout::redemptions(events);
    v.extend(redemption_violations);
    v.extend(super::checkout::check_holds(history, started_epoch_ms));
    v.extend(super::checkout::check_resent(history));
    issued_after_sold_out(events, &sold_out, &mut v);
    for plan in plans {
        let id = &plan.id;
        let limit = plan.per_user as usize;
        for ((campaign, user), codes) in &per_user {
            if campaign == id && codes.len() > limit {
                v.push(format!(
                    "{user} won {} coupons of {id} (per_user {limit})",
                    codes.len()
                ));
            }
        }
        let view = match hongbao::coupons::campaign(store, id, None).await {
            Ok(Some(view)) => view,
            other => {
                v.push(format!("campaign {id} unreadable: {other:?}"));
                continue;
            }
        };
        if view.codes_left + view.codes_issued != view.codes_total {
            v.push(format!(
                "campaign {id}: left {} + issued {} != total {}",
                view.codes_left, view.codes_issued, view.codes_total
            ));
        }
        let pools = match read_pools(store, plan).await {
            Ok(p) => p,
            Err(e) => {
                v.push(format!("campaign {id}: pools unreadable: {e}"));
                continue;
            }
        };
        check_pools(plan, &pools, view.codes_issued, &mut v);
        if !plan.uploaded.is_empty() {
            let mut uploaded: BTreeSet<String> = plan.uploaded.iter().cloned().collect();
            uploaded.extend(batched.get(id).cloned().unwrap_or_default());
            check_places(store, plan, &uploaded, &pools, view.codes_total, &mut v).await;
        }
        if plan.draw {
            super::draws::check_campaign(store, plan, view.codes_total, history, events, &mut v)
                .await;
        }
        let feed_issued = issued.get(id).cloned().unwrap_or_default();
        if feed_issued != pools.as_codes {
            v.push(format!(
                "campaign {id}: the feed's CouponIssued events ({}) are not the pools' issued \
                 records ({})",
                feed_issued.len(),
                pools.issued.len()
            ));
        }
        for ((campaign, user), codes) in &per_user {
            for code in codes.iter().filter(|_| campaign == id) {
                if feed_issued.get(code) != Some(user) {
                    v.push(format!(
                        "{code} answered to {user}, the feed says {:?}",
                        feed_issued.get(code)
                    ));
                }
            }
        }
        // Per user, from the feed: at most per_user codes, and no more than the user's grab
        // calls (a call sent again by the client library must not win a second code).
        let mut feed_per_user: BTreeMap<&String, usize> = BTreeMap::new();
        for user in feed_issued.values() {
            *feed_per_user.entry(user).or_default() += 1;
        }
        for (user, n) in feed_per_user {
            let made = calls.get(&(id.clone(), user.clone())).copied().unwrap_or(0);
            if n > limit || n > made {
                v.push(format!(
                    "{user} was issued {n} coupons of {id} (per_user {limit}) in {made} grab calls"
                ));
            }
        }
        let feed_redeemed: BTreeSet<String> = redeemed
            .get(id)
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default();
        if feed_redeemed != pools.redeemed {
            v.push(format!(
                "campaign {id}: redeemed by the feed {feed_redeemed:?}, by the pools {:?}",
                pools.redeemed
            ));
        }
        let feed_redeemed = feed_redeemed.len() as u64;
        if feed_redeemed != view.codes_redeemed {
            v.push(format!(
                "campaign {id}: {feed_redeemed} CouponRedeemed events, {} redeemed",
                view.codes_redeemed
            ));
        }
        match ended.get(id).map(Vec::as_slice) {
            Some([d]) => {
                let counts = (
                    d["codes_issued"].as_u64(),
                    d["codes_redeemed"].as_u64(),
                    d["codes_never_issued"]
                        .as_u64()
                        .map(|n| n + view.codes_issued),
                );
                let store_says = (
                    Some(view.codes_issued),
                    Some(view.codes_redeemed),
                    Some(view.codes_total),
                );
                if counts != store_says {
                    v.push(format!(
                        "campaign {id} ended with {d}, the store says {view:?}"
                    ));
                }
            }
            other => v.push(format!("campaign {id}: CampaignEnded events {other:?}")),
        }
    }
    v
}

/// What the history says of the coupon operations.
struct Answers {
    /// When each campaign was first answered sold_out (Unix ms, the client's clock: the
    /// machine's, as Redis's).
    sold_out: BTreeMap<String, i64>,
    /// The codes answered to each (campaign, user).
    per_user: BTreeMap<(String, String), BTreeSet<String>>,
    /// The grab attempts of each (campaign, user).
    calls: BTreeMap<(String, String), usize>,
    /// The codes sent in batches to each campaign.
    batched: BTreeMap<String, BTreeSet<String>>,
}

/// Reads the history's coupon operations; a code answered to two users is a violation.
fn answers(history: &[Record], started_epoch_ms: i64, v: &mut Vec<String>) -> Answers {
    let mut out = Answers {
        sold_out: BTreeMap::new(),
        per_user: BTreeMap::new(),
        calls: BTreeMap::new(),
        batched: BTreeMap::new(),
    };
    let mut holder: BTreeMap<String, String> = BTreeMap::new();
    for r in history {
        match (&r.op, &r.answer) {
            (
                Op::CouponBatch {
                    campaign, codes, ..
                },
                _,
            ) => out
                .batched
                .entry(campaign.clone())
                .or_default()
                .extend(codes.iter().cloned()),
            (Op::CouponGrabAgain { campaign, user }, _) => {
                let key = (campaign.clone(), user.clone());
                // Two presses: the call (sent twice, one call) and the press between.
                *out.calls.entry(key.clone()).or_default() += 2 * r.attempts.len().max(1);
                for code in super::grab_again::won(r, v) {
                    if let Some(other) = holder.insert(code.clone(), user.clone()) {
                        if other != *user {
                            v.push(format!("coupon {code} answered to {other} and to {user}"));
                        }
                    }
                    out.per_user.entry(key.clone()).or_default().insert(code);
                }
            }
            (
                Op::CouponGrab { campaign, user } | Op::CouponSlowGrab { campaign, user, .. },
                answer,
            ) => {
                let key = (campaign.clone(), user.clone());
                *out.calls.entry(key.clone()).or_default() += r.attempts.len().max(1);
                let last = r.attempts.last().filter(|a| a.status == Some(410));
                if last.is_some_and(|a| a.error.as_ref().is_some_and(|(c, _)| c == "sold_out")) {
                    let at = started_epoch_ms + last.map_or(0, |a| a.at_ms as i64);
                    let first = out.sold_out.entry(campaign.clone()).or_insert(at);
                    *first = (*first).min(at);
                }
                if let Some((200, b)) = answer {
                    let code = b["code"].as_str().unwrap_or_default().to_string();
                    if let Some(other) = holder.insert(code.clone(), user.clone()) {
                        if other != *user {
                            v.push(format!("coupon {code} answered to {other} and to {user}"));
                        }
                    }
                    out.per_user.entry(key).or_default().insert(code);
                }
            }
            _ => {}
        }
    }
    out
}

/// No code of a campaign is issued after a grab of it was answered sold_out: pools only shrink
/// once grabbing opens.
fn issued_after_sold_out(events: &[Value], sold_out: &BTreeMap<String, i64>, v: &mut Vec<String>) {
    for e in events {
        let d = &e["detail"];
        let campaign = d["campaign_id"].as_str().unwrap_or_default();
        if let (Some("CouponIssued"), Some(at), Some(answered)) = (
            e["detail-type"].as_str(),
            d["at_ms"].as_i64(),
            sold_out.get(campaign),
        ) {
            if at > *answered {
                v.push(format!(
                    "campaign {campaign}: {} issued at {at}, after a grab was answered sold_out at \
                     {answered}",
                    d["code"]
                ));
            }
        }
    }
}

/// Per campaign, from the feed's events de-duplicated by `event_id`: CouponIssued (code ->
/// user; a code issued twice is a violation) and CampaignEnded (their details).
#[allow(clippy::type_complexity)]
fn feed(
    events: &[Value],
    v: &mut Vec<String>,
) -> (
    BTreeMap<String, BTreeMap<String, String>>,
    BTreeMap<String, Vec<Value>>,
) {
    let mut seen = BTreeSet::new();
    let mut issued: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut ended: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in events {
        let d = &e["detail"];
        if !seen.insert(d["event_id"].as_str().unwrap_or_default().to_string()) {
            continue;
        }
        let campaign = d["campaign_id"].as_str().unwrap_or_default().to_string();
        let code = d["code"].as_str().unwrap_or_default().to_string();
        let user = d["user_id"].as_str().unwrap_or_default().to_string();
        match e["detail-type"].as_str() {
            Some("CouponIssued") => {
                if let Some(other) = issued
                    .entry(campaign)
                    .or_default()
                    .insert(code.clone(), user)
                {
                    v.push(format!(
                        "feed: coupon {code} issued twice (also to {other})"
                    ));
                }
            }
            // Its campaign's public id (the reference is the number's 5 characters).
            Some("CampaignEnded") => ended
                .entry(d["campaign_id"].as_str().unwrap_or_default().into())
                .or_default()
                .push(d.clone()),
            _ => {}
        }
    }
    (issued, ended)
}

/// A closed campaign's pools: nothing listed, no reservation open, each user's items the codes
/// issued to the user, no user above `per_user`, and as many issued records as the campaign
/// counts.
fn check_pools(plan: &Plan, pools: &Pools, issued: u64, v: &mut Vec<String>) {
    let id = &plan.id;
    if pools.listed > 0 {
        v.push(format!(
            "campaign {id}: {} codes listed in its closed pools",
            pools.listed
        ));
    }
    if pools.issued.len() as u64 != issued {
        v.push(format!(
            "campaign {id}: {} issued records, {issued} counted",
            pools.issued.len()
        ));
    }
    let mut by_user: BTreeMap<&String, BTreeSet<&str>> = BTreeMap::new();
    for (code, user) in &pools.issued {
        by_user.entry(user).or_default().insert(code);
    }
    for (user, items) in &pools.items {
        if items.iter().any(|i| i.starts_with('?')) {
            v.push(format!(
                "campaign {id}: {user} holds an open reservation: {items:?}"
            ));
        }
        let held: BTreeSet<&str> = items
            .iter()
            .filter_map(|i| i.split_once('/').map(|(_, c)| c))
            .collect();
        if held.len() > plan.per_user as usize {
            v.push(format!(
                "campaign {id}: {user} holds {held:?} (per_user {})",
                plan.per_user
            ));
        }
        let issued = by_user.remove(user).unwrap_or_default();
        if held != issued {
            v.push(format!(
                "campaign {id}: {user}'s items {held:?}, issued to {user}: {issued:?}"
            ));
        }
    }
    for (user, issued) in by_user {
        v.push(format!(
            "campaign {id}: {issued:?} issued to {user}, who holds none"
        ));
    }
}

/// Every uploaded code of a closed campaign in exactly one place: claimed in the directory for
/// the campaign (its creation or one of its batches), counted in `codes_total`, or free; an
/// issued code claimed for it.
async fn check_places(
    store: &Store,
    plan: &Plan,
    uploaded: &BTreeSet<String>,
    pools: &Pools,
    codes_total: u64,
    v: &mut Vec<String>,
) {
    let id = &plan.id;
    let number = campaign_id(campaign_no(id).unwrap_or_default());
    let prefix = &store.config().key_prefix;
    let mut conn = match store.conn().await {
        Ok(c) => c,
        Err(e) => return v.push(format!("campaign {id}: directory unreadable: {e}")),
    };
    let mut mine = BTreeSet::new();
    for code in uploaded {
        let owner: Result<Option<String>, _> = redis::cmd("HGET")
            .arg(directory(prefix, code))
            .arg(code)
            .query_async(&mut conn)
            .await;
        match owner {
            // The directory names a campaign by its number's 5 characters.
            Ok(Some(o)) if o == number || o.starts_with(&format!("{number}/")) => {
                mine.insert(code.clone());
            }
            Ok(None) => {}
            Ok(Some(o)) => v.push(format!("{code} of campaign {id} is claimed by {o}")),
            Err(e) => return v.push(format!("campaign {id}: directory unreadable: {e}")),
        }
    }
    if mine.len() as u64 != codes_total {
        v.push(format!(
            "campaign {id}: {} of its uploaded codes are claimed for it, its pools count {codes_total}",
            mine.len()
        ));
    }
    for code in pools.issued.keys() {
        if !mine.contains(code) {
            v.push(format!(
                "campaign {id}: {code} is issued but not claimed for the campaign"
            ));
        }
    }
}
