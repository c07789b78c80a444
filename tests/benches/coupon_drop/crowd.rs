//! Crowds of users grabbing at once, through hongbao's grab or seed 004's commands, and the
//! checks of what they were told against what the server holds.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hongbao::coupons;
use hongbao::coupons::rules::VisitLimit;
use hongbao::coupons::{CouponGrabOutcome, Created, PoolKeys};
use hongbao::{Error, Store};
use redis::aio::{ConnectionLike, MultiplexedConnection};

use crate::{PER_USER, SEED_CODES};

/// Users grabbing at once: user `i` is `<prefix>-<i>`; users `0, n, 2n, …` press twice in a
/// row (a double tap); `tasks` tasks take users in order from a shared counter.
#[derive(Debug, Clone)]
pub struct Crowd {
    /// Distinct users.
    pub users: u64,
    /// Every n-th user presses twice; 0: nobody.
    pub repeat_every: u64,
    /// Concurrent tasks.
    pub tasks: usize,
    /// User id prefix.
    pub prefix: &'static str,
}

impl Crowd {
    /// Whether user `i` presses twice.
    pub fn repeats(&self, i: u64) -> bool {
        self.repeat_every > 0 && i.is_multiple_of(self.repeat_every)
    }

    /// User `i`'s id.
    pub fn user(&self, i: u64) -> String {
        format!("{}-{i:06}", self.prefix)
    }

    /// Requests the crowd sends.
    pub fn requests(&self) -> u64 {
        self.users
            + if self.repeat_every > 0 {
                self.users.div_ceil(self.repeat_every)
            } else {
                0
            }
    }
}

/// hongbao's grab answers, in table order.
pub const HB_PATHS: [&str; 6] = [
    "grabbed",
    "already_grabbed",
    "sold_out",
    "rate_limited",
    "other",
    "error",
];

/// The [`HB_PATHS`] index of a grab's answer.
pub fn hb_path(r: &Result<CouponGrabOutcome, Error>) -> usize {
    match r {
        Ok(CouponGrabOutcome::Grabbed { .. }) => 0,
        Ok(CouponGrabOutcome::AlreadyGrabbed { .. }) => 1,
        Ok(CouponGrabOutcome::SoldOut) => 2,
        Ok(CouponGrabOutcome::RateLimited { .. }) => 3,
        Ok(_) => 4,
        Err(_) => 5,
    }
}

/// The seed's answers, in table order.
pub const SEED_PATHS: [&str; 4] = ["code", "no_code", "rate_limited", "error"];

/// What a crowd saw.
#[derive(Debug, Default)]
pub struct Out {
    /// Answers per path ([`HB_PATHS`] or [`SEED_PATHS`]).
    pub mix: Vec<u64>,
    /// Every code a caller was told it got: (user index, code).
    pub wins: Vec<(u64, String)>,
    /// Wall time, seconds.
    pub secs: f64,
}

/// Waits for every task and adds their outputs up.
pub async fn gather(handles: Vec<tokio::task::JoinHandle<Out>>, started: Instant) -> Out {
    let mut out = Out::default();
    for h in handles {
        let o = h.await.expect("crowd task");
        if out.mix.len() < o.mix.len() {
            out.mix.resize(o.mix.len(), 0);
        }
        for (total, n) in out.mix.iter_mut().zip(o.mix) {
            *total += n;
        }
        out.wins.extend(o.wins);
    }
    out.secs = started.elapsed().as_secs_f64();
    out
}

/// `crowd` grabbing campaign `id` through `store::coupons::grab` on `store`.
pub async fn hongbao_crowd(store: Arc<Store>, id: &str, crowd: &Crowd, visits: VisitLimit) -> Out {
    let next = Arc::new(AtomicU64::new(0));
    let id: Arc<str> = id.into();
    let started = Instant::now();
    let handles = (0..crowd.tasks)
        .map(|_| {
            let (store, id, next, crowd) = (store.clone(), id.clone(), next.clone(), crowd.clone());
            tokio::spawn(async move {
                let mut out = Out {
                    mix: vec![0; HB_PATHS.len()],
                    ..Out::default()
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= crowd.users {
                        return out;
                    }
                    let user = crowd.user(i);
                    for _ in 0..if crowd.repeats(i) { 2 } else { 1 } {
                        let r = coupons::grab(&store, &id, &user, visits).await;
                        out.mix[hb_path(&r)] += 1;
                        if let Ok(CouponGrabOutcome::Grabbed { code, .. }) = r {
                            out.wins.push((i, code));
                        }
                    }
                }
            })
        })
        .collect();
    gather(handles, started).await
}

/// One request of seed 004's design: `canAccess(limit, window_secs, visits)` (`GET`; when the
/// count is 0, `DEL` if `with_del`; under the limit `INCR` and, on the first visit, `EXPIRE`),
/// then `SPOP codes`; each its own round trip. The [`SEED_PATHS`] index and the code.
pub async fn seed_grab(
    conn: &mut MultiplexedConnection,
    visits: &str,
    limit: i64,
    window_secs: u64,
    with_del: bool,
) -> redis::RedisResult<(usize, Option<String>)> {
    let total: Option<String> = redis::cmd("GET").arg(visits).query_async(conn).await?;
    // NumberUtils.toInt: 0 for a missing or malformed value.
    let total: i64 = total.and_then(|t| t.parse().ok()).unwrap_or(0);
    if total <= 0 && with_del {
        let _: i64 = redis::cmd("DEL").arg(visits).query_async(conn).await?;
    }
    if total >= limit {
        return Ok((2, None));
    }
    let _: i64 = redis::cmd("INCR").arg(visits).query_async(conn).await?;
    if total <= 0 {
        let _: i64 = redis::cmd("EXPIRE")
            .arg(visits)
            .arg(window_secs)
            .query_async(conn)
            .await?;
    }
    let code: Option<String> = redis::cmd("SPOP").arg(SEED_CODES).query_async(conn).await?;
    Ok(match code {
        Some(c) => (0, Some(c)),
        None => (1, None),
    })
}

/// `crowd` running seed 004's design over `conn` (one multiplexed connection).
pub async fn seed_crowd(
    conn: &MultiplexedConnection,
    crowd: &Crowd,
    visits: VisitLimit,
    with_del: bool,
) -> Out {
    let next = Arc::new(AtomicU64::new(0));
    let limit = i64::from(visits.per_window);
    let window_secs = visits.window_ms.div_ceil(1000).max(1);
    let started = Instant::now();
    let handles = (0..crowd.tasks)
        .map(|_| {
            let (mut conn, next, crowd) = (conn.clone(), next.clone(), crowd.clone());
            tokio::spawn(async move {
                let mut out = Out {
                    mix: vec![0; SEED_PATHS.len()],
                    ..Out::default()
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= crowd.users {
                        return out;
                    }
                    let key = format!("seed:visits:{}", crowd.user(i));
                    for _ in 0..if crowd.repeats(i) { 2 } else { 1 } {
                        match seed_grab(&mut conn, &key, limit, window_secs, with_del).await {
                            Ok((path, code)) => {
                                out.mix[path] += 1;
                                if let Some(code) = code {
                                    out.wins.push((i, code));
                                }
                            }
                            Err(_) => out.mix[3] += 1,
                        }
                    }
                }
            })
        })
        .collect();
    gather(handles, started).await
}

/// `SADD` of `codes` to the seed's set.
pub async fn seed_sadd(conn: &mut impl ConnectionLike, codes: &[String]) {
    for chunk in codes.chunks(1000) {
        let _: u64 = redis::cmd("SADD")
            .arg(SEED_CODES)
            .arg(chunk)
            .query_async(conn)
            .await
            .expect("SADD");
    }
}

/// The seed's sanity: the codes it handed out are distinct and at most `n`.
pub fn check_seed(name: &str, out: &Out, n: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let distinct: HashSet<&str> = out.wins.iter().map(|(_, c)| c.as_str()).collect();
    if distinct.len() != out.wins.len() || distinct.len() as u64 > n {
        problems.push(format!(
            "{name}: {} codes handed out, {} distinct, {n} in the set",
            out.wins.len(),
            distinct.len()
        ));
    }
    if out.mix[3] > 0 {
        problems.push(format!("{name}: {} requests failed", out.mix[3]));
    }
    problems
}

/// The invariants of campaign `c` after its grabs (see the module documentation): `told` are
/// the (user, code) pairs callers were told they got; `uploaded` its uploaded codes.
pub async fn check_campaign(
    store: &Store,
    c: &Created,
    told: &[(String, String)],
    uploaded: Option<&[String]>,
) -> Vec<String> {
    let id = &c.campaign_id;
    let mut problems = Vec::new();
    let view = match coupons::campaign(store, id, None).await {
        Ok(Some(v)) => v,
        other => return vec![format!("campaign {id}: {other:?}")],
    };
    if view.codes_left + view.codes_issued != view.codes_total || view.codes_total != c.codes_total
    {
        problems.push(format!(
            "campaign {id}: codes_left {} + codes_issued {} vs codes_total {} (created with {})",
            view.codes_left, view.codes_issued, view.codes_total, c.codes_total
        ));
    }
    let distinct: HashSet<&str> = told.iter().map(|(_, code)| code.as_str()).collect();
    if distinct.len() != told.len() || told.len() as u64 != view.codes_issued {
        problems.push(format!(
            "campaign {id}: {} codes told to callers, {} distinct, {} issued",
            told.len(),
            distinct.len(),
            view.codes_issued
        ));
    }
    let mut per_user: HashMap<&str, u32> = HashMap::new();
    for (user, _) in told {
        *per_user.entry(user).or_default() += 1;
    }
    let over = per_user.values().filter(|&&n| n > PER_USER).count();
    if over > 0 {
        problems.push(format!(
            "campaign {id}: {over} users were told more than {PER_USER} codes"
        ));
    }

    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await.expect("connect");
    let (mut recorded, mut held, mut over_held, mut open) = (0u64, 0u64, 0u64, 0u64);
    let mut issued: HashMap<String, String> = HashMap::new();
    let mut left: Vec<String> = Vec::new();
    for k in 0..c.pools {
        let keys = PoolKeys::new(prefix, id, c.campaign_no, k, c.pools);
        let (counter, records, pending): (Option<u64>, u64, u64) = redis::pipe()
            .cmd("HGET")
            .arg(&keys.pool)
            .arg("issued")
            .cmd("HLEN")
            .arg(&keys.issued)
            .cmd("HLEN")
            .arg(&keys.pending)
            .query_async(&mut conn)
            .await
            .expect("pool counts");
        if counter != Some(records) {
            problems.push(format!(
                "campaign {id} pool {k}: issued counter {counter:?}, {records} issued records"
            ));
        }
        recorded += records;
        open += pending;
        let holders: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&keys.holders)
            .query_async(&mut conn)
            .await
            .expect("holders");
        for (user, items) in holders.iter().filter(|(u, _)| !u.contains('\n')) {
            let n = items.split(' ').count() as u64;
            if n > u64::from(PER_USER) {
                over_held += 1;
                if over_held == 1 {
                    problems.push(format!("campaign {id}: {user} holds {items:?}"));
                }
            }
            held += items.split(' ').filter(|i| !i.starts_with('?')).count() as u64;
        }
        if uploaded.is_some() {
            let records: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&keys.issued)
                .query_async(&mut conn)
                .await
                .expect("issued");
            issued.extend(records);
            let l: Vec<String> = redis::cmd("LRANGE")
                .arg(&keys.codes)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .expect("codes");
            left.extend(l);
        }
    }
    if over_held > 0 {
        problems.push(format!(
            "campaign {id}: {over_held} users hold more than {PER_USER} items"
        ));
    }
    if recorded != view.codes_issued || held != recorded || open > 0 {
        problems.push(format!(
            "campaign {id}: {recorded} issued records, {held} items held, {} issued, {open} \
             open reservations",
            view.codes_issued
        ));
    }
    if let Some(all) = uploaded {
        let all: HashSet<&str> = all.iter().map(String::as_str).collect();
        let both = left.iter().filter(|c| issued.contains_key(*c)).count();
        let strangers = left
            .iter()
            .chain(issued.keys())
            .filter(|c| !all.contains(c.as_str()))
            .count();
        if both > 0 || strangers > 0 || left.len() + issued.len() != all.len() {
            problems.push(format!(
                "campaign {id}: {} left + {} issued of {} uploaded, {both} both, {strangers} \
                 not uploaded",
                left.len(),
                issued.len(),
                all.len()
            ));
        }
        let wrong = told
            .iter()
            .filter(|(user, code)| {
                issued
                    .get(code)
                    .is_none_or(|r| r.split('\n').next() != Some(user.as_str()))
            })
            .count();
        if wrong > 0 {
            problems.push(format!(
                "campaign {id}: {wrong} codes told to callers are not issued to them"
            ));
        }
    }
    problems
}

/// The (user, code) pairs of a crowd's wins.
pub fn told(crowd: &Crowd, out: &Out) -> Vec<(String, String)> {
    out.wins
        .iter()
        .map(|(i, code)| (crowd.user(*i), code.clone()))
        .collect()
}
