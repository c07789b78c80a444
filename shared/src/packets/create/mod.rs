//! `POST /packets`: a packet paid from the sender's wallet: the handler ([`http`]), the store
//! step ([`store`]) and its scripts (`create_packet.lua`), side by side.

pub mod http;
pub mod store;
