//! `POST /campaigns`: create a coupon campaign, exactly once per merchant reference.
//!
//! A campaign spans hash slots (its record on `{coupon}`, its pools on their own tags, its
//! uploaded codes in the directory), so creation is a sequence of idempotent steps that the
//! same request sent again completes from wherever an earlier attempt stopped:
//!
//! 1. Checks that write nothing: codes repeated within the request, then (uploaded codes) the
//!    directory: a code that belongs to another campaign is a duplicate.
//! 2. `coupon_create.lua` on `{coupon}`: the reference's record, with the campaign number,
//!    the start (Redis `TIME` when none is given) and the code secret, and the campaign in its
//!    merchant's list when a `merchant_id` is given (`GET /campaigns`); a second run answers
//!    `repeat` with the same number and writes nothing.
//! 3. Uploaded codes: each code claimed in the directory for the campaign
//!    (`coupon_directory_add.lua`, which answers the owner, so a re-sent claim is still this
//!    run's), then the claims' one outcome recorded on `{coupon}` (`coupon_directory_add.lua` on
//!    the creations' outcomes, first writer wins): `claimed`, or `refused` when another
//!    campaign claimed a code between steps 1 and 3 (a race of two creations). A refused
//!    creation releases every claim of its codes that is the campaign's and answers
//!    `duplicate_codes`, at every run: its reference stays used.
//! 4. `coupon_create_pool.lua` on each pool, concurrently, once the claims are `claimed`:
//!    the rules (the discount among them) and the pool's codes.
//!    The campaign answers grabs once its pools exist: until step 4 ends, a campaign that
//!    opens at once is open on the pools written, and a grab that needs a pool not written
//!    yet (its home pool, or one its reservation passed) is answered `not_started`, to be
//!    sent again ([`OPENING_RETRY_MS`](crate::coupons::grab::store::OPENING_RETRY_MS)), never `sold_out`.

use crate::store::scripts::{CouponCreateCall, CouponCreatePoolCall, CouponDirectoryAddCall};
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::coupons::rules::campaign::MAX_CAMPAIGN_MS;
use crate::coupons::rules::generated::{new_campaign_secret, MAX_CAMPAIGN_NO};
use crate::coupons::rules::{
    campaign_id, id_tag, pool_count, pool_of_code, pool_start, public_id, CodeSource, Discount,
    NewCampaign,
};
use crate::draws::rules::{campaign_seed, commitment};
use crate::store::scripts::{text, Call};
use crate::store::{Conn, Error, Store};

use crate::coupons::directory::{claim, owners, release};
use crate::coupons::keys::{claims, ends, merchant_campaigns, refs, seq, PoolKeys};

use redis::Value;

/// What `coupon_create.lua` answers.
#[derive(Debug)]
enum CreateReply {
    /// `created:<no>:<starts_at_ms>:<secret>` or `repeat:...` (recorded before under the same
    /// reference and fingerprint): the campaign's number, start and code secret.
    Recorded {
        no: u64,
        starts_at_ms: i64,
        secret: String,
        repeat: bool,
    },
    /// `reference_reused`, `ended:..`, `too_long:..` or `full`: nothing written.
    Refused(CampaignCreateOutcome),
}

impl CouponCreateCall<'_> {
    /// Parses the script's reply (see [`CreateReply`]).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<CreateReply, Error> {
        const NAME: &str = "coupon_create";
        let reply = text(NAME, reply)?;
        let parts: Vec<&str> = reply.split(':').collect();
        let bad = || Error::bad_reply(NAME, &reply);
        Ok(match parts[..] {
            ["created" | "repeat", no, starts, secret] => CreateReply::Recorded {
                no: no.parse::<u64>().map_err(|_| bad())?,
                starts_at_ms: starts.parse::<i64>().map_err(|_| bad())?,
                secret: secret.to_string(),
                repeat: parts[0] == "repeat",
            },
            ["reference_reused"] => CreateReply::Refused(CampaignCreateOutcome::ReferenceReused),
            ["ended", _] => CreateReply::Refused(CampaignCreateOutcome::EndsInPast),
            ["too_long", _] => CreateReply::Refused(CampaignCreateOutcome::TooLong),
            ["draw_after_end", _] => CreateReply::Refused(CampaignCreateOutcome::DrawAfterEnd),
            ["full"] => CreateReply::Refused(CampaignCreateOutcome::NoNumberLeft),
            _ => return Err(bad()),
        })
    }
}

impl CouponCreatePoolCall<'_> {
    /// Checks the script's reply on pool `k` of campaign `id`: `created` or `repeat`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value, k: u32, id: &str) -> Result<(), Error> {
        const NAME: &str = "coupon_create_pool";
        match text(NAME, reply)?.as_str() {
            "created" | "repeat" => Ok(()),
            other => Err(Error::bad_reply(
                NAME,
                format!("{other} for pool {k} of campaign {id}"),
            )),
        }
    }
}

/// Pool writes in flight at once.
const IN_FLIGHT: usize = 64;

/// A campaign as created (or found again under its reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The campaign's public id (21 characters: its number's 5, then its id tag;
    /// [`crate::coupons::rules::public_id`]).
    pub campaign_id: String,
    /// Its number.
    pub campaign_no: u64,
    /// When grabbing opens, Unix ms (Redis `TIME` of the creation when none was asked).
    pub starts_at_ms: i64,
    /// Its pools.
    pub pools: u32,
    /// Its codes.
    pub codes_total: u64,
    /// Whether the reference had created it before (the API answers 200, not 201).
    pub repeat: bool,
}

/// The answer to a creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CampaignCreateOutcome {
    /// Created now, or found again under the same reference and request.
    Created(Created),
    /// The reference names another request (409 `reference_reused`); nothing written.
    ReferenceReused,
    /// Codes repeated within the request or belonging to another campaign (400
    /// `duplicate_codes`, at most 10 listed); nothing written, except in a race with another
    /// creation (see the module documentation).
    DuplicateCodes(Vec<String>),
    /// `ends_at` is not ahead of Redis `TIME` (400); nothing written.
    EndsInPast,
    /// No `starts_at` was given and `ends_at` is more than
    /// [`MAX_CAMPAIGN_MS`] after Redis `TIME` (400); nothing written.
    TooLong,
    /// Every campaign number is taken (500).
    NoNumberLeft,
    /// A draw campaign without `starts_at` whose draw (Redis `TIME` + the entry window) is not
    /// before `ends_at` (400); nothing written.
    DrawAfterEnd,
}

/// Step 2 of a creation alone: `coupon_create.lua` records `req` under its reference
/// (keys under `prefix`), with the code secret `secret` if the campaign is new; the script's
/// reply (`created:..`, `repeat:..` or a refusal, as its header says). [`create`] runs it; a
/// test runs it to leave a creation recorded and not finished, as a stopped run leaves it.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn record(
    conn: &mut Conn,
    prefix: &str,
    req: &NewCampaign,
    secret: &str,
) -> Result<Value, Error> {
    let starts = req.starts_at_ms.map(|s| s.to_string()).unwrap_or_default();
    // Without a merchant the script writes no index; the key is passed all the same (a
    // script's keys are fixed), on the same tag.
    let merchant_id = req.merchant_id.as_deref().unwrap_or_default();
    let draw_entry_ms = req
        .draw
        .map(|d| (d.entry_secs * 1000).to_string())
        .unwrap_or_default();
    Ok(CouponCreateCall {
        refs: &refs(prefix),
        seq: &seq(prefix),
        ends: &ends(prefix),
        reference: &req.reference,
        fingerprint: &req.fingerprint(),
        starts_at_ms: &starts,
        ends_at_ms: req.ends_at_ms,
        secret,
        max_campaign_no: MAX_CAMPAIGN_NO,
        max_campaign_ms: MAX_CAMPAIGN_MS,
        merchant: &merchant_campaigns(prefix, merchant_id),
        merchant_id,
        draw_entry_ms: &draw_entry_ms,
    }
    .invocation()
    .invoke_async(conn)
    .await?)
}

/// Creates the campaign `req` (already checked by [`NewCampaign::check`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the same request may be sent again: it
/// completes the creation); [`Error::Internal`] for a reply of the wrong facts, or a pool that
/// exists with another request's fingerprint.
pub async fn create(store: &Store, req: &NewCampaign) -> Result<CampaignCreateOutcome, Error> {
    let dups = req.duplicate_codes();
    if !dups.is_empty() {
        return Ok(CampaignCreateOutcome::DuplicateCodes(dups));
    }
    let prefix = store.config().key_prefix.clone();
    let fingerprint = req.fingerprint();
    let mut conn = store.conn().await?;
    // The campaign this reference created already, if any: its own codes are no duplicates.
    let known: Option<String> = redis::cmd("HGET")
        .arg(refs(&prefix))
        .arg(&req.reference)
        .query_async(&mut conn)
        .await?;
    let known_id = known
        .as_deref()
        .and_then(|r| r.split('\n').next())
        .and_then(|n| n.parse::<u64>().ok())
        .map(campaign_id);
    let codes: &[String] = match &req.source {
        CodeSource::Uploaded(codes) => codes,
        CodeSource::Generated(_) => &[],
    };
    let seen = owners(store, &prefix, codes, known_id.as_deref()).await?;
    if known_id.is_none() && !seen.elsewhere.is_empty() {
        return Ok(CampaignCreateOutcome::DuplicateCodes(seen.elsewhere));
    }

    let reply = record(&mut conn, &prefix, req, &new_campaign_secret()).await?;
    let (no, starts_at_ms, secret, repeat) = match CouponCreateCall::outcome(reply)? {
        CreateReply::Recorded {
            no,
            starts_at_ms,
            secret,
            repeat,
        } => (no, starts_at_ms, secret, repeat),
        CreateReply::Refused(outcome) => return Ok(outcome),
    };
    // The keys' name (the number's 5 characters), and the public id: the number and a tag
    // derived from the stored secret, the same on every retry.
    let id = campaign_id(no);
    let tag = id_tag(&secret).map_err(|e| Error::Internal(format!("coupon campaign {id}: {e}")))?;

    if !codes.is_empty() {
        let decided: Option<String> = redis::cmd("HGET")
            .arg(claims(&prefix))
            .arg(&id)
            .query_async(&mut conn)
            .await?;
        let decided = match decided {
            Some(decided) => decided,
            None => {
                let clashes = if seen.elsewhere.is_empty() {
                    claim(store, &prefix, codes, &id).await?
                } else {
                    seen.elsewhere
                };
                let proposed = if clashes.is_empty() {
                    "claimed".to_string()
                } else {
                    format!("refused {}", clashes.join(" "))
                };
                let reply = CouponDirectoryAddCall {
                    claims: &claims(&prefix),
                    field: &id,
                    value: &proposed,
                }
                .invocation()
                .invoke_async(&mut conn)
                .await?;
                text("coupon_directory_add", reply)?
            }
        };
        if let Some(clashes) = decided.strip_prefix("refused ") {
            release(store, &prefix, codes, &id).await?;
            return Ok(CampaignCreateOutcome::DuplicateCodes(
                clashes.split(' ').map(str::to_string).collect(),
            ));
        }
        if decided != "claimed" {
            return Err(Error::bad_reply("coupon_directory_add", decided));
        }
    }

    let total = req.codes_total();
    let pools = pool_count(req.codes_sized_for());
    let mut per_pool: Vec<Vec<&str>> = vec![Vec::new(); pools as usize];
    for code in codes {
        per_pool[pool_of_code(no, code, pools) as usize].push(code);
    }
    // A draw campaign's seed, from the stored code secret: every retry commits to the same.
    let draw = match req.draw {
        None => None,
        Some(d) => {
            let seed = campaign_seed(&secret, &id).ok_or_else(|| {
                Error::Internal(format!("coupon campaign {id}: a malformed code secret"))
            })?;
            let commitment = commitment(&seed);
            Some((
                (starts_at_ms + d.entry_secs as i64 * 1000).to_string(),
                seed,
                commitment,
            ))
        }
    };
    let draw = &draw;
    let (kind, secret) = match req.source {
        CodeSource::Uploaded(_) => ("uploaded", ""),
        CodeSource::Generated(_) => ("generated", secret.as_str()),
    };
    let generated = matches!(req.source, CodeSource::Generated(_));
    let per_pool = &per_pool;
    let discount = &Discount::fields(req.discount.as_ref());
    let (id_ref, fp, prefix_ref) = (&id, &fingerprint, prefix.as_str());
    let tag_ref = tag.as_str();
    stream::iter(0..pools)
        .map(|k| async move {
            let keys = PoolKeys::new(prefix_ref, id_ref, no, k, pools);
            let (first_index, end_index) = if generated {
                (pool_start(k, total, pools), pool_start(k + 1, total, pools))
            } else {
                (0, 0)
            };
            let mut conn = store.conn().await?;
            let reply = CouponCreatePoolCall {
                pool: &keys.pool,
                codes: &keys.codes,
                fingerprint: fp,
                title: &req.title,
                starts_at_ms,
                ends_at_ms: req.ends_at_ms,
                redeem_by_ms: req.redeem_by_ms,
                per_user: req.per_user,
                pools,
                kind,
                first_index,
                end_index,
                secret,
                campaign_total: total,
                amount_off: &discount[0],
                percent_off: &discount[1],
                max_off: &discount[2],
                min_order: &discount[3],
                draw_at_ms: draw.as_ref().map_or("", |d| d.0.as_str()),
                draw_seed: draw
                    .as_ref()
                    .filter(|_| k == 0)
                    .map_or("", |d| d.1.as_str()),
                draw_commitment: draw
                    .as_ref()
                    .filter(|_| k == 0)
                    .map_or("", |d| d.2.as_str()),
                id_tag: tag_ref,
                batch: &per_pool[k as usize],
            }
            .invocation()
            .invoke_async(&mut conn)
            .await?;
            CouponCreatePoolCall::outcome(reply, k, id_ref)
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(CampaignCreateOutcome::Created(Created {
        campaign_id: public_id(no, Some(&tag)),
        campaign_no: no,
        starts_at_ms,
        pools,
        codes_total: total,
        repeat,
    }))
}
