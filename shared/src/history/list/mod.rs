//! `GET /packets`: a page of the caller's sent or received packets: the handler ([`http`]), the
//! store step ([`store`]) and its script (`history_page.lua`), side by side.

pub mod http;
pub mod store;
