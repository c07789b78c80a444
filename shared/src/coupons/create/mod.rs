//! `POST /campaigns`: a merchant creates a coupon campaign (`crate::coupons::create`,
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
