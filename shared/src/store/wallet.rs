//! Wallets: balances in cents, a ledger, and exactly-once credits.
//!
//! A wallet lives on its owner's hash slot (see [`super::keys`]). Debits happen inside
//! create-packet's script (a packet paid for) and `withdraw.lua` (money paid out, once per
//! reference); credits (deposits, claim credits) go through `wallet_credit.lua`, which applies
//! each transfer id once; refunds are applied by `settle.lua` on the sender's slot.

use redis::Value;

use super::keys::Keys;
use super::scripts::{int, texts, Call, TransferReleaseCall, WalletCreditCall, WithdrawCall};
use super::{Error, Store};
pub use crate::domain::wallet::{
    claim_transfer_id, withdrawal_record_id, Credit, DepositOutcome, Entry, EntryKind, Wallet,
    WithdrawalOutcome, LEDGER_CAP, LEDGER_PAGE,
};

/// A credit to apply once.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    /// Unique per wallet: `dep:<reference>` or `claim:<packet_id>`.
    pub transfer_id: &'a str,
    /// Amount, cents (> 0).
    pub amount_cents: i64,
    /// Ledger kind.
    pub kind: EntryKind,
    /// Ledger reference.
    pub reference: &'a str,
    /// What must match when the transfer id is seen again (e.g. the amount).
    pub fingerprint: &'a str,
    /// How long the idempotency record is kept, ms; 0 pins it until claim step 4 (`release_claim_record`)
    /// (a claim credit must be remembered for as long as the claim can be re-driven).
    pub keep_ms: u64,
    /// Refuse the credit ([`Credit::balance_limit`]) if the balance would exceed this many
    /// cents; 0 for credits that must never be refused (claim credits).
    pub balance_limit_cents: i64,
    /// A claim credit's entry in the owner's received history
    /// ([`crate::domain::history::ReceivedEntry::member`]), written by the same script, so
    /// exactly when the credit is applied; `None` for deposits.
    pub history_entry: Option<&'a str>,
}

/// Credits `transfer.amount_cents` to `user_id` unless `transfer.transfer_id` was applied
/// before (its record lives in the wallet's idempotency hash, without a TTL; see
/// `lua/records.lua`).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same transfer is safe.
/// [`Error::Internal`] when the balance would pass 2^53 - 1 cents (nothing written).
pub async fn credit(
    store: &Store,
    user_id: &str,
    transfer: &Transfer<'_>,
) -> Result<Credit, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let wk = keys.wallet(user_id);
    let mut conn = store.conn().await?;
    let reply: Value = WalletCreditCall {
        wallet: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        legacy_record: &keys.legacy_transfer(user_id, transfer.transfer_id),
        received: &wk.received,
        sent: &wk.sent,
        history_totals: &wk.history_totals,
        journal: &wk.journal,
        amount_cents: transfer.amount_cents,
        kind: transfer.kind.as_str(),
        reference: transfer.reference,
        transfer_id: transfer.transfer_id,
        fingerprint: transfer.fingerprint,
        keep_ms: transfer.keep_ms,
        ledger_cap: LEDGER_CAP,
        balance_limit_cents: transfer.balance_limit_cents,
        history_entry: transfer.history_entry.unwrap_or(""),
        history_retention_ms: store.config().history.retention_ms,
        user_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let reply = texts("wallet_credit", reply)?;
    let balance_cents = int("wallet_credit", reply.get(1))?;
    let mut credit = Credit {
        balance_cents,
        applied: false,
        conflict: false,
        balance_limit: false,
    };
    match reply.first().map(String::as_str) {
        Some("applied") => credit.applied = true,
        Some("repeat") => {}
        Some("conflict") => credit.conflict = true,
        Some("balance_limit") => credit.balance_limit = true,
        _ => return Err(Error::bad_reply("wallet_credit", format!("{reply:?}"))),
    }
    Ok(credit)
}

/// Claim step 4, on `user_id`'s slot: once the claim of `packet_id` is marked done, un-pin its
/// credit record so it is forgotten after [`crate::domain::packets::PacketRules::claim_record_keep_ms`]
/// (`lua/transfer_release.lua`; idempotent). Returns the balance, cents.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the record stays pinned: it costs a few
/// bytes, never money; the next claim call for this packet un-pins it).
pub(crate) async fn release_claim_record(
    store: &Store,
    user_id: &str,
    packet_id: &str,
) -> Result<i64, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    Ok(TransferReleaseCall {
        wallet: &wk.wallet,
        records_forget: &wk.records_forget,
        record_id: &claim_transfer_id(packet_id),
        keep_ms: store.config().packets.claim_record_keep_ms(),
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?)
}

/// Deposits `amount_cents` into `user_id`'s wallet, once per `reference` (per user, remembered
/// for `HONGBAO_DEPOSIT_DEDUP_SECS` in a record without a TTL), unless the balance would exceed
/// `HONGBAO_MAX_BALANCE_CENTS`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is safe.
pub async fn deposit(
    store: &Store,
    user_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<DepositOutcome, Error> {
    let transfer_id = format!("dep:{reference}");
    let fingerprint = amount_cents.to_string();
    let c = credit(
        store,
        user_id,
        &Transfer {
            transfer_id: &transfer_id,
            amount_cents,
            kind: EntryKind::Deposit,
            reference,
            fingerprint: &fingerprint,
            keep_ms: store.config().wallet.deposit_dedup_secs * 1000,
            balance_limit_cents: store.config().wallet.max_balance_cents,
            history_entry: None,
        },
    )
    .await?;
    Ok(if c.conflict {
        DepositOutcome::ReferenceReused
    } else if c.balance_limit {
        DepositOutcome::BalanceLimit {
            balance_cents: c.balance_cents,
        }
    } else if c.applied {
        DepositOutcome::Applied {
            balance_cents: c.balance_cents,
        }
    } else {
        DepositOutcome::Repeat {
            balance_cents: c.balance_cents,
        }
    })
}

/// Pays `amount_cents` out of `user_id`'s wallet, once per `reference` (per user; the record,
/// `wd:<reference>`, is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL, as deposits'
/// are), unless the balance is below the amount (`lua/withdraw.lua`, one script on the
/// wallet's hash slot; a refused withdrawal writes nothing).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is
/// safe (a withdrawal that was applied answers [`WithdrawalOutcome::Repeat`]).
pub async fn withdraw(
    store: &Store,
    user_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<WithdrawalOutcome, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let reply: Value = WithdrawCall {
        wallet: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        journal: &wk.journal,
        amount_cents,
        reference,
        record_id: &withdrawal_record_id(reference),
        keep_ms: store.config().wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        user_id,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let reply = texts("withdraw", reply)?;
    let balance_cents = int("withdraw", reply.get(1))?;
    Ok(match reply.first().map(String::as_str) {
        Some("applied") => WithdrawalOutcome::Applied { balance_cents },
        Some("repeat") => WithdrawalOutcome::Repeat { balance_cents },
        Some("conflict") => WithdrawalOutcome::ReferenceReused,
        Some("insufficient_funds") => WithdrawalOutcome::InsufficientFunds { balance_cents },
        _ => return Err(Error::bad_reply("withdraw", format!("{reply:?}"))),
    })
}

/// The balance of `user_id`, cents (0 for a wallet never used).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn balance(store: &Store, user_id: &str) -> Result<i64, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let b: Option<i64> = redis::cmd("HGET")
        .arg(&wk.wallet)
        .arg("balance")
        .query_async(&mut conn)
        .await?;
    Ok(b.unwrap_or(0))
}

/// The balance and newest ledger entries of `user_id` (one pipeline, one hash slot).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn get(store: &Store, user_id: &str) -> Result<Wallet, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let (balance, items): (Option<i64>, Vec<String>) = redis::pipe()
        .cmd("HGET")
        .arg(&wk.wallet)
        .arg("balance")
        .cmd("LRANGE")
        .arg(&wk.ledger)
        .arg(0)
        .arg(LEDGER_PAGE - 1)
        .query_async(&mut conn)
        .await?;
    let entries = items
        .iter()
        .map(|i| Entry::parse(i))
        .collect::<Result<_, _>>()?;
    Ok(Wallet {
        balance_cents: balance.unwrap_or(0),
        entries,
    })
}
