//! `POST /merchants/{merchant_id}/withdrawals`'s store step: the books' withdrawal
//! ([`crate::store::books::withdraw`], `lua/withdraw.lua`) of a merchant's budget.

use crate::store::books::{self, Owner};
use crate::store::{Error, Store};
use crate::wallet::rules::WithdrawalOutcome;

/// Pays `amount_cents` out of `merchant_id`'s budget, once per `reference` ([`books::withdraw`]).
///
/// # Errors
/// As [`books::withdraw`].
pub async fn withdraw(
    store: &Store,
    merchant_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<WithdrawalOutcome, Error> {
    books::withdraw(store, Owner::Merchant(merchant_id), amount_cents, reference).await
}
