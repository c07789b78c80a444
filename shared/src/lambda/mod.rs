//! The Lambda side of every function: the functions themselves, declared once ([`Function`]:
//! name, trigger, routes; `functions.json` is written from it), a sandbox's Init ([`init`]:
//! tracing, [`settings`], the Redis store), serving an HTTP function's router to API Gateway HTTP
//! API events ([`run_http`], [`serve`]), and the jobs that EventBridge schedules run instead of a
//! router ([`reclaim`], [`ledger_export`], [`reconcile`], through one shell, [`scheduled`]). An HTTP
//! function's `main` is one call of [`run_http`]; a scheduled one's, [`init`] then its `serve`.
//!
//! Following the AWS Lambda Rust runtime examples: everything expensive is built once per
//! sandbox, before the first event, and reused by every invocation. This layer sits above
//! [`crate::api`] (it serves its routers) and [`crate::store`].

pub mod aws;
mod emf;
pub mod function;
mod http;
mod init;
pub mod ledger_export;
pub mod openapi;
pub mod reclaim;
pub mod reconcile;
pub mod scheduled;
pub mod secrets;
mod settings;

pub use emf::init_metrics;
pub use function::{app, declarations, Declaration, Function, Trigger};
pub use http::{for_api_gateway, run_http, serve};
pub use init::{check_eviction, init, init_tracing, InitError};
pub use settings::{all_settings, log_filter, settings, Settings, RUST_LOG};
