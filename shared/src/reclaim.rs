//! reclaim-cron: refund expired red packets to their senders, exactly once.
//!
//! Due packets are found through the reclaim index (`{reclaim}:due`, packet id -> due time),
//! never `KEYS` or `SCAN`. Each run takes at most `HONGBAO_RECLAIM_BATCH` due entries (Redis
//! `TIME` decides what is due) and, for each:
//! 1. reads the sender (one `HGET`; a missing packet is a phantom entry, dropped once it is a
//!    minute overdue),
//! 2. runs `settle.lua` on the packet's slot: refund `total - claimed` to the sender's wallet
//!    (same slot) and mark the packet settled, once,
//! 3. re-drives claims still pending (their wallet credit is on another slot), then settles
//!    again so the keys get their retention TTL,
//! 4. removes the entry from the index.
//!
//! Every step is idempotent, so a crash anywhere is repaired by the next run, and overlapping
//! runs are harmless; a lock (see [`crate::lock`]) keeps them from doing the same work twice.

use redis::Value;
use serde::Serialize;

use crate::error::Error;
use crate::keys::{is_packet_id, Keys};
use crate::lock::Lock;
use crate::packets;
use crate::scripts::{self, int, texts};
use crate::store::Store;

/// A phantom index entry (no packet) is dropped only this long after its due time, so a
/// create-packet still in flight can never lose its index entry.
pub const PHANTOM_GRACE_MS: i64 = 60_000;

/// What one reclaim run did. Logged and returned by the reclaim-cron function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimSummary {
    /// Packets settled (refunded) by this run.
    pub settled: u64,
    /// Cents refunded to senders by this run.
    pub refunded_cents: i64,
    /// Pending claims whose wallet credit this run re-drove.
    pub redriven: u64,
    /// Index entries still due after this run (left for the next run).
    pub remaining_due: u64,
    /// Whether another run held the lock (this run then did nothing).
    pub skipped_locked: bool,
}

/// Settles up to `HONGBAO_RECLAIM_BATCH` due packets. See the module docs.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; the next run continues the work.
pub async fn run(store: &Store) -> Result<ReclaimSummary, Error> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let Some(lock) =
        Lock::try_acquire(store, &keys.reclaim_lock(), cfg.reclaim_lock_ttl_ms).await?
    else {
        return Ok(ReclaimSummary {
            skipped_locked: true,
            ..Default::default()
        });
    };
    let result = run_locked(store, &keys).await;
    // Release even after an error; if this fails too, the lock expires by itself.
    let released = lock.release(store).await;
    let summary = result?;
    released?;
    Ok(summary)
}

async fn redis_now_ms(conn: &mut crate::store::Conn) -> Result<i64, Error> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

async fn run_locked(store: &Store, keys: &Keys) -> Result<ReclaimSummary, Error> {
    let cfg = store.config();
    let due_key = keys.reclaim_due();
    let mut conn = store.conn().await?;
    let now = redis_now_ms(&mut conn).await?;
    let due: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&due_key)
        .arg("-inf")
        .arg(now)
        .arg("BYSCORE")
        .arg("LIMIT")
        .arg(0)
        .arg(cfg.reclaim_batch)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    let mut summary = ReclaimSummary::default();
    for (packet_id, due_at) in due {
        settle_one(store, keys, &packet_id, due_at, now, &mut summary).await?;
    }
    let remaining: u64 = redis::cmd("ZCOUNT")
        .arg(&due_key)
        .arg("-inf")
        .arg(redis_now_ms(&mut conn).await?)
        .query_async(&mut conn)
        .await?;
    summary.remaining_due = remaining;
    Ok(summary)
}

async fn settle_one(
    store: &Store,
    keys: &Keys,
    packet_id: &str,
    due_at: i64,
    now: i64,
    summary: &mut ReclaimSummary,
) -> Result<(), Error> {
    let cfg = store.config();
    let due_key = keys.reclaim_due();
    let mut conn = store.conn().await?;
    if !is_packet_id(packet_id) {
        let _: i64 = redis::cmd("ZREM")
            .arg(&due_key)
            .arg(packet_id)
            .query_async(&mut conn)
            .await?;
        return Ok(());
    }
    let pk = keys.packet(packet_id);
    let sender: Option<String> = redis::cmd("HGET")
        .arg(&pk.meta)
        .arg("sender_id")
        .query_async(&mut conn)
        .await?;
    let Some(sender) = sender else {
        if now >= due_at + PHANTOM_GRACE_MS {
            let _: i64 = redis::cmd("ZREM")
                .arg(&due_key)
                .arg(packet_id)
                .query_async(&mut conn)
                .await?;
        }
        return Ok(());
    };
    let wk = keys.wallet(&sender);
    // At most twice: settle (maybe reporting pending claims), re-drive them, settle again.
    for _ in 0..2 {
        let reply: Value = scripts::SETTLE
            .key(&pk.meta)
            .key(&pk.shares)
            .key(&pk.grabs)
            .key(&pk.order)
            .key(&pk.claims)
            .key(&wk.wallet)
            .key(&wk.ledger)
            .arg(packet_id)
            .arg(cfg.retention_secs)
            .arg(crate::config::LEDGER_CAP)
            .invoke_async(&mut conn)
            .await?;
        let reply = texts("settle", reply)?;
        match reply.first().map(String::as_str) {
            Some("missing") => break,
            Some("not_due") => {
                // The index entry was written just before the packet; move it to the real deadline.
                let expires_at = int("settle", reply.get(1))?;
                let _: i64 = redis::cmd("ZADD")
                    .arg(&due_key)
                    .arg("XX")
                    .arg(expires_at)
                    .arg(packet_id)
                    .query_async(&mut conn)
                    .await?;
                return Ok(());
            }
            Some("settled") => {
                count_settlement(&reply, summary)?;
                let _: i64 = redis::cmd("ZREM")
                    .arg(&due_key)
                    .arg(packet_id)
                    .query_async(&mut conn)
                    .await?;
                return Ok(());
            }
            Some("pending") => {
                count_settlement(&reply, summary)?;
                for pair in reply[3..].chunks(2) {
                    let amount = int("settle", pair.get(1))?;
                    packets::redrive_claim(store, packet_id, &pair[0], amount).await?;
                    summary.redriven += 1;
                }
            }
            _ => return Err(Error::bad_reply("settle", format!("{reply:?}"))),
        }
    }
    Ok(())
}

/// Adds a `settled`/`pending` reply of `settle.lua` to the summary if this call settled it.
fn count_settlement(reply: &[String], summary: &mut ReclaimSummary) -> Result<(), Error> {
    if int("settle", reply.get(2))? == 1 {
        summary.settled += 1;
        summary.refunded_cents += int("settle", reply.get(1))?;
    }
    Ok(())
}
