//! `GET /campaigns/{id}`: a campaign as its pools hold it: rules, status, exact counts and the
//! caller's coupons with their states (each read from the pool that issued it).

use crate::coupons::rules::{home_pool, CouponState, Discount, IssuedRecord, Status};
use crate::store::{Error, Store};

use crate::coupons::draw;
use crate::coupons::facts::resolve;
use crate::coupons::keys::PoolKeys;
use crate::draws::rules::{ticket, Draw};

/// A campaign's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignView {
    /// The campaign's id.
    pub campaign_id: String,
    /// Its title.
    pub title: String,
    /// Its status at Redis `TIME`.
    pub status: Status,
    /// Codes given to the campaign.
    pub codes_total: u64,
    /// Codes not issued yet (exact: each pool's count is read in one step; codes only move
    /// from left to issued).
    pub codes_left: u64,
    /// Coupons issued.
    pub codes_issued: u64,
    /// Coupons redeemed.
    pub codes_redeemed: u64,
    /// When grabbing opens, Unix ms.
    pub starts_at_ms: i64,
    /// When grabbing ends (exclusive), Unix ms.
    pub ends_at_ms: i64,
    /// Until when coupons may be redeemed (exclusive), Unix ms.
    pub redeem_by_ms: i64,
    /// Codes one user may grab.
    pub per_user: u32,
    /// What each coupon takes off an order, if the campaign records it.
    pub discount: Option<Discount>,
    /// The caller's codes in the campaign, in the order issued.
    pub mine: Vec<String>,
    /// The caller's coupons with their states, in the same order (a coupon whose record is
    /// missing is left out).
    pub mine_states: Vec<MyCoupon>,
    /// A draw campaign's draw (its seed and result once drawn: [`Draw::result`]); `None`:
    /// first come, first served.
    pub draw: Option<Draw>,
    /// The caller's ticket in the draw (64 lowercase hex digits), once it is drawn and a user
    /// is given: with [`Self::draw`] they check their result.
    pub ticket: Option<String>,
}

/// One of the caller's coupons in a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyCoupon {
    /// The code.
    pub code: String,
    /// Issued, held, redeemed or expired, at the store's clock.
    pub state: CouponState,
    /// Until when an order holds it, Unix ms (held only).
    pub held_until_ms: Option<i64>,
}

/// The campaign `campaign_id`, with `user_id`'s codes in it when a user is given (`mine`);
/// `None`: no such campaign.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a pool hash of
/// the wrong facts.
pub async fn campaign(
    store: &Store,
    campaign_id: &str,
    user_id: Option<&str>,
) -> Result<Option<CampaignView>, Error> {
    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await?;
    let Some((id, no, s)) = resolve(store, &mut conn, campaign_id).await? else {
        return Ok(None);
    };
    let campaign_id = id.as_str();
    let bad = |what: &str| Error::Internal(format!("coupon campaign {campaign_id}: {what}"));
    let mut view: Option<CampaignView> = None;
    let (mut total, mut left, mut issued, mut redeemed) = (0u64, 0u64, 0u64, 0u64);
    for k in 0..s.pools {
        let keys = PoolKeys::new(prefix, campaign_id, no, k, s.pools);
        type Meta = (
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<u32>,
            Option<String>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
        );
        let ((title, starts, ends, per_user, kind, t, i, r, next, end, released), listed): (
            Meta,
            u64,
        ) = redis::pipe()
            .atomic()
            .cmd("HMGET")
            .arg(&keys.pool)
            .arg(&[
                "title",
                "starts_at",
                "ends_at",
                "per_user",
                "kind",
                "total",
                "issued",
                "redeemed",
                "next",
                "end",
                "never_issued",
            ])
            .cmd("LLEN")
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await?;
        let (Some(title), Some(starts), Some(ends), Some(per_user), Some(kind)) =
            (title, starts, ends, per_user, kind)
        else {
            // A pool not written yet: the creation is still running (or was cut short).
            continue;
        };
        total += t.ok_or_else(|| bad("a pool without total"))?;
        issued += i.unwrap_or(0);
        redeemed += r.unwrap_or(0);
        left += if kind == "generated" {
            end.unwrap_or(0).saturating_sub(next.unwrap_or(0))
        } else {
            // A closed pool's un-issued codes were released (`never_issued`).
            listed + released.unwrap_or(0)
        };
        view.get_or_insert(CampaignView {
            campaign_id: s.public_id(),
            title,
            status: Status::Open,
            codes_total: 0,
            codes_left: 0,
            codes_issued: 0,
            codes_redeemed: 0,
            starts_at_ms: starts,
            ends_at_ms: ends,
            redeem_by_ms: s.redeem_by_ms,
            per_user,
            discount: s.discount,
            mine: Vec::new(),
            mine_states: Vec::new(),
            draw: None,
            ticket: None,
        });
    }
    let Some(mut view) = view else {
        return Ok(None);
    };
    let (items, (secs, micros)): (Option<String>, (i64, i64)) = match user_id {
        Some(user_id) => {
            let home = PoolKeys::new(
                prefix,
                campaign_id,
                no,
                home_pool(no, user_id, s.pools),
                s.pools,
            );
            redis::pipe()
                .cmd("HGET")
                .arg(&home.holders)
                .arg(user_id)
                .cmd("TIME")
                .query_async(&mut conn)
                .await?
        }
        None => (None, redis::cmd("TIME").query_async(&mut conn).await?),
    };
    let now_ms = secs * 1000 + micros / 1000;
    let items = items.unwrap_or_default();
    // (pool, the code as the pool keys it, the code as issued) of each of the caller's codes.
    let mine: Vec<(u32, &str, String)> = items
        .split(' ')
        .filter_map(|item| {
            let (pool, keyed) = item.split_once('/')?;
            let code = match &s.key {
                Some(key) => key.code(no, keyed.parse().ok()?),
                None => keyed.to_string(),
            };
            Some((pool.parse().ok()?, keyed, code))
        })
        .collect();
    for (pool, keyed, code) in &mine {
        let keys = PoolKeys::new(prefix, campaign_id, no, *pool, s.pools);
        let record: Option<String> = redis::cmd("HGET")
            .arg(&keys.issued)
            .arg(*keyed)
            .query_async(&mut conn)
            .await?;
        let Some(record) = record else {
            continue;
        };
        let record = IssuedRecord::parse(&record).map_err(|e| bad(&e.to_string()))?;
        view.mine_states.push(MyCoupon {
            code: code.clone(),
            state: record.state(now_ms, s.redeem_by_ms),
            held_until_ms: record.held_until_ms(now_ms),
        });
    }
    view.mine = mine.into_iter().map(|(_, _, code)| code).collect();
    view.codes_total = total;
    view.codes_left = left;
    view.codes_issued = issued;
    view.codes_redeemed = redeemed;
    view.status = Status::at(now_ms, view.starts_at_ms, view.ends_at_ms, left);
    if let Some(d) = &s.draw {
        let drawn = draw::view(store, &mut conn, campaign_id, &s, d, now_ms).await?;
        if drawn.result.is_none() && view.status != Status::Ended {
            view.status = if now_ms < view.starts_at_ms {
                Status::Scheduled
            } else {
                Status::Entering
            };
        }
        if drawn.result.is_some() {
            view.ticket = user_id.and_then(|u| ticket(&drawn.seed, u));
        }
        view.draw = Some(drawn);
    }
    Ok(Some(view))
}
