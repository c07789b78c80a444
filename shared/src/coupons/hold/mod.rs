//! `POST /coupons/hold`: the merchant's checkout holds a coupon for an order while it is being
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
