//! `GET /coupons`: the caller's coupons, newest first, a page at a time
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
