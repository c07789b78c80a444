//! `POST /packets/{id}/cancel`: the sender stops a packet, the un-grabbed shares back: the handler ([`http`]), the store
//! step ([`store`]) and its scripts (`cancel.lua`), side by side.

pub mod http;
pub mod store;
