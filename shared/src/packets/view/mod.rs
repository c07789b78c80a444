//! `GET /packets/{id}`: a packet, the caller's grab and the first page of grabs: the handler ([`http`]), the store
//! step ([`store`]) and its scripts (`packet_view.lua`), side by side.

pub mod http;
pub mod store;
