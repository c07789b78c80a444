//! A user's coupons (`GET /coupons`): the list on the user's wallet tag
//! ([`crate::coupons::keys::user_coupons`]), written after each win ([`remember`]) and again by
//! ledger-export from the `coupon_issued` journal entry ([`crate::coupons::feed`]), so a function that
//! stopped between the grab and the list leaves no coupon out; each page reads every coupon's
//! state from the pool that issued it.

use std::collections::HashMap;

use crate::coupons::rules::list::LIST_RETENTION_MS;
use crate::coupons::rules::{
    campaign_no, pool_of_code, pool_of_index, CouponState, Discount, IssuedRecord, ListCursor,
};
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::facts::{facts, CampaignFacts};
use crate::coupons::keys::{user_coupons, PoolKeys};
use crate::coupons::locate::locate_share;
use crate::merchants::rules::parse_share_code;

/// Puts `member` (`<campaign_id>/<code or index>`, grabbed at `at_ms`) in `user_id`'s coupon
/// list, and keeps the list until [`LIST_RETENTION_MS`] after `redeem_by_ms` (the latest of
/// its coupons'). Idempotent: the same member again changes nothing.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn remember(
    store: &Store,
    conn: &mut Conn,
    user_id: &str,
    member: &str,
    at_ms: i64,
    redeem_by_ms: i64,
) -> Result<(), Error> {
    let key = user_coupons(&store.config().key_prefix, user_id);
    let keep_until = redeem_by_ms.saturating_add(LIST_RETENTION_MS);
    // NX sets the first deadline (GT alone never sets one on a key without a TTL), GT moves
    // it later for a later campaign.
    let _: () = redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg(&key)
        .arg(at_ms)
        .arg(member)
        .ignore()
        .cmd("PEXPIREAT")
        .arg(&key)
        .arg(keep_until)
        .arg("NX")
        .ignore()
        .cmd("PEXPIREAT")
        .arg(&key)
        .arg(keep_until)
        .arg("GT")
        .ignore()
        .query_async(conn)
        .await?;
    Ok(())
}

/// One coupon of a user's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCoupon {
    /// The campaign's public id (a share coupon's: its packet's id).
    pub campaign_id: String,
    /// The campaign's title.
    pub title: String,
    /// The code.
    pub code: String,
    /// Issued, held, redeemed or expired, at the store's clock.
    pub state: CouponState,
    /// When it was grabbed, Unix ms.
    pub grabbed_at_ms: i64,
    /// Redeemable before this, Unix ms.
    pub redeem_by_ms: i64,
    /// When it was redeemed, Unix ms (redeemed only).
    pub redeemed_at_ms: Option<i64>,
    /// Until when an order holds it, Unix ms (held only).
    pub held_until_ms: Option<i64>,
    /// The campaign's discount rule, if it has one.
    pub discount: Option<Discount>,
    /// The discount recorded with its redemption, cents (redeemed with an order total only).
    pub discount_cents: Option<i64>,
}

/// A page of a user's coupons, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponPage {
    /// Up to `limit` coupons.
    pub coupons: Vec<ListedCoupon>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<ListCursor>,
}

/// Up to `limit` of `user_id`'s coupons after `cursor` (newest first). A coupon whose campaign
/// is gone (its keys expired) is left out.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record of
/// the wrong facts.
pub async fn page(
    store: &Store,
    user_id: &str,
    limit: u32,
    cursor: Option<&ListCursor>,
) -> Result<CouponPage, Error> {
    let prefix = &store.config().key_prefix;
    let key = user_coupons(prefix, user_id);
    let mut conn = store.conn().await?;
    let limit = limit as usize;
    // Newest first; after a cursor, from its millisecond on, skipping what the cursor covers
    // (same millisecond, member not below the cursor's).
    let (max, same_ms) = match cursor {
        Some(c) => {
            let n: usize = redis::cmd("ZCOUNT")
                .arg(&key)
                .arg(c.at_ms)
                .arg(c.at_ms)
                .query_async(&mut conn)
                .await?;
            (c.at_ms.to_string(), n)
        }
        None => ("+inf".to_string(), 0),
    };
    let listed: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&key)
        .arg(&max)
        .arg("-inf")
        .arg("BYSCORE")
        .arg("REV")
        .arg("LIMIT")
        .arg(0)
        .arg(limit + 1 + same_ms)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    let after: Vec<(String, i64)> = listed
        .into_iter()
        .filter(|(member, at)| match cursor {
            Some(c) => *at < c.at_ms || member.as_str() < c.member.as_str(),
            None => true,
        })
        .collect();
    let more = after.len() > limit;
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
    let now_ms = secs * 1000 + micros / 1000;
    let mut shapes: HashMap<String, Option<CampaignFacts>> = HashMap::new();
    let mut coupons = Vec::with_capacity(limit);
    for (member, at) in after.iter().take(limit) {
        let Some((campaign_id, item)) = member.split_once('/') else {
            continue;
        };
        // A merchant packet's share's coupon (`<packet_id>/<share_id>`), or a campaign's.
        let share_code = format!("{campaign_id}.{item}");
        let (s, code, issued, shown_id) = if let Some(share) = parse_share_code(&share_code) {
            let Some(at) = locate_share(store, &mut conn, &share).await? else {
                continue;
            };
            (at.facts, share_code, at.issued, campaign_id.to_string())
        } else {
            let Some(no) = campaign_no(campaign_id) else {
                continue;
            };
            if !shapes.contains_key(campaign_id) {
                let s = facts(store, &mut conn, campaign_id, no).await?;
                shapes.insert(campaign_id.to_string(), s);
            }
            let Some(s) = &shapes[campaign_id] else {
                continue;
            };
            let (pool, code) = match (&s.key, item.parse::<u64>()) {
                (Some(k), Ok(index)) => (
                    pool_of_index(index, s.campaign_total, s.pools),
                    k.code(no, index),
                ),
                _ => (pool_of_code(no, item, s.pools), item.to_string()),
            };
            let keys = PoolKeys::new(prefix, campaign_id, no, pool, s.pools);
            (s.clone(), code, keys.issued, s.public_id())
        };
        let record: Option<String> = redis::cmd("HGET")
            .arg(&issued)
            .arg(item)
            .query_async(&mut conn)
            .await?;
        let Some(record) = record else {
            continue;
        };
        // Every facts of `crate::coupons::rules::checkout`, those written before holds too.
        let record = IssuedRecord::parse(&record).map_err(|e| Error::Internal(e.to_string()))?;
        let redeemed = record.redeemed();
        coupons.push(ListedCoupon {
            campaign_id: shown_id,
            title: s.title,
            code,
            state: record.state(now_ms, s.redeem_by_ms),
            grabbed_at_ms: *at,
            redeem_by_ms: s.redeem_by_ms,
            redeemed_at_ms: redeemed.map(|(at, _)| at),
            held_until_ms: record.held_until_ms(now_ms),
            discount: s.discount,
            discount_cents: redeemed.and_then(|(_, d)| d),
        });
    }
    let next_cursor = more.then(|| {
        let (member, at) = &after[limit - 1];
        ListCursor {
            at_ms: *at,
            member: member.clone(),
        }
    });
    Ok(CouponPage {
        coupons,
        next_cursor,
    })
}
