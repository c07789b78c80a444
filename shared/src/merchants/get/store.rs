//! `GET /merchants/{merchant_id}`'s store step: the books and one ledger page, one pipeline on
//! the merchant's hash slot (`MULTI`: the books and the page are of one moment).

use std::collections::HashMap;

use crate::merchants::rules::{Books, Merchant};
use crate::store::keys::Keys;
use crate::store::{Error, Store};
use crate::wallet::rules::{Entry, LEDGER_PAGE};

/// The books of `merchant_id` and its ledger page starting `offset` entries from the newest
/// ([`LEDGER_PAGE`] entries at most); a merchant never used has every counter 0 and no
/// ledger.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub async fn get(store: &Store, merchant_id: &str, offset: u64) -> Result<Merchant, Error> {
    let mk = Keys::new(&store.config().key_prefix).merchant(merchant_id);
    let page = LEDGER_PAGE as u64;
    let mut conn = store.conn().await?;
    let (fields, items, ledger_len): (HashMap<String, String>, Vec<String>, u64) = redis::pipe()
        .atomic()
        .cmd("HGETALL")
        .arg(&mk.merchant)
        .cmd("LRANGE")
        .arg(&mk.ledger)
        .arg(offset)
        .arg(offset + page - 1)
        .cmd("LLEN")
        .arg(&mk.ledger)
        .query_async(&mut conn)
        .await?;
    let books = Books::from_fields(&fields)?;
    let ledger = items
        .iter()
        .map(|i| Entry::parse(i))
        .collect::<Result<Vec<_>, _>>()?;
    let next = offset + ledger.len() as u64;
    Ok(Merchant {
        books,
        next_offset: (next < ledger_len && !ledger.is_empty()).then_some(next),
        ledger,
        ledger_len,
    })
}
