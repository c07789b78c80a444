//! `POST /merchant-packets`: an order's packet, paid from its merchant's budget: the handler
//! ([`http`]), the store step ([`store`]) and its script (`merchant_create_packet.lua`), side by side.

pub mod http;
pub mod store;
