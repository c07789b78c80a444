//! `POST /merchants/{merchant_id}/withdrawals`: money paid out of a merchant's budget: the handler
//! ([`http`]), the store step ([`store`]), side by side.

pub mod http;
pub mod store;
