//! `POST /wallet/deposits`: money paid into a wallet by the team's backend: the handler
//! ([`http`]) and the store step ([`store`]), side by side.

pub mod http;
pub mod store;
