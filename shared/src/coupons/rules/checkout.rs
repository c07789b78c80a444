//! The coupon checkout: a hold of an issued coupon for one order (`POST /coupons/hold`), its
//! redemption (`POST /coupons/redeem`) and its release (`POST /coupons/release`), and the
//! record the issuing pool keeps of each coupon (`lua/coupon_record.lua` writes it).
//!
//! An issued coupon's record (the pool's `issued` hash, field = the code or generated index)
//! is newline-separated text in one of these shapes:
//!
//! | record | state |
//! | --- | --- |
//! | `<user>\n<grabbed_at_ms>` | issued (never held, or released) |
//! | `<user>\n<grabbed_at_ms>\n<order>\n<redeemed_at_ms>` | redeemed, written before holds existed (discount unknown) |
//! | `<user>\n<grabbed_at_ms>\n<order>\n<held_until_ms>\nheld\n<discount_cents or empty>\n<call id>` | held for `<order>` until `held_until_ms` (exclusive; lapsed from then on: issued again) |
//! | `<user>\n<grabbed_at_ms>\n<order>\n<redeemed_at_ms>\nredeemed\n<discount_cents or empty>\n<call id>` | redeemed by `<order>` |
//!
//! The call id (16 hex digits, fresh per HTTP call) lets a script sent again after a lost
//! reply answer as its first run did. A release leaves, beside the code, a field
//! `<code>\n<order>` -> `<hold|redemption>\n<released_at_ms>\n<call id>`: the memory that
//! answers a repeat of the release, whatever happened to the coupon since. Codes and orders hold
//! no newline, so these fields never meet a code's.

use std::ops::RangeInclusive;

use crate::domain::BadRecord;

use super::list::CouponState;

/// How long a hold lasts, seconds (`hold_secs`): 30 s to 1 hour.
pub const HOLD_SECS: RangeInclusive<u32> = 30..=3600;

/// What a checkout has done with an issued coupon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checkout {
    /// Nothing: the coupon is the user's, free to hold or redeem.
    None,
    /// Held for `order` until `until_ms` (exclusive).
    Held {
        /// The order holding it.
        order: String,
        /// The hold lapses at this instant, Unix ms.
        until_ms: i64,
        /// The order's discount, cents, when its total was given.
        discount_cents: Option<i64>,
    },
    /// Redeemed by `order` at `at_ms`.
    Redeemed {
        /// The order that redeemed it.
        order: String,
        /// When, Unix ms.
        at_ms: i64,
        /// The order's discount, cents, when its total was given.
        discount_cents: Option<i64>,
    },
}

/// An issued coupon's record, parsed (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedRecord {
    /// The user it was issued to.
    pub user_id: String,
    /// When it was issued, Unix ms.
    pub grabbed_at_ms: i64,
    /// Its hold or redemption.
    pub checkout: Checkout,
}

impl IssuedRecord {
    /// Parses a record of any shape of the module documentation.
    ///
    /// # Errors
    /// [`BadRecord`] for any other text.
    pub fn parse(text: &str) -> Result<Self, BadRecord> {
        let bad = || BadRecord(format!("coupon record {text:?}"));
        let f: Vec<&str> = text.split('\n').collect();
        let int = |s: &str| s.parse::<i64>().map_err(|_| bad());
        let discount = |s: &str| {
            if s.is_empty() {
                Ok(None)
            } else {
                int(s).map(Some)
            }
        };
        let grabbed_at_ms = int(f.get(1).ok_or_else(bad)?)?;
        let checkout = match f[..] {
            [_, _] => Checkout::None,
            [_, _, order, at] => Checkout::Redeemed {
                order: order.to_string(),
                at_ms: int(at)?,
                discount_cents: None,
            },
            [_, _, order, at, "held", d, _call] => Checkout::Held {
                order: order.to_string(),
                until_ms: int(at)?,
                discount_cents: discount(d)?,
            },
            [_, _, order, at, "redeemed", d, _call] => Checkout::Redeemed {
                order: order.to_string(),
                at_ms: int(at)?,
                discount_cents: discount(d)?,
            },
            _ => return Err(bad()),
        };
        Ok(IssuedRecord {
            user_id: f[0].to_string(),
            grabbed_at_ms,
            checkout,
        })
    }

    /// The coupon's state at `now_ms` (Redis `TIME`) in a campaign redeemable before
    /// `redeem_by_ms`: redeemed wins, then an unlapsed hold, then the deadline.
    pub fn state(&self, now_ms: i64, redeem_by_ms: i64) -> CouponState {
        match &self.checkout {
            Checkout::Redeemed { .. } => CouponState::Redeemed,
            Checkout::Held { until_ms, .. } if now_ms < *until_ms => CouponState::Held,
            _ => CouponState::at(false, now_ms, redeem_by_ms),
        }
    }

    /// Until when it is held, Unix ms, if it is held at `now_ms`.
    pub fn held_until_ms(&self, now_ms: i64) -> Option<i64> {
        match &self.checkout {
            Checkout::Held { until_ms, .. } if now_ms < *until_ms => Some(*until_ms),
            _ => None,
        }
    }

    /// When it was redeemed and the discount recorded with the redemption (if any).
    pub fn redeemed(&self) -> Option<(i64, Option<i64>)> {
        match &self.checkout {
            Checkout::Redeemed {
                at_ms,
                discount_cents,
                ..
            } => Some((*at_ms, *discount_cents)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_parses() {
        let issued = IssuedRecord::parse("alice\n1000").unwrap();
        assert_eq!(
            (
                issued.user_id.as_str(),
                issued.grabbed_at_ms,
                &issued.checkout
            ),
            ("alice", 1_000, &Checkout::None)
        );
        assert_eq!(issued.state(5, 10), CouponState::Issued);
        assert_eq!(issued.state(10, 10), CouponState::Expired);

        let old = IssuedRecord::parse("alice\n1000\norder-1\n2000").unwrap();
        assert_eq!(old.redeemed(), Some((2_000, None)));
        assert_eq!(old.state(99_999, 10), CouponState::Redeemed);

        let held =
            IssuedRecord::parse("alice\n1000\norder-2\n3000\nheld\n250\n00000000000000aa").unwrap();
        assert_eq!(
            held.checkout,
            Checkout::Held {
                order: "order-2".into(),
                until_ms: 3_000,
                discount_cents: Some(250)
            }
        );
        assert_eq!(
            (held.state(2_999, 10_000), held.held_until_ms(2_999)),
            (CouponState::Held, Some(3_000))
        );
        // A lapsed hold: issued again (or expired past redeem_by).
        assert_eq!(
            (held.state(3_000, 10_000), held.held_until_ms(3_000)),
            (CouponState::Issued, None)
        );
        assert_eq!(held.state(3_000, 3_000), CouponState::Expired);

        let redeemed =
            IssuedRecord::parse("alice\n1000\norder-3\n4000\nredeemed\n\n00000000000000bb")
                .unwrap();
        assert_eq!(redeemed.redeemed(), Some((4_000, None)));
    }

    #[test]
    fn other_text_is_refused() {
        for bad in [
            "",
            "alice",
            "alice\nx",
            "alice\n1\no",
            "alice\n1\no\nx",
            "alice\n1\no\n2\nlent\n\nc",
            "alice\n1\no\n2\nheld\n1.5\nc",
            "alice\n1\no\n2\nheld\n5",
        ] {
            assert!(IssuedRecord::parse(bad).is_err(), "{bad:?}");
        }
    }
}
