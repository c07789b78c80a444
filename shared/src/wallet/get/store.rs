//! `GET /wallet`'s store step: the balance and the newest ledger entries (one pipeline on the
//! wallet's hash slot), and the balance alone.

use crate::store::keys::Keys;
use crate::store::{Error, Store};
use crate::wallet::rules::{Entry, Wallet, LEDGER_PAGE};

/// The balance of `user_id`, cents (0 for a wallet never used).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn balance(store: &Store, user_id: &str) -> Result<i64, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let b: Option<i64> = redis::cmd("HGET")
        .arg(&wk.wallet)
        .arg("balance")
        .query_async(&mut conn)
        .await?;
    Ok(b.unwrap_or(0))
}

/// The balance and newest ledger entries of `user_id` (one pipeline, one hash slot).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn get(store: &Store, user_id: &str) -> Result<Wallet, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    let (balance, items): (Option<i64>, Vec<String>) = redis::pipe()
        .cmd("HGET")
        .arg(&wk.wallet)
        .arg("balance")
        .cmd("LRANGE")
        .arg(&wk.ledger)
        .arg(0)
        .arg(LEDGER_PAGE - 1)
        .query_async(&mut conn)
        .await?;
    let entries = items
        .iter()
        .map(|i| Entry::parse(i))
        .collect::<Result<_, _>>()?;
    Ok(Wallet {
        balance_cents: balance.unwrap_or(0),
        entries,
    })
}
