//! `GET /campaigns/{id}/coupons`: a campaign's issued coupons with their states, newest first,
//! a page at a time. This file is the store step; the handler is [`http`], the script
//! `coupon_issued_page.lua` (one page of one pool) sits beside them.
//!
//! Every pool keeps its issued codes by time (`issued_by_time`: `coupon_grab.lua` and
//! `coupon_take.lua` add `<grabbed_at_ms, 13 digits>:<item>` as they issue a code). A page
//! merges the pools' members below the cursor newest first (byte order of the members,
//! descending: by time, then item), asking each pool for a few at a time ([`issued`]), and
//! keeps `limit`; the cursor is the last member kept. A member names one coupon of the
//! campaign, so paging is stable while codes are issued: a cursor never repeats or skips a
//! coupon.

pub mod http;

use std::collections::VecDeque;

use crate::coupons::facts::resolve;
use crate::coupons::keys::PoolKeys;
use crate::coupons::rules::{Checkout, CouponState, IssuedRecord};
use crate::store::scripts::{texts, Call, CouponIssuedPageCall};
use crate::store::{Conn, Error, Store};

/// A coupon's state as its campaign's merchant sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[schema(description = "An issued coupon's state, by the store's clock.")]
pub enum IssuedState {
    /// Issued, never held or redeemed, `redeem_by` ahead (a lapsed hold included).
    Issued,
    /// Held for an order until its hold lapses.
    Held,
    /// Redeemed by an order.
    Redeemed,
    /// Issued again after an order released its hold or its redemption, `redeem_by` ahead.
    Released,
    /// Not redeemed before `redeem_by`.
    Expired,
}

impl IssuedState {
    /// The state of a coupon whose record says `state` and which was last released at
    /// `released_at_ms` (if ever): a coupon issued again after a release is `released`.
    pub fn of(state: CouponState, released_at_ms: Option<i64>) -> Self {
        match (state, released_at_ms) {
            (CouponState::Issued, Some(_)) => IssuedState::Released,
            (CouponState::Issued, None) => IssuedState::Issued,
            (CouponState::Held, _) => IssuedState::Held,
            (CouponState::Redeemed, _) => IssuedState::Redeemed,
            (CouponState::Expired, _) => IssuedState::Expired,
        }
    }

    /// The state as the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            IssuedState::Issued => "issued",
            IssuedState::Held => "held",
            IssuedState::Redeemed => "redeemed",
            IssuedState::Released => "released",
            IssuedState::Expired => "expired",
        }
    }
}

/// One issued coupon of a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCoupon {
    /// The code (a generated index turned into its code).
    pub code: String,
    /// The user it was issued to.
    pub user_id: String,
    /// When it was issued, Unix ms.
    pub grabbed_at_ms: i64,
    /// Its state at Redis `TIME`.
    pub state: IssuedState,
    /// The order holding or having redeemed it (held and redeemed only).
    pub order_reference: Option<String>,
    /// Until when the order holds it, Unix ms (held only).
    pub held_until_ms: Option<i64>,
    /// When an order last released it, Unix ms (`None`: never).
    pub released_at_ms: Option<i64>,
}

/// A page of a campaign's issued coupons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedPage {
    /// Newest first.
    pub coupons: Vec<IssuedCoupon>,
    /// The cursor of the next page (the last coupon's member); `None` after the last page.
    pub next_before: Option<String>,
}

/// Whether `cursor` can be a member of `issued_by_time`: `<13 digits>:<pool>/<code or index>`
/// (a cursor is only a bound, but a page never gave any other).
pub fn is_cursor(cursor: &str) -> bool {
    let Some((ms, item)) = cursor.split_once(':') else {
        return false;
    };
    let Some((pool, code)) = item.split_once('/') else {
        return false;
    };
    ms.len() == 13
        && ms.bytes().all(|b| b.is_ascii_digit())
        && !pool.is_empty()
        && pool.len() <= 5
        && pool.bytes().all(|b| b.is_ascii_digit())
        && (1..=64).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_graphic())
}

/// One coupon as a pool's page gives it: its member, its record (`''`: the pool's keys are
/// gone), its last release (`''`: never) and the pool's Redis `TIME`, Unix ms.
type Found = (String, String, String, i64);

/// How many coupons a pool is asked for at a time: a page's share of each pool and one more,
/// at most `limit` (a pool that gives fewer has no more below).
pub fn chunk(limit: u32, pools: u32) -> u32 {
    (limit.div_ceil(pools.max(1)) + 1).min(limit)
}

/// Up to `n` coupons of one pool below `before` (`''`: the newest), newest first, and whether
/// the pool has none below them (it gave fewer than `n`).
async fn pool_page(
    conn: &mut Conn,
    keys: &PoolKeys,
    before: &str,
    n: u32,
) -> Result<(Vec<Found>, bool), Error> {
    const SCRIPT: &str = "coupon_issued_page";
    let reply = CouponIssuedPageCall {
        issued_by_time: &keys.issued_by_time,
        issued: &keys.issued,
        before,
        limit: n,
    }
    .invocation()
    .invoke_async(conn)
    .await?;
    let mut parts = texts(SCRIPT, reply)?.into_iter();
    let now_ms: i64 = parts
        .next()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| Error::bad_reply(SCRIPT, "no time"))?;
    let rest: Vec<String> = parts.collect();
    let mut found = Vec::with_capacity(rest.len() / 3);
    for c in rest.chunks(3) {
        let [member, record, released] = c else {
            return Err(Error::bad_reply(SCRIPT, format!("{c:?}")));
        };
        found.push((member.clone(), record.clone(), released.clone(), now_ms));
    }
    let exhausted = found.len() < n as usize;
    Ok((found, exhausted))
}

/// Up to `limit` (1..=100) coupons of campaign `campaign_id` issued before the cursor
/// `before` ([`IssuedPage::next_before`]; `None`: the newest), newest first, each with its
/// state at Redis `TIME`; `None`: no such campaign.
///
/// A k-way merge over the pools: each pool is asked for [`chunk`] coupons at a time, and asked
/// again only once the page has taken every coupon it gave, so a page reads at most
/// `limit + pools × chunk` coupons (about `2 × limit + pools`) in `pools` script calls and one
/// more per refill, each reading at most `chunk`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a member or a
/// record of another shape.
pub async fn issued(
    store: &Store,
    campaign_id: &str,
    limit: u32,
    before: Option<&str>,
) -> Result<Option<IssuedPage>, Error> {
    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await?;
    let Some((id, no, s)) = resolve(store, &mut conn, campaign_id).await? else {
        return Ok(None);
    };
    let bad = |what: String| Error::bad_reply("coupon_issued_page", what);
    let n = chunk(limit, s.pools);
    let pools: Vec<PoolKeys> = (0..s.pools)
        .map(|k| PoolKeys::new(prefix, &id, no, k, s.pools))
        .collect();
    // Per pool: the coupons fetched and not yet taken, the last member fetched (the next
    // fetch's bound), and whether the pool has none below it.
    let mut buffers: Vec<VecDeque<Found>> = vec![VecDeque::new(); pools.len()];
    let mut bounds: Vec<String> = vec![before.unwrap_or("").to_string(); pools.len()];
    let mut exhausted = vec![false; pools.len()];
    let mut found: Vec<Found> = Vec::with_capacity(limit as usize);
    while found.len() < limit as usize {
        for (k, keys) in pools.iter().enumerate() {
            if buffers[k].is_empty() && !exhausted[k] {
                let (page, done) = pool_page(&mut conn, keys, &bounds[k], n).await?;
                if let Some(last) = page.last() {
                    bounds[k] = last.0.clone();
                }
                buffers[k].extend(page);
                exhausted[k] = done;
            }
        }
        let newest = (0..pools.len())
            .filter_map(|k| buffers[k].front().map(|f| (k, &f.0)))
            .max_by(|a, b| a.1.cmp(b.1))
            .map(|(k, _)| k);
        let Some(k) = newest else {
            break;
        };
        found.extend(buffers[k].pop_front());
    }
    let more = found.len() == limit as usize
        && (buffers.iter().any(|b| !b.is_empty()) || exhausted.iter().any(|done| !done));
    let next_before = more.then(|| found.last().map(|f| f.0.clone())).flatten();
    let mut coupons = Vec::with_capacity(found.len());
    for (member, record, released, now_ms) in found {
        if record.is_empty() {
            // The pool's keys expired between the two reads: nothing to show of it.
            continue;
        }
        let keyed = member
            .split_once('/')
            .map(|(_, code)| code)
            .ok_or_else(|| bad(member.clone()))?;
        let code = match &s.key {
            Some(key) => key.code(no, keyed.parse().map_err(|_| bad(member.clone()))?),
            None => keyed.to_string(),
        };
        let r = IssuedRecord::parse(&record).map_err(|e| bad(e.to_string()))?;
        let released_at_ms = if released.is_empty() {
            None
        } else {
            Some(released.parse().map_err(|_| bad(released.clone()))?)
        };
        let state = r.state(now_ms, s.redeem_by_ms);
        let order_reference = match (&r.checkout, state) {
            (Checkout::Held { order, .. }, CouponState::Held)
            | (Checkout::Redeemed { order, .. }, CouponState::Redeemed) => Some(order.clone()),
            _ => None,
        };
        coupons.push(IssuedCoupon {
            code,
            state: IssuedState::of(state, released_at_ms),
            order_reference,
            held_until_ms: r.held_until_ms(now_ms),
            released_at_ms,
            user_id: r.user_id,
            grabbed_at_ms: r.grabbed_at_ms,
        });
    }
    Ok(Some(IssuedPage {
        coupons,
        next_before,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coupon_issued_again_after_a_release_is_released() {
        assert_eq!(
            IssuedState::of(CouponState::Issued, Some(1)),
            IssuedState::Released
        );
    }

    #[test]
    fn a_held_coupon_is_held_whatever_its_releases() {
        assert_eq!(
            IssuedState::of(CouponState::Held, Some(1)),
            IssuedState::Held
        );
    }

    #[test]
    fn a_pool_is_asked_for_its_share_of_a_page_and_one_more() {
        assert_eq!((chunk(100, 200), chunk(100, 24), chunk(20, 1)), (2, 6, 20));
    }

    #[test]
    fn a_cursor_is_a_member_of_the_index() {
        assert!(is_cursor("1765000000000:3/SUMMER-0001"));
        assert!(!is_cursor("1765000000000:3"));
        assert!(!is_cursor("176500000000:3/SUMMER-0001"));
        assert!(!is_cursor("1765000000000:x/SUMMER-0001"));
    }
}
