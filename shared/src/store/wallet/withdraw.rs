//! `POST /wallet/withdrawals`'s store step: one EVALSHA of `lua/withdraw.lua` on the wallet's
//! hash slot, its reply parsed into a [`WithdrawalOutcome`].

use crate::store::scripts::WithdrawCall;
use redis::Value;

use crate::domain::wallet::{withdrawal_record_id, WithdrawalOutcome, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, int, texts, Call};
use crate::store::{Error, Store};

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
        books: &wk.wallet,
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
        owner_id: user_id,
        call: &call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
        owner: "wallet",
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    WithdrawCall::outcome(reply)
}
