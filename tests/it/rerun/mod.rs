//! The re-run checker: any call may run twice, at any later moment (the cluster client re-sends
//! a command whose reply was lost, possibly after other callers moved the same entity on).
//!
//! For each entity kind, seeded random sequences of the script calls that act on one entity,
//! from several callers, each call with its own call id; at random later points a re-run of an
//! earlier call (its original call id and arguments) is inserted. After every step:
//!
//! - (a) a re-run answers exactly its first run's answer;
//! - (b) a re-run writes nothing: the content and `PEXPIRETIME` of every key the script may
//!   touch (its `KEYS`) are the same before and after;
//! - (c) a small reference model of the entity (its states and its counts or books) agrees with
//!   what Redis holds, and every journal entry has its own `event_id`.
//!
//! Sequences are reproducible: `HONGBAO_RERUN_SEED` (default a fixed seed) and
//! `HONGBAO_RERUN_SEQUENCES` (per entity kind and backend; `make soak` raises it). A failure
//! prints the seed, the sequence and its steps up to the failing one.

mod accounts;
mod checkout;
mod packets;

use std::collections::BTreeMap;

use hongbao::Store;

/// The sequences' seed: `HONGBAO_RERUN_SEED`, else a fixed one.
fn seed() -> u64 {
    std::env::var("HONGBAO_RERUN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0059)
}

/// Sequences per entity kind and backend: `HONGBAO_RERUN_SEQUENCES`, else `default`.
fn sequences(default: usize) -> usize {
    std::env::var("HONGBAO_RERUN_SEQUENCES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// What Redis holds under `keys`: each key's type and content ([`crate::common::key_content`])
/// and `PEXPIRETIME` (-1: no TTL, -2: no key), in order. Equal before and after a call exactly
/// when the call wrote none of them.
async fn snapshot(store: &Store, keys: &[String]) -> Vec<(String, String, Vec<String>, i64)> {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let (kind, items) = crate::common::key_content(store, key).await;
        let expires: i64 = redis::cmd("PEXPIRETIME")
            .arg(key)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        out.push((key.clone(), kind, items, expires));
    }
    out
}

/// The `event_id`s of journal `key` that appear more than once, with their counts.
async fn repeated_event_ids(store: &Store, key: &str) -> BTreeMap<String, usize> {
    let entries = hongbao::store::journal::read(store, key, 10_000)
        .await
        .unwrap();
    let mut counts = BTreeMap::new();
    for e in entries {
        *counts.entry(e.event_id).or_insert(0) += 1;
    }
    counts.retain(|_, n| *n > 1);
    counts
}

/// A sequence's steps so far, for the failure message.
#[derive(Default)]
struct Trace {
    /// One line per step: the call (or re-run) and its answer.
    lines: Vec<String>,
}

impl Trace {
    fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    /// The failure text: the seed, the sequence, its steps and what broke.
    fn fail(&self, seed: u64, sequence: usize, what: String) -> ! {
        panic!(
            "re-run checker: seed {seed} (HONGBAO_RERUN_SEED), sequence {sequence}: {what}\n\
             steps:\n  {}",
            self.lines.join("\n  ")
        )
    }
}
