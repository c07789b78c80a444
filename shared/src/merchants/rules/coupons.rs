//! A merchant packet paid out as coupons (`payout: "coupon"`): each claimed share becomes a
//! coupon of its grabber worth the share (Ele.me's share-after-order packets are vouchers, not
//! cash), redeemed at checkout through the coupon routes until the packet's `redeem_by`.
//!
//! A share's coupon is named by its code `<packet_id>.<share_id>` ([`share_code`]): the `.`
//! is in neither an uploaded code's alphabet (`A-Z a-z 0-9 _ -`) nor a generated code's, so
//! no campaign's code is ever read as a share's. The packet's meta hash holds the coupons'
//! terms (`redeem_by`, `min_order`), as a campaign pool's hash does, and the packet's
//! `coupons` hash their records (share id -> the record of `lua/coupon_record.lua`), so the
//! checkout scripts serve both.
//!
//! The money stays in the merchant's books: a claim moves the share from `reserved` to
//! `outstanding` (`claim.lua`), a redemption on to `paid_coupons`
//! (`coupon_redeem.lua`), a reversed redemption back (`coupon_release.lua`); what is
//! still outstanding at `redeem_by` goes back to the merchant's `balance` once
//! (`lua/settle.lua`), as does a redemption reversed after that.

use serde::Deserialize;

use crate::coupons::rules::campaign::MAX_REDEEM_AFTER_END_MS;
use crate::coupons::rules::discount::{Discount, Off, MAX_CENTS};
use crate::domain::Invalid;

/// The longest `coupon.redeem_within_secs`: 366 days, as a campaign's `redeem_by` after its
/// end. The packet's records are kept until `redeem_by` and the retention after it.
pub const MAX_REDEEM_WITHIN_SECS: i64 = MAX_REDEEM_AFTER_END_MS / 1000;

/// A merchant packet's coupon terms (`payout: "coupon"`): `"coupon": {"min_order_cents"?,
/// "redeem_within_secs"}`, unknown fields refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A merchant packet's coupon terms (`payout: \"coupon\"`).")]
#[schema(example = json!({"min_order_cents": 3000, "redeem_within_secs": 604800}))]
pub struct CouponTerms {
    /// The smallest order total a share's coupon applies to, cents (1 to 10^13); absent: any
    /// order.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10_000_000_000_000_i64)]
    pub min_order_cents: Option<i64>,
    /// How long after the packet expires its coupons may still be redeemed, seconds (1 to
    /// 31622400, 366 days): `redeem_by = expires_at + redeem_within_secs`.
    #[schema(minimum = 1, maximum = 31_622_400)]
    pub redeem_within_secs: i64,
}

impl CouponTerms {
    /// Checks the bounds.
    ///
    /// # Errors
    /// [`Invalid`] naming the field (`coupon.min_order_cents`, `coupon.redeem_within_secs`).
    pub fn check(&self) -> Result<(), Invalid> {
        if let Some(m) = self.min_order_cents {
            if !(1..=MAX_CENTS).contains(&m) {
                return Err(Invalid::new(format!(
                    "coupon.min_order_cents must be an integer of 1 to {MAX_CENTS} cents, not {m}"
                )));
            }
        }
        if !(1..=MAX_REDEEM_WITHIN_SECS).contains(&self.redeem_within_secs) {
            return Err(Invalid::new(format!(
                "coupon.redeem_within_secs must be an integer of 1 to {MAX_REDEEM_WITHIN_SECS} seconds, not {}",
                self.redeem_within_secs
            )));
        }
        Ok(())
    }

    /// The discount of a share's coupon worth `share_cents`: that amount off (never more than
    /// the order), from the packet's minimum order.
    pub fn discount(share_cents: i64, min_order_cents: Option<i64>) -> Discount {
        Discount {
            off: Off::Amount(share_cents),
            min_order_cents,
        }
    }
}

/// A claimed share's coupon, as the claim answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareCoupon {
    /// Its code ([`share_code`]).
    pub code: String,
    /// What it takes off an order: the share, cents (never more than the order).
    pub amount_off_cents: i64,
    /// The smallest order total it applies to, cents; `None`: any.
    pub min_order_cents: Option<i64>,
    /// Redeemable before this, Unix ms.
    pub redeem_by_ms: i64,
}

/// The code of share `share_id` of packet `packet_id`'s coupon: `<packet_id>.<share_id>`.
pub fn share_code(packet_id: &str, share_id: u32) -> String {
    format!("{packet_id}.{share_id}")
}

/// A share's coupon named by its code ([`share_code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareCode {
    /// The packet (24 lowercase hex digits).
    pub packet_id: String,
    /// The share: 1 to the packet's count, in decimal without leading zeros.
    pub share_id: String,
}

/// Reads a share's code: 24 lowercase hex digits, `.`, a share id (1 to 6 digits, no leading
/// zero). `None` for anything else (a campaign's code, say).
pub fn parse_share_code(code: &str) -> Option<ShareCode> {
    let (packet, share) = code.split_once('.')?;
    let packet_ok = packet.len() == 24
        && packet
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let share_ok = (1..=6).contains(&share.len())
        && share.bytes().all(|b| b.is_ascii_digit())
        && !share.starts_with('0');
    (packet_ok && share_ok).then(|| ShareCode {
        packet_id: packet.to_string(),
        share_id: share.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_codes_read_back_and_nothing_else_reads_as_one() {
        let id = "14f19750de2d840759a4c115";
        let code = share_code(id, 42);
        assert_eq!(code, "14f19750de2d840759a4c115.42");
        assert_eq!(
            parse_share_code(&code),
            Some(ShareCode {
                packet_id: id.into(),
                share_id: "42".into()
            })
        );
        for bad in [
            "14f19750de2d840759a4c115",
            "14f19750de2d840759a4c115.",
            "14f19750de2d840759a4c115.0",
            "14f19750de2d840759a4c115.01",
            "14f19750de2d840759a4c115.1234567",
            "14F19750DE2D840759A4C115.1",
            "14f19750de2d840759a4c11.1",
            "14f19750de2d840759a4c115-1",
            "0001C7K2M9QX4TZ8WD",
        ] {
            assert_eq!(parse_share_code(bad), None, "{bad}");
        }
    }

    #[test]
    fn terms_are_bounded() {
        let ok = CouponTerms {
            min_order_cents: Some(5_000),
            redeem_within_secs: 86_400,
        };
        assert!(ok.check().is_ok());
        for bad in [
            CouponTerms {
                min_order_cents: Some(0),
                ..ok
            },
            CouponTerms {
                min_order_cents: Some(MAX_CENTS + 1),
                ..ok
            },
            CouponTerms {
                redeem_within_secs: 0,
                ..ok
            },
            CouponTerms {
                redeem_within_secs: MAX_REDEEM_WITHIN_SECS + 1,
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
