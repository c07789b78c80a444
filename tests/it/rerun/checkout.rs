//! The re-run checker's coupon at checkout (`coupon_hold.lua`, `coupon_redeem.lua`,
//! `coupon_release.lua`): three orders hold, redeem and release one issued coupon in a
//! random order, now and then naming the wrong user, and earlier calls are re-sent at random
//! later points. The model: the coupon issued, held by an order or redeemed by one; each
//! order's last release (what another release call of the order answers); the pool's
//! `redeemed` count; the journal's entries. The same sequences run on a campaign's coupons and
//! on merchant packets' share coupons, whose redemptions move the merchant's books.

use std::collections::BTreeMap;
use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::coupons::rules::checkout::{Checkout, IssuedRecord};
use hongbao::coupons::rules::{campaign_id, campaign_no, CodeSource, NewCampaign};
use hongbao::coupons::{self, CampaignCreateOutcome, CouponGrabOutcome, PoolKeys};
use hongbao::domain::reconcile::LedgerOwner;
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::store::scripts::{text, Call, CouponHoldCall, CouponRedeemCall, CouponReleaseCall};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::{rerun_one, seed, sequences, Entity, Export, Sent, Trace};
use crate::common::{self, Function};
use crate::coupons::coupon_store;
use crate::merchant_packets::SHOP;

/// The key of call `call`'s answer on the pool of issued hash `issued`, for a script call's
/// borrowed keys.
fn answer_key(issued: &str, call: &str) -> &'static str {
    Box::leak(hongbao::store::keys::Keys::call_answer(issued, call).into_boxed_str())
}

/// The orders of a sequence (several callers' checkouts).
const ORDERS: [&str; 3] = ["o-a", "o-b", "o-c"];

/// Ten minutes, ms: no hold lapses within a sequence.
const HOLD_MS: u64 = 600_000;

/// A day, ms: how long the scripts keep a call's answer.
const KEEP_MS: u64 = 86_400_000;

/// Fresh calls per sequence, at most.
const MAX_STEPS: usize = 40;

/// One checkout call of the sequence's coupon.
#[derive(Debug, Clone)]
enum Op {
    /// `POST /coupons/hold` for `order`, naming `user`.
    Hold { order: &'static str, user: String },
    /// `POST /coupons/redeem` for `order`, naming `user`.
    Redeem { order: &'static str, user: String },
    /// `POST /coupons/release` for `order`.
    Release { order: &'static str },
}

/// A sequence's coupon: its campaign (a share's coupon: its packet), the keys its checkout
/// scripts take, its code as the pool keys it, and its holder.
struct Coupon {
    campaign_id: String,
    /// The pool's hash (a share's coupon: the packet's meta hash).
    pool: String,
    /// The issued codes (a share's coupon: the packet's coupons hash).
    issued: String,
    journal: String,
    /// A share's coupon's merchant hash, packet grabs hash and merchant ledger; a campaign
    /// coupon's pool hash for each.
    books: String,
    grabs: String,
    ledger: String,
    /// `1` for a share's coupon, else empty.
    share: &'static str,
    code: String,
    holder: String,
}

impl Coupon {
    /// Campaign code `code`, issued by the pool of `keys` to `holder`.
    fn of_pool(campaign_id: &str, keys: &PoolKeys, code: String, holder: String) -> Coupon {
        Coupon {
            campaign_id: campaign_id.to_string(),
            pool: keys.pool.clone(),
            issued: keys.issued.clone(),
            journal: keys.journal.clone(),
            books: keys.pool.clone(),
            grabs: keys.pool.clone(),
            ledger: keys.pool.clone(),
            share: "",
            code,
            holder,
        }
    }

    fn hold<'c>(&'c self, order: &'c str, user: &'c str, call: &'c str) -> CouponHoldCall<'c> {
        CouponHoldCall {
            pool: &self.pool,
            issued: &self.issued,
            call_answer: answer_key(&self.issued, call),
            code: &self.code,
            user_id: user,
            order_reference: order,
            hold_ms: HOLD_MS,
            order_total_cents: "",
            discount_cents: "",
            call,
            call_keep_ms: KEEP_MS,
        }
    }

    fn redeem<'c>(&'c self, order: &'c str, user: &'c str, call: &'c str) -> CouponRedeemCall<'c> {
        CouponRedeemCall {
            pool: &self.pool,
            issued: &self.issued,
            journal: &self.journal,
            books: &self.books,
            grabs: &self.grabs,
            call_answer: answer_key(&self.issued, call),
            code: &self.code,
            user_id: user,
            order_reference: order,
            campaign_id: &self.campaign_id,
            order_total_cents: "",
            discount_cents: "",
            call,
            share: self.share,
            call_keep_ms: KEEP_MS,
        }
    }

    fn release<'c>(&'c self, order: &'c str, call: &'c str) -> CouponReleaseCall<'c> {
        CouponReleaseCall {
            pool: &self.pool,
            issued: &self.issued,
            journal: &self.journal,
            books: &self.books,
            grabs: &self.grabs,
            ledger: &self.ledger,
            call_answer: answer_key(&self.issued, call),
            code: &self.code,
            order_reference: order,
            campaign_id: &self.campaign_id,
            call,
            share: self.share,
            ledger_cap: 100,
            call_keep_ms: KEEP_MS,
        }
    }
}

impl Entity for Coupon {
    type Op = Op;

    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        match op {
            Op::Hold { order, user } => self.hold(order, user, call).texts().0,
            Op::Redeem { order, user } => self.redeem(order, user, call).texts().0,
            Op::Release { order } => self.release(order, call).texts().0,
        }
    }

    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let (name, reply) = match op {
            Op::Hold { order, user } => (
                "coupon_hold",
                self.hold(order, user, call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await,
            ),
            Op::Redeem { order, user } => (
                "coupon_redeem",
                self.redeem(order, user, call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await,
            ),
            Op::Release { order } => (
                "coupon_release",
                self.release(order, call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await,
            ),
        };
        text(name, reply.unwrap()).unwrap()
    }
}

/// The coupon's state in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Issued,
    Held(&'static str),
    Redeemed(&'static str),
}

/// The reference model of one coupon.
#[derive(Debug)]
struct Model {
    state: State,
    /// Each order's last release: `hold` or `redemption`.
    released: BTreeMap<&'static str, &'static str>,
    /// The pool's `redeemed` count (this coupon's part: 0 or 1).
    redeemed: i64,
    /// The coupon's journal entries: issued, then one per redemption and per reversal.
    journal: usize,
}

impl Model {
    fn new() -> Self {
        Model {
            state: State::Issued,
            released: BTreeMap::new(),
            redeemed: 0,
            journal: 1,
        }
    }

    /// What a fresh `op` answers (as [`shape`] writes it), `holder` the coupon's user; moves
    /// the model on.
    fn apply(&mut self, op: &Op, holder: &str) -> String {
        match op {
            Op::Hold { user, .. } | Op::Redeem { user, .. } if user != holder => "not_found".into(),
            Op::Hold { order, .. } => match self.state {
                State::Redeemed(r) => format!("already_redeemed:{r}"),
                State::Held(h) if h != *order => "held_by_other".into(),
                _ => {
                    self.state = State::Held(order);
                    "held".into()
                }
            },
            Op::Redeem { order, .. } => match self.state {
                State::Redeemed(r) if r == *order => "redeemed:1".into(),
                State::Redeemed(r) => format!("already_redeemed:{r}"),
                State::Held(h) if h != *order => "held".into(),
                _ => {
                    self.state = State::Redeemed(order);
                    self.redeemed += 1;
                    self.journal += 1;
                    "redeemed:0".into()
                }
            },
            Op::Release { order } => match self.state {
                State::Held(h) if h == *order => {
                    self.state = State::Issued;
                    self.released.insert(order, "hold");
                    "released:hold:0".into()
                }
                State::Redeemed(r) if r == *order => {
                    self.state = State::Issued;
                    self.released.insert(order, "redemption");
                    self.redeemed -= 1;
                    self.journal += 1;
                    "released:redemption:0".into()
                }
                _ if self.released.contains_key(order) => {
                    format!("released:{}:1", self.released[order])
                }
                State::Redeemed(r) => format!("already_redeemed:{r}"),
                State::Held(_) => "held".into(),
                State::Issued => "not_found".into(),
            },
        }
    }
}

/// An answer without its times and discounts: what the model predicts.
fn shape(answer: &str) -> String {
    let parts: Vec<&str> = answer.split(':').collect();
    match parts[..] {
        ["held", _, _, _] | ["held", _, _] | ["held", _] => "held".into(),
        ["held_by_other", _] => "held_by_other".into(),
        ["already_redeemed", _, order] => format!("already_redeemed:{order}"),
        ["redeemed", _, repeat, _] => format!("redeemed:{repeat}"),
        ["released", kind, _, repeat] => format!("released:{kind}:{repeat}"),
        _ => answer.to_string(),
    }
}

/// A random fresh call: mostly the holder, now and then another user.
fn draw(rng: &mut StdRng, holder: &str) -> Op {
    let order = ORDERS[rng.random_range(0..ORDERS.len())];
    let user = if rng.random_bool(0.9) {
        holder.to_string()
    } else {
        "intruder".to_string()
    };
    match rng.random_range(0..3) {
        0 => Op::Hold { order, user },
        1 => Op::Redeem { order, user },
        _ => Op::Release { order },
    }
}

/// What Redis holds of the coupon, as the model's state.
async fn stored(store: &Store, c: &Coupon) -> (State, i64) {
    let mut conn = store.conn().await.unwrap();
    let (record, count): (String, Option<i64>) = redis::pipe()
        .cmd("HGET")
        .arg(&c.issued)
        .arg(&c.code)
        .cmd("HGET")
        .arg(&c.pool)
        .arg("redeemed")
        .query_async(&mut conn)
        .await
        .unwrap();
    let order = |o: &str| -> &'static str { ORDERS.into_iter().find(|x| *x == o).unwrap() };
    let state = match IssuedRecord::parse(&record).unwrap().checkout {
        Checkout::None => State::Issued,
        Checkout::Held { order: o, .. } => State::Held(order(&o)),
        Checkout::Redeemed { order: o, .. } => State::Redeemed(order(&o)),
    };
    (state, count.unwrap_or(0))
}

/// A share's coupon's books as the checker follows them: the coupon's value, cents, and the
/// merchant's `paid_coupons` before the sequence (the earlier sequences' redemptions).
#[derive(Debug, Clone, Copy)]
struct ShareBooks {
    value: i64,
    paid_before: i64,
}

/// One sequence of fresh calls and re-runs on `coupon`; after every step the coupon's state
/// is the model's, the pool's `redeemed` count `redeemed_before` plus the model's and, for a
/// share's coupon (`books`), the merchant's `paid_coupons` moves with the redemption, its books
/// close and its account reconciles. Now and then between steps the journal is exported
/// (`export`). The model at the end.
async fn run_sequence(
    store: &Store,
    coupon: &Coupon,
    redeemed_before: i64,
    books: Option<ShareBooks>,
    export: &mut Export,
    rng: &mut StdRng,
    trace: &mut Trace,
) -> Model {
    let mut model = Model::new();
    let mut sent: Vec<Sent<Op>> = Vec::new();
    for step in 0..rng.random_range(8..=MAX_STEPS) {
        let op = draw(rng, &coupon.holder);
        let call = format!("{:08x}{step:08x}", trace.sequence);
        let answer = coupon.send(store, &op, &call).await;
        trace.push(format!("{op:?} call {call} -> {answer}"));
        let expected = model.apply(&op, &coupon.holder);
        if shape(&answer) != expected {
            trace.fail(format!("the model expected {expected}"));
        }
        sent.push((op, call, answer));
        if rng.random_bool(0.4) {
            let same = |(_, _, first): &Sent<Op>, again: &str| again == first;
            rerun_one(coupon, store, &sent, rng, trace, same).await;
        }
        let (state, count) = stored(store, coupon).await;
        if state != model.state {
            let what = format!("Redis holds {state:?}, the model {:?}", model.state);
            trace.fail(what);
        }
        if count != redeemed_before + model.redeemed {
            let what = format!(
                "the pool counts {count} redeemed, the model {}",
                redeemed_before + model.redeemed
            );
            trace.fail(what);
        }
        if let Some(b) = books {
            check_books(store, b, &model, trace).await;
        }
        if rng.random_bool(0.2) {
            export.drain(store).await;
        }
    }
    model
}

/// A share's coupon's step: the merchant's `paid_coupons` is the earlier sequences' plus the
/// coupon's value while it is redeemed, its books close, and its account reconciles.
async fn check_books(store: &Store, b: ShareBooks, model: &Model, trace: &Trace) {
    let books = crate::merchant_packets::books(store, SHOP).await;
    let paid = b.paid_before + b.value * model.redeemed;
    if books.paid_coupon_cents != paid || !books.close() {
        trace.fail(format!("the books {books:?}, the model paid {paid}"));
    }
    let mismatches = reconcile::check_account(store, LedgerOwner::Merchant, SHOP)
        .await
        .unwrap();
    if !mismatches.is_empty() {
        trace.fail(format!("the merchant does not reconcile: {mismatches:?}"));
    }
}

/// A campaign of `n` uploaded codes on one pool, each grabbed by its own user; the campaign
/// id, the pool's keys and the (code, user) pairs.
async fn campaign_of(store: &Store, n: usize) -> (String, PoolKeys, Vec<(String, String)>) {
    let now = crate::coupons::redis_ms(store).await;
    let codes = (0..n).map(|i| format!("RERUN-{i:05}")).collect();
    // Redeemable for a week: a long run (thousands of sequences on a loaded machine) must not
    // outlive the coupons it checks.
    let req = NewCampaign {
        redeem_by_ms: now + 7 * 86_400_000,
        ..crate::coupons::campaign(now, "rerun-checkout", CodeSource::Uploaded(codes))
    };
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(store, &req).await else {
        panic!("not created")
    };
    let open = crate::coupons::NO_VISIT_LIMIT;
    let mut issued = Vec::with_capacity(n);
    for i in 0..n {
        let user = format!("holder-{i:05}");
        let Ok(CouponGrabOutcome::Grabbed { code, .. }) =
            coupons::grab(store, &c.campaign_id, &user, open).await
        else {
            panic!("{user} won no code")
        };
        issued.push((code, user));
    }
    let no = campaign_no(&c.campaign_id).unwrap();
    let keys = PoolKeys::new(&store.config().key_prefix, &c.campaign_id, no, 0, 1);
    // The scripts name a campaign by its number's 5 characters, as the store passes it.
    (campaign_id(no), keys, issued)
}

/// Test: the re-run checker over coupons at checkout, on standalone and on the 3-master
/// cluster: every re-run answers its first answer and writes nothing, the model agrees with
/// Redis after every step, and the journal's `event_id`s are all distinct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (campaign_id, keys, issued) = campaign_of(&store, n).await;
        let mut rng = StdRng::seed_from_u64(seed ^ backend as u64);
        // Over the sequences done: the journal's entries and the pool's redeemed count.
        let (mut entries, mut redeemed) = (0, 0);
        let mut export = Export::new(&keys.journal);
        for (sequence, (code, holder)) in issued.into_iter().enumerate() {
            let coupon = Coupon::of_pool(&campaign_id, &keys, code, holder);
            let mut trace = Trace::new(seed, sequence, backend);
            let model = run_sequence(
                &store,
                &coupon,
                redeemed,
                None,
                &mut export,
                &mut rng,
                &mut trace,
            )
            .await;
            entries += model.journal;
            redeemed += model.redeemed;
        }
        export.drain(&store).await;
        assert_eq!(
            export.count, entries,
            "{backend}: journal entries, seed {seed}"
        );
        assert!(
            export.repeated.is_empty(),
            "{backend}: seed {seed}: {:?}",
            export.repeated
        );
    }
}

/// A merchant packet of two shares paid out as coupons (order `rerun-<sequence>`), one share
/// grabbed and claimed by `holder` through the routers: its coupon and value, cents.
async fn share_coupon(store: &Arc<Store>, sequence: usize, holder: &str) -> (Coupon, i64) {
    let mut body = crate::merchant_packets::order(&format!("rerun-{sequence}"), 600, 2);
    body["payout"] = json!("coupon");
    body["coupon"] = json!({"redeem_within_secs": 86_400});
    let (s, made) = crate::merchant_packets::create(store, &body).await;
    assert_eq!(s, 201, "{made}");
    let id = made["packet_id"].as_str().unwrap().to_string();
    for (function, fixture) in [
        (Function::Grab, "grab-grab"),
        (Function::Claim, "claim-claim"),
    ] {
        let (s, b) = crate::merchant_packets::as_user(store, function, fixture, &id, holder).await;
        assert_eq!(s, 200, "{fixture}: {b}");
        if fixture == "claim-claim" {
            let value = b["amount_cents"].as_i64().unwrap();
            let code = b["coupon"]["code"].as_str().unwrap();
            let share_id = code.rsplit_once('.').unwrap().1.to_string();
            let keys = Keys::new(&store.config().key_prefix);
            let (pk, mk) = (keys.packet(&id), keys.merchant(SHOP));
            let coupon = Coupon {
                campaign_id: id.clone(),
                pool: pk.meta,
                issued: pk.coupons,
                journal: keys.packet_journal(&id),
                books: mk.merchant,
                grabs: pk.grabs,
                ledger: mk.ledger,
                share: "1",
                code: share_id,
                holder: holder.to_string(),
            };
            return (coupon, value);
        }
    }
    unreachable!("the claim returns")
}

/// Test: the re-run checker over merchant packets' share coupons at checkout, on standalone
/// and on the 3-master cluster: as for a campaign's coupon, and the merchant's books move a
/// redemption's value `outstanding` → `paid_coupons` and back at its release, once per
/// transition, whatever is re-sent; the books close and the merchant's account reconciles
/// after every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_coupon_reruns_answer_their_first_run() {
    let seed = seed();
    // A third of the sequences: each creates, grabs and claims a packet through the routers.
    let n = sequences(300).div_ceil(3);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        crate::merchant_packets::fund_merchant(&store, SHOP, 600 * n as i64).await;
        let mut rng = StdRng::seed_from_u64(seed ^ 0x54a7 ^ backend as u64);
        let mut paid_before = 0;
        let mut export = Export::new(&Keys::new(&store.config().key_prefix).merchant(SHOP).journal);
        for sequence in 0..n {
            let (coupon, value) =
                share_coupon(&store, sequence, &format!("buyer-{sequence}")).await;
            let mut trace = Trace::new(seed, sequence, backend);
            let books = ShareBooks { value, paid_before };
            let model = run_sequence(
                &store,
                &coupon,
                0,
                Some(books),
                &mut export,
                &mut rng,
                &mut trace,
            )
            .await;
            paid_before += value * model.redeemed;
        }
        export.drain(&store).await;
        assert!(
            export.repeated.is_empty(),
            "{backend}: seed {seed}: {:?}",
            export.repeated
        );
    }
}
