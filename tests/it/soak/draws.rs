//! Draw packets in the soak: some of the packets users create are draws (entries for
//! [`ENTRY_SECS`] after they open, expiring a few seconds after), grabbed (entered) and, once
//! drawn, grabbed and claimed by their winners like any packet, through the same faults. The
//! checker (`check`) verifies every draw from its revealed seed.

use std::collections::{BTreeMap, BTreeSet};

use hongbao::coupons::rules::campaign_no;
use hongbao::coupons::PoolKeys;
use hongbao::domain::journal::Kind;
use hongbao::draws::rules as draws;
use hongbao::Store;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

use super::checker::Final;
use super::clients::{Op, Record};
use super::coupons::Plan;

/// A draw packet's entry window, seconds (the shortest the API accepts).
pub const ENTRY_SECS: u64 = 10;

/// The longest life of a draw packet of the run, seconds from its opening (its claims follow
/// the draw).
pub const LIFE_SECS: u64 = ENTRY_SECS + 6;

/// Makes a create `body` a draw packet's, now and then.
pub fn maybe_draw(rng: &mut StdRng, body: &mut Value) {
    if rng.random_bool(0.12) {
        body["draw"] = json!({ "entry_secs": ENTRY_SECS });
        body["expires_in_secs"] = json!(ENTRY_SECS + rng.random_range(2..=6));
    }
}

/// Every draw verified from its revealed seed:
/// - a draw packet settled or drawn was drawn (unless cancelled before `draw_at`), its seed
///   hashes to its commitment;
/// - each entrant's ticket is the seed's for that user;
/// - `draw_entrants` counts them;
/// - its winners (the grabs hash) are the `count` smallest
///   tickets, share 1 the smallest, and `draw_threshold` the last of them;
/// - each entry answered 202 is among the entrants;
/// - the journal's one `draw_run` entry carries the same figures.
pub fn check(history: &[Record], f: &Final, v: &mut Vec<String>) {
    let mut acknowledged: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in history {
        if let (Op::Grab { packet, user, .. }, Some((202, _))) = (&r.op, &r.answer) {
            acknowledged.entry(packet).or_default().insert(user);
        }
    }
    for (id, meta) in &f.packets {
        let (Some(draw_at), Some(seed)) = (meta.get("draw_at"), meta.get("draw_seed")) else {
            continue;
        };
        let field = |k: &str| meta.get(k).map(String::as_str);
        let cancelled_first = field("cancelled_at")
            .zip(draw_at.parse::<i64>().ok())
            .is_some_and(|(at, draw_at)| at.parse::<i64>().is_ok_and(|at| at < draw_at));
        if field("drawn_at").is_none() {
            if field("status") == Some("settled") && !cancelled_first {
                v.push(format!("draw packet {id} settled without its draw"));
            }
            continue;
        }
        if Some(draws::commitment(seed).as_str()) != field("draw_commitment") {
            v.push(format!(
                "draw packet {id}: the seed does not match the commitment"
            ));
        }
        let members = f.tickets.get(id).map(Vec::as_slice).unwrap_or_default();
        let entrants: u64 = field("draw_entrants")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if members.len() as u64 != entrants {
            v.push(format!(
                "draw packet {id}: {} tickets, draw_entrants {entrants}",
                members.len()
            ));
            continue;
        }
        let mut users = Vec::with_capacity(members.len());
        for m in members {
            let (ticket, user) = m.split_once(':').unwrap_or_default();
            if draws::ticket(seed, user).as_deref() != Some(ticket) {
                v.push(format!(
                    "draw packet {id}: {user}'s ticket is not the seed's"
                ));
            }
            users.push(user);
        }
        if users.len() as u64 != entrants {
            v.push(format!(
                "draw packet {id}: {} entrants, draw_entrants {entrants}",
                users.len()
            ));
        }
        for user in acknowledged.get(id.as_str()).into_iter().flatten() {
            if !users.contains(user) {
                v.push(format!(
                    "draw packet {id}: {user}'s entry was answered 202 and is not in the draw"
                ));
            }
        }
        let count: usize = field("count").and_then(|n| n.parse().ok()).unwrap_or(0);
        let expected = draws::winners(seed, &users, count).unwrap_or_default();
        winners_match(id, f, meta, &expected, v);
        let runs: Vec<_> = f
            .journal
            .iter()
            .filter(|e| e.kind == Kind::DrawRun && e.reference == *id)
            .collect();
        let journaled = match runs.as_slice() {
            [e] => e.draw.as_ref().is_some_and(|d| {
                d.seed == *seed && d.entrants == entrants && d.winners == expected.len() as u64
            }),
            _ => false,
        };
        if !journaled {
            v.push(format!("draw packet {id}: draw_run journaled as {runs:?}"));
        }
    }
}

/// The packet's grabs are exactly `expected`, share ids in ticket order, and
/// its threshold the last expected ticket.
fn winners_match(
    id: &str,
    f: &Final,
    meta: &BTreeMap<String, String>,
    expected: &[(String, String)],
    v: &mut Vec<String>,
) {
    if meta.get("draw_threshold") != expected.last().map(|(t, _)| t) {
        v.push(format!(
            "draw packet {id}: threshold {:?}, the seed gives {:?}",
            meta.get("draw_threshold"),
            expected.last().map(|(t, _)| t)
        ));
    }
    let Some(grabs) = f.grabs.get(id).filter(|g| !g.is_empty()) else {
        return;
    };
    let mut won: Vec<(u32, &str)> = grabs
        .iter()
        .filter_map(|(u, r)| Some((r.split(':').next()?.parse().ok()?, u.as_str())))
        .collect();
    won.sort_unstable();
    let won: Vec<&str> = won.into_iter().map(|(_, u)| u).collect();
    let drawn: Vec<&str> = expected.iter().map(|(_, u)| u.as_str()).collect();
    if won != drawn {
        v.push(format!(
            "draw packet {id}: winners {won:?} in share order, the seed gives {drawn:?}"
        ));
    }
}

/// A draw campaign of the run verified from its revealed seed (pool 0's record and entrants,
/// read after the close):
/// - it was drawn (reclaim-cron's close draws one nobody asked for), its seed hashes to its
///   commitment;
/// - each entrant's ticket is the seed's for that user, and `draw_entrants` counts them;
/// - `draw_winners` = min(its `codes`, entrants), `draw_threshold` the last winner's ticket;
/// - each grab answered 202 is among the entrants, each answered a code among the winners;
/// - the feed's one `DrawRun` of the campaign carries the same figures.
pub async fn check_campaign(
    store: &Store,
    plan: &Plan,
    codes: u64,
    history: &[Record],
    events: &[Value],
    v: &mut Vec<String>,
) {
    let id = &plan.id;
    let keys = PoolKeys::new(
        &store.config().key_prefix,
        id,
        campaign_no(id).unwrap(),
        0,
        plan.pools,
    );
    let read = async {
        let mut conn = store.conn().await.map_err(|e| e.to_string())?;
        let fields: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&keys.pool)
            .arg(&[
                "draw_seed",
                "draw_commitment",
                "draw_entrants",
                "draw_winners",
                "draw_threshold",
                "drawn_at",
            ])
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(&keys.tickets)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((fields, members))
    };
    let (fields, members) = match read.await {
        Ok(read) => read,
        Err(e) => return v.push(format!("draw campaign {id}: unreadable: {e}")),
    };
    let [Some(seed), Some(commitment), Some(entrants), Some(winners), Some(threshold), Some(_)] =
        &fields[..]
    else {
        return v.push(format!(
            "draw campaign {id}: not drawn after its close: {fields:?}"
        ));
    };
    if draws::commitment(seed) != *commitment {
        v.push(format!(
            "draw campaign {id}: the seed does not hash to its commitment"
        ));
    }
    let mut order: Vec<&str> = Vec::new();
    for m in &members {
        match m.split_once(':') {
            Some((ticket, user)) if draws::ticket(seed, user).as_deref() == Some(ticket) => {
                order.push(user)
            }
            _ => v.push(format!(
                "draw campaign {id}: entrant {m} is not the seed's ticket"
            )),
        }
    }
    let won = (codes as usize).min(members.len());
    let last = won.checked_sub(1).map(|i| &members[i][..64]).unwrap_or("");
    if entrants.parse() != Ok(members.len()) || winners.parse() != Ok(won) || threshold != last {
        v.push(format!(
            "draw campaign {id}: entrants {entrants}, winners {winners}, threshold {threshold}; \
             the set says {}, {won}, {last}",
            members.len()
        ));
    }
    println!(
        "soak: draw campaign {id}: {} entrants, {won} winners of {codes} codes",
        members.len()
    );
    let winners: BTreeSet<&str> = order[..won.min(order.len())].iter().copied().collect();
    let entered: BTreeSet<&str> = order.iter().copied().collect();
    for r in history {
        let (Op::CouponGrab { campaign, user }, Some((status, _))) = (&r.op, &r.answer) else {
            continue;
        };
        if campaign != id {
            continue;
        }
        match *status {
            202 if !entered.contains(user.as_str()) => v.push(format!(
                "draw campaign {id}: {user} answered 202, not an entrant"
            )),
            200 if !winners.contains(user.as_str()) => v.push(format!(
                "draw campaign {id}: {user} got a code without winning"
            )),
            _ => {}
        }
    }
    let runs: Vec<&Value> = events
        .iter()
        .filter(|e| e["detail-type"] == "DrawRun" && e["detail"]["campaign_id"] == json!(id))
        .collect();
    match runs[..] {
        [e] if e["detail"]["seed"] == json!(seed)
            && e["detail"]["entrants"] == json!(members.len())
            && e["detail"]["winners"] == json!(won) => {}
        _ => v.push(format!("draw campaign {id}: DrawRun events {runs:?}")),
    }
}
