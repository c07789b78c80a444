//! Where a coupon code lives: the campaign and the pool that issued it, found from the code
//! alone (the checkout's hold, redeem and release name only the code).
//!
//! A generated code carries the campaign number and its index ([`parse`], then the campaign's
//! key inverts the index, which must be below the campaign's size: a guessed code fails
//! here); an uploaded one is looked up in the directory. The pool that issued it follows from
//! the index range, or from the code's hash.

use crate::domain::coupons::{campaign_id, campaign_no, parse, pool_of_code, pool_of_index};
use crate::store::conn::Conn;
use crate::store::{Error, Store};

use super::keys::{directory, PoolKeys};
use super::shape::{shape, Shape};

/// A code's issuing pool.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The campaign's id.
    pub campaign_id: String,
    /// The issuing pool's keys.
    pub keys: PoolKeys,
    /// The code as the pool keys it: the uploaded code, or the generated index in decimal.
    pub keyed: String,
    /// The campaign's shape (its discount among it).
    pub shape: Shape,
}

/// Finds the pool that issued `code`: `None` for a code of no campaign.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a campaign
/// record of the wrong shape.
pub(crate) async fn locate(
    store: &Store,
    conn: &mut Conn,
    code: &str,
) -> Result<Option<Located>, Error> {
    let prefix = &store.config().key_prefix;
    if let Some(parsed) = parse(code) {
        let id = campaign_id(parsed.campaign_no);
        if let Some(s) = shape(store, conn, &id, parsed.campaign_no).await? {
            if let Some(key) = &s.key {
                let index = key.unpermute(parsed.value);
                if index < s.campaign_total {
                    let pool = pool_of_index(index, s.campaign_total, s.pools);
                    let keys = PoolKeys::new(prefix, &id, parsed.campaign_no, pool, s.pools);
                    return Ok(Some(Located {
                        campaign_id: id,
                        keys,
                        keyed: index.to_string(),
                        shape: s,
                    }));
                }
            }
        }
    }
    let owner: Option<String> = redis::cmd("HGET")
        .arg(directory(prefix, code))
        .arg(code)
        .query_async(conn)
        .await?;
    // The owner is the campaign id, or `<campaign id>/<batch reference>` for an added batch.
    let id = owner.map(|o| o.split('/').next().unwrap_or_default().to_string());
    let Some((id, no)) = id.and_then(|id| campaign_no(&id).map(|no| (id, no))) else {
        return Ok(None);
    };
    let Some(s) = shape(store, conn, &id, no).await? else {
        return Ok(None);
    };
    let pool = pool_of_code(no, code, s.pools);
    let keys = PoolKeys::new(prefix, &id, no, pool, s.pools);
    Ok(Some(Located {
        campaign_id: id,
        keys,
        keyed: code.to_string(),
        shape: s,
    }))
}

/// A fresh id for one checkout call (16 hex digits): the scripts record it, so the same call
/// sent again (a lost reply) answers as its first run did.
pub(super) fn call_id() -> String {
    use rand::Rng;
    format!("{:016x}", rand::rng().random::<u64>())
}

/// The discount argument of a checkout script: the discount of an order of `total` cents by
/// the campaign's rule ([`crate::domain::coupons::Discount::discount_cents`]), in decimal;
/// empty when no total is given, the campaign has no rule, or the total is below its minimum
/// (the script refuses that one itself, reading the minimum from the pool).
pub(super) fn discount_arg(shape: &Shape, total: Option<i64>) -> String {
    match (shape.discount, total) {
        (Some(rule), Some(total)) => rule
            .discount_cents(total)
            .map(|d| d.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// An order total as a script argument: decimal, or empty when not given.
pub(super) fn total_arg(total: Option<i64>) -> String {
    total.map(|t| t.to_string()).unwrap_or_default()
}

/// A discount field of a script's reply: empty (unknown) or cents.
///
/// # Errors
/// `()` for anything else (the caller names the reply).
pub(super) fn discount_of(text: &str) -> Result<Option<i64>, ()> {
    if text.is_empty() {
        Ok(None)
    } else {
        text.parse().map(Some).map_err(|_| ())
    }
}
