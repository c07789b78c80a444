//! The re-run checker's cash claims: a claim is four steps on two hash slots (`claim.lua`
//! reserves the share on the packet's slot, `lua/wallet_credit.lua` credits the grabber's
//! wallet once per transfer `claim:<packet_id>`, `claim_done.lua` marks the claim done,
//! `lua/transfer_release.lua` un-pins the credit's record), each claim call running them in
//! order with its own call id, as `store::packets::claim` does. Several claim calls of the same
//! grabber interleave (a retry beside its original), a user without a share claims too, and
//! any step of any call is re-sent at random later points, after other calls moved the claim
//! on. A re-sent step answers its first answer (a reservation the claim's state now: pending
//! becomes done, never back) and writes nothing. The model: each grabber's claim state and
//! whether the credit landed; after every step each grabber's balance is their share once
//! credited, else 0, the claims hash agrees, and every wallet reconciles.

use std::collections::BTreeMap;

use harness::{Backend, TestRedis};
use hongbao::domain::reconcile::LedgerOwner;
use hongbao::history::rules::{year_of, ReceivedEntry};
use hongbao::packets::{self, GrabOutcome};
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::store::scripts::{
    text, texts, Call, ClaimCall, ClaimDoneCall, TransferReleaseCall, WalletCreditCall,
};
use hongbao::wallet;
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{repeated_event_ids, rerun_one, seed, sequences, Entity, Sent, Trace};
use crate::common;

/// The users who grab (each wins a share: the packet has as many).
const GRABBERS: [&str; 4] = ["c0", "c1", "c2", "c3"];

/// A user without a share.
const STRANGER: &str = "stranger";

/// One step of one claim call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `claim.lua`: reserve the share.
    Reserve,
    /// `wallet_credit.lua`: credit it.
    Credit,
    /// `claim_done.lua`: mark the claim done.
    Done,
    /// `transfer_release.lua`: un-pin the credit's record.
    Release,
}

/// One step of `user`'s claim; the call id is the claim call's, as every step of one call
/// shares it.
#[derive(Debug, Clone)]
struct Op {
    user: &'static str,
    step: Step,
}

/// The sequence's packet and its grabbers' shares.
struct Claims {
    packet_id: String,
    sender: String,
    keys: Keys,
    /// Each grabber's share id and cents.
    shares: BTreeMap<&'static str, (u32, i64)>,
    /// The grabbers' received history entries, as claim step 2 writes them.
    entries: BTreeMap<&'static str, String>,
    /// A day, ms: the history's retention and the call answers' keep.
    keep_ms: u64,
    /// How long a released credit record is kept, ms.
    record_keep_ms: u64,
    /// Each grabber's balance before this packet, cents (the grabbers claim in every
    /// sequence).
    before: BTreeMap<&'static str, i64>,
}

impl Claims {
    fn reserve<'c>(&'c self, user: &'c str, call: &'c str, pk: &'c PacketKeysOf) -> ClaimCall<'c> {
        ClaimCall {
            meta: &pk.meta,
            grabs: &pk.grabs,
            claims: &pk.claims,
            coupons: &pk.coupons,
            books: &pk.meta,
            journal: &pk.journal,
            user_id: user,
            books_of: "",
            call,
        }
    }

    /// Keys of the grabber's wallet and the packet, as the steps name them.
    fn keys_for(&self, user: &str) -> (PacketKeysOf, WalletKeysOf) {
        let pk = self.keys.packet(&self.packet_id);
        let wk = self.keys.wallet(user);
        let transfer = wallet::claim_transfer_id(&self.packet_id);
        (
            PacketKeysOf {
                journal: self.keys.journal_of_tag(&self.packet_id[..4]),
                meta: pk.meta,
                grabs: pk.grabs,
                claims: pk.claims,
                coupons: pk.coupons,
            },
            WalletKeysOf { transfer, wk },
        )
    }

    fn credit<'c>(
        &'c self,
        user: &'c str,
        call: &'c str,
        w: &'c WalletKeysOf,
        fingerprint: &'c str,
    ) -> WalletCreditCall<'c> {
        let wk = &w.wk;
        WalletCreditCall {
            wallet: &wk.wallet,
            ledger: &wk.ledger,
            records: &wk.records,
            records_forget: &wk.records_forget,
            received: &wk.received,
            sent: &wk.sent,
            history_totals: &wk.history_totals,
            journal: &wk.journal,
            amount_cents: self.shares[user].1,
            reference: &self.packet_id,
            transfer_id: &w.transfer,
            fingerprint,
            keep_ms: 0,
            ledger_cap: 5,
            history_entry: &self.entries[user],
            history_retention_ms: self.keep_ms,
            user_id: user,
            call,
        }
    }

    fn done<'c>(&'c self, user: &'c str, pk: &'c PacketKeysOf) -> ClaimDoneCall<'c> {
        ClaimDoneCall {
            claims: &pk.claims,
            grabs: &pk.grabs,
            books: &pk.claims,
            user_id: user,
            mark: "",
            merchant_id: "",
        }
    }

    fn release<'c>(&'c self, w: &'c WalletKeysOf) -> TransferReleaseCall<'c> {
        TransferReleaseCall {
            wallet: &w.wk.wallet,
            records_forget: &w.wk.records_forget,
            record_id: &w.transfer,
            keep_ms: self.record_keep_ms,
        }
    }
}

/// The packet's keys a claim step names.
struct PacketKeysOf {
    meta: String,
    grabs: String,
    claims: String,
    coupons: String,
    journal: String,
}

/// The grabber's keys a claim step names.
struct WalletKeysOf {
    wk: hongbao::store::keys::WalletKeys,
    transfer: String,
}

impl Entity for Claims {
    type Op = Op;

    fn keys_of(&self, op: &Op, call: &str) -> Vec<String> {
        let (pk, w) = self.keys_for(op.user);
        match op.step {
            Step::Reserve => self.reserve(op.user, call, &pk).texts().0,
            Step::Credit if op.user == STRANGER => Vec::new(),
            Step::Credit => self.credit(op.user, call, &w, "").texts().0,
            Step::Done => self.done(op.user, &pk).texts().0,
            Step::Release => self.release(&w).texts().0,
        }
    }

    /// A reservation answers `claimed|<share>|<state>|<sender>` or its refusal; a credit
    /// `applied:<balance>` or `repeat:<balance>`; a done mark the state; a release the balance.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let (pk, w) = self.keys_for(op.user);
        match op.step {
            Step::Reserve => {
                let reply = self.reserve(op.user, call, &pk).invocation();
                let reply = reply.invoke_async(&mut conn).await.unwrap();
                let parts = texts("claim", reply).unwrap();
                parts[..parts.len().min(4)].join("|")
            }
            Step::Credit => {
                let fingerprint = self.shares[op.user].1.to_string();
                let reply = self.credit(op.user, call, &w, &fingerprint).invocation();
                let reply = reply.invoke_async(&mut conn).await.unwrap();
                texts("wallet_credit", reply).unwrap().join(":")
            }
            Step::Done => {
                let reply = self.done(op.user, &pk).invocation();
                text("claim_done", reply.invoke_async(&mut conn).await.unwrap()).unwrap()
            }
            Step::Release => {
                let reply = self.release(&w).invocation();
                let balance: i64 = reply.invoke_async(&mut conn).await.unwrap();
                balance.to_string()
            }
        }
    }
}

/// A grabber's claim in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    None,
    Pending,
    Done,
}

/// The reference model of the packet's claims.
#[derive(Debug, Default)]
struct Model {
    /// Each grabber's claim state.
    state: BTreeMap<&'static str, State>,
    /// The grabbers whose credit landed.
    credited: BTreeMap<&'static str, bool>,
}

impl Model {
    /// What a fresh `op` answers, in [`shape`]'s terms (`cents`: the grabber's share,
    /// `before`: their balance before this packet); moves the model on.
    fn apply(&mut self, op: &Op, cents: i64, before: i64) -> String {
        let state = self.state.get(op.user).copied().unwrap_or_default();
        let credited = self.credited.get(op.user).copied().unwrap_or(false);
        match op.step {
            Step::Reserve if op.user == STRANGER => "no_share".into(),
            Step::Reserve => {
                if state == State::None {
                    self.state.insert(op.user, State::Pending);
                }
                match self.state[op.user] {
                    State::Done => "claimed|done".into(),
                    _ => "claimed|pending".into(),
                }
            }
            Step::Credit if credited => format!("repeat:{}", before + cents),
            Step::Credit => {
                self.credited.insert(op.user, true);
                format!("applied:{}", before + cents)
            }
            Step::Done => {
                self.state.insert(op.user, State::Done);
                "done".into()
            }
            Step::Release => (before + if credited { cents } else { 0 }).to_string(),
        }
    }
}

/// An answer without its times, sender and share record: what the model predicts.
fn shape(answer: &str) -> String {
    let parts: Vec<&str> = answer.split('|').collect();
    match parts[..] {
        ["claimed", _, state, ..] => format!("claimed|{}", state.split(':').next().unwrap()),
        _ if answer.starts_with("done:") => "done".into(),
        _ => answer.to_string(),
    }
}

/// A re-sent step's answer against its first: a reservation answers the claim's state now,
/// which only moves from `pending:<ms>` to `done:<ms>`; every other step its first answer.
fn same((op, _, first): &Sent<Op>, again: &str) -> bool {
    if op.step != Step::Reserve || first == again {
        return first == again;
    }
    let (first, again): (Vec<&str>, Vec<&str>) =
        (first.split('|').collect(), again.split('|').collect());
    match (&first[..], &again[..]) {
        (["claimed", share, state, sender], ["claimed", share2, state2, sender2]) => {
            share == share2
                && sender == sender2
                && state.strip_prefix("pending:") == state2.strip_prefix("done:")
        }
        _ => false,
    }
}

/// A claim call in flight: its user, its call id and its next step (`None`: finished).
struct InFlight {
    user: &'static str,
    call: String,
    next: Option<Step>,
}

impl InFlight {
    /// The step after `step` answered `answer`, as `store::packets::claim` goes on: a done
    /// reservation goes to the release (step 4 again), a refused one stops.
    fn advance(&mut self, step: Step, answer: &str) {
        self.next = match step {
            Step::Reserve if answer.starts_with("claimed") && shape(answer) == "claimed|done" => {
                Some(Step::Release)
            }
            Step::Reserve if answer.starts_with("claimed") => Some(Step::Credit),
            Step::Reserve => None,
            Step::Credit => Some(Step::Done),
            Step::Done => Some(Step::Release),
            Step::Release => None,
        };
    }
}

/// A packet of one share per grabber, each grabbed; the checker's entity.
async fn grabbed_packet(store: &Store, sequence: usize, rng: &mut StdRng) -> Claims {
    let sender = format!("claims-sender-{sequence}");
    common::fund(store, &sender, 10_000).await;
    let count = GRABBERS.len() as u32;
    let total = rng.random_range(i64::from(count) * 10..=2_000);
    let made = common::create(store, &sender, &common::lucky(total, count, 600)).await;
    let cfg = store.config();
    let mut shares = BTreeMap::new();
    let mut entries = BTreeMap::new();
    let mut before = BTreeMap::new();
    for user in GRABBERS {
        before.insert(user, wallet::balance(store, user).await.unwrap());
        let Ok(GrabOutcome::Grabbed { share, .. }) =
            packets::grab(store, &made.packet_id, user).await
        else {
            panic!("{user} grabbed nothing")
        };
        shares.insert(user, (share.share_id, share.amount_cents));
        entries.insert(user, String::new());
    }
    Claims {
        packet_id: made.packet_id,
        sender,
        keys: Keys::new(&cfg.key_prefix),
        shares,
        entries,
        keep_ms: 86_400_000,
        record_keep_ms: cfg.packets.claim_record_keep_ms(),
        before,
    }
}

/// Test: the re-run checker over cash claims' four steps, on standalone and on the 3-master
/// cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| c.packets.grab_rate_limit = 0);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xc1a1 ^ backend as u64);
        for sequence in 0..n {
            let mut claims = grabbed_packet(&store, sequence, &mut rng).await;
            let mut model = Model::default();
            let mut flights: Vec<InFlight> = Vec::new();
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            let users: Vec<&'static str> = GRABBERS.into_iter().chain([STRANGER]).collect();
            for step in 0..rng.random_range(10..=40) {
                let open: Vec<usize> = (0..flights.len())
                    .filter(|i| flights[*i].next.is_some())
                    .collect();
                let i = if open.is_empty() || rng.random_bool(0.25) {
                    flights.push(InFlight {
                        user: users[rng.random_range(0..users.len())],
                        call: format!("{sequence:08x}{step:08x}"),
                        next: Some(Step::Reserve),
                    });
                    flights.len() - 1
                } else {
                    open[rng.random_range(0..open.len())]
                };
                let flight = &mut flights[i];
                let op = Op {
                    user: flight.user,
                    step: flight.next.unwrap(),
                };
                let op_user = op.user;
                let answer = claims.send(&store, &op, &flight.call).await;
                trace.push(format!("{op:?} call {} -> {answer}", flight.call));
                let cents = claims.shares.get(op.user).map_or(0, |s| s.1);
                let before = claims.before.get(op.user).copied().unwrap_or(0);
                let expected = model.apply(&op, cents, before);
                if shape(&answer) != expected {
                    trace.fail(format!("the model expected {expected}"));
                }
                // The received entry names the claim's time, known once it is reserved.
                if op.step == Step::Reserve
                    && claims.entries.get(op.user).is_some_and(String::is_empty)
                {
                    let entry = received_entry(&store, &claims, op.user, &answer);
                    claims.entries.insert(op.user, entry);
                }
                flight.advance(op.step, &answer);
                sent.push((op, flight.call.clone(), answer));
                if rng.random_bool(0.4) {
                    rerun_one(&claims, &store, &sent, &mut rng, &mut trace, same).await;
                }
                check(&store, &claims, &model, &trace, &[op_user]).await;
            }
            check(&store, &claims, &model, &trace, &GRABBERS).await;
            for user in GRABBERS {
                let journal = claims.keys.wallet(user).journal;
                let repeated = repeated_event_ids(&store, &journal).await;
                assert!(repeated.is_empty(), "{backend}: seed {seed}: {repeated:?}");
            }
        }
    }
}

/// The received history entry claim step 2 writes for `user`, from the reservation's
/// `claimed_at` (its state's ms).
fn received_entry(store: &Store, claims: &Claims, user: &'static str, answer: &str) -> String {
    let state = answer.split('|').nth(2).unwrap_or("");
    let claimed_at_ms: i64 = state.split(':').nth(1).unwrap().parse().unwrap();
    let (share_id, amount_cents) = claims.shares[user];
    ReceivedEntry {
        packet_id: claims.packet_id.clone(),
        sender_id: claims.sender.clone(),
        amount_cents,
        share_id,
        claimed_at_ms,
    }
    .member(year_of(&store.config().history.tz, claimed_at_ms))
}

/// After a step: each grabber's claim state is the model's, and the balance of each of `users`
/// (the step's grabber; every grabber at a sequence's end) is the model's and their wallet
/// reconciles.
async fn check(store: &Store, claims: &Claims, model: &Model, trace: &Trace, users: &[&str]) {
    let pk = claims.keys.packet(&claims.packet_id);
    let states: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(&pk.claims)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
    for user in GRABBERS {
        let stored = states
            .get(user)
            .map_or("", |s| s.split(':').next().unwrap());
        let want = match model.state.get(user).copied().unwrap_or_default() {
            State::None => "",
            State::Pending => "pending",
            State::Done => "done",
        };
        if stored != want {
            trace.fail(format!("{user}'s claim is {stored:?}, the model {want:?}"));
        }
        if !users.contains(&user) {
            continue;
        }
        let balance = wallet::balance(store, user).await.unwrap();
        let credited = model.credited.get(user).copied().unwrap_or(false);
        let want = claims.before[user] + if credited { claims.shares[user].1 } else { 0 };
        if balance != want {
            trace.fail(format!("{user} holds {balance} cents, the model {want}"));
        }
        let mismatches = reconcile::check_account(store, LedgerOwner::Wallet, user)
            .await
            .unwrap();
        if !mismatches.is_empty() {
            trace.fail(format!("{user} does not reconcile: {mismatches:?}"));
        }
    }
}
