//! `POST /merchants/{merchant_id}/withdrawals`'s store step: one EVALSHA of
//! `lua/withdraw.lua` on the merchant's hash slot.

use crate::store::scripts::WithdrawCall;
use redis::Value;

use crate::domain::wallet::{withdrawal_record_id, WithdrawalOutcome, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, Call};
use crate::store::{Error, Store};

/// Pays `amount_cents` out of `merchant_id`'s budget, once per `reference` (per merchant; the
/// record, `wd:<reference>`, is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL), unless
/// the balance is below the amount (`lua/withdraw.lua`; a refused withdrawal moves
/// nothing and keeps only its answer under its call id, with a TTL: [`Keys::call_answer`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is
/// safe (a withdrawal that was applied answers [`WithdrawalOutcome::Repeat`]).
pub async fn withdraw(
    store: &Store,
    merchant_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<WithdrawalOutcome, Error> {
    let mk = Keys::new(&store.config().key_prefix).merchant(merchant_id);
    let call = call_id();
    let mut conn = store.conn().await?;
    let reply: Value = WithdrawCall {
        books: &mk.merchant,
        ledger: &mk.ledger,
        records: &mk.records,
        records_forget: &mk.records_forget,
        journal: &mk.journal,
        call_answer: &Keys::call_answer(&mk.merchant, &call),
        amount_cents,
        reference,
        record_id: &withdrawal_record_id(reference),
        keep_ms: store.config().wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        owner_id: merchant_id,
        call: &call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
        owner: "merchant",
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    super::withdrawal_outcome(reply)
}
