//! The re-run checker's accounts: a wallet and a merchant's budget, each moved by
//! `lua/deposit.lua` and `lua/withdraw.lua` (`owner` `wallet` or `merchant`). Several
//! callers deposit and withdraw with references drawn from a few, so references repeat and
//! conflict, balances hit the limit and run short, and ledgers are kept at 5 items so every
//! sequence trims them; earlier calls are re-sent at random later points. A re-sent call must
//! answer its first answer (an `applied` or a refusal, balance limit or insufficient funds, its
//! very balance; a `repeat` or `conflict` the balance now) and write nothing. The model: the
//! balance and each reference's amount; after every step Redis's balance is the model's and
//! the account reconciles ([`reconcile::check_account`]).

use std::collections::BTreeMap;

use harness::{Backend, TestRedis};
use hongbao::domain::reconcile::LedgerOwner;
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::store::scripts::{texts, Call, DepositCall, WithdrawCall};
use hongbao::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{repeated_event_ids, rerun_one, seed, sequences, Entity, Sent, Trace};

/// A day, ms: how long a reference is remembered (the store's dedup window too).
const KEEP_MS: u64 = 86_400_000;

/// The largest balance a deposit may produce, cents.
const LIMIT_CENTS: i64 = 1_000;

/// Ledger items kept: every sequence trims its ledger.
const LEDGER_CAP: u32 = 5;

/// One call on the sequence's account.
#[derive(Debug, Clone)]
enum Op {
    Deposit { reference: String, cents: i64 },
    Withdraw { reference: String, cents: i64 },
}

/// The account of one sequence: a wallet or a merchant's budget, and its keys.
struct Account {
    holder: LedgerOwner,
    id: String,
    hash: String,
    ledger: String,
    records: String,
    records_forget: String,
    journal: String,
}

impl Account {
    fn new(prefix: &str, holder: LedgerOwner, id: String) -> Self {
        let keys = Keys::new(prefix);
        let w = keys.wallet(&id);
        let m = keys.merchant(&id);
        let (hash, ledger, records, records_forget, journal) = match holder {
            LedgerOwner::Wallet => (w.wallet, w.ledger, w.records, w.records_forget, w.journal),
            LedgerOwner::Merchant => (m.merchant, m.ledger, m.records, m.records_forget, m.journal),
        };
        Account {
            holder,
            id,
            hash,
            ledger,
            records,
            records_forget,
            journal,
        }
    }
}

impl Entity for Account {
    type Op = Op;

    /// Every script's `KEYS`, whatever `op`.
    fn keys_of(&self, _op: &Op, call: &str) -> Vec<String> {
        [
            &Keys::call_answer(&self.hash, call),
            &self.hash,
            &self.ledger,
            &self.records,
            &self.records_forget,
            &self.journal,
        ]
        .map(String::clone)
        .to_vec()
    }

    /// The answer is `outcome:balance`.
    async fn send(&self, store: &Store, op: &Op, call: &str) -> String {
        let mut conn = store.conn().await.unwrap();
        let (reference, cents) = match op {
            Op::Deposit { reference, cents } | Op::Withdraw { reference, cents } => {
                (reference.as_str(), *cents)
            }
        };
        let (dep, wd) = (format!("dep:{reference}"), format!("wd:{reference}"));
        let call_answer = Keys::call_answer(&self.hash, call);
        let reply = match (self.holder, op) {
            (owner, Op::Deposit { .. }) => {
                let c = DepositCall {
                    books: &self.hash,
                    ledger: &self.ledger,
                    records: &self.records,
                    records_forget: &self.records_forget,
                    journal: &self.journal,
                    call_answer: &call_answer,
                    amount_cents: cents,
                    reference,
                    record_id: &dep,
                    keep_ms: KEEP_MS,
                    ledger_cap: LEDGER_CAP,
                    owner_id: &self.id,
                    call,
                    call_keep_ms: KEEP_MS,
                    owner: owner.as_str(),
                    balance_limit_cents: LIMIT_CENTS,
                };
                c.invocation().invoke_async(&mut conn).await
            }
            (owner, Op::Withdraw { .. }) => {
                let c = WithdrawCall {
                    books: &self.hash,
                    ledger: &self.ledger,
                    records: &self.records,
                    records_forget: &self.records_forget,
                    journal: &self.journal,
                    call_answer: &call_answer,
                    amount_cents: cents,
                    reference,
                    record_id: &wd,
                    keep_ms: KEEP_MS,
                    ledger_cap: LEDGER_CAP,
                    owner_id: &self.id,
                    call,
                    call_keep_ms: KEEP_MS,
                    owner: owner.as_str(),
                };
                c.invocation().invoke_async(&mut conn).await
            }
        };
        texts("account", reply.unwrap()).unwrap().join(":")
    }
}

/// The reference model of one account.
#[derive(Debug, Default)]
struct Model {
    balance: i64,
    /// `dep:<ref>` / `wd:<ref>` -> the amount it was applied with.
    used: BTreeMap<String, i64>,
}

impl Model {
    /// What a fresh `op` answers, `outcome:balance`; moves the model on.
    fn apply(&mut self, op: &Op) -> String {
        let (record, cents, sign) = match op {
            Op::Deposit { reference, cents } => (format!("dep:{reference}"), *cents, 1),
            Op::Withdraw { reference, cents } => (format!("wd:{reference}"), *cents, -1),
        };
        let outcome = match self.used.get(&record) {
            Some(c) if *c != cents => "conflict",
            Some(_) => "repeat",
            None if sign > 0 && self.balance + cents > LIMIT_CENTS => "balance_limit",
            None if sign < 0 && self.balance < cents => "insufficient_funds",
            None => {
                self.balance += sign * cents;
                self.used.insert(record, cents);
                "applied"
            }
        };
        format!("{outcome}:{}", self.balance)
    }
}

fn draw(rng: &mut StdRng) -> Op {
    let reference = format!("r{}", rng.random_range(0..6));
    if rng.random_bool(0.55) {
        Op::Deposit {
            reference,
            cents: [100, 250][rng.random_range(0..2)],
        }
    } else {
        Op::Withdraw {
            reference,
            cents: [100, 300][rng.random_range(0..2)],
        }
    }
}

/// Test: the re-run checker over wallets and merchants' budgets, on standalone and on the
/// 3-master cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_reruns_answer_their_first_run() {
    let seed = seed();
    let n = sequences(300);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = crate::common::store(&redis, |c| c.wallet.deposit_dedup_secs = KEEP_MS / 1000);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xacc0 ^ backend as u64);
        for sequence in 0..n {
            let holder = if sequence % 2 == 0 {
                LedgerOwner::Wallet
            } else {
                LedgerOwner::Merchant
            };
            let account = Account::new(
                &store.config().key_prefix,
                holder,
                format!("acct-{sequence}"),
            );
            let mut model = Model::default();
            let mut sent: Vec<Sent<Op>> = Vec::new();
            let mut trace = Trace::new(seed, sequence, backend);
            for step in 0..rng.random_range(8..=30) {
                let op = draw(&mut rng);
                let call = format!("{sequence:08x}{step:08x}");
                let answer = account.send(&store, &op, &call).await;
                trace.push(format!("{holder:?} {op:?} call {call} -> {answer}"));
                let expected = model.apply(&op);
                if answer != expected {
                    trace.fail(format!("the model expected {expected}"));
                }
                sent.push((op, call, answer));
                if rng.random_bool(0.4) {
                    // A repeat or a conflict answers the balance now; every other answer is
                    // the first one exactly.
                    let balance = model.balance;
                    let same = |(_, _, first): &Sent<Op>, again: &str| {
                        let outcome = first.split(':').next().unwrap_or("");
                        match outcome {
                            "repeat" | "conflict" => again == format!("{outcome}:{balance}"),
                            _ => again == first,
                        }
                    };
                    rerun_one(&account, &store, &sent, &mut rng, &mut trace, same).await;
                }
                let mismatches = reconcile::check_account(&store, holder, &account.id)
                    .await
                    .unwrap();
                if !mismatches.is_empty() {
                    trace.fail(format!("does not reconcile: {mismatches:?}"));
                }
            }
            let repeated = repeated_event_ids(&store, &account.journal).await;
            assert!(repeated.is_empty(), "{backend}: seed {seed}: {repeated:?}");
        }
    }
}
