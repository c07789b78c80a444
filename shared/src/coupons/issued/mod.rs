//! `GET /campaigns/{id}/coupons`: a campaign's issued coupons with their states, newest first,
//! a page at a time. This file is the store step; the handler is [`http`], the script
//! `coupon_issued_page.lua` (one page of one pool) sits beside them.
//!
//! Every pool keeps its issued codes by time (`issued_by_time`: `coupon_grab.lua` and
//! `coupon_take.lua` add `<grabbed_at_ms, 13 digits>:<item>` as they issue a code). A page asks
//! every pool for up to `limit` members below the cursor, merges them newest first (byte order
//! of the members, descending: by time, then item) and keeps `limit`; the cursor is the last
//! member kept. A member names one coupon of the campaign, so paging is stable while codes
//! are issued: a cursor never repeats or skips a coupon.

pub mod http;

use crate::coupons::facts::resolve;
use crate::coupons::keys::PoolKeys;
use crate::coupons::rules::{Checkout, CouponState, IssuedRecord};
use crate::store::scripts::{texts, Call, CouponIssuedPageCall};
use crate::store::{Error, Store};

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

/// Up to `limit` (1..=100) coupons of campaign `campaign_id` issued before the cursor
/// `before` ([`IssuedPage::next_before`]; `None`: the newest), newest first, each with its
/// state at Redis `TIME`; `None`: no such campaign. One script call per pool, each reading at
/// most `limit` coupons.
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
    const SCRIPT: &str = "coupon_issued_page";
    let prefix = &store.config().key_prefix;
    let mut conn = store.conn().await?;
    let Some((id, no, s)) = resolve(store, &mut conn, campaign_id).await? else {
        return Ok(None);
    };
    let bad = |what: String| Error::bad_reply(SCRIPT, what);
    // (member, record, released_at_ms, now_ms) of every pool's page.
    let mut found: Vec<(String, String, String, i64)> = Vec::new();
    let mut full = false;
    for k in 0..s.pools {
        let keys = PoolKeys::new(prefix, &id, no, k, s.pools);
        let reply = CouponIssuedPageCall {
            issued_by_time: &keys.issued_by_time,
            issued: &keys.issued,
            before: before.unwrap_or(""),
            limit,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        let mut parts = texts(SCRIPT, reply)?.into_iter();
        let now_ms: i64 = parts
            .next()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| bad("no time".into()))?;
        let rest: Vec<String> = parts.collect();
        full |= rest.len() / 3 == limit as usize;
        for c in rest.chunks(3) {
            let [member, record, released] = c else {
                return Err(bad(format!("{c:?}")));
            };
            found.push((member.clone(), record.clone(), released.clone(), now_ms));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0));
    let more = full || found.len() > limit as usize;
    found.truncate(limit as usize);
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
    fn a_cursor_is_a_member_of_the_index() {
        assert!(is_cursor("1765000000000:3/SUMMER-0001"));
        assert!(!is_cursor("1765000000000:3"));
        assert!(!is_cursor("176500000000:3/SUMMER-0001"));
        assert!(!is_cursor("1765000000000:x/SUMMER-0001"));
    }
}
