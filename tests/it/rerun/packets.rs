//! The re-run checker's red packets (`grab.lua`, `cancel.lua`): a user's lucky packet of
//! 3 to 6 shares, grabbed by up to 8 users (some pressing twice) and now and then cancelled by
//! its sender, earlier calls re-sent at random later points: a won grab answers its share again,
//! a refused grab and a cancel their first answer, and none writes. The grab rate limit is off:
//! with it, a re-sent press that was refused counts as a press (a counter with a TTL, guarding
//! nothing). The model: each user's share, the shares left, the cancel's refund; after every
//! step Redis's grab count is the model's and the sender's wallet reconciles
//! ([`reconcile::check_account`]: the refund's ledger item and journal entry).

use std::collections::BTreeMap;

use harness::{Backend, TestRedis};
use hongbao::domain::reconcile::LedgerOwner;
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::store::scripts::{text, texts, Call, CancelCall, GrabCall};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{repeated_event_ids, rerun_one, seed, sequences, Entity, Sent, Trace};
use crate::common;

/// The users who grab.
const USERS: [&str; 8] = ["g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"];

/// One call on the sequence's packet.
#[derive(Debug, Clone)]
enum Op {
    Grab { user: &'static str },
    Cancel,
}

/// A sequence's packet, its sender and their keys.
struct Packet {
    id: String,
    sender: String,
    keys: Keys,
}

impl Packet {
    fn grab<'c>(
        &'c self,
        user: &'c str,
        call: &'c str,
        pk: &'c hongbao::store::keys::PacketKeys,
        rate: &'c str,
    ) -> GrabCall<'c> {
        GrabCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            rate,
            recipients: &pk.recipients,
            wrong_guesses: &pk.wrong_guesses,
            guesses: &pk.wrong_guesses,
            order: &pk.order,
            user_id: user,
            rate_limit: 0,
            rate_window_ms: 1_000,
            password: "",
            call_id: call,
            guess_budget: 0,
            guess_window_ms: 1_000,
            guesses_per_user: 0,
        }
    }
}

impl Entity for Packet {
    type Op = Op;

    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        let pk = self.keys.packet(&self.id);
        let wk = self.keys.wallet(&self.sender);
        match op {
            Op::Grab { user } => {
                let rate = self.keys.grab_rate(&self.id, user);
                self.grab(user, "", &pk, &rate).texts().0
            }
            Op::Cancel => {
                CancelCall::of(&pk, &wk, &self.id, &self.sender, 600, 5, call)
                    .texts()
                    .0
            }
        }
    }

    /// A grab's call id is `call`; a cancel has none: it answers from the packet's
    /// `cancelled_at`.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let pk = self.keys.packet(&self.id);
        match op {
            Op::Grab { user } => {
                let rate = self.keys.grab_rate(&self.id, user);
                let reply = self
                    .grab(user, call, &pk, &rate)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await;
                text("grab", reply.unwrap()).unwrap()
            }
            Op::Cancel => {
                let wk = self.keys.wallet(&self.sender);
                let reply = CancelCall::of(&pk, &wk, &self.id, &self.sender, 600, 5, call)
                    .invocation()
                    .invoke_async(&mut conn)
                    .await;
                texts("cancel", reply.unwrap()).unwrap().join(":")
            }
        }
    }
}

/// The reference model of one packet.
#[derive(Debug, Default)]
struct Model {
    /// Shares not grabbed.
    left: u32,
    /// Cents not grabbed.
    left_cents: i64,
    /// Each grabber's share record (as the grab answered it).
    grabbed: BTreeMap<&'static str, String>,
    /// The cancel's refund, cents, once cancelled.
    refunded: Option<i64>,
}

impl Model {
    /// What a fresh `op` answers, in [`shape`]'s terms; moves the model on from `answer`
    /// (a share's record and cents come from Redis: the split is the packet's own).
    fn apply(&mut self, op: &Op, answer: &str) -> String {
        match op {
            Op::Grab { user } => {
                if let Some(record) = self.grabbed.get(user) {
                    return format!("already_grabbed:{record}");
                }
                if self.refunded.is_some() {
                    return "cancelled".into();
                }
                if self.left == 0 {
                    return "sold_out".into();
                }
                let record = answer
                    .strip_prefix("grabbed:")
                    .and_then(|r| r.rsplit_once(':'))
                    .map(|(r, _)| r);
                if let Some(record) = record {
                    let cents: i64 = record
                        .split(':')
                        .nth(1)
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0);
                    self.left -= 1;
                    self.left_cents -= cents;
                    self.grabbed.insert(user, record.to_string());
                }
                "grabbed".into()
            }
            Op::Cancel => match self.refunded {
                Some(r) => format!("cancelled:{r}:1"),
                None if self.left == 0 => "not_cancellable:sold_out".into(),
                None => {
                    self.refunded = Some(self.left_cents);
                    format!("cancelled:{}:0", self.left_cents)
                }
            },
        }
    }
}

/// An answer as the model predicts it: a win without its record, a sold-out without its times,
/// a cancel without its time.
fn shape(answer: &str) -> String {
    let parts: Vec<&str> = answer.split(':').collect();
    match parts[..] {
        ["grabbed", ..] => "grabbed".into(),
        ["sold_out", ..] => "sold_out".into(),
        ["cancelled", refund, _, earlier] => format!("cancelled:{refund}:{earlier}"),
        _ => answer.to_string(),
    }
}

/// Test: the re-run checker over red packets, on standalone and on the 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| c.packets.grab_rate_limit = 0);
        let mut rng = StdRng::seed_from_u64(seed ^ 0x9ac4 ^ backend as u64);
        for sequence in 0..n {
            let sender = format!("sender-{sequence}");
            common::fund(&store, &sender, 10_000).await;
            let count = rng.random_range(3..=6);
            let total = rng.random_range(i64::from(count) * 10..=2_000);
            let made = common::create(&store, &sender, &common::lucky(total, count, 600)).await;
            let packet = Packet {
                id: made.packet_id,
                sender: sender.clone(),
                keys: Keys::new(&store.config().key_prefix),
            };
            let mut model = Model {
                left: count,
                left_cents: total,
                ..Model::default()
            };
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            for step in 0..rng.random_range(6..=20) {
                let op = if rng.random_bool(0.12) {
                    Op::Cancel
                } else {
                    Op::Grab {
                        user: USERS[rng.random_range(0..USERS.len())],
                    }
                };
                let call = format!("{sequence:04x}{step:04x}");
                let answer = packet.send(&store, &op, &call).await;
                trace.push(format!("{op:?} call {call} -> {answer}"));
                let expected = model.apply(&op, &answer);
                if shape(&answer) != expected {
                    trace.fail(format!("the model expected {expected}"));
                }
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    // A sold-out answer carries the time it was given; every other answer is
                    // the first one exactly (a packet stays sold out or cancelled, a share its
                    // grabber's, a cancel its figures).
                    let same = |(_, _, first): &Sent<Op>, again: &str| {
                        if first.starts_with("sold_out") {
                            shape(again) == shape(first)
                        } else {
                            again == first
                        }
                    };
                    rerun_one(&packet, &store, &sent, &mut rng, &mut trace, same).await;
                }
                let grabbed = common::key_content(&store, &packet.keys.packet(&packet.id).grabs)
                    .await
                    .1
                    .len();
                if grabbed != model.grabbed.len() {
                    trace.fail(format!(
                        "Redis holds {grabbed} grabs, the model {}",
                        model.grabbed.len()
                    ));
                }
                let mismatches = reconcile::check_account(&store, LedgerOwner::Wallet, &sender)
                    .await
                    .unwrap();
                if !mismatches.is_empty() {
                    trace.fail(format!("the sender does not reconcile: {mismatches:?}"));
                }
            }
            let journal = packet.keys.wallet(&sender).journal;
            let repeated = repeated_event_ids(&store, &journal).await;
            assert!(repeated.is_empty(), "{backend}: seed {seed}: {repeated:?}");
        }
    }
}
