//! `GET /campaigns`: a merchant's campaigns, newest first, a page at a time: the numbers in the
//! merchant's list ([`merchant_campaigns`], which `coupon_create.lua` writes when it records
//! a campaign created with a `merchant_id`), then each campaign as `GET /campaigns/{id}` reads
//! it ([`campaign`]), a few at once, in the list's order.
//!
//! A page is the numbers strictly below the cursor's (the last number of the page before),
//! highest first. Campaign numbers only grow, so a campaign created while a merchant pages
//! sorts above every cursor: a cursor never repeats or skips a campaign.

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::coupons::rules::generated::MAX_CAMPAIGN_NO;
use crate::store::{Error, Store};

use crate::coupons::campaign::store::{campaign, CampaignView};
use crate::coupons::facts::public_id_of;
use crate::coupons::keys::merchant_campaigns;

/// Campaigns of one page read at once.
const IN_FLIGHT: usize = 8;

/// A page of a merchant's campaigns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignPage {
    /// Newest first, without the caller's coupons. A listed campaign whose pools are not there
    /// ([`campaign`] finds none: its creation has not written them yet, or was refused after
    /// its number was given) is left out, so a page may hold fewer campaigns than asked for,
    /// or none, and still have a next page.
    pub campaigns: Vec<CampaignView>,
    /// The campaign number the next page starts below (this page's last number, listed or
    /// left out); `None` after the last page.
    pub next_before: Option<u64>,
}

/// Up to `limit` campaigns of merchant `merchant_id`, newest first, of the numbers below
/// `before` (`None`: from the newest).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a list member
/// that is not a campaign number, or a pool hash of the wrong facts.
pub async fn list_campaigns(
    store: &Store,
    merchant_id: &str,
    limit: u32,
    before: Option<u64>,
) -> Result<CampaignPage, Error> {
    let key = merchant_campaigns(&store.config().key_prefix, merchant_id);
    let max = before.map_or_else(|| "+inf".to_string(), |no| format!("({no}"));
    let mut conn = store.conn().await?;
    let members: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
        .arg(&key)
        .arg(&max)
        .arg("-inf")
        .arg("LIMIT")
        .arg(0)
        .arg(limit + 1)
        .query_async(&mut conn)
        .await?;
    let mut numbers = members
        .iter()
        .map(|m| {
            m.parse::<u64>()
                .ok()
                .filter(|no| (1..=MAX_CAMPAIGN_NO).contains(no))
                .ok_or_else(|| {
                    Error::Internal(format!("{key}: member {m:?} is not a campaign number"))
                })
        })
        .collect::<Result<Vec<u64>, Error>>()?;
    let more = numbers.len() > limit as usize;
    numbers.truncate(limit as usize);
    let next_before = if more { numbers.last().copied() } else { None };
    let campaigns: Vec<Option<CampaignView>> = stream::iter(numbers)
        .map(|no| async move {
            let mut conn = store.conn().await?;
            match public_id_of(store, &mut conn, no).await? {
                Some(id) => campaign(store, &id, None).await,
                None => Ok(None),
            }
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(CampaignPage {
        campaigns: campaigns.into_iter().flatten().collect(),
        next_before,
    })
}
