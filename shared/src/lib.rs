//! # hongbao
//!
//! Red packets, coupon drops, order codes and article voting on Redis, for AWS Lambda.
//!
//! Each feature has a folder ([`packets`], [`coupons`], [`draws`], [`history`], [`wallet`],
//! [`merchants`], [`order_codes`], [`voting`], [`support`]) and in it a folder per operation: its handler
//! (`http.rs`), its store step (`store.rs`) and its Lua scripts side by side, and the feature's
//! pure rules in `rules/`. The machinery they share:
//!
//! * [`domain`]: the shared rules as pure code (money in `i64` cents, split algorithms,
//!   the journal, reclaim and reconciliation, settings, the business time zone). No Redis, HTTP
//!   or Lambda type.
//! * [`store`]: Redis: the connection, TLS and AUTH / IAM, the key layout (hash tags), the
//!   scripts' loading and typed calls, reclaim, the journal, the audit, and the deposits and
//!   withdrawals of wallets and budgets in one step (`store::books`).
//! * [`api`]: the HTTP contract (extractors, errors, refusals, OpenAPI).
//! * [`lambda`]: a sandbox's Init and settings, serving a router to API Gateway, and the three
//!   scheduled functions (reclaim-cron, reconcile-cron, ledger-export).
//!
//! Each file has a role, and dependencies point one way: `lambda` → http (`api/`, `http.rs`, a
//! feature's root) → store (`store/`, `store.rs`, a feature's other files) → rules (`domain/`,
//! `rules/`), checked by `scripts/check-layers.py`. Money is `i64` cents everywhere; deadlines
//! use Redis `TIME`.

pub mod api;
pub mod coupons;
pub mod domain;
pub mod draws;
pub mod history;
pub mod lambda;
pub mod merchants;
pub mod order_codes;
pub mod packets;
pub mod store;
pub mod support;
pub mod voting;
pub mod wallet;

pub use store::{Config, Error, Store};
