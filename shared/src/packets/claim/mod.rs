//! `POST /packets/{id}/claim`: a grabbed share into the grabber's wallet: the handler ([`http`]), the store
//! step ([`store`]) and its scripts (`claim.lua`, `claim_done.lua`; steps 2 to 4 in `redrive.rs`), side by side.

pub mod http;
pub mod redrive;
pub mod store;
