//! # hongbao shared library
//!
//! Everything the hongbao Lambda functions share: configuration ([`config`]), the Redis
//! connection ([`store`]), key names and hash tags ([`keys`]), the Lua scripts ([`scripts`]),
//! the domain (red packets in [`packets`], wallets in [`wallet`], the split algorithms in
//! [`split`], settlement in [`reclaim`], the owner-token lock in [`lock`]), and the HTTP layer
//! ([`http`], [`handlers`]). Money is `i64` cents everywhere; deadlines use Redis `TIME`.

pub mod audit;
pub mod auth;
pub mod config;
pub mod error;
pub mod handlers;
pub mod http;
pub mod keys;
pub mod lambda;
pub mod lock;
pub mod order_codes;
pub mod packets;
pub mod reclaim;
pub mod scripts;
pub mod split;
pub mod store;
pub mod voting;
pub mod wallet;

pub use config::Config;
pub use error::Error;
pub use store::Store;

/// Sets up `tracing` for a Lambda function: JSON lines to stdout (CloudWatch), level from
/// `RUST_LOG` (default `info`), no ANSI colours, no timestamps (CloudWatch adds them).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .try_init();
}
