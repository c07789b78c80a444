//! The re-run checker's draw packets (`lua/draw_enter.lua`, `lua/draw_run.lua`, `cancel.lua`,
//! `lua/settle.lua`): a draw of 2 to 4 shares that up to 8 users enter (some twice), whose
//! entries close and whose packet expires at random points (the checker moves `draw_at` and
//! `expires_at` into the past: time passing, not a call), drawn in chunks of 1 or 2 winners by
//! several runners, now and then cancelled by its sender and settled by reclaim-cron's calls;
//! earlier calls are re-sent at random later points.
//!
//! A re-sent call that recorded an outcome (an entry, a cancel, the settlement its call id made)
//! answers it again and writes nothing. A call whose first answer was not an outcome (a draw
//! chunk, a `not_due`, a `draw_due`, a refused entry) is judged as the call it is at its later
//! moment: the model predicts its answer as a fresh call's, and it may write only what that
//! call would (a draw chunk is the draw's next chunk whoever sends it, a settlement is the
//! packet's one settlement whichever call makes it). The model: the entrants and their
//! tickets, the draw's winners (the smallest tickets, in order) and progress, the cancel's and
//! the settlement's refunds; after every step the grabs hash holds exactly the model's winners,
//! the entrants set its entrants, and the sender's wallet reconciles.

use std::collections::BTreeMap;

use harness::{Backend, TestRedis};
use hongbao::domain::reconcile::LedgerOwner;
use hongbao::draws::rules::{self as draws, DrawTerms};
use hongbao::store::keys::{Keys, PacketKeys};
use hongbao::store::reclaim::Payer;
use hongbao::store::reconcile;
use hongbao::store::scripts::{
    text, texts, Call, CancelCall, DrawEnterCall, DrawRunCall, SettleCall,
};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{repeated_event_ids, seed, sequences, snapshot, Entity, Sent, Trace};
use crate::common;

/// The users who enter.
const USERS: [&str; 8] = ["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];

/// Each share's cents (a fixed packet).
const SHARE_CENTS: i64 = 100;

/// One call on the sequence's draw packet.
#[derive(Debug, Clone)]
enum Op {
    /// `user`'s entry (the ticket computed from the packet's seed, as the grab function does).
    Enter { user: &'static str },
    /// One chunk of the draw, at most `chunk` winners.
    Run { chunk: u32 },
    /// The sender's cancel.
    Cancel,
    /// A reclaim-cron settle call.
    Settle,
}

/// A sequence's draw packet, its sender, seed and keys.
struct Packet {
    id: String,
    sender: String,
    seed: String,
    keys: Keys,
}

impl Packet {
    fn settle<'c>(&'c self, pk: &'c PacketKeys, payer: &'c Payer, call: &'c str) -> SettleCall<'c> {
        SettleCall::of(pk, payer, &self.id, 600, 5, call)
    }

    /// `user`'s ticket in this draw.
    fn ticket(&self, user: &str) -> String {
        draws::ticket(&self.seed, user).expect("a well-formed seed")
    }
}

impl Entity for Packet {
    type Op = Op;

    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        let pk = self.keys.packet(&self.id);
        let wk = self.keys.wallet(&self.sender);
        match op {
            Op::Enter { user } => vec![pk.meta, pk.tickets, self.keys.grab_rate(&self.id, user)],
            Op::Run { .. } => vec![pk.meta, pk.shares, pk.grabs, pk.tickets, wk.journal],
            Op::Cancel => {
                CancelCall::of(&pk, &wk, &self.id, &self.sender, 600, 5, call)
                    .texts()
                    .0
            }
            Op::Settle => {
                let payer = Payer::wallet(&self.keys, &self.sender);
                self.settle(&pk, &payer, call).texts().0
            }
        }
    }

    /// An entry, a draw chunk and a cancel carry no call id (an entry is the user's one
    /// entry, a chunk the draw's next, a cancel the packet's one cancel); a settle's is `call`.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let pk = self.keys.packet(&self.id);
        let wk = self.keys.wallet(&self.sender);
        match op {
            Op::Enter { user } => {
                let rate = self.keys.grab_rate(&self.id, user);
                let ticket = self.ticket(user);
                let reply = DrawEnterCall {
                    meta: &pk.meta,
                    tickets: &pk.tickets,
                    rate: &rate,
                    user_id: user,
                    ticket: &ticket,
                    rate_limit: 0,
                    rate_window_ms: 1_000,
                }
                .invocation()
                .invoke_async(&mut conn)
                .await;
                text("draw_enter", reply.unwrap()).unwrap()
            }
            Op::Run { chunk } => {
                let reply = DrawRunCall {
                    meta: &pk.meta,
                    shares: &pk.shares,
                    grabs: &pk.grabs,
                    tickets: &pk.tickets,
                    journal: &wk.journal,
                    order: &pk.order,
                    chunk: *chunk,
                }
                .invocation()
                .invoke_async(&mut conn)
                .await;
                text("draw_run", reply.unwrap()).unwrap()
            }
            Op::Cancel => {
                let reply = CancelCall::of(&pk, &wk, &self.id, &self.sender, 600, 5, call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await;
                texts("cancel", reply.unwrap()).unwrap().join(":")
            }
            Op::Settle => {
                let reply = self
                    .settle(&pk, &Payer::wallet(&self.keys, &self.sender), call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await;
                texts("settle", reply.unwrap()).unwrap().join(":")
            }
        }
    }
}

/// The reference model of one draw packet.
#[derive(Debug, Clone, PartialEq)]
struct Model {
    /// Shares.
    count: u32,
    /// Entrants by ticket (the draw's order).
    entrants: BTreeMap<String, &'static str>,
    /// `draw_at` has passed.
    closed: bool,
    /// `expires_at` has passed.
    expired: bool,
    /// The draw's winners and entrants, once its first chunk ran.
    fixed: Option<(u32, u32)>,
    /// Winners given their share so far.
    done: u32,
    /// The cancel's refund, cents, once cancelled.
    cancelled: Option<i64>,
    /// The settlement's refund, cents, once settled.
    settled: Option<i64>,
}

impl Model {
    fn new(count: u32) -> Self {
        Model {
            count,
            entrants: BTreeMap::new(),
            closed: false,
            expired: false,
            fixed: None,
            done: 0,
            cancelled: None,
            settled: None,
        }
    }

    fn total(&self) -> i64 {
        i64::from(self.count) * SHARE_CENTS
    }

    /// The draw is complete.
    fn drawn(&self) -> bool {
        self.fixed.is_some_and(|(winners, _)| self.done == winners)
    }

    /// The winners so far, in ticket order.
    fn winners(&self) -> Vec<&'static str> {
        self.entrants
            .values()
            .take(self.done as usize)
            .copied()
            .collect()
    }

    /// What a fresh call of `op` answers, in [`shape`]'s terms, moving the model on.
    fn apply(&mut self, packet: &Packet, op: &Op) -> String {
        match op {
            Op::Enter { user } => {
                let ticket = packet.ticket(user);
                let entrant = self.entrants.contains_key(&ticket);
                let closed = self.closed || self.fixed.is_some() || self.settled.is_some();
                if entrant {
                    return "entered".into();
                }
                if self.cancelled.is_some() {
                    return "cancelled".into();
                }
                if closed {
                    return "draw_due".into();
                }
                self.entrants.insert(ticket, user);
                "entered".into()
            }
            Op::Run { chunk } => {
                if let (true, Some((winners, entrants))) = (self.drawn(), self.fixed) {
                    return format!("drawn:{winners}:{entrants}");
                }
                if self.cancelled.is_some() {
                    return "cancelled".into();
                }
                if !self.closed {
                    return "not_due".into();
                }
                let entrants = u32::try_from(self.entrants.len()).unwrap();
                let (winners, entrants) = *self
                    .fixed
                    .get_or_insert((self.count.min(entrants), entrants));
                self.done = (self.done + chunk).min(winners);
                if self.done == winners {
                    format!("drawn:{winners}:{entrants}")
                } else {
                    format!("drawing:{}:{winners}", self.done)
                }
            }
            Op::Cancel => {
                if let Some(refund) = self.cancelled {
                    return format!("cancelled:{refund}:1");
                }
                if self.settled.is_some() {
                    return "not_cancellable:settled".into();
                }
                if self.expired {
                    return "not_cancellable:expired".into();
                }
                if self.closed && !self.drawn() {
                    return "draw_due".into();
                }
                if self.done >= self.count {
                    return "not_cancellable:sold_out".into();
                }
                let refund = self.total() - i64::from(self.done) * SHARE_CENTS;
                self.cancelled = Some(refund);
                if self.done == 0 {
                    // Nothing left in the packet: the cancel settled it.
                    self.settled = Some(refund);
                }
                format!("cancelled:{refund}:0")
            }
            Op::Settle => {
                if self.settled.is_some() {
                    return format!("settled:{}:0:0", self.total());
                }
                if self.closed && !self.drawn() && self.cancelled.is_none() {
                    return "draw_due".into();
                }
                if !self.expired {
                    return "not_due".into();
                }
                // Nobody claims here: every share goes back, less what the cancel refunded.
                let refund = self.total() - self.cancelled.unwrap_or(0);
                self.settled = Some(refund);
                format!("settled:{refund}:1:0")
            }
        }
    }
}

/// An answer as the model predicts it: an entry, a `draw_due` or a `not_due` without its
/// time, a cancel without its time.
fn shape(answer: &str) -> String {
    let parts: Vec<&str> = answer.split(':').collect();
    match parts[..] {
        ["entered", _] => "entered".into(),
        ["draw_due", _] => "draw_due".into(),
        ["not_due", _] => "not_due".into(),
        ["cancelled", refund, _, earlier] => format!("cancelled:{refund}:{earlier}"),
        _ => answer.to_string(),
    }
}

/// A first answer that is the call's own recorded outcome: its re-run answers it again and
/// writes nothing. An entry (the user's entry), a cancel that cancelled (the packet's cancel's
/// figures), a settle that settled (recorded under its call id).
fn is_outcome(op: &Op, first: &str) -> bool {
    match op {
        Op::Enter { .. } => first.starts_with("entered"),
        Op::Cancel => first.starts_with("cancelled:"),
        Op::Settle => first.starts_with("settled:") && first.split(':').nth(2) == Some("1"),
        Op::Run { .. } => false,
    }
}

/// Moves `field` of the packet's meta into the past (time passing for the packet).
async fn pass(store: &Store, pk: &PacketKeys, field: &str) {
    let () = redis::cmd("HSET")
        .arg(&pk.meta)
        .arg(field)
        .arg(1)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
}

/// Test: the re-run checker over draw packets, on standalone and on the 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| c.packets.grab_rate_limit = 0);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xd4a3 ^ backend as u64);
        for sequence in 0..n {
            let sender = format!("drawer-{sequence}");
            common::fund(&store, &sender, 10_000).await;
            let count = rng.random_range(2..=4);
            let request = hongbao::packets::NewPacket {
                mode: hongbao::domain::split::Mode::Fixed,
                draw: Some(DrawTerms { entry_secs: 60 }),
                ..common::lucky(i64::from(count) * SHARE_CENTS, count, 600)
            };
            let made = common::create(&store, &sender, &request).await;
            let keys = Keys::new(&store.config().key_prefix);
            let pk = keys.packet(&made.packet_id);
            let seed_hex: String = redis::cmd("HGET")
                .arg(&pk.meta)
                .arg("draw_seed")
                .query_async(&mut store.conn().await.unwrap())
                .await
                .unwrap();
            let packet = Packet {
                id: made.packet_id,
                sender: sender.clone(),
                seed: seed_hex,
                keys,
            };
            let mut model = Model::new(count);
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            for step in 0..rng.random_range(8..=24) {
                // Time passes: the entries close, later the packet expires.
                if !model.closed && rng.random_bool(0.12) {
                    pass(&store, &pk, "draw_at").await;
                    model.closed = true;
                    trace.push("draw_at passes".into());
                } else if model.closed && !model.expired && rng.random_bool(0.1) {
                    pass(&store, &pk, "expires_at").await;
                    model.expired = true;
                    trace.push("expires_at passes".into());
                }
                let op = match rng.random_range(0..20) {
                    0..=9 => Op::Enter {
                        user: USERS[rng.random_range(0..USERS.len())],
                    },
                    10..=14 => Op::Run {
                        chunk: rng.random_range(1..=2),
                    },
                    15..=16 => Op::Cancel,
                    _ => Op::Settle,
                };
                let call = format!("{sequence:04x}{step:04x}");
                let answer = packet.send(&store, &op, &call).await;
                trace.push(format!("{op:?} call {call} -> {answer}"));
                let expected = model.apply(&packet, &op);
                if shape(&answer) != expected {
                    trace.fail(format!("the model expected {expected}"));
                }
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    rerun(&packet, &store, &mut sent, &mut model, &mut rng, &mut trace).await;
                }
                check(&store, &packet, &model, &trace).await;
            }
            let journal = packet.keys.wallet(&sender).journal;
            let repeated = repeated_event_ids(&store, &journal).await;
            assert!(repeated.is_empty(), "{backend}: seed {seed}: {repeated:?}");
        }
    }
}

/// The re-run step: sends again one of the calls in `sent` (its call id and arguments), and
/// fails the sequence unless a recorded outcome is answered again with nothing written, and
/// any other first answer is answered as the model's fresh call, writing only when that call
/// moves the model.
async fn rerun(
    packet: &Packet,
    store: &Store,
    sent: &mut [Sent<Op>],
    model: &mut Model,
    rng: &mut StdRng,
    trace: &mut Trace,
) {
    let i = rng.random_range(0..sent.len());
    let (op, call, first) = &sent[i];
    let touched = packet.keys_of(op, call);
    let before = snapshot(store, &touched).await;
    let again = packet.send(store, op, call).await;
    trace.push(format!("re-run of {op:?} call {call} -> {again}"));
    let may_write = if is_outcome(op, first) {
        if shape(&again) != shape(first) {
            trace.fail(format!("answered {first} first"));
        }
        false
    } else {
        let was = model.clone();
        let expected = model.apply(packet, op);
        if shape(&again) != expected {
            trace.fail(format!("as a fresh call the model expected {expected}"));
        }
        *model != was
    };
    if !may_write && snapshot(store, &touched).await != before {
        trace.fail("the re-run wrote");
    }
    // A call whose re-run made its outcome (a settle that settled now) answers that from then on.
    if !is_outcome(op, first) && is_outcome(op, &again) {
        sent[i].2 = again;
    }
}

/// After a step: the grabs hash holds exactly the model's winners, the entrants set its
/// entrants, and the sender's wallet reconciles.
async fn check(store: &Store, packet: &Packet, model: &Model, trace: &Trace) {
    let pk = packet.keys.packet(&packet.id);
    let mut grabbed = common::key_content(store, &pk.grabs).await.1;
    grabbed.sort();
    let mut winners: Vec<String> = model.winners().iter().map(ToString::to_string).collect();
    winners.sort();
    let grabbers: Vec<String> = grabbed
        .iter()
        .filter_map(|item| item.split_once('=').map(|(user, _)| user.to_string()))
        .collect();
    if grabbers != winners {
        trace.fail(format!(
            "Redis holds grabs {grabbed:?}, the model winners {winners:?}"
        ));
    }
    let entrants = common::key_content(store, &pk.tickets).await.1;
    let held = entrants.iter().filter(|m| m.contains(':')).count();
    if held != model.entrants.len() {
        trace.fail(format!(
            "Redis holds {held} entrants, the model {}",
            model.entrants.len()
        ));
    }
    let mismatches = reconcile::check_account(store, LedgerOwner::Wallet, &packet.sender)
        .await
        .unwrap();
    if !mismatches.is_empty() {
        trace.fail(format!("the sender does not reconcile: {mismatches:?}"));
    }
}
