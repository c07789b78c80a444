//! `POST /merchants/{merchant_id}/deposits`'s store step: the books' deposit
//! ([`crate::store::books::deposit`], `lua/deposit.lua`) of a merchant's budget.

use crate::store::books::{self, Owner};
use crate::store::{Error, Store};
use crate::wallet::rules::DepositOutcome;

/// Pays `amount_cents` into `merchant_id`'s budget, once per `reference` ([`books::deposit`]).
///
/// # Errors
/// As [`books::deposit`].
pub async fn deposit(
    store: &Store,
    merchant_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<DepositOutcome, Error> {
    books::deposit(store, Owner::Merchant(merchant_id), amount_cents, reference).await
}
