//! `POST /campaigns/{id}/grab`: a user grabs a coupon code, first come first served, at most
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod resolve;
pub mod store;
pub mod take;
