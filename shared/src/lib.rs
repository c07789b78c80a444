//! # hongbao
//!
//! Red packets, coupon drops, order codes and article voting on Redis, for AWS Lambda. Four
//! layers, each organised by feature (red packets, wallets, history, reclaim, coupons, order
//! codes, voting) with one operation per file; dependencies point one way, `lambda` → `api` →
//! `store` → `domain`:
//!
//! * [`domain`]: the rules as pure code (money in `i64` cents, split algorithms, packet limits,
//!   the order-code permutation, vote scoring). No Redis, HTTP or Lambda type.
//! * [`store`]: Redis: the connection, TLS and AUTH / IAM, the key layout (hash tags), one typed
//!   wrapper per Lua script.
//! * [`api`]: one axum `Router` per function, the extractors and error answers of the HTTP
//!   contract.
//! * [`lambda`]: a sandbox's Init and settings, serving a router to API Gateway, and the two
//!   scheduled functions (reclaim-cron, ledger-export).
//!
//! Money is `i64` cents everywhere; deadlines use Redis `TIME`.

pub mod api;
pub mod domain;
pub mod lambda;
pub mod store;

pub use store::{Config, Error, Store};
