//! The wallet rows: `lua/deposit.lua` (a deposit applied) and `lua/withdraw.lua` (a
//! withdrawal applied, one refused for want of funds), each beside the same path as commit
//! [`BEFORE`]'s scripts took it (its deposits were `wallet_credit.lua`'s; before a refused
//! call's answer was kept under its own key and a ledger's trimmed cents were counted), read
//! from the repository's history with `git show`, composed as that commit composed it
//! (helpers first), on the same server. Without that history (a shallow clone) the rows are
//! left out, with a line saying so.

use std::process::Command;

use hongbao::domain::resend::CALL_KEEP_MS;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{self, Call, DepositCall, WithdrawCall};
use hongbao::wallet::rules::{deposit_record_id, withdrawal_record_id, LEDGER_CAP};
use hongbao::Store;
use redis::Script;

use super::{Bench, Row};

/// The commit whose scripts are the baselines: the last before the call-answer keys.
const BEFORE: &str = "6c9536b";

/// One script invocation: its keys, then its arguments.
type Invocation = (Vec<String>, Vec<String>);

/// Cents every deposit pays in.
const DEPOSIT_CENTS: i64 = 10_000;

/// `lua/<file>` as [`BEFORE`] composed it: `helpers` then `file`, from `git show`; `None`
/// when the history does not hold that commit.
fn before(file: &str, helpers: &[&str]) -> Option<String> {
    script_at(BEFORE, file, helpers)
}

/// `lua/<file>` as commit `commit` composed it: `helpers` then `file`, from `git show`; `None`
/// when the history does not hold that commit.
pub fn script_at(commit: &str, file: &str, helpers: &[&str]) -> Option<String> {
    let mut source = String::new();
    for f in helpers.iter().chain(std::iter::once(&file)) {
        let out = Command::new("git")
            .args(["show", &format!("{commit}:lua/{f}")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        source.push_str(&String::from_utf8(out.stdout).ok()?);
    }
    Some(source)
}

/// A deposit of [`DEPOSIT_CENTS`] into `user`'s wallet under `reference`, as
/// `store::books::deposit` sends it (call id `call`).
fn deposit(prefix: &str, user: &str, reference: &str, call: &str) -> Invocation {
    let wk = Keys::new(prefix).wallet(user);
    DepositCall {
        books: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        journal: &wk.journal,
        call_answer: &Keys::call_answer(&wk.wallet, call),
        amount_cents: DEPOSIT_CENTS,
        reference,
        record_id: &deposit_record_id(reference),
        keep_ms: 86_400_000,
        ledger_cap: LEDGER_CAP,
        owner_id: user,
        call,
        call_keep_ms: CALL_KEEP_MS,
        owner: "wallet",
        balance_limit_cents: 1_000_000_000_000_000,
    }
    .texts()
}

/// The same deposit as [`BEFORE`]'s `wallet_credit.lua` took it: its 9 keys (the fifth its
/// record's layout before 0.2) and 11 arguments.
fn deposit_before(prefix: &str, user: &str, reference: &str) -> Invocation {
    let wk = Keys::new(prefix).wallet(user);
    let record_id = deposit_record_id(reference);
    let keys = vec![
        wk.wallet.clone(),
        wk.ledger,
        wk.records,
        wk.records_forget,
        format!("{}:legacy:{record_id}", wk.wallet),
        wk.received,
        wk.sent,
        wk.history_totals,
        wk.journal,
    ];
    let args = [
        DEPOSIT_CENTS.to_string(),
        "deposit".into(),
        reference.into(),
        record_id,
        DEPOSIT_CENTS.to_string(),
        "86400000".into(),
        LEDGER_CAP.to_string(),
        "0".into(),
        String::new(),
        "86400000".into(),
        user.into(),
    ];
    (keys, args.to_vec())
}

/// A withdrawal of `cents` from `user`'s wallet under `reference`, as
/// `store::books::withdraw` sends it (call id `call`).
fn withdrawal(prefix: &str, user: &str, cents: i64, reference: &str, call: &str) -> Invocation {
    let wk = Keys::new(prefix).wallet(user);
    WithdrawCall {
        books: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        journal: &wk.journal,
        call_answer: &Keys::call_answer(&wk.wallet, call),
        amount_cents: cents,
        reference,
        record_id: &withdrawal_record_id(reference),
        keep_ms: 86_400_000,
        ledger_cap: LEDGER_CAP,
        owner_id: user,
        call,
        call_keep_ms: CALL_KEEP_MS,
        owner: "wallet",
    }
    .texts()
}

/// The same invocations cut to the keys and arguments [`BEFORE`]'s script declared (its
/// header's first `keys` keys and `args` arguments: the later ones were added since).
fn cut(calls: &[Invocation], keys: usize, args: usize) -> Vec<Invocation> {
    calls
        .iter()
        .map(|(k, a)| (k[..keys].to_vec(), a[..args].to_vec()))
        .collect()
}

/// Deposit and withdrawal paths of today's scripts beside [`BEFORE`]'s, each pair measured on
/// wallets of its own (`u<i>` today's, `v<i>` the baseline's) in the same round.
pub async fn wallet_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    let (Some(old_deposit_source), Some(old_withdraw_source)) = (
        before(
            "wallet_credit.lua",
            &["records.lua", "history.lua", "journal.lua"],
        ),
        before("withdraw.lua", &["records.lua", "journal.lua"]),
    ) else {
        eprintln!("wallet rows left out: this clone's history does not hold {BEFORE}");
        return Vec::new();
    };
    let old_deposit = Script::new(&old_deposit_source);
    let old_withdraw = Script::new(&old_withdraw_source);
    b.sources.extend([old_deposit_source, old_withdraw_source]);
    let prefix = store.config().key_prefix.clone();
    let n = b.calls;
    let call = |tag: u64, i: usize| format!("{:016x}", (tag << 48) | i as u64);
    let calls = |who: &str, tag: u64, make: &dyn Fn(&str, &str, &str) -> Invocation| {
        (0..n)
            .map(|i| {
                make(
                    &format!("{who}{i}"),
                    &format!("ref-{tag}-{i}"),
                    &call(tag, i),
                )
            })
            .collect::<Vec<_>>()
    };
    let dep = |user: &str, reference: &str, c: &str| deposit(&prefix, user, reference, c);
    let out = |cents: i64| {
        let prefix = prefix.clone();
        move |user: &str, reference: &str, c: &str| withdrawal(&prefix, user, cents, reference, c)
    };

    let deposits = calls("u", 1, &dep);
    let deposited = b
        .phase("deposit", &scripts::DEPOSIT, &deposits, "applied")
        .await;
    let old_deposits = calls("v", 1, &|user: &str, reference: &str, _: &str| {
        deposit_before(&prefix, user, reference)
    });
    let old_deposited = b
        .phase("deposit (before)", &old_deposit, &old_deposits, "applied")
        .await;

    let paid = calls("u", 2, &out(DEPOSIT_CENTS / 2));
    let withdrawn = b
        .phase("withdrawal", &scripts::WITHDRAW, &paid, "applied")
        .await;
    let old_paid = cut(&calls("v", 2, &out(DEPOSIT_CENTS / 2)), 5, 6);
    let old_withdrawn = b
        .phase("withdrawal (before)", &old_withdraw, &old_paid, "applied")
        .await;

    let refused = calls("u", 3, &out(DEPOSIT_CENTS));
    let short = "insufficient_funds";
    let refused_usec = b
        .phase("withdrawal refused", &scripts::WITHDRAW, &refused, short)
        .await;
    let old_refused = cut(&calls("v", 3, &out(DEPOSIT_CENTS)), 5, 6);
    let old_refused_usec = b
        .phase(
            "withdrawal refused (before)",
            &old_withdraw,
            &old_refused,
            short,
        )
        .await;

    let row = |path, usec, baseline, baseline_usec| Row {
        path,
        usec,
        baseline,
        baseline_usec,
        goal: 1.2,
    };
    vec![
        row(
            "deposit: applied",
            deposited,
            "the same, 6c9536b's script",
            old_deposited,
        ),
        row(
            "withdrawal: applied",
            withdrawn,
            "the same, 6c9536b's script",
            old_withdrawn,
        ),
        row(
            "withdrawal: refused, insufficient funds",
            refused_usec,
            "the same, 6c9536b's script",
            old_refused_usec,
        ),
    ]
}
