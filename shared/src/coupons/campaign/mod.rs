//! `GET /campaigns/{id}`: a campaign as a user sees it, with their coupons in it
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
