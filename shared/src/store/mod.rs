//! Redis: the connection ([`Store`], lazily connected and shared, in `lazy_store.rs`; [`Conn`],
//! the transport with its `NOSCRIPT` and `WAIT` handling, in `conn.rs`; [`connect`] in
//! `connect.rs`; the eviction-policy check in `eviction.rs`), TLS and Redis AUTH / IAM
//! ([`redis_auth`]), the key layout with its hash tags ([`keys`]), and one typed wrapper per
//! Lua script ([`scripts`]
//! holds the scripts; [`reclaim`], [`books`] and [`lock`] call them, each
//! script's KEYS/ARGV order declared in its header alone).
//!
//! This layer turns the rules of [`crate::domain`] into atomic steps and Redis replies into
//! domain values; an [`Error`](enum@Error) means "no business answer" (Redis down, timing out,
//! failing over, or a reply of the wrong shape).
//!
//! Key scans ([`scan`]: `SCAN` on each master, one step at a time) serve audits and the
//! scheduled jobs that walk the keyspace across runs, never a request. Operations-only code is
//! behind the `ops` cargo feature, off in the functions' bootstraps and on in the tests: the
//! money-conservation and stuck-packet audits (`audit`) and whole-keyspace scans
//! (`Conn::scan_keys`).

pub mod acl;
#[cfg(feature = "ops")]
pub mod audit;
pub mod books;
pub mod config;
mod conn;
mod connect;
pub mod error;
mod eviction;
pub mod journal;
pub mod keys;
mod lazy_store;
pub mod lock;
mod nodes;
pub mod reclaim;
pub mod reconcile;
pub mod redis_auth;
pub mod scan;
pub mod scripts;

pub use config::{Config, Feature};
pub use conn::{Conn, REBUILD_AFTER_FAILURES};
pub use connect::connect;
pub use error::Error;
pub use eviction::EvictionVerdict;
pub use lazy_store::Store;
