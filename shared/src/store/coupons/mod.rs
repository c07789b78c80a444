//! Coupon drops on Redis: a campaign's codes in pools on their own hash tags ([`keys`]), each
//! step an atomic script on one pool (`lua/coupon_create_pool.lua`, `lua/coupon_grab.lua`,
//! `lua/coupon_redeem.lua`, called through [`crate::store::scripts::CouponCreatePoolCall`],
//! [`crate::store::scripts::CouponGrabCall`] and [`crate::store::scripts::CouponRedeemCall`]);
//! a campaign is recorded under its merchant reference on the tag `{coupon}`
//! (`lua/coupon_create.lua`).
//! The rules the scripts keep are in [`crate::domain::coupons`].

pub mod add_codes;
pub mod campaign;
pub mod close;
pub mod create;
mod directory;
pub mod feed;
pub mod grab;
pub mod keys;
pub mod list;
pub mod redeem;
mod shape;

pub use add_codes::{add_codes, AddCodesOutcome};
pub use campaign::{campaign, CampaignView};
pub use create::{create, CreateOutcome, Created};
pub use grab::{grab, GrabOutcome};
pub use keys::{pool_tag, PoolKeys};
pub use list::{page, CouponPage, ListedCoupon};
pub use redeem::{redeem, RedeemOutcome};
