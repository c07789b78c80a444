//! `GET /packets/summary`: the caller's yearly totals: the handler ([`http`]) and the store
//! step ([`store`]), side by side.

pub mod http;
pub mod store;
