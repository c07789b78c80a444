//! `POST /merchants/{merchant_id}/deposits`'s store step: one EVALSHA of
//! `lua/merchant_deposit.lua` on the merchant's hash slot.

use crate::store::scripts::MerchantDepositCall;
use redis::Value;

use crate::domain::merchants::MAX_MERCHANT_BALANCE_CENTS;
use crate::domain::wallet::{DepositOutcome, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, Call};
use crate::store::{Error, Store};

/// Pays `amount_cents` into `merchant_id`'s budget, once per `reference` (per merchant; the
/// record, `dep:<reference>`, is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL, as a
/// wallet's), unless the balance would pass [`MAX_MERCHANT_BALANCE_CENTS`]
/// (`lua/merchant_deposit.lua`; a refused deposit moves nothing and keeps only its answer
/// under its call id, with a TTL: [`Keys::call_answer`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same reference is
/// safe (a deposit that was applied answers [`DepositOutcome::Repeat`]).
pub async fn deposit(
    store: &Store,
    merchant_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<DepositOutcome, Error> {
    let mk = Keys::new(&store.config().key_prefix).merchant(merchant_id);
    let call = call_id();
    let mut conn = store.conn().await?;
    let reply: Value = MerchantDepositCall {
        merchant: &mk.merchant,
        ledger: &mk.ledger,
        records: &mk.records,
        records_forget: &mk.records_forget,
        journal: &mk.journal,
        call_answer: &Keys::call_answer(&mk.merchant, &call),
        amount_cents,
        reference,
        record_id: &format!("dep:{reference}"),
        keep_ms: store.config().wallet.deposit_dedup_secs * 1000,
        ledger_cap: LEDGER_CAP,
        balance_limit_cents: MAX_MERCHANT_BALANCE_CENTS,
        merchant_id,
        call: &call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    super::deposit_outcome(reply)
}
