//! The soak's openings: campaigns that open at once, created by a merchant during the run while
//! the nemesis faults the cluster, and grabbed by bots from the moment the creation is recorded
//! (step 1, `coupon_create.lua`): a campaign's id cannot be guessed from the ones before it,
//! so the bots read it as an insider with the store could (the creation's record holds the
//! secret its id tag comes from), before the merchant's creation is answered. A creation
//! cut short by a fault leaves its campaign open on the pools it wrote until the merchant sends
//! it again after `Retry-After`; in that window a grab that needs a pool not written yet is told
//! to grab again, never `sold_out`, and each reservation still has one outcome per pool
//! (`coupon_take.lua` records `-` or `~`): a press whose sandbox stalls between its
//! reservation and its walk, while the user's second press walks the same reservation, must
//! reach the same outcome even when the creation writes the missing pools in between.
//!
//! Each opening: 12 uploaded codes over 24 pools (half of the home pools are empty from the
//! start, so most grabs walk), `per_user` 1, open until 3 s after the run like the other
//! campaigns; about 60 openings per run; 10 bots pressing every 50–200 ms until answered
//! something final (a code, 409, 410), each press sent while the creation is not answered yet
//! or after a `not_started` or a 5xx stalled between steps 1 and 2 until the creation is
//! answered, while a second press of the same user runs.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use hongbao::coupons::keys::refs;
use hongbao::coupons::rules::{campaign_id, campaign_no, home_pool, id_tag, public_id};
use hongbao::coupons::PoolKeys;
use hongbao::store::scripts::{text, Call, CouponGrabCall, CouponResolveCall, CouponTakeCall};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::clients::{perform, Op, Record, World};
use super::coupons::Plan;
use super::Log;
use crate::common::{call, event, with_body, Function};

/// The pools of an opening (`codes_planned` 60,000).
const POOLS: u32 = 24;

/// The history's client number of the merchant and the bots.
const CLIENT: usize = 90;

/// The openings whose creation the merchant has been answered (by campaign number's id): a
/// stalled press walks only once its campaign is in here, so that its walk comes after the
/// pools a cut-short creation missed are written.
static CREATED: LazyLock<Mutex<BTreeSet<String>>> = LazyLock::new(Default::default);

/// The highest campaign number among `plans`: the openings take the next ones.
pub fn last_no(plans: &[Plan]) -> u64 {
    plans
        .iter()
        .filter_map(|p| campaign_no(&p.id))
        .max()
        .unwrap_or(0)
}

/// Openings one after another until 5 s before `deadline`, each created under the next
/// campaign number after `last_no`. Returns their plans for the checker.
pub async fn run(
    sandboxes: Vec<Arc<Store>>,
    seed: u64,
    deadline: Instant,
    last_no: u64,
    world: Arc<World>,
    log: Log,
) -> Vec<Plan> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6f70_656e_696e_6700);
    let ends_ms = epoch_ms()
        + deadline
            .saturating_duration_since(Instant::now())
            .as_millis() as i64
        + 3_000;
    let (mut plans, mut crowds) = (Vec::new(), Vec::new());
    // About 60 openings per run, one every 0.6 s at most: each is a campaign to close and check.
    let gap = (deadline
        .saturating_duration_since(Instant::now())
        .as_millis() as u64
        / 60)
        .max(600);
    for k in 1u64.. {
        tokio::time::sleep(Duration::from_millis(
            rng.random_range(gap / 2..gap * 3 / 2),
        ))
        .await;
        if Instant::now() + Duration::from_secs(5) >= deadline {
            break;
        }
        let no = last_no + k;
        let id = campaign_id(no);
        let reference = format!("soak-open-{k}");
        let codes: Vec<String> = (0..12).map(|i| format!("OPEN{k:03}-{i:02}")).collect();
        let body = json!({
            "title": format!("soak opening {k}"), "codes": codes, "per_user": 1,
            "codes_planned": 60_000, "ends_at": hongbao::api::error::rfc3339(ends_ms),
            "redeem_by": hongbao::api::error::rfc3339(ends_ms + 3_600_000),
            "reference": reference,
        });
        log.note(format!("opening {k}: campaign {id}"));
        let merchant = Op::CouponOpen { body };
        let store = sandboxes.choose(&mut rng).unwrap().clone();
        let (w, l, opened) = (world.clone(), log.clone(), id.clone());
        let merchant = tokio::spawn(async move {
            let r = perform(CLIENT, merchant, &store, None, deadline, &w, &l).await;
            CREATED.lock().unwrap().insert(opened);
            r
        });
        let bots: Vec<String> = world.users.choose_multiple(&mut rng, 10).cloned().collect();
        for user in bots {
            let presses: Vec<(Arc<Store>, u64, u64)> = (0..30)
                .map(|_| {
                    let store = sandboxes.choose(&mut rng).unwrap().clone();
                    (
                        store,
                        rng.random_range(50..200),
                        rng.random_range(300..3_000),
                    )
                })
                .collect();
            let (reference, w, l) = (reference.clone(), world.clone(), log.clone());
            crowds.push(tokio::spawn(async move {
                bot((no, &reference), &user, presses, deadline, &w, &l).await
            }));
        }
        // The next opening waits for this creation (it takes the next campaign number), not
        // for the bots.
        let r = merchant.await.expect("an opening's merchant panicked");
        let created = match &r.answer {
            Some((200 | 201, b)) => b["campaign_id"].as_str().map(str::to_string),
            _ => None,
        };
        world.history.lock().unwrap().push(r);
        let recorded = public_id_of(&sandboxes[0], &reference, no).await;
        if created.is_some() && created != recorded {
            log.note(format!(
                "opening {k}: created as {created:?}, its bots grabbed {recorded:?}"
            ));
        }
        plans.push(Plan {
            draw: false,
            id: created.or(recorded).unwrap_or(id),
            per_user: 1,
            pools: POOLS,
            uploaded: codes,
            takes_batches: false,
        });
    }
    for t in crowds {
        let records = t.await.expect("an opening's bot panicked");
        world.history.lock().unwrap().extend(records);
    }
    plans
}

/// The public id of the opening recorded under `reference` as number `no`, once step 1 of its
/// creation recorded it: from the record's secret (`<no>\n<fingerprint>\n<starts_at>\n<secret>`),
/// as an insider with the store could; `None` before, or when the store does not answer.
async fn public_id_of(store: &Store, reference: &str, no: u64) -> Option<String> {
    let mut conn = store.conn().await.ok()?;
    let record: Option<String> = redis::cmd("HGET")
        .arg(refs(&store.config().key_prefix))
        .arg(reference)
        .query_async(&mut conn)
        .await
        .ok()?;
    let secret = record?.split('\n').nth(3)?.to_string();
    Some(public_id(no, Some(&id_tag(&secret).ok()?)))
}

/// A bot's presses on the opening (number, reference) until one is answered something final
/// (a code, 409, 410) or they run out: `presses` (sandbox, pause before it ms, stall ms); a
/// press before the creation is recorded is not sent (the bot has no id yet). A press sent while the
/// merchant's creation is not answered yet, or after one answered `not_started` or 5xx (some
/// pool may not be written yet), is sent as a stalled press and, 5–20 ms later, a second press
/// of the same user.
async fn bot(
    (no, reference): (u64, &str),
    user: &str,
    presses: Vec<(Arc<Store>, u64, u64)>,
    deadline: Instant,
    world: &Arc<World>,
    log: &Log,
) -> Vec<Record> {
    let mut records = Vec::new();
    let mut stall_next = false;
    let mut id: Option<String> = None;
    let number_id = campaign_id(no);
    for (store, pause_ms, stall_ms) in presses {
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        if Instant::now() >= deadline {
            break;
        }
        if id.is_none() {
            id = public_id_of(&store, reference, no).await;
        }
        let Some(id) = id.as_deref() else {
            continue;
        };
        let grab = Op::CouponGrab {
            campaign: id.to_string(),
            user: user.to_string(),
        };
        let mut ops = vec![(grab, 0)];
        if stall_next || !CREATED.lock().unwrap().contains(&number_id) {
            let slow = Op::CouponSlowGrab {
                campaign: id.to_string(),
                user: user.to_string(),
                stall_ms,
            };
            ops = vec![(slow, 0), (ops.remove(0).0, 5 + stall_ms % 16)];
        }
        let sent: Vec<_> = ops
            .into_iter()
            .map(|(op, after_ms)| {
                let (store, world, log) = (store.clone(), world.clone(), log.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    perform(CLIENT, op, &store, None, deadline, &world, &log).await
                })
            })
            .collect();
        let mut done = false;
        stall_next = false;
        for t in sent {
            let r = t.await.expect("a bot's press panicked");
            done |= matches!(r.answer, Some((200 | 409 | 410, _)));
            stall_next |= matches!(r.answer, Some((425, _))) || r.ambiguous();
            records.push(r);
        }
        if done {
            break;
        }
    }
    records
}

/// `POST /campaigns` (IAM) of an opening.
pub async fn send_create(store: &Arc<Store>, body: &Value) -> (u16, Value, Option<String>) {
    let ev = with_body(event("coupon-create-campaign"), &body.to_string());
    call(store, Function::Coupon, &ev).await
}

/// A grab whose sandbox stalls between step 1 (its reservation made) and steps 2 and 3 (the
/// walk over the other pools and the resolve), `stall_ms` and then until the merchant's
/// creation of the campaign is answered (at most 10 s), each step run as the store runs it:
/// 200 `{"code"}` (won at once, or the reservation's code), 409 (`per_user` held), 410
/// `sold_out` / `ended`, 425 `not_started` (not started, or the reservation resolved while the
/// campaign was opening), 404, or 503 when Redis failed (the reservation stays open for the
/// user's next press or the close).
pub async fn slow_grab(
    store: &Store,
    campaign: &str,
    user: &str,
    stall_ms: u64,
) -> (u16, Value, Option<String>) {
    match walk_late(store, campaign, user, stall_ms).await {
        Ok(answer) => answer,
        Err(e) => (
            503,
            json!({"error": "unavailable", "message": e}),
            Some("1".into()),
        ),
    }
}

async fn walk_late(
    store: &Store,
    campaign: &str,
    user: &str,
    stall_ms: u64,
) -> Result<(u16, Value, Option<String>), String> {
    let no = campaign_no(campaign).ok_or("a campaign id")?;
    // The scripts name a campaign by its number's 5 characters, as the store passes it.
    let campaign = &campaign_id(no);
    let home = home_pool(no, user, POOLS);
    let prefix = &store.config().key_prefix;
    let keys = |k: u32| PoolKeys::new(prefix, campaign, no, k, POOLS);
    let home_keys = keys(home);
    let call = format!("{:016x}", rand::random::<u64>());
    let mut conn = store.conn().await.map_err(|e| e.to_string())?;
    let reply = CouponGrabCall {
        pool: &home_keys.pool,
        codes: &home_keys.codes,
        issued: &home_keys.issued,
        issued_by_time: &home_keys.issued_by_time,
        holders: &home_keys.holders,
        rate: &home_keys.visits(user),
        pending: &home_keys.pending,
        journal: &home_keys.journal,
        user_id: user,
        home,
        rate_limit: 0,
        rate_window_ms: 1_000,
        reservation: &call,
        campaign_id: campaign,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    let reply = text("coupon_grab", reply).map_err(|e| e.to_string())?;
    let (outcome, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
    let final_answer =
        |status: u16, error: &str| (status, json!({"error": error, "reply": reply}), None);
    match outcome {
        "grabbed" => {
            let code = data
                .split(':')
                .next()
                .and_then(|i| i.split_once('/'))
                .map(|(_, c)| c);
            return Ok((200, json!({"code": code}), None));
        }
        "reserved" => {}
        "already_grabbed" => return Ok(final_answer(409, "already_grabbed")),
        "empty" => return Ok(final_answer(410, "sold_out")),
        "ended" => return Ok(final_answer(410, "ended")),
        "not_started" => return Ok(final_answer(425, "not_started")),
        "not_found" => return Ok(final_answer(404, "not_found")),
        _ => return Err(format!("coupon_grab answered {reply}")),
    }
    tokio::time::sleep(Duration::from_millis(stall_ms)).await;
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until && !CREATED.lock().unwrap().contains(campaign) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (mut item, mut at, mut opening) = (String::new(), String::new(), false);
    for step in 1..POOLS {
        let k = (home + step) % POOLS;
        let pool = keys(k);
        let reply = CouponTakeCall {
            pool: &pool.pool,
            codes: &pool.codes,
            issued: &pool.issued,
            issued_by_time: &pool.issued_by_time,
            loans: &pool.loans,
            journal: &pool.journal,
            user_id: user,
            reservation: &call,
            pool_no: k,
            campaign_id: campaign,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
        let reply = text("coupon_take", reply).map_err(|e| e.to_string())?;
        opening |= reply == "unwritten";
        if let Some((taken, stamp)) = reply
            .strip_prefix("taken:")
            .and_then(|r| r.rsplit_once(':'))
        {
            (item, at) = (taken.to_string(), stamp.to_string());
            break;
        }
    }
    if item.is_empty() && opening {
        at = "~".to_string();
    }
    let reply = CouponResolveCall {
        holders: &home_keys.holders,
        pending: &home_keys.pending,
        user_id: user,
        reservation: &call,
        item: &item,
        grabbed_at_ms: &at,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    let reply = text("coupon_resolve", reply).map_err(|e| e.to_string())?;
    let outcome = reply
        .strip_prefix("resolved:")
        .and_then(|r| r.split_once('\n'))
        .map(|(o, _)| o.to_string())
        .ok_or_else(|| format!("coupon_resolve answered {reply}"))?;
    Ok(match outcome.as_str() {
        "-" => final_answer(410, "sold_out"),
        "~" => final_answer(425, "not_started"),
        taken => {
            let code = taken
                .split_once(' ')
                .and_then(|(i, _)| i.split_once('/'))
                .map(|(_, c)| c);
            (200, json!({"code": code}), None)
        }
    })
}

fn epoch_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
