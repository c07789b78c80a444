//! `POST /campaigns/{id}/codes`: add a batch of uploaded codes to a campaign that has not
//! started, once per batch reference. A batch spans hash slots (pool 0's record, the
//! directory's tags, every pool), so it is a sequence of steps, each with one outcome recorded
//! where the next step and every re-run read it, first writer wins; the same batch sent again
//! goes on from the recorded state and answers what the first run answered:
//!
//! 1. Checks that write nothing: the batch (valid codes, none repeated), the campaign
//!    (uploaded codes), the directory (a code of another campaign is a duplicate, for a batch
//!    no run has begun). Then `coupon_batch.lua` on pool 0 records the batch as `open`
//!    under its reference (another batch under it is refused) if the campaign has not
//!    started (Redis `TIME`); a batch begun before the start (some code already claimed for
//!    it) may go on after it.
//! 2. The codes claimed in the directory for `<campaign id>/<reference>`
//!    (`coupon_directory_add.lua`).
//! 3. `coupon_batch.lua` records the claims' one outcome: `claimed`, or `refused` (a code
//!    another campaign holds: every claim of the batch is released, no pool ever gets one of
//!    its codes, the batch answers `duplicate_codes`).
//! 4. `coupon_add_codes.lua` on every pool: its share (by the code's hash, as at creation)
//!    pushed and recorded `landed` if the campaign has not started by that pool's Redis `TIME`
//!    and is not closed, else recorded `missed` and nothing pushed, ever.
//! 5. The directory claims of the shares that missed their pool are released
//!    (`coupon_directory_remove.lua`): those codes are free for any campaign, the others are in the
//!    campaign, so every code of the batch ends in exactly one place. No code enters a pool
//!    after the start, so a pool only shrinks once grabbing opens.

use crate::store::scripts::{CouponAddCodesCall, CouponBatchCall};
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::coupons::rules::codes::{batch_fingerprint, duplicates_within};
use crate::coupons::rules::pool_of_code;
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

use crate::coupons::directory::{claim, owners, release};
use crate::coupons::facts::resolve;
use crate::coupons::keys::PoolKeys;

/// What `coupon_batch.lua` answers.
#[derive(Debug, PartialEq, Eq)]
enum BatchState {
    /// Recorded, its claims not decided yet.
    Open,
    /// Every code is the batch's: the pools may take their shares.
    Claimed,
    /// These codes belong to another campaign: the batch's claims are released.
    Refused(Vec<String>),
    /// Not recorded: the outcome to answer (nothing written).
    Refusal(AddCodesOutcome),
}

impl CouponBatchCall<'_> {
    /// Parses the script's reply (see [`BatchState`]).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: redis::Value) -> Result<BatchState, Error> {
        const NAME: &str = "coupon_batch";
        let reply = text(NAME, reply)?;
        Ok(match reply.split_once(':') {
            Some(("open", _)) => BatchState::Open,
            Some(("claimed", _)) => BatchState::Claimed,
            Some(("refused", codes)) => {
                BatchState::Refused(codes.split_whitespace().map(str::to_string).collect())
            }
            None if reply == "started" => BatchState::Refusal(AddCodesOutcome::Started),
            None if reply == "reference_reused" => {
                BatchState::Refusal(AddCodesOutcome::ReferenceReused)
            }
            None if reply == "not_found" => BatchState::Refusal(AddCodesOutcome::NotFound),
            None if reply == "generated" => BatchState::Refusal(AddCodesOutcome::Generated),
            _ => return Err(Error::bad_reply(NAME, &reply)),
        })
    }
}

impl CouponAddCodesCall<'_> {
    /// Parses the script's reply on pool `k` of `campaign_id`: `added:<pool_total>`,
    /// `repeat:<pool_total>` (landed at an earlier run) or `missed:<pool_total>`, as (the
    /// pool's codes, the pool's outcome).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: redis::Value, k: u32, campaign_id: &str) -> Result<(u64, Share), Error> {
        const NAME: &str = "coupon_add_codes";
        let reply = text(NAME, reply)?;
        let bad = || Error::bad_reply(NAME, format!("{reply} for pool {k} of {campaign_id}"));
        let (share, total) = match reply.split_once(':') {
            Some(("added", total)) => (Share::Added, total),
            Some(("repeat", total)) => (Share::Landed, total),
            Some(("missed", total)) => (Share::Missed, total),
            _ => return Err(bad()),
        };
        Ok((total.parse().map_err(|_| bad())?, share))
    }
}

/// A pool's outcome for a batch (step 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Share {
    /// Pushed now.
    Added,
    /// Pushed at an earlier run.
    Landed,
    /// Not pushed, ever: the campaign had started or was closed.
    Missed,
}

/// Pool writes in flight at once.
const IN_FLIGHT: usize = 64;

/// The answer to a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddCodesOutcome {
    /// The batch is the campaign's (now, or before: `repeat`), but for the shares of pools
    /// the start reached first (`released`).
    Added {
        /// The campaign's codes, all batches included.
        codes_total: u64,
        /// Whether the reference had added this batch before (no pool took codes now).
        repeat: bool,
        /// The batch's codes in the campaign.
        added: u64,
        /// The batch's codes that reached no pool before the start: not in the campaign, free
        /// in the directory for any campaign.
        released: Vec<String>,
    },
    /// No such campaign (404).
    NotFound,
    /// The campaign generates its codes (409).
    Generated,
    /// The campaign has started (or is closed) and none of the batch's codes is in it (409);
    /// any claim of the batch is released.
    Started,
    /// The reference names another batch (409).
    ReferenceReused,
    /// Codes repeated within the batch or belonging to another campaign (400, at most 10).
    DuplicateCodes(Vec<String>),
}

/// Adds `codes` (checked by [`crate::coupons::rules::codes::check_batch`]) to campaign
/// `campaign_id` under batch reference `reference` (see the module documentation).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same batch may be sent again: it
/// goes on from the recorded steps); [`Error::Internal`] for a reply of the wrong facts.
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
    let prefix = store.config().key_prefix.as_str();
    let mut conn = store.conn().await?;
    let Some((id, no, s)) = resolve(store, &mut conn, campaign_id).await? else {
        return Ok(AddCodesOutcome::NotFound);
    };
    let campaign_id = id.as_str();
    if s.key.is_some() {
        return Ok(AddCodesOutcome::Generated);
    }
    let fingerprint = batch_fingerprint(codes);
    let owner = format!("{campaign_id}/{reference}");
    let first = PoolKeys::new(prefix, campaign_id, no, 0, s.pools);
    let batch_step = |step: &'static str, detail: String| {
        let (first, fingerprint) = (&first, &fingerprint);
        async move {
            let mut conn = store.conn().await?;
            let reply = CouponBatchCall {
                pool: &first.pool,
                batches: &first.batches,
                reference,
                fingerprint,
                step,
                detail: &detail,
            }
            .invocation()
            .invoke_async(&mut conn)
            .await?;
            CouponBatchCall::outcome(reply)
        }
    };

    // Step 1.
    let seen = owners(store, prefix, codes, Some(&owner)).await?;
    let (record, landed): (Option<String>, Option<String>) = redis::cmd("HMGET")
        .arg(&first.batches)
        .arg(format!("claims {reference}"))
        .arg(reference)
        .query_async(&mut conn)
        .await?;
    let begun = record.is_some() || landed.is_some() || seen.any_mine;
    if !begun && !seen.elsewhere.is_empty() {
        return Ok(AddCodesOutcome::DuplicateCodes(seen.elsewhere));
    }
    let mut state = batch_step("open", if seen.any_mine { "1" } else { "" }.into()).await?;
    if state == BatchState::Open {
        // Steps 2 and 3.
        let clashes = if seen.elsewhere.is_empty() {
            claim(store, prefix, codes, &owner).await?
        } else {
            seen.elsewhere
        };
        state = if clashes.is_empty() {
            batch_step("claimed", String::new()).await?
        } else {
            batch_step("refused", clashes.join(" ")).await?
        };
    }
    match state {
        BatchState::Claimed => {}
        BatchState::Refused(clashes) => {
            release(store, prefix, codes, &owner).await?;
            return Ok(AddCodesOutcome::DuplicateCodes(clashes));
        }
        BatchState::Refusal(outcome) => return Ok(outcome),
        BatchState::Open => {
            return Err(Error::Internal(format!(
                "coupon_batch: batch {reference} of {campaign_id} still open after its claims"
            )))
        }
    }

    // Step 4.
    let mut per_pool: Vec<Vec<&str>> = vec![Vec::new(); s.pools as usize];
    for code in codes {
        per_pool[pool_of_code(no, code, s.pools) as usize].push(code);
    }
    let (per_pool, fp) = (&per_pool, fingerprint.as_str());
    let answers: Vec<(u64, Share)> = stream::iter(0..s.pools)
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

    // Step 5.
    let mut released: Vec<String> = Vec::new();
    let mut added = 0u64;
    for (k, (_, share)) in answers.iter().enumerate() {
        if *share == Share::Missed {
            released.extend(per_pool[k].iter().map(|c| c.to_string()));
        } else {
            added += per_pool[k].len() as u64;
        }
    }
    release(store, prefix, &released, &owner).await?;
    if added == 0 && !released.is_empty() {
        return Ok(AddCodesOutcome::Started);
    }
    Ok(AddCodesOutcome::Added {
        codes_total: answers.iter().map(|(t, _)| t).sum(),
        repeat: answers.iter().all(|(_, share)| *share != Share::Added),
        added,
        released,
    })
}
