//! `POST /wallet/withdrawals`'s store step: the books' withdrawal
//! ([`crate::store::books::withdraw`], `lua/withdraw.lua`) of a wallet.

use crate::store::books::{self, Owner};
use crate::store::{Error, Store};
use crate::wallet::rules::WithdrawalOutcome;

/// Pays `amount_cents` out of `user_id`'s wallet, once per `reference` ([`books::withdraw`]).
///
/// # Errors
/// As [`books::withdraw`].
pub async fn withdraw(
    store: &Store,
    user_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<WithdrawalOutcome, Error> {
    books::withdraw(store, Owner::Wallet(user_id), amount_cents, reference).await
}
