//! Coupon drops on Redis: a campaign's codes in pools on their own hash tags ([`keys`]), each
//! step an atomic script on one pool (`lua/coupon_create.lua`, `lua/coupon_grab.lua`,
//! `lua/coupon_redeem.lua`, called through [`crate::store::scripts::CouponCreateCall`],
//! [`crate::store::scripts::CouponGrabCall`] and [`crate::store::scripts::CouponRedeemCall`]).
//! The rules the scripts keep are in [`crate::domain::coupons`].

pub mod keys;

pub use keys::{pool_tag, PoolKeys};
