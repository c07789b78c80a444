//! # hongbao
//!
//! Red packets, order codes and article voting on Redis, for AWS Lambda. Three layers, each
//! organised by feature (red packets, wallets, reclaim, order codes, voting); dependencies point
//! one way, `api` → `store` → `domain`:
//!
//! * [`domain`]: the rules as pure code (money in `i64` cents, split algorithms, packet limits,
//!   the order-code permutation, vote scoring). No Redis, HTTP or Lambda type.
//! * [`store`]: Redis: the connection, TLS and AUTH / IAM, the key layout (hash tags), one typed
//!   wrapper per Lua script.
//! * [`api`]: one axum `Router` per function, the extractors and error answers of the HTTP
//!   contract, and the Lambda entry points.
//!
//! Money is `i64` cents everywhere; deadlines use Redis `TIME`.

pub mod api;
pub mod domain;
pub mod store;

pub use store::{Config, Error, Store};
