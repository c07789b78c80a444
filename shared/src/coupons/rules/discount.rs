//! A coupon's value: what a campaign's coupons take off an order (`discount` of
//! `POST /campaigns`), and the discount of one order, in integer cents.
//!
//! A discount is an amount off (`amount_off_cents`) or a percentage off (`percent_off`, 1 to
//! 100, optionally capped by `max_off_cents`), with an optional minimum order
//! (`min_order_cents`, inside the same object). The discount of an order of `total` cents:
//!
//! * amount off: `min(amount_off_cents, total)`;
//! * percent off: `floor(total × percent_off / 100)` (rounded down to the cent), then at most
//!   `max_off_cents`;
//!
//! never above the order's total; an order below `min_order_cents` gets none
//! ([`BelowMinimum`]). The campaign's pools keep the rule in their hashes (fields `amount_off`,
//! `percent_off`, `max_off`, `min_order`, each an exact integer, absent when not set): the
//! store computes a checkout's discount here and the script records it with the hold or the
//! redemption.

use crate::domain::{BadRecord, Invalid};

/// The largest amount a discount rule or an order total may name, cents (10^13: 100 billion
/// in the currency's main unit). Every product the rules compute (`total × 100`) stays far
/// below 2^53, so every figure is exact in a Lua script too.
pub const MAX_CENTS: i64 = 10_000_000_000_000;

/// What a coupon takes off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Off {
    /// A fixed amount, cents (1 to [`MAX_CENTS`]); never more than the order's total.
    Amount(i64),
    /// A percentage of the order's total (1 to 100), rounded down to the cent, at most
    /// `max_cents` when given (1 to [`MAX_CENTS`]).
    Percent {
        /// Percent off, 1 to 100.
        percent: i64,
        /// The most taken off, cents.
        max_cents: Option<i64>,
    },
}

/// A campaign's discount rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discount {
    /// What a coupon takes off.
    pub off: Off,
    /// The smallest order total a coupon applies to, cents (1 to [`MAX_CENTS`]); `None`: any.
    pub min_order_cents: Option<i64>,
}

/// An order below the campaign's minimum (422 `below_minimum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BelowMinimum {
    /// The campaign's minimum order total, cents.
    pub min_order_cents: i64,
}

/// Whether `cents` is a valid order total: 0 to [`MAX_CENTS`].
pub fn is_order_total(cents: i64) -> bool {
    (0..=MAX_CENTS).contains(&cents)
}

impl Discount {
    /// Checks the rule's bounds: amounts and the minimum 1 to [`MAX_CENTS`], percent 1 to 100.
    ///
    /// # Errors
    /// [`Invalid`] naming the field (`discount.amount_off_cents`, ...) and its bounds.
    pub fn check(&self) -> Result<(), Invalid> {
        let cents = |name: &str, v: i64| {
            if (1..=MAX_CENTS).contains(&v) {
                Ok(())
            } else {
                Err(Invalid::new(format!(
                    "discount.{name} must be an integer of 1 to {MAX_CENTS} cents, not {v}"
                )))
            }
        };
        match self.off {
            Off::Amount(a) => cents("amount_off_cents", a)?,
            Off::Percent { percent, max_cents } => {
                if !(1..=100).contains(&percent) {
                    return Err(Invalid::new(format!(
                        "discount.percent_off must be an integer of 1 to 100, not {percent}"
                    )));
                }
                if let Some(m) = max_cents {
                    cents("max_off_cents", m)?;
                }
            }
        }
        if let Some(m) = self.min_order_cents {
            cents("min_order_cents", m)?;
        }
        Ok(())
    }

    /// The discount of an order of `order_total_cents` (0 to [`MAX_CENTS`]), cents: never
    /// negative, never above the total.
    ///
    /// # Errors
    /// [`BelowMinimum`] when the total is below `min_order_cents`.
    pub fn discount_cents(&self, order_total_cents: i64) -> Result<i64, BelowMinimum> {
        if let Some(min) = self.min_order_cents {
            if order_total_cents < min {
                return Err(BelowMinimum {
                    min_order_cents: min,
                });
            }
        }
        let total = order_total_cents.max(0);
        Ok(match self.off {
            Off::Amount(a) => a.min(total),
            Off::Percent { percent, max_cents } => {
                // i128: exact for every i64 total, whatever the bounds say.
                let floor = (i128::from(total) * i128::from(percent) / 100) as i64;
                max_cents.map_or(floor, |m| floor.min(m)).min(total)
            }
        })
    }

    /// The pool hash's fields of the rule, as the creation script writes them: `amount_off`,
    /// `percent_off`, `max_off`, `min_order`, each decimal or empty (not set).
    pub fn fields(rule: Option<&Discount>) -> [String; 4] {
        let text = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        let Some(d) = rule else {
            return Default::default();
        };
        let (amount, percent, max) = match d.off {
            Off::Amount(a) => (Some(a), None, None),
            Off::Percent { percent, max_cents } => (None, Some(percent), max_cents),
        };
        [
            text(amount),
            text(percent),
            text(max),
            text(d.min_order_cents),
        ]
    }

    /// The rule the pool hash's fields hold (as [`Discount::fields`] wrote them; a field
    /// absent or empty is not set); `None`: no discount (a campaign created without one, or
    /// before discounts existed).
    ///
    /// # Errors
    /// [`BadRecord`] when a field is not an integer in its bounds, or the fields name no rule
    /// or two.
    pub fn from_fields(
        amount_off: Option<&str>,
        percent_off: Option<&str>,
        max_off: Option<&str>,
        min_order: Option<&str>,
    ) -> Result<Option<Discount>, BadRecord> {
        let int = |name: &str, v: Option<&str>| -> Result<Option<i64>, BadRecord> {
            match v {
                None | Some("") => Ok(None),
                Some(t) => t
                    .parse()
                    .map(Some)
                    .map_err(|_| BadRecord(format!("coupon pool: `{name}` is {t:?}"))),
            }
        };
        let (amount, percent, max, min) = (
            int("amount_off", amount_off)?,
            int("percent_off", percent_off)?,
            int("max_off", max_off)?,
            int("min_order", min_order)?,
        );
        let off = match (amount, percent, max) {
            (None, None, None) if min.is_none() => return Ok(None),
            (Some(a), None, None) => Off::Amount(a),
            (None, Some(percent), max_cents) => Off::Percent { percent, max_cents },
            _ => {
                return Err(BadRecord(
                    "coupon pool: the discount fields name no rule, or two".into(),
                ))
            }
        };
        let rule = Discount {
            off,
            min_order_cents: min,
        };
        rule.check()
            .map_err(|e| BadRecord(format!("coupon pool: {e}")))?;
        Ok(Some(rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn amount(a: i64) -> Discount {
        Discount {
            off: Off::Amount(a),
            min_order_cents: None,
        }
    }

    fn percent(p: i64, max: Option<i64>) -> Discount {
        Discount {
            off: Off::Percent {
                percent: p,
                max_cents: max,
            },
            min_order_cents: None,
        }
    }

    #[test]
    fn amount_off_is_capped_at_the_total() {
        assert_eq!(amount(2_000).discount_cents(10_000), Ok(2_000));
        assert_eq!(amount(2_000).discount_cents(1_500), Ok(1_500));
        assert_eq!(amount(2_000).discount_cents(0), Ok(0));
    }

    #[test]
    fn percent_off_rounds_down_to_the_cent() {
        // 15 % of 9,999 cents is 1,499.85: 1,499.
        assert_eq!(percent(15, None).discount_cents(9_999), Ok(1_499));
        assert_eq!(percent(33, None).discount_cents(1), Ok(0));
        assert_eq!(percent(100, None).discount_cents(12_345), Ok(12_345));
        assert_eq!(percent(1, None).discount_cents(99), Ok(0));
    }

    #[test]
    fn max_off_caps_a_percentage() {
        assert_eq!(percent(50, Some(1_000)).discount_cents(10_000), Ok(1_000));
        assert_eq!(percent(50, Some(1_000)).discount_cents(1_000), Ok(500));
    }

    #[test]
    fn an_order_below_the_minimum_gets_none() {
        let rule = Discount {
            min_order_cents: Some(5_000),
            ..amount(500)
        };
        assert_eq!(
            rule.discount_cents(4_999),
            Err(BelowMinimum {
                min_order_cents: 5_000
            })
        );
        assert_eq!(rule.discount_cents(5_000), Ok(500));
    }

    #[test]
    fn bounds_are_checked() {
        assert!(amount(1).check().is_ok());
        for (bad, field) in [
            (amount(0), "amount_off_cents"),
            (amount(MAX_CENTS + 1), "amount_off_cents"),
            (percent(0, None), "percent_off"),
            (percent(101, None), "percent_off"),
            (percent(10, Some(0)), "max_off_cents"),
            (
                Discount {
                    min_order_cents: Some(0),
                    ..amount(5)
                },
                "min_order_cents",
            ),
        ] {
            let err = bad.check().expect_err(field);
            assert!(err.0.contains(field), "{field}: {err}");
        }
        assert!(is_order_total(0) && is_order_total(MAX_CENTS));
        assert!(!is_order_total(-1) && !is_order_total(MAX_CENTS + 1));
    }

    #[test]
    fn fields_round_trip() {
        let rules = [
            amount(250),
            percent(20, None),
            Discount {
                min_order_cents: Some(10_000),
                ..percent(20, Some(3_000))
            },
        ];
        for rule in rules {
            let [a, p, m, o] = Discount::fields(Some(&rule));
            let back = Discount::from_fields(Some(&a), Some(&p), Some(&m), Some(&o)).unwrap();
            assert_eq!(back, Some(rule));
        }
        assert_eq!(Discount::fields(None), <[String; 4]>::default());
        assert_eq!(Discount::from_fields(None, None, None, None), Ok(None));
        assert!(Discount::from_fields(Some("5"), Some("10"), None, None).is_err());
        assert!(Discount::from_fields(None, None, Some("5"), None).is_err());
        assert!(Discount::from_fields(None, None, None, Some("5")).is_err());
        assert!(Discount::from_fields(Some("1.5"), None, None, None).is_err());
        assert!(Discount::from_fields(None, Some("0"), None, None).is_err());
    }

    proptest! {
        /// Whatever the rule and the total: the discount is at least 0, at most the total and
        /// at most the rule's cap; a percentage is the floor of the exact product (capped);
        /// a total at or above the minimum always gets one.
        #[test]
        fn a_discount_never_passes_the_total(
            total in 0..=MAX_CENTS,
            a in 1..=MAX_CENTS,
            p in 1i64..=100,
            max in proptest::option::of(1..=MAX_CENTS),
            min in proptest::option::of(1..=MAX_CENTS),
        ) {
            for off in [Off::Amount(a), Off::Percent { percent: p, max_cents: max }] {
                let rule = Discount { off, min_order_cents: min };
                prop_assert!(rule.check().is_ok());
                match rule.discount_cents(total) {
                    Err(b) => prop_assert!(min == Some(b.min_order_cents) && total < b.min_order_cents),
                    Ok(d) => {
                        prop_assert!(min.is_none_or(|m| total >= m));
                        prop_assert!((0..=total).contains(&d));
                        match off {
                            Off::Amount(a) => prop_assert_eq!(d, a.min(total)),
                            Off::Percent { percent, max_cents } => {
                                let exact = i128::from(total) * i128::from(percent);
                                let floor = (exact / 100) as i64;
                                prop_assert!(i128::from(floor) * 100 <= exact);
                                prop_assert!(i128::from(floor + 1) * 100 > exact);
                                prop_assert_eq!(d, max_cents.map_or(floor, |m| floor.min(m)));
                            }
                        }
                    }
                }
            }
        }
    }
}
