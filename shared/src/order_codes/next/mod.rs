//! `POST /order-codes`: take the next codes of the business day: the handler ([`http`]), the
//! store step ([`store`]) and its script (`order_code.lua`), side by side.

pub mod http;
mod retire;
mod secrets;
pub mod store;
