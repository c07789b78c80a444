//! The Lambda side of every function: a sandbox's Init ([`init`]: tracing, [`settings`], the
//! Redis store), serving a router to API Gateway HTTP API events ([`serve`]), and the two
//! functions that EventBridge schedules run instead of a router ([`reclaim`],
//! [`ledger_export`], through one shell, [`scheduled`]). A function's `main` is one call of
//! [`init`], then one of [`serve`] or a scheduled `serve`.
//!
//! | function | serves |
//! | --- | --- |
//! | create-packet, grab, claim, wallet, next-order-code, vote, coupon | [`crate::api`]'s router of the function, by [`serve`] |
//! | reclaim-cron | [`reclaim::serve`]: refunds expired red packets, closes ended coupon campaigns |
//! | ledger-export | [`ledger_export::serve`]: the money journal to EventBridge |
//!
//! Following the AWS Lambda Rust runtime examples: everything expensive is built once per
//! sandbox, before the first event, and reused by every invocation. This layer sits above
//! [`crate::api`] (it serves its routers) and [`crate::store`].

mod emf;
pub mod function;
mod http;
mod init;
pub mod ledger_export;
pub mod openapi;
pub mod reclaim;
pub mod scheduled;
mod settings;

pub use emf::init_metrics;
pub use function::{app, declarations, Declaration, Function, Trigger};
pub use http::{for_api_gateway, run_http, serve};
pub use init::{check_eviction, init, init_tracing, InitError};
pub use settings::{all_settings, log_filter, settings, Settings, RUST_LOG};
