//! `POST /merchants/{merchant_id}/deposits`: money paid into a merchant's budget: the handler
//! ([`http`]), the store step ([`store`]), side by side.

pub mod http;
pub mod store;
