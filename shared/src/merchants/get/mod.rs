//! `GET /merchants/{merchant_id}`: a merchant's books and a ledger page: the handler
//! ([`http`]), the store step ([`store`]), side by side.

pub mod http;
pub mod store;
