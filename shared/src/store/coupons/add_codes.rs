//! `POST /campaigns/{id}/codes`: add a batch of uploaded codes to a campaign that has not
//! started, once per batch reference.
//!
//! 1. Checks that write nothing: the batch (valid codes, none repeated), the campaign (uploaded
//!    codes, not started by Redis `TIME`, unless this batch was recorded before: a retry
//!    completes it), the reference (another batch under it is refused), the directory (a code
//!    of another campaign is a duplicate).
//! 2. The codes claimed in the directory for the campaign.
//! 3. `lua/coupon_add_codes.lua` on every pool: its share of the codes (by the code's hash, as
//!    at creation) and the batch's reference, once. A batch accepted just before the start may
//!    complete just after it.

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::domain::coupons::codes::{batch_fingerprint, duplicates_within};
use crate::domain::coupons::{campaign_no, pool_of_code};
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

use super::directory::{claim, owned_elsewhere};
use super::keys::PoolKeys;
use super::shape::shape;

use crate::store::scripts::{script_call, COUPON_ADD_CODES};

script_call! {
    /// `lua/coupon_add_codes.lua`: one pool's share of a batch of uploaded codes, once per
    /// batch reference.
    pub struct CouponAddCodesCall<'a> for COUPON_ADD_CODES {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's batches (hash).
            batches: &'a str,
        }
        ARGV {
            /// The batch's reference.
            reference: &'a str,
            /// The batch's fingerprint.
            fingerprint: &'a str,
            /// The pool's codes of the batch.
            batch: &'a [&'a str],
        }
    }
}

impl CouponAddCodesCall<'_> {
    /// Parses the script's reply on pool `k` of `campaign_id`: `added:<pool_total>` or
    /// `repeat:<pool_total>` (the batch was added before), as (the pool's codes, repeat).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: redis::Value, k: u32, campaign_id: &str) -> Result<(u64, bool), Error> {
        const NAME: &str = "coupon_add_codes";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, format!("{reply} for pool {k} of {campaign_id}"));
        match reply.split_once(':') {
            Some(("added", total)) => Ok((total.parse().map_err(|_| bad())?, false)),
            Some(("repeat", total)) => Ok((total.parse().map_err(|_| bad())?, true)),
            _ => Err(bad()),
        }
    }
}

/// Pool writes in flight at once.
const IN_FLIGHT: usize = 64;

/// The answer to a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddCodesOutcome {
    /// The batch is the campaign's (now, or before: `repeat`).
    Added {
        /// The campaign's codes, all batches included.
        codes_total: u64,
        /// Whether the reference had added this batch before.
        repeat: bool,
    },
    /// No such campaign (404).
    NotFound,
    /// The campaign generates its codes (409).
    Generated,
    /// The campaign has started (409).
    Started,
    /// The reference names another batch (409).
    ReferenceReused,
    /// Codes repeated within the batch or belonging to another campaign (400, at most 10).
    DuplicateCodes(Vec<String>),
}

/// Adds `codes` (checked by [`crate::domain::coupons::codes::check_batch`]) to campaign
/// `campaign_id` under batch reference `reference`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same batch may be sent again: it
/// completes); [`Error::Internal`] for a reply of the wrong shape.
pub async fn add_codes(
    store: &Store,
    campaign_id: &str,
    reference: &str,
    codes: &[String],
) -> Result<AddCodesOutcome, Error> {
    let dups = duplicates_within(codes);
    if !dups.is_empty() {
        return Ok(AddCodesOutcome::DuplicateCodes(dups));
    }
    let Some(no) = campaign_no(campaign_id) else {
        return Ok(AddCodesOutcome::NotFound);
    };
    let prefix = store.config().key_prefix.as_str();
    let mut conn = store.conn().await?;
    let Some(s) = shape(store, &mut conn, campaign_id, no).await? else {
        return Ok(AddCodesOutcome::NotFound);
    };
    if s.key.is_some() {
        return Ok(AddCodesOutcome::Generated);
    }
    let fingerprint = batch_fingerprint(codes);
    let first = PoolKeys::new(prefix, campaign_id, no, 0, s.pools);
    let (known, starts, (secs, micros)): (Option<String>, Option<i64>, (i64, i64)) = redis::pipe()
        .cmd("HGET")
        .arg(&first.batches)
        .arg(reference)
        .cmd("HGET")
        .arg(&first.pool)
        .arg("starts_at")
        .cmd("TIME")
        .query_async(&mut conn)
        .await?;
    match known {
        Some(fp) if fp != fingerprint => return Ok(AddCodesOutcome::ReferenceReused),
        Some(_) => {}
        None => {
            let starts = starts.ok_or_else(|| {
                Error::Internal(format!("campaign {campaign_id}: pool 0 without starts_at"))
            })?;
            if secs * 1000 + micros / 1000 >= starts {
                return Ok(AddCodesOutcome::Started);
            }
        }
    }
    // The directory owner of this batch's codes: a retry finds its own claims.
    let owner = format!("{campaign_id}/{reference}");
    let taken = owned_elsewhere(store, prefix, codes, Some(&owner)).await?;
    if !taken.is_empty() {
        return Ok(AddCodesOutcome::DuplicateCodes(taken));
    }
    let clashes = claim(store, prefix, codes, &owner).await?;
    if !clashes.is_empty() {
        return Ok(AddCodesOutcome::DuplicateCodes(clashes));
    }
    let mut per_pool: Vec<Vec<&str>> = vec![Vec::new(); s.pools as usize];
    for code in codes {
        per_pool[pool_of_code(no, code, s.pools) as usize].push(code);
    }
    let (per_pool, fp) = (&per_pool, fingerprint.as_str());
    let answers: Vec<(u64, bool)> = stream::iter(0..s.pools)
        .map(|k| async move {
            let keys = PoolKeys::new(prefix, campaign_id, no, k, s.pools);
            let mut conn = store.conn().await?;
            let reply = CouponAddCodesCall {
                pool: &keys.pool,
                codes: &keys.codes,
                batches: &keys.batches,
                reference,
                fingerprint: fp,
                batch: &per_pool[k as usize],
            }
            .invocation()
            .invoke_async(&mut conn)
            .await?;
            CouponAddCodesCall::outcome(reply, k, campaign_id)
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(AddCodesOutcome::Added {
        codes_total: answers.iter().map(|(t, _)| t).sum(),
        repeat: answers.iter().all(|(_, repeat)| *repeat),
    })
}
