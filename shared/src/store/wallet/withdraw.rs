//! `POST /wallet/withdrawals`'s store step: one EVALSHA of `lua/withdraw.lua` on the wallet's
//! hash slot, its reply parsed into a [`WithdrawalOutcome`].

use redis::Value;

use crate::domain::wallet::{withdrawal_record_id, WithdrawalOutcome, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, int, script_call, texts, Call, WITHDRAW};
use crate::store::{Error, Store};

script_call! {
    /// `lua/withdraw.lua`: pay money out of a wallet once per reference. Every key is on the
    /// wallet owner's hash tag.
    pub struct WithdrawCall<'a> for WITHDRAW {
        KEYS {
            /// The wallet hash (field `balance`, cents).
            wallet: &'a str,
            /// The ledger list.
            ledger: &'a str,
            /// The idempotency records hash.
            records: &'a str,
            /// The idempotency "forget after" sorted set (Unix ms).
            records_forget: &'a str,
            /// The money journal of the wallet's tag (one `withdrawal` entry).
            journal: &'a str,
            /// This call's refusal, kept under its call id ([`Keys::call_answer`]).
            call_answer: &'a str,
        }
        ARGV {
            /// The withdrawal, cents (> 0).
            amount_cents: i64,
            /// The caller's reference (the ledger entry's reference).
            reference: &'a str,
            /// The idempotency record id, `wd:<reference>`.
            record_id: &'a str,
            /// Keep the record this many ms (> 0).
            keep_ms: u64,
            /// Ledger entries kept.
            ledger_cap: u32,
            /// The wallet's owner (the journal entry's user).
            user_id: &'a str,
            /// This call's id (16 hex digits, fresh per call), kept in the
            /// record it writes: its re-run, at any later moment, answers its first `applied`.
            call: &'a str,
            /// How long a refusal's answer is kept (`call_answer`'s TTL), ms.
            call_keep_ms: u64,
        }
    }
}

impl WithdrawCall<'_> {
    /// `withdraw.lua`'s reply, `<applied|repeat|conflict|insufficient_funds> <balance>`, as a
    /// [`WithdrawalOutcome`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn outcome(reply: Value) -> Result<WithdrawalOutcome, Error> {
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
}

/// Pays `amount_cents` out of `user_id`'s wallet, once per `reference` (per user; the record,
/// `wd:<reference>`, is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL, as deposits'
/// are), unless the balance is below the amount (`lua/withdraw.lua`, one script on the
/// wallet's hash slot; a refused withdrawal moves nothing and keeps only its answer under its
/// call id, with a TTL: [`crate::store::keys::Keys::call_answer`]).
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
    let call = call_id();
    let mut conn = store.conn().await?;
    let reply: Value = WithdrawCall {
        wallet: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        journal: &wk.journal,
        call_answer: &Keys::call_answer(&wk.wallet, &call),
        amount_cents,
        reference,
        record_id: &withdrawal_record_id(reference),
        keep_ms: store.config().wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        user_id,
        call: &call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    WithdrawCall::outcome(reply)
}
