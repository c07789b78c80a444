//! The money journal on Redis: one stream per hash tag, `<prefix>:{<tag>}:journal`, written by
//! every script that moves money (`lua/journal.lua`) and drained by ledger-export.
//!
//! Wallets and packets carry 4-hex-digit hash tags ([`super::keys::user_tag`]), so there are
//! exactly 65,536 journals, named without `SCAN`. A pass finds the journals that hold entries
//! with `EXISTS`, several journals per command ([`JournalIndex`]): on a cluster the keys of
//! one command share a hash slot (13,152 commands: the slots that hold any of the tags, about
//! 5 journals each), on one server 1,024 keys per command (64 commands). Only journals with
//! entries are then read (`XRANGE`) and acknowledged ([`ack`], `lua/journal_ack.lua`: `XDEL`,
//! and `DEL` of a journal left empty, so an idle pass finds nothing).
//!
//! The journals have no TTL: under a `volatile-*` eviction policy they are never evicted, like
//! the idempotency records (`HONGBAO_*` functions refuse to start under `allkeys-*`).

use crate::store::scripts::JournalAckCall;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use futures::stream::{self, StreamExt, TryStreamExt};
use redis::Value;

use super::error::Error;
use super::keys::Keys;
use super::scripts::Call;
use super::Store;
pub use crate::domain::journal::{Entry, Kind};

/// Hash tags of wallets and packets (4 hex digits), hence journals.
pub const JOURNALS: usize = 65_536;

/// Redis Cluster's hash slots.
const SLOTS: usize = 16_384;

/// Journal keys per `EXISTS` on one server.
const KEYS_PER_EXISTS: usize = 1_024;

/// `EXISTS` commands in flight at once during a pass.
const IN_FLIGHT: usize = 64;

/// The hash slot of `key` (CRC16-XMODEM of its hash tag, mod 16,384: the Redis Cluster spec).
pub fn hash_slot(key: &str) -> u16 {
    // The tag: between the first `{` and the first `}` after it, if not empty.
    let tag = key
        .find('{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.find('}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key);
    (crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes()) as usize % SLOTS) as u16
}

/// Every journal's key, grouped so that one `EXISTS` covers a group: by hash slot on a
/// cluster connection, 1,024 at a time on one server. Each grouping is built on first use and
/// kept (65,536 keys, about 3 MB); build one index per process.
#[derive(Debug)]
pub struct JournalIndex {
    prefix: String,
    by_slot: OnceLock<Vec<Vec<String>>>,
    by_count: OnceLock<Vec<Vec<String>>>,
}

impl JournalIndex {
    /// The journals under `prefix` (`HONGBAO_KEY_PREFIX`).
    pub fn new(prefix: &str) -> Self {
        JournalIndex {
            prefix: prefix.to_string(),
            by_slot: OnceLock::new(),
            by_count: OnceLock::new(),
        }
    }

    fn all(&self) -> impl Iterator<Item = String> + '_ {
        let keys = Keys::new(&self.prefix);
        (0..JOURNALS).map(move |t| keys.journal_of_tag(&format!("{t:04x}")))
    }

    /// The groups for a cluster connection (`cluster`) or for one server.
    fn groups(&self, cluster: bool) -> &[Vec<String>] {
        if cluster {
            self.by_slot.get_or_init(|| {
                let mut by_slot: Vec<Vec<String>> = vec![Vec::new(); SLOTS];
                for key in self.all() {
                    by_slot[hash_slot(&key) as usize].push(key);
                }
                by_slot.retain(|g| !g.is_empty());
                by_slot
            })
        } else {
            self.by_count.get_or_init(|| {
                let all: Vec<String> = self.all().collect();
                all.chunks(KEYS_PER_EXISTS)
                    .map(<[String]>::to_vec)
                    .collect()
            })
        }
    }

    /// The `EXISTS` commands one idle pass sends on a cluster (`cluster`) or on one server.
    pub fn commands(&self, cluster: bool) -> usize {
        self.groups(cluster).len()
    }
}

/// The journals that hold entries (one pass: [`JournalIndex::commands`] `EXISTS`, then one
/// `XLEN` per journal of each group that holds any: a journal emptied by its last ack exists,
/// empty, for [`EMPTY_JOURNAL_KEEP_MS`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn pending(store: &Store, index: &JournalIndex) -> Result<Vec<String>, Error> {
    let conn = store.conn().await?;
    let groups = index.groups(conn.is_cluster());
    // Streams over indices, not references: the futures stay `Send` for any caller.
    let exists = |keys: &[String]| {
        let mut conn = conn.clone();
        let cmd = {
            let mut c = redis::cmd("EXISTS");
            c.arg(keys);
            c
        };
        async move { cmd.query_async::<u64>(&mut conn).await.map_err(Error::from) }
    };
    let busy: Vec<usize> = stream::iter(0..groups.len())
        .map(|g| {
            let query = exists(&groups[g]);
            async move { Ok::<_, Error>((query.await? > 0).then_some(g)) }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_filter_map(|g| async move { Ok(g) })
        .try_collect()
        .await?;
    let candidates: Vec<&String> = busy.iter().flat_map(|&g| &groups[g]).collect();
    let len = |key: &String| {
        let mut conn = conn.clone();
        let cmd = {
            let mut c = redis::cmd("XLEN");
            c.arg(key);
            c
        };
        async move { cmd.query_async::<u64>(&mut conn).await.map_err(Error::from) }
    };
    let mut keys: Vec<String> = stream::iter(0..candidates.len())
        .map(|i| {
            let query = len(candidates[i]);
            async move { Ok::<_, Error>((query.await? > 0).then_some(i)) }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_filter_map(|i| async move { Ok(i) })
        .map_ok(|i| candidates[i].clone())
        .try_collect()
        .await?;
    keys.sort();
    Ok(keys)
}

/// The oldest `count` entries of journal `key` (`XRANGE key - + COUNT count`), oldest first.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for an entry that
/// is not a journal entry.
pub async fn read(store: &Store, key: &str, count: usize) -> Result<Vec<Entry>, Error> {
    let mut conn = store.conn().await?;
    let reply: Value = redis::cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .arg("COUNT")
        .arg(count)
        .query_async(&mut conn)
        .await?;
    parse_range(key, reply)
}

/// Entries of an `XRANGE` or `XREVRANGE` reply (`[[id, [field, value, ...]], ...]`) of journal
/// `key`, in its order.
///
/// # Errors
/// [`Error::Internal`] for a reply of another shape or an entry that is not a journal entry.
pub fn parse_range(key: &str, reply: Value) -> Result<Vec<Entry>, Error> {
    let bad = |what: String| Error::bad_reply("journal", what);
    let Value::Array(items) = reply else {
        return Err(bad(format!("{reply:?}")));
    };
    items
        .into_iter()
        .map(|item| {
            let (id, pairs): (String, Vec<(String, String)>) =
                redis::FromRedisValue::from_redis_value(item).map_err(|e| bad(e.to_string()))?;
            let fields: BTreeMap<String, String> = pairs.into_iter().collect();
            Ok(Entry::from_fields(key, &id, &fields)?)
        })
        .collect()
}

/// How long an emptied journal is kept, ms: the Redis nodes' clock margin
/// ([`crate::packets::rules::NODE_CLOCK_MARGIN_SECS`]). While it exists it keeps its last
/// stream id, so the next entry's id is past it even in the same millisecond or after a
/// failover to a node whose clock is behind: a journal's stream ids, and so its entries'
/// event ids, are never given twice.
pub const EMPTY_JOURNAL_KEEP_MS: u64 = crate::packets::rules::NODE_CLOCK_MARGIN_SECS * 1000;

/// Marks entries of journal `key` exported: deletes them (`XDEL`); an emptied journal expires
/// [`EMPTY_JOURNAL_KEEP_MS`] later unless an entry is added (`lua/journal_ack.lua`). Returns the entries left. Deleting an entry twice (a run
/// re-acknowledging) changes nothing.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the entries stay, and are published
/// again by the next run: at-least-once).
pub async fn ack(store: &Store, key: &str, stream_ids: &[String]) -> Result<u64, Error> {
    if stream_ids.is_empty() {
        return Ok(0);
    }
    let mut conn = store.conn().await?;
    Ok(JournalAckCall {
        journal: key,
        empty_keep_ms: EMPTY_JOURNAL_KEEP_MS,
        stream_ids,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?)
}

/// The oldest entry's time (Redis `TIME`, Unix ms) among `keys`' journals, `None` when all are
/// empty (`XRANGE key - + COUNT 1` each).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn oldest_at_ms(store: &Store, keys: &[String]) -> Result<Option<i64>, Error> {
    let conn = store.conn().await?;
    let firsts: Vec<Option<i64>> = stream::iter(0..keys.len())
        .map(|i| {
            let mut conn = conn.clone();
            let mut cmd = redis::cmd("XRANGE");
            cmd.arg(&keys[i]).arg("-").arg("+").arg("COUNT").arg(1);
            let key = &keys[i];
            async move {
                let reply: Value = cmd.query_async(&mut conn).await?;
                Ok::<_, Error>(parse_range(key, reply)?.first().map(|e| e.at_ms))
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(firsts.into_iter().flatten().min())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_cluster_spec() {
        // The Redis Cluster specification's example, and CLUSTER KEYSLOT answers.
        assert_eq!(hash_slot("123456789"), 0x31c3);
        assert_eq!(hash_slot("foo"), 12182);
        assert_eq!(hash_slot("{user1000}.following"), hash_slot("user1000"));
        assert_eq!(hash_slot("hb:{0000}:journal"), hash_slot("0000"));
    }

    #[test]
    fn the_index_names_every_journal_once() {
        let index = JournalIndex::new("hb");
        for cluster in [false, true] {
            let mut keys: Vec<&String> = index.groups(cluster).iter().flatten().collect();
            assert_eq!(keys.len(), JOURNALS);
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), JOURNALS);
            if cluster {
                // The slots that hold any of the 65,536 tags (`make bench` counts the same).
                assert_eq!(index.commands(true), 13_152);
                for g in index.groups(true) {
                    assert!(g.iter().all(|k| hash_slot(k) == hash_slot(&g[0])));
                }
            } else {
                assert_eq!(index.commands(false), JOURNALS / KEYS_PER_EXISTS);
            }
        }
    }
}
