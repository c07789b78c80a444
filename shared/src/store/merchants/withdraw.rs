//! `POST /merchants/{merchant_id}/withdrawals`'s store step: one EVALSHA of
//! `lua/merchant_withdraw.lua` on the merchant's hash slot.

use redis::Value;

use crate::domain::wallet::{withdrawal_record_id, WithdrawalOutcome, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{call_id, script_call, Call, MERCHANT_WITHDRAW};
use crate::store::{Error, Store};

script_call! {
    /// `lua/merchant_withdraw.lua`: pay money out of a merchant's budget once per reference.
    /// Every key is on the merchant's hash tag.
    pub struct MerchantWithdrawCall<'a> for MERCHANT_WITHDRAW {
        KEYS {
            /// The merchant's hash (its books, cents).
            merchant: &'a str,
            /// The ledger list.
            ledger: &'a str,
            /// The idempotency records hash.
            records: &'a str,
            /// The idempotency "forget after" sorted set (Unix ms).
            records_forget: &'a str,
            /// The money journal of the merchant's tag (one `merchant_withdrawal` entry).
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
            /// The merchant (the journal entry's user).
            merchant_id: &'a str,
            /// This call's id (16 hex digits, fresh per call), kept in the
            /// record it writes: its re-run, at any later moment, answers its first `applied`.
            call: &'a str,
            /// How long a refusal's answer is kept (`call_answer`'s TTL), ms.
            call_keep_ms: u64,
        }
    }
}

/// Pays `amount_cents` out of `merchant_id`'s budget, once per `reference` (per merchant; the
/// record, `wd:<reference>`, is kept for `HONGBAO_DEPOSIT_DEDUP_SECS` without a TTL), unless
/// the balance is below the amount (`lua/merchant_withdraw.lua`; a refused withdrawal moves
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
    let reply: Value = MerchantWithdrawCall {
        merchant: &mk.merchant,
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
        merchant_id,
        call: &call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    super::withdrawal_outcome(reply)
}
