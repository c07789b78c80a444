//! Coupon drops (抢优惠券): a merchant's campaign of pre-issued or generated codes,
//! grabbed first-come-first-served, at most `per_user` per user, each redeemed at most once.
//!
//! The rules here are pure: which uploaded codes are valid and distinct ([`codes`]), how a
//! generated code is made, checked and read back ([`generated`]), what a campaign request must
//! meet and the status it shows ([`campaign`]), what a coupon takes off an order
//! ([`discount`]), the checkout's hold, redemption and release and the record each leaves
//! ([`checkout`]), and how codes and users spread over a large campaign's pools ([`pools`]).
//! The store runs the rules that must be atomic (a grab, a hold, a redeem, a release) as Lua
//! scripts on the pools' hash tags.

pub mod campaign;
pub mod checkout;
pub mod codes;
pub mod discount;
pub mod generated;
pub mod list;
pub mod pools;
pub mod settings;

pub use crate::domain::journal::CampaignCounts;
pub use campaign::{is_reference, CodeSource, NewCampaign, Status, VisitLimit};
pub use checkout::{Checkout, IssuedRecord, HOLD_SECS};
pub use discount::{BelowMinimum, Discount, Off};
pub use generated::{
    campaign_id, campaign_no, id_tag, parse, parse_public_id, public_id, CodeKey, ParsedCode,
};
pub use list::{CouponState, ListCursor};
pub use pools::{home_pool, pool_count, pool_of_code, pool_of_index, pool_start};
pub use settings::CouponRules;
