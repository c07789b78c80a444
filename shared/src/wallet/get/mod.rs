//! `GET /wallet`: the caller's balance and newest ledger entries: the handler
//! ([`http`]) and the store step ([`store`]), side by side.

pub mod http;
pub mod store;
