//! `POST /coupons/release`: the merchant's checkout lets go of an order's coupon: its hold is
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
