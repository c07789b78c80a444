//! Redis: the connection ([`Store`], [`Conn`]), TLS and Redis AUTH / IAM ([`redis_auth`]), the
//! key layout with its hash tags ([`keys`]), and one typed wrapper per Lua script ([`scripts`]
//! holds the scripts; [`packets`], [`wallet`], [`reclaim`], [`lock`], [`order_codes`] and
//! [`voting`] call them, each script's KEYS/ARGV order written in exactly one place).
//!
//! This layer turns the rules of [`crate::domain`] into atomic steps and Redis replies into
//! domain values; an [`Error`](enum@Error) means "no business answer" (Redis down, timing out,
//! failing over, or a reply of the wrong shape).

pub mod audit;
pub mod config;
mod conn;
pub mod error;
pub mod history;
pub mod keys;
pub mod lock;
mod nodes;
pub mod order_codes;
pub mod packets;
pub mod reclaim;
pub mod redis_auth;
pub mod scripts;
pub mod voting;
pub mod wallet;

pub use config::{Config, Feature};
pub use conn::{connect, Conn, EvictionVerdict, Store, REBUILD_AFTER_FAILURES};
pub use error::Error;
