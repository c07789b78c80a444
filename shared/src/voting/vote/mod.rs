//! `POST /articles/{id}/vote`: the caller's up- or down-vote: the handler ([`http`]), the store
//! step ([`store`]) and its script (`vote.lua`; `memory.rs`, what a sandbox remembers of the
//! articles it voted on), side by side.

pub mod http;
pub(crate) mod memory;
pub mod store;
