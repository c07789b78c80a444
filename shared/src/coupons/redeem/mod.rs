//! `POST /coupons/redeem`: the merchant's checkout redeems a coupon code for an order, once,
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
