//! `POST /wallet/deposits`'s store step: the books' deposit ([`crate::store::books::deposit`],
//! `lua/deposit.lua`) of a wallet.

use crate::store::books::{self, Owner};
use crate::store::{Error, Store};
use crate::wallet::rules::DepositOutcome;

/// Deposits `amount_cents` into `user_id`'s wallet, once per `reference`
/// ([`books::deposit`]).
///
/// # Errors
/// As [`books::deposit`].
pub async fn deposit(
    store: &Store,
    user_id: &str,
    amount_cents: i64,
    reference: &str,
) -> Result<DepositOutcome, Error> {
    books::deposit(store, Owner::Wallet(user_id), amount_cents, reference).await
}
