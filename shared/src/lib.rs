//! # hongbao
//!
//! Red packets, coupon drops, order codes and article voting on Redis, for AWS Lambda.
//!
//! A feature in its own folder ([`order_codes`], [`voting`]) keeps each operation in a folder
//! of its own: its handler (`http.rs`), its store step (`store.rs`) and its Lua scripts side by
//! side, and the feature's pure rules in `rules/`. The shared machinery and the features not yet
//! moved into folders of their own are four layers:
//!
//! * [`domain`]: the rules as pure code (money in `i64` cents, split algorithms, packet limits,
//!   draws). No Redis, HTTP or Lambda type.
//! * [`store`]: Redis: the connection, TLS and AUTH / IAM, the key layout (hash tags), the
//!   scripts' loading and typed calls, and the store steps of red packets, wallets, history,
//!   reclaim, coupons and merchants.
//! * [`api`]: the HTTP contract (extractors, errors, refusals, OpenAPI) and those features'
//!   handlers.
//! * [`lambda`]: a sandbox's Init and settings, serving a router to API Gateway, and the three
//!   scheduled functions (reclaim-cron, reconcile-cron, ledger-export).
//!
//! Each file has a role, and dependencies point one way: `lambda` → http (`api/`, `http.rs`, a
//! feature's root) → store (`store/`, `store.rs`, a feature's other files) → rules (`domain/`,
//! `rules/`), checked by `scripts/check-layers.py`. Money is `i64` cents everywhere; deadlines
//! use Redis `TIME`.

pub mod api;
pub mod domain;
pub mod lambda;
pub mod order_codes;
pub mod store;
pub mod voting;

pub use store::{Config, Error, Store};
