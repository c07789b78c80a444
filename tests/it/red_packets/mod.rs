//! The red-packet lifecycle against real `redis-server` processes: every test runs on a
//! standalone server and on a 3-master cluster started by the harness.
//!
//! One file a topic: grabs, claims, expiry and reclaim, idempotency, a sandbox's remembered
//! answers.

mod claims;
mod expiry;
mod grabs;
mod idempotency;
mod pages;
mod sandbox;
