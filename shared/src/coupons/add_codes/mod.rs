//! `POST /campaigns/{id}/codes`: a merchant adds a batch of uploaded codes to a campaign that
//! The handler ([`http`]), the store step ([`store`]) and its scripts, side by side.

pub mod http;
pub mod store;
