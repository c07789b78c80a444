//! Whose a campaign or a coupon is, for a principal bound to some merchants
//! (`<principal>=<merchant>|…` in `HONGBAO_COUPON_PRINCIPALS`): a campaign belongs to the
//! merchant it was created for (its number in that merchant's campaigns,
//! [`crate::coupons::keys::merchant_campaigns`], written once by `coupon_create.lua` and never
//! trimmed), a campaign's coupon to its campaign's merchant, a share coupon to its packet's
//! merchant. Both never change once written, so a check made before the operation's script
//! holds when the script runs. Read-only.

use crate::coupons::rules::parse_public_id;
use crate::store::{Error, Store};

use crate::coupons::keys::merchant_campaigns;
use crate::coupons::locate::locate;

/// Whether campaign `campaign_id` was created for one of `merchants` (`false` for an id of
/// no campaign, or one created without a merchant).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn campaign_of(
    store: &Store,
    campaign_id: &str,
    merchants: &[&str],
) -> Result<bool, Error> {
    let Some((no, _)) = parse_public_id(campaign_id) else {
        return Ok(false);
    };
    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await?;
    for m in merchants {
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(merchant_campaigns(prefix, m))
            .arg(no)
            .query_async(&mut conn)
            .await?;
        if score.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the coupon `code` was issued by a campaign of one of `merchants` or by a share
/// packet of one of them; `None` for a code nothing issued (the operation then answers it as
/// for anyone).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record of the
/// wrong facts.
pub async fn code_of(store: &Store, code: &str, merchants: &[&str]) -> Result<Option<bool>, Error> {
    let mut conn = store.conn().await?;
    let Some(at) = locate(store, &mut conn, code).await? else {
        return Ok(None);
    };
    Ok(Some(match &at.share {
        Some(share) => merchants.contains(&share.merchant_id.as_str()),
        None => campaign_of(store, &at.campaign_id, merchants).await?,
    }))
}
