//! `POST /wallet/deposits`'s store step: a credit once per reference ([`super::credit`]).

use crate::domain::wallet::{DepositOutcome, EntryKind};
use crate::store::scripts::call_id;
use crate::store::wallet::{credit, Transfer};
use crate::store::{Error, Store};

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
            call: &call_id(),
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
