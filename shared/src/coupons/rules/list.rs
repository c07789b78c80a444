//! A user's coupons (`GET /coupons`): the states a coupon shows, the page cursor, and how long
//! the list keeps a coupon.

use crate::domain::Invalid;

/// How long a user's coupon list keeps a coupon after its `redeem_by`, ms (30 days): the list
/// is a view (the issuing pool's records decide a redemption), and this bounds its memory.
pub const LIST_RETENTION_MS: i64 = 30 * 86_400_000;

/// A coupon's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[schema(description = "A coupon's state, by the store's clock.")]
pub enum CouponState {
    /// Issued, not redeemed, `redeem_by` ahead.
    Issued,
    /// Held for an order at checkout until its hold lapses (`held_until`).
    Held,
    /// Redeemed at checkout.
    Redeemed,
    /// Not redeemed before `redeem_by`.
    Expired,
}

impl CouponState {
    /// The state of a coupon redeemed (`redeemed`) or not, at `now_ms` (Redis `TIME`), with
    /// this `redeem_by_ms`: a redemption wins over the deadline.
    pub fn at(redeemed: bool, now_ms: i64, redeem_by_ms: i64) -> Self {
        if redeemed {
            CouponState::Redeemed
        } else if now_ms >= redeem_by_ms {
            CouponState::Expired
        } else {
            CouponState::Issued
        }
    }

    /// The state as the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            CouponState::Issued => "issued",
            CouponState::Held => "held",
            CouponState::Redeemed => "redeemed",
            CouponState::Expired => "expired",
        }
    }
}

/// Where the next page of a user's coupons starts: after the coupon grabbed at `at_ms` whose
/// list member is `member` (`<campaign_id>/<code or index>`). Pages are newest first; coupons
/// of the same millisecond are ordered by member, descending, so a cursor never repeats or
/// skips one while new coupons arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    /// The last coupon's grab time, Unix ms.
    pub at_ms: i64,
    /// The last coupon's list member.
    pub member: String,
}

impl ListCursor {
    /// The text clients get: `<at_ms>-<member>`. Clients must treat it as opaque.
    pub fn encode(&self) -> String {
        format!("{}-{}", self.at_ms, self.member)
    }

    /// Parses a cursor given back by a client.
    ///
    /// # Errors
    /// [`Invalid`] when `text` is not a cursor this API gave out.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        let bad = || Invalid::new("cursor is not a next_cursor this API gave out");
        let (at, member) = text.split_once('-').ok_or_else(bad)?;
        let at_ms: i64 =
            (!at.is_empty() && at.len() <= 15 && at.bytes().all(|b| b.is_ascii_digit()))
                .then(|| at.parse().ok())
                .flatten()
                .ok_or_else(bad)?;
        let (campaign, item) = member.split_once('/').ok_or_else(bad)?;
        if super::campaign_no(campaign).is_none()
            || !super::codes::is_code(item) && !item.bytes().all(|b| b.is_ascii_digit())
            || item.is_empty()
        {
            return Err(bad());
        }
        Ok(ListCursor {
            at_ms,
            member: member.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(CouponState::at(false, 1, 2), CouponState::Issued);
        assert_eq!(CouponState::at(false, 2, 2), CouponState::Expired);
        assert_eq!(CouponState::at(true, 3, 2), CouponState::Redeemed);
    }

    #[test]
    fn cursors_round_trip_and_refuse_what_was_not_given() {
        let c = ListCursor {
            at_ms: 1_764_000_000_000,
            member: "0001C/SAVE-20_x".into(),
        };
        assert_eq!(ListCursor::parse(&c.encode()), Ok(c));
        let g = ListCursor {
            at_ms: 5,
            member: "0001C/123".into(),
        };
        assert_eq!(ListCursor::parse(&g.encode()), Ok(g));
        for bad in [
            "",
            "x",
            "12",
            "12-",
            "-0001C/abc",
            "12-0001C",
            "12-0001C/",
            "12-0I01C/abcd",
            "12-0001C/a b",
        ] {
            assert!(ListCursor::parse(bad).is_err(), "{bad}");
        }
    }
}
