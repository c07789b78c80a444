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
//! `HONGBAO_RERUN_SEQUENCES` (per entity kind and backend, default 300; `make replicas` and
//! `make valkey` lower it, `make soak` raises it). A failure prints the seed, the sequence, the
//! backend and its steps up to the failing one.

mod accounts;
mod checkout;
mod claims;
mod draws;
mod groups;
mod packets;
mod pools;
mod votes;

use std::collections::BTreeMap;

use harness::Backend;
use hongbao::Store;
use rand::rngs::StdRng;
use rand::Rng;

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

/// Reads every key of one script call in one round trip (they share a hash slot): per key its
/// `TYPE`, `PEXPIRETIME` (-1: no TTL, -2: no key) and content, a hash's `field=value`s and a
/// set's members sorted, a list's items and a sorted set's `member, score`s in order, a string's
/// value, and of a stream (append-only) its length and last generated id.
const SNAPSHOT_LUA: &str = r"
local out = {}
for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  local items = {}
  if kind == 'string' then
    items = {redis.call('GET', key)}
  elseif kind == 'hash' then
    local flat = redis.call('HGETALL', key)
    for i = 1, #flat, 2 do items[#items + 1] = flat[i] .. '=' .. flat[i + 1] end
    table.sort(items)
  elseif kind == 'list' then
    items = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'set' then
    items = redis.call('SMEMBERS', key)
    table.sort(items)
  elseif kind == 'zset' then
    items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'stream' then
    local info = redis.call('XINFO', 'STREAM', key)
    for i = 1, #info, 2 do
      if info[i] == 'length' or info[i] == 'last-generated-id' then
        items[#items + 1] = info[i] .. '=' .. tostring(info[i + 1])
      end
    end
  end
  out[#out + 1] = {kind, redis.call('PEXPIRETIME', key), items}
end
return out
";

/// What Redis holds under `keys` (the keys of one script call, so of one hash slot): each
/// key's type, `PEXPIRETIME` and content ([`SNAPSHOT_LUA`]), in order. Equal before and after a
/// call exactly when the call wrote none of them.
async fn snapshot(store: &Store, keys: &[String]) -> Vec<(String, i64, Vec<String>)> {
    if keys.is_empty() {
        return Vec::new();
    }
    static SCRIPT: std::sync::LazyLock<redis::Script> =
        std::sync::LazyLock::new(|| redis::Script::new(SNAPSHOT_LUA));
    let mut invocation = SCRIPT.prepare_invoke();
    for key in keys {
        invocation.key(key);
    }
    invocation
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
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

/// The export's side of one journal, as ledger-export does it between the checker's steps:
/// every entry read, its `event_id` noted, then acknowledged (deleted: a journal emptied keeps
/// its last stream id a minute). Each id seen twice, across acknowledgements too, is kept.
struct Export {
    journal: String,
    seen: std::collections::BTreeSet<String>,
    repeated: Vec<String>,
    /// Entries exported so far.
    count: usize,
}

impl Export {
    fn new(journal: &str) -> Self {
        Export {
            journal: journal.to_string(),
            seen: std::collections::BTreeSet::new(),
            repeated: Vec::new(),
            count: 0,
        }
    }

    /// Exports and acknowledges every entry of the journal now.
    async fn drain(&mut self, store: &Store) {
        let entries = hongbao::store::journal::read(store, &self.journal, 10_000)
            .await
            .unwrap();
        let ids: Vec<String> = entries.iter().map(|e| e.stream_id.clone()).collect();
        for e in entries {
            if !self.seen.insert(e.event_id.clone()) {
                self.repeated.push(e.event_id);
            }
            self.count += 1;
        }
        hongbao::store::journal::ack(store, &self.journal, &ids)
            .await
            .unwrap();
    }
}

/// One entity kind's calls, as its checker sends them.
trait Entity {
    /// One call on the entity.
    type Op: Clone + std::fmt::Debug;

    /// The keys call `call` of `op` may touch (its script's `KEYS`).
    fn keys_of(&self, op: &Self::Op, call: &str) -> Vec<String>;

    /// Sends `op` with call id `call`: its answer.
    async fn send(&self, store: &Store, op: &Self::Op, call: &str) -> String;
}

/// A call a sequence sent: the call, its call id and its first answer.
type Sent<Op> = (Op, String, String);

/// The re-run step: sends again one of the calls in `sent` (drawn by `rng`), its call id and
/// arguments its first run's, and fails the sequence unless `same(sent call, answer)` judges
/// its answer its first one and it writes none of the keys its script may touch (their content
/// and `PEXPIRETIME`, [`snapshot`]).
async fn rerun_one<E: Entity>(
    entity: &E,
    store: &Store,
    sent: &[Sent<E::Op>],
    rng: &mut StdRng,
    trace: &mut Trace,
    same: impl Fn(&Sent<E::Op>, &str) -> bool,
) {
    let drawn = &sent[rng.random_range(0..sent.len())];
    let (op, call, first) = drawn;
    let touched = entity.keys_of(op, call);
    let before = snapshot(store, &touched).await;
    let again = entity.send(store, op, call).await;
    trace.push(format!("re-run of {op:?} call {call} -> {again}"));
    if !same(drawn, &again) {
        trace.fail(format!("answered {first} first"));
    }
    if snapshot(store, &touched).await != before {
        trace.fail("the re-run wrote");
    }
}

/// A sequence's steps so far, for the failure message.
struct Trace {
    /// The checker's seed.
    seed: u64,
    /// The sequence's number.
    sequence: usize,
    /// The backend it runs on.
    backend: Backend,
    /// One line per step: the call (or re-run) and its answer.
    lines: Vec<String>,
}

impl Trace {
    fn new(seed: u64, sequence: usize, backend: Backend) -> Self {
        Trace {
            seed,
            sequence,
            backend,
            lines: Vec::new(),
        }
    }

    fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    /// The failure text: the seed, the sequence, the backend, its steps and what broke.
    fn fail(&self, what: impl std::fmt::Display) -> ! {
        panic!(
            "re-run checker: seed {} (HONGBAO_RERUN_SEED), sequence {}, {}: {what}\n\
             steps:\n  {}",
            self.seed,
            self.sequence,
            self.backend,
            self.lines.join("\n  ")
        )
    }
}

/// Posts an article of the voting site by `poster` (one each: the daily post quota is per
/// poster): its id.
async fn post_article(store: &Store, poster: &str) -> hongbao::voting::ArticleId {
    use hongbao::voting::{self, NewArticle, PostOutcome};
    let new = NewArticle::new("t".into(), "https://example.com/".into()).unwrap();
    let PostOutcome::Posted(posted) = voting::post(store, poster, &new).await.unwrap() else {
        panic!("{poster}: the first post is within the quota")
    };
    posted.id
}
