//! Deposits and withdrawals of a wallet or a merchant's budget, one store step each for both
//! owners: one EVALSHA of `lua/deposit.lua` or `lua/withdraw.lua` on the owner's hash slot,
//! its reply parsed into a [`DepositOutcome`] or a [`WithdrawalOutcome`].
//!
//! Each moves its owner's `balance` (a merchant's also `deposited` or `withdrawn`, so its
//! books close after every step), writes the ledger entry and the journal entry in the same
//! script, and applies each `reference` once: the record (`dep:<reference>`,
//! `wd:<reference>`) is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL, and a refused
//! call moves nothing and keeps only its answer under its call id, with a TTL
//! ([`Keys::call_answer`]).

use redis::Value;

use crate::domain::resend::CALL_KEEP_MS;
use crate::merchants::rules::MAX_MERCHANT_BALANCE_CENTS;
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, int, texts, Call, DepositCall, WithdrawCall};
use crate::store::{Error, Store};
use crate::wallet::rules::{
    deposit_record_id, withdrawal_record_id, DepositOutcome, WithdrawalOutcome, LEDGER_CAP,
};

/// Whose books a deposit or a withdrawal moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    /// A user's wallet (`POST /wallet/deposits`, `POST /wallet/withdrawals`).
    Wallet(&'a str),
    /// A merchant's budget (`POST /merchants/{merchant_id}/deposits`, `.../withdrawals`).
    Merchant(&'a str),
}

/// An owner's keys and names, as both scripts take them.
struct Books {
    books: String,
    ledger: String,
    records: String,
    records_forget: String,
    journal: String,
    owner_id: String,
    owner: &'static str,
}

impl Owner<'_> {
    fn books(self, prefix: &str) -> Books {
        let keys = Keys::new(prefix);
        match self {
            Owner::Wallet(user_id) => {
                let k = keys.wallet(user_id);
                Books {
                    books: k.wallet,
                    ledger: k.ledger,
                    records: k.records,
                    records_forget: k.records_forget,
                    journal: k.journal,
                    owner_id: user_id.to_string(),
                    owner: "wallet",
                }
            }
            Owner::Merchant(merchant_id) => {
                let k = keys.merchant(merchant_id);
                Books {
                    books: k.merchant,
                    ledger: k.ledger,
                    records: k.records,
                    records_forget: k.records_forget,
                    journal: k.journal,
                    owner_id: merchant_id.to_string(),
                    owner: "merchant",
                }
            }
        }
    }
}

/// A movement script's reply, `<outcome> <balance>`, as (outcome, balance cents).
///
/// # Errors
/// [`Error::Internal`] for a reply of another shape.
fn reply(script: &str, reply: Value) -> Result<(String, i64), Error> {
    let reply = texts(script, reply)?;
    let balance_cents = int(script, reply.get(1))?;
    match reply.into_iter().next() {
        Some(outcome) => Ok((outcome, balance_cents)),
        None => Err(Error::bad_reply(script, "empty reply")),
    }
}

impl DepositCall<'_> {
    /// `deposit.lua`'s reply, `<applied|repeat|conflict|balance_limit> <balance>`, as a
    /// [`DepositOutcome`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(value: Value) -> Result<DepositOutcome, Error> {
        let (outcome, balance_cents) = reply("deposit", value)?;
        Ok(match outcome.as_str() {
            "applied" => DepositOutcome::Applied { balance_cents },
            "repeat" => DepositOutcome::Repeat { balance_cents },
            "conflict" => DepositOutcome::ReferenceReused,
            "balance_limit" => DepositOutcome::BalanceLimit { balance_cents },
            other => return Err(Error::bad_reply("deposit", other)),
        })
    }
}

impl WithdrawCall<'_> {
    /// `withdraw.lua`'s reply, `<applied|repeat|conflict|insufficient_funds> <balance>`, as a
    /// [`WithdrawalOutcome`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(value: Value) -> Result<WithdrawalOutcome, Error> {
        let (outcome, balance_cents) = reply("withdraw", value)?;
        Ok(match outcome.as_str() {
            "applied" => WithdrawalOutcome::Applied { balance_cents },
            "repeat" => WithdrawalOutcome::Repeat { balance_cents },
            "conflict" => WithdrawalOutcome::ReferenceReused,
            "insufficient_funds" => WithdrawalOutcome::InsufficientFunds { balance_cents },
            other => return Err(Error::bad_reply("withdraw", other)),
        })
    }
}

/// Pays `amount_cents` into `owner`'s books, once per `reference` (per owner), unless the
/// balance would pass the owner's bound: `HONGBAO_MAX_BALANCE_CENTS` for a wallet,
/// [`MAX_MERCHANT_BALANCE_CENTS`] for a budget.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is
/// safe (a deposit that was applied answers [`DepositOutcome::Repeat`]).
pub async fn deposit(
    store: &Store,
    owner: Owner<'_>,
    amount_cents: i64,
    reference: &str,
) -> Result<DepositOutcome, Error> {
    let cfg = store.config();
    let b = owner.books(&cfg.key_prefix);
    let call = call_id();
    let mut conn = store.conn().await?;
    let reply: Value = DepositCall {
        books: &b.books,
        ledger: &b.ledger,
        records: &b.records,
        records_forget: &b.records_forget,
        journal: &b.journal,
        call_answer: &Keys::call_answer(&b.books, &call),
        amount_cents,
        reference,
        record_id: &deposit_record_id(reference),
        keep_ms: cfg.wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        owner_id: &b.owner_id,
        call: &call,
        call_keep_ms: CALL_KEEP_MS,
        owner: b.owner,
        balance_limit_cents: match owner {
            Owner::Wallet(_) => cfg.wallet.max_balance_cents,
            Owner::Merchant(_) => MAX_MERCHANT_BALANCE_CENTS,
        },
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    DepositCall::outcome(reply)
}

/// Pays `amount_cents` out of `owner`'s books, once per `reference` (per owner), unless the
/// balance is below the amount. Only the balance can be withdrawn: a merchant's money reserved
/// in open packets or owed as outstanding coupons is not.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is
/// safe (a withdrawal that was applied answers [`WithdrawalOutcome::Repeat`]).
pub async fn withdraw(
    store: &Store,
    owner: Owner<'_>,
    amount_cents: i64,
    reference: &str,
) -> Result<WithdrawalOutcome, Error> {
    let cfg = store.config();
    let b = owner.books(&cfg.key_prefix);
    let call = call_id();
    let mut conn = store.conn().await?;
    let reply: Value = WithdrawCall {
        books: &b.books,
        ledger: &b.ledger,
        records: &b.records,
        records_forget: &b.records_forget,
        journal: &b.journal,
        call_answer: &Keys::call_answer(&b.books, &call),
        amount_cents,
        reference,
        record_id: &withdrawal_record_id(reference),
        keep_ms: cfg.wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        owner_id: &b.owner_id,
        call: &call,
        call_keep_ms: CALL_KEEP_MS,
        owner: b.owner,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    WithdrawCall::outcome(reply)
}
