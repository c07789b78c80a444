//! `POST /packets/{id}/grab`: one share per user: the handler ([`http`]), the store
//! step ([`store`]) and its scripts (`grab.lua`), side by side.

pub mod http;
pub mod store;
