//! The re-run checker's campaign pools: a grab of a campaign of three pools is up to three
//! kinds of step (`coupon_grab.lua` on the caller's home pool: a win, a refusal, or a
//! reservation when the home pool is empty; `coupon_take.lua` on the other pools in turn,
//! until one gives the reservation a code; `coupon_resolve.lua` on the home pool, the
//! reservation's one outcome), each grab call running them in order with its call id, as
//! `store::coupons::grab` does. Six users (some grabbing twice at once) share a few codes spread
//! unevenly over the pools, one or two per user, and any step of any call is re-sent at
//! random later points. A re-sent step answers its first answer and writes nothing (a
//! reservation's grab answers its settled outcome once the reservation is resolved; a
//! settlement's items, and a refusal's, are the user's items now). The model: which codes are
//! left and whose each issued code is; after every step no code is issued twice, every user
//! holds at most `per_user` items, and every journal entry has its own `event_id`.

use std::collections::{BTreeMap, BTreeSet};

use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_id, home_pool};
use hongbao::coupons::PoolKeys;
use hongbao::store::scripts::{
    text, Call, CouponCreatePoolCall, CouponGrabCall, CouponResolveCall, CouponTakeCall,
};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{repeated_event_ids, rerun_one, seed, sequences, Entity, Sent, Trace};
use crate::coupons::{coupon_store, redis_ms};

/// The campaign's pools.
const POOLS: u32 = 3;

/// The users who grab.
const USERS: [&str; 6] = ["p0", "p1", "p2", "p3", "p4", "p5"];

/// One step of one grab call (its call id is the reservation's id too).
#[derive(Debug, Clone)]
enum Op {
    /// `coupon_grab.lua` on `user`'s home pool.
    Grab { user: &'static str },
    /// `coupon_take.lua` on pool `pool` for `user`'s reservation.
    Take { user: &'static str, pool: u32 },
    /// `coupon_resolve.lua`: `user`'s reservation closed with `item` taken at `at` (both empty:
    /// sold out).
    Resolve {
        user: &'static str,
        item: String,
        at: String,
    },
}

/// The sequence's campaign.
struct Campaign {
    id: String,
    no: u64,
    prefix: String,
}

impl Campaign {
    fn pool(&self, k: u32) -> PoolKeys {
        PoolKeys::new(&self.prefix, &self.id, self.no, k, POOLS)
    }

    fn home(&self, user: &str) -> u32 {
        home_pool(self.no, user, POOLS)
    }
}

impl Entity for Campaign {
    type Op = Op;

    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        match op {
            Op::Grab { user } => {
                let k = self.pool(self.home(user));
                grab_call(self, &k, user, call, &k.visits(user)).texts().0
            }
            Op::Take { user, pool } => {
                take_call(self, &self.pool(*pool), user, call, *pool)
                    .texts()
                    .0
            }
            Op::Resolve { user, item, at } => {
                resolve_call(&self.pool(self.home(user)), user, call, item, at)
                    .texts()
                    .0
            }
        }
    }

    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let (name, reply) = match op {
            Op::Grab { user } => {
                let k = self.pool(self.home(user));
                let visits = k.visits(user);
                let c = grab_call(self, &k, user, call, &visits);
                ("coupon_grab", c.invocation().invoke_async(&mut conn).await)
            }
            Op::Take { user, pool } => {
                let k = self.pool(*pool);
                let c = take_call(self, &k, user, call, *pool);
                ("coupon_take", c.invocation().invoke_async(&mut conn).await)
            }
            Op::Resolve { user, item, at } => {
                let k = self.pool(self.home(user));
                let c = resolve_call(&k, user, call, item, at);
                (
                    "coupon_resolve",
                    c.invocation().invoke_async(&mut conn).await,
                )
            }
        };
        text(name, reply.unwrap()).unwrap()
    }
}

fn grab_call<'c>(
    c: &'c Campaign,
    k: &'c PoolKeys,
    user: &'c str,
    call: &'c str,
    visits: &'c str,
) -> CouponGrabCall<'c> {
    CouponGrabCall {
        pool: &k.pool,
        codes: &k.codes,
        issued: &k.issued,
        issued_by_time: &k.issued_by_time,
        holders: &k.holders,
        rate: visits,
        pending: &k.pending,
        journal: &k.journal,
        user_id: user,
        home: c.home(user),
        rate_limit: 0,
        rate_window_ms: 1_000,
        reservation: call,
        campaign_id: &c.id,
    }
}

fn take_call<'c>(
    c: &'c Campaign,
    k: &'c PoolKeys,
    user: &'c str,
    call: &'c str,
    pool: u32,
) -> CouponTakeCall<'c> {
    CouponTakeCall {
        pool: &k.pool,
        codes: &k.codes,
        issued: &k.issued,
        issued_by_time: &k.issued_by_time,
        loans: &k.loans,
        journal: &k.journal,
        user_id: user,
        reservation: call,
        pool_no: pool,
        campaign_id: &c.id,
    }
}

fn resolve_call<'c>(
    k: &'c PoolKeys,
    user: &'c str,
    call: &'c str,
    item: &'c str,
    at: &'c str,
) -> CouponResolveCall<'c> {
    CouponResolveCall {
        holders: &k.holders,
        pending: &k.pending,
        user_id: user,
        reservation: call,
        item,
        grabbed_at_ms: at,
    }
}

/// A grab call in flight: its user, call id and next step (`None`: answered).
struct InFlight {
    user: &'static str,
    call: String,
    next: Option<Op>,
}

impl InFlight {
    /// The step after `op` answered `answer`, as `store::coupons::grab` goes on: a
    /// reservation walks the other pools from the one after the home pool, a code taken (or
    /// the walk's end) resolves it.
    fn advance(&mut self, c: &Campaign, op: &Op, answer: &str) {
        let user = self.user;
        let home = c.home(user);
        let settle = |item: &str, at: &str| Op::Resolve {
            user,
            item: item.into(),
            at: at.into(),
        };
        self.next = match op {
            Op::Grab { .. } if answer.starts_with("reserved:") => Some(Op::Take {
                user,
                pool: (home + 1) % POOLS,
            }),
            Op::Take { pool, .. } => match answer.strip_prefix("taken:") {
                Some(taken) => {
                    let (item, at) = taken.rsplit_once(':').unwrap();
                    Some(settle(item, at))
                }
                None if (pool + 1) % POOLS == home => Some(settle("", "")),
                None => Some(Op::Take {
                    user,
                    pool: (pool + 1) % POOLS,
                }),
            },
            _ => None,
        };
    }
}

/// A re-sent step's answer against its first. A grab that made a reservation answers the
/// reservation's settled outcome once it is resolved (`settled`: call id -> settle answer); a
/// refusal (`already_grabbed`, `empty`) and a settlement answer the user's items now; every
/// other answer its first exactly.
fn same_answer(
    settled: &BTreeMap<String, String>,
    op: &Op,
    call: &str,
    first: &str,
    again: &str,
) -> bool {
    let outcome = |a: &str| a.split(':').next().unwrap_or("").to_string();
    match op {
        Op::Grab { .. } if first.starts_with("reserved:") && again != first => {
            match settled.get(call).and_then(|s| s.strip_prefix("resolved:")) {
                Some(s) => match s.split_once('\n').map(|(o, _)| o) {
                    Some("-") => again.starts_with("empty:"),
                    Some("~") => again.starts_with("opening:"),
                    Some(won) => {
                        let (item, at) = won.split_once(' ').unwrap();
                        again.starts_with(&format!("grabbed:{item}:{at}:"))
                    }
                    None => false,
                },
                None => false,
            }
        }
        Op::Grab { .. } if matches!(outcome(first).as_str(), "already_grabbed" | "empty") => {
            outcome(again) == outcome(first)
        }
        Op::Resolve { .. } => first.split('\n').next() == again.split('\n').next(),
        _ => first == again,
    }
}

/// Writes the campaign's three pools with `codes[k]` codes in pool `k`, `per_user` each.
async fn create(store: &Store, c: &Campaign, codes: [usize; 3], per_user: u32) {
    let now = redis_ms(store).await;
    let total: usize = codes.iter().sum();
    for (k, n) in codes.into_iter().enumerate() {
        let names: Vec<String> = (0..n).map(|i| format!("C{k}-{i:02}")).collect();
        let batch: Vec<&str> = names.iter().map(String::as_str).collect();
        let keys = c.pool(k as u32);
        let reply = CouponCreatePoolCall {
            pool: &keys.pool,
            codes: &keys.codes,
            fingerprint: "v1:rerun",
            title: "rerun pools",
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            redeem_by_ms: now + 1_200_000,
            per_user,
            pools: POOLS,
            kind: "uploaded",
            first_index: 0,
            end_index: 0,
            secret: "",
            campaign_total: total as u64,
            id_tag: "",
            batch: &batch,
            ..Default::default()
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        assert_eq!(text("coupon_create_pool", reply).unwrap(), "created");
    }
}

/// Test: the re-run checker over campaign pools' grab steps, on standalone and on the
/// 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let mut rng = StdRng::seed_from_u64(seed ^ 0x9001 ^ backend as u64);
        for sequence in 0..n {
            let no = 5_000 + sequence as u64;
            let campaign = Campaign {
                id: campaign_id(no),
                no,
                prefix: store.config().key_prefix.clone(),
            };
            let codes = [0, 1, 2].map(|_| rng.random_range(0..=3));
            let per_user = rng.random_range(1..=2);
            create(&store, &campaign, codes, per_user).await;
            let total: usize = codes.iter().sum();
            let mut flights: Vec<InFlight> = Vec::new();
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut settled: BTreeMap<String, String> = BTreeMap::new();
            let mut trace = Trace::new(seed, sequence, backend);
            trace.push(format!("codes per pool {codes:?}, per user {per_user}"));
            for step in 0..rng.random_range(10..=40) {
                let open: Vec<usize> = (0..flights.len())
                    .filter(|i| flights[*i].next.is_some())
                    .collect();
                let i = if open.is_empty() || rng.random_bool(0.3) {
                    let user = USERS[rng.random_range(0..USERS.len())];
                    flights.push(InFlight {
                        user,
                        call: format!("{sequence:08x}{step:08x}"),
                        next: Some(Op::Grab { user }),
                    });
                    flights.len() - 1
                } else {
                    open[rng.random_range(0..open.len())]
                };
                let flight = &mut flights[i];
                let op = flight.next.clone().unwrap();
                let call = flight.call.clone();
                let answer = campaign.send(&store, &op, &call).await;
                trace.push(format!("{op:?} call {call} -> {answer:?}"));
                if matches!(op, Op::Resolve { .. }) {
                    settled.entry(call.clone()).or_insert(answer.clone());
                }
                flight.advance(&campaign, &op, &answer);
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    let same = |(op, call, first): &Sent<Op>, again: &str| {
                        same_answer(&settled, op, call, first, again)
                    };
                    rerun_one(&campaign, &store, &sent, &mut rng, &mut trace, same).await;
                }
                check(&store, &campaign, total, per_user, &trace).await;
            }
            for k in 0..POOLS {
                let repeated = repeated_event_ids(&store, &campaign.pool(k).journal).await;
                assert!(repeated.is_empty(), "{backend}: seed {seed}: {repeated:?}");
            }
        }
    }
}

/// After every step: every code is left in its pool or issued once, to a user who holds it
/// (or an open reservation for it), and no user holds more than `per_user` items.
async fn check(store: &Store, c: &Campaign, total: usize, per_user: u32, trace: &Trace) {
    let mut conn = store.conn().await.unwrap();
    let mut left = 0;
    let mut issued: BTreeMap<String, String> = BTreeMap::new();
    let mut items: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in 0..POOLS {
        let keys = c.pool(k);
        let (codes, pool_issued, holders): (
            usize,
            BTreeMap<String, String>,
            BTreeMap<String, String>,
        ) = redis::pipe()
            .cmd("LLEN")
            .arg(&keys.codes)
            .cmd("HGETALL")
            .arg(&keys.issued)
            .cmd("HGETALL")
            .arg(&keys.holders)
            .query_async(&mut conn)
            .await
            .unwrap();
        left += codes;
        // A `<code>\n<order>` field is a release's memory, not an issued code.
        for (code, record) in pool_issued.into_iter().filter(|(c, _)| !c.contains('\n')) {
            let user = record.split('\n').next().unwrap().to_string();
            if issued.insert(format!("{k}/{code}"), user).is_some() {
                trace.fail(format!("code {k}/{code} issued twice"));
            }
        }
        for (user, held) in holders.into_iter().filter(|(u, _)| !u.starts_with('\n')) {
            items
                .entry(user)
                .or_default()
                .extend(held.split_whitespace().map(str::to_string));
        }
    }
    if left + issued.len() != total {
        trace.fail(format!(
            "{left} codes left and {} issued of {total}",
            issued.len()
        ));
    }
    let mut held = BTreeSet::new();
    for (user, items) in &items {
        if items.len() > per_user as usize {
            trace.fail(format!("{user} holds {items:?}, more than {per_user}"));
        }
        for item in items.iter().filter(|i| !i.starts_with('?')) {
            if issued.get(item) != Some(user) {
                trace.fail(format!(
                    "{user} holds {item}, issued to {:?}",
                    issued.get(item)
                ));
            }
            held.insert(item.clone());
        }
    }
    let open: usize = items
        .values()
        .flatten()
        .filter(|i| i.starts_with('?'))
        .count();
    if held.len() + open < issued.len() {
        trace.fail(format!(
            "{} codes issued, {} held and {open} reservations open",
            issued.len(),
            held.len()
        ));
    }
}
