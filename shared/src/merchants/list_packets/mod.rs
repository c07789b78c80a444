//! `GET /merchants/{merchant_id}/packets`: a page of a merchant's packets: the handler
//! ([`http`]), the store step ([`store`]), side by side.

pub mod http;
pub mod store;
