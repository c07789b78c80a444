//! reclaim-cron: refund expired red packets to their payers (a sender's wallet, a merchant
//! packet's budget), exactly once.
//!
//! Due packets are found through the reclaim index (`{reclaim}:due`, packet id -> due time),
//! never `KEYS` or `SCAN`. A run takes batches of at most `HONGBAO_RECLAIM_BATCH` due entries
//! (Redis `TIME` decides what is due) until nothing is due or its time budget is spent, and for
//! each entry:
//! 1. reads the payer (one `HMGET`: the sender, or a merchant packet's merchant and sharer;
//!    a missing packet is a phantom entry, dropped once it is a minute overdue, and moved to
//!    that minute until then),
//! 2. runs `settle.lua` on the packet's slot: refund `total - claimed` to the payer (the
//!    sender's wallet or the merchant's budget, same slot) and mark the packet settled, once,
//! 3. re-drives claims still pending (their wallet credit is on another slot), then settles
//!    again so the keys get their retention TTL,
//! 4. removes the entry from the index.
//!
//! A batch's packets are settled [`CONCURRENCY`] at a time.
//!
//! **One packet cannot block the others.** When any step for a packet fails (its slot's node or
//! a grabber's wallet node is down, a reply is malformed), the packet is counted in
//! [`ReclaimSummary::failed`], its entry is moved [`backoff_ms`] into the future (attempts are
//! counted in `{reclaim}:retries`) and the run goes on with the next entry. Every processed
//! entry is either removed or moved into the future, so a run never takes the same entry twice.
//! Only a failure of the index itself (the `{reclaim}` slot) ends a run early with an error.
//!
//! Every step is idempotent, so a crash anywhere is repaired by the next run, and overlapping
//! runs are harmless; a lock (see [`super::lock`]) keeps them from doing the same work twice.

use crate::store::scripts::SettleCall;
use std::time::{Duration, Instant};

use futures::StreamExt;
use redis::Value;
use serde::Serialize;

use super::error::Error;
use super::keys::{is_packet_id, Keys, PacketKeys};
use super::lock::Lock;
use super::scripts::{call_id, int, texts, Call};
use super::Store;
use crate::packets::claim::redrive::{redrive_claim, ClaimedPacket};
use crate::packets::rules::parse_claim_state;
use crate::packets::rules::Share;

pub use crate::packets::rules::{CREATE_WINDOW_MS, PHANTOM_GRACE_MS};

/// Packets of one batch settled at once. Each settlement is a few sequential round trips on the
/// packet's slot (and, for pending claims, the grabbers' slots); running this many side by side
/// on the multiplexed connection keeps the network busy instead of waiting on it.
pub const CONCURRENCY: usize = 32;

/// A run stops taking new batches this long before its lock expires (so two runs never work at
/// once) and before the Lambda deadline it was given.
pub const STOP_MARGIN: Duration = Duration::from_secs(5);

/// The wait before settlement attempt `attempt + 1` of a packet whose attempt `attempt` failed
/// (1-based): 5 s doubling per attempt, at most 10 minutes.
pub fn backoff_ms(attempt: u32) -> i64 {
    let exp = attempt.saturating_sub(1).min(16);
    (5_000i64 << exp).min(600_000)
}

/// What one reclaim run did. Logged and returned by the reclaim-cron function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimSummary {
    /// Packets settled (refunded) by this run.
    pub settled: u64,
    /// Cents refunded to senders (and merchants: unclaimed shares, unredeemed coupons) by
    /// this run.
    pub refunded_cents: i64,
    /// Pending claims whose wallet credit this run re-drove.
    pub redriven: u64,
    /// Packets whose settlement (or claim re-drive) failed in this run; each is retried after
    /// [`backoff_ms`].
    pub failed: u64,
    /// Batches read from the index.
    pub batches: u64,
    /// Index entries still due after this run (left for the next run).
    pub remaining_due: u64,
    /// Whether another run held the lock (this run then did nothing).
    pub skipped_locked: bool,
}

/// One reclaim run with the time budget of the lock (`HONGBAO_RECLAIM_LOCK_TTL_MS` less
/// [`STOP_MARGIN`]). See the module docs.
///
/// # Errors
/// [`Error::Unavailable`] when the reclaim index cannot be reached; the next run continues.
pub async fn run(store: &Store) -> Result<ReclaimSummary, Error> {
    run_until(store, None).await
}

/// One reclaim run that takes no new batch after `deadline` (the Lambda's deadline; a
/// [`STOP_MARGIN`] is kept before it), nor after the lock's lifetime less the margin.
///
/// # Errors
/// [`Error::Unavailable`] when the reclaim index cannot be reached; the next run continues.
pub async fn run_until(store: &Store, deadline: Option<Instant>) -> Result<ReclaimSummary, Error> {
    let cfg = store.config();
    let keys = Keys::new(&cfg.key_prefix);
    let started = Instant::now();
    let Some(lock) =
        Lock::try_acquire(store, &keys.reclaim_lock(), cfg.reclaim.lock_ttl_ms).await?
    else {
        return Ok(ReclaimSummary {
            skipped_locked: true,
            ..Default::default()
        });
    };
    let lock_end = started + Duration::from_millis(cfg.reclaim.lock_ttl_ms);
    let stop_at = deadline
        .map_or(lock_end, |d| d.min(lock_end))
        .checked_sub(STOP_MARGIN)
        .unwrap_or(started);
    let result = run_locked(store, &keys, stop_at).await;
    // Release even after an error; if this fails too, the lock expires by itself.
    let released = lock.release(store).await;
    let summary = result?;
    released?;
    Ok(summary)
}

/// Redis `TIME` of the index's node, Unix ms.
async fn redis_now_ms(conn: &mut super::Conn, keys: &Keys) -> Result<i64, Error> {
    let (secs, micros): (i64, i64) = conn
        .query_on_slot_of(&keys.reclaim_due(), &redis::cmd("TIME"))
        .await?;
    Ok(secs * 1000 + micros / 1000)
}

async fn run_locked(store: &Store, keys: &Keys, stop_at: Instant) -> Result<ReclaimSummary, Error> {
    let cfg = store.config();
    let due_key = keys.reclaim_due();
    let mut conn = store.conn().await?;
    let mut summary = ReclaimSummary::default();
    let mut seen = std::collections::HashSet::new();
    loop {
        let now = redis_now_ms(&mut conn, keys).await?;
        let due: Vec<(String, i64)> = redis::cmd("ZRANGE")
            .arg(&due_key)
            .arg("-inf")
            .arg(now)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(cfg.reclaim.batch)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?;
        if due.is_empty() {
            break;
        }
        summary.batches += 1;
        // Every entry handled is removed or moved into the future; an entry seen again (Redis
        // TIME stepped back, a concurrent writer) waits for the next run.
        let fresh: Vec<(String, i64)> = due
            .into_iter()
            .filter(|(id, _)| seen.insert(id.clone()))
            .collect();
        let progressed = !fresh.is_empty();
        let outcomes: Vec<(String, ReclaimSummary, Result<(), Error>)> =
            futures::stream::iter(fresh)
                .map(|(packet_id, due_at)| async move {
                    let mut part = ReclaimSummary::default();
                    let result = settle_one(store, keys, &packet_id, due_at, now, &mut part).await;
                    (packet_id, part, result)
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
        for (packet_id, part, result) in outcomes {
            summary.settled += part.settled;
            summary.refunded_cents += part.refunded_cents;
            summary.redriven += part.redriven;
            if let Err(e) = result {
                summary.failed += 1;
                let attempt: u32 = redis::cmd("HINCRBY")
                    .arg(keys.reclaim_retries())
                    .arg(&packet_id)
                    .arg(1)
                    .query_async(&mut conn)
                    .await?;
                let retry_at = now + backoff_ms(attempt);
                let _: i64 = redis::cmd("ZADD")
                    .arg(&due_key)
                    .arg("XX")
                    .arg(retry_at)
                    .arg(&packet_id)
                    .query_async(&mut conn)
                    .await?;
                tracing::warn!(packet_id, attempt, retry_at, error = %e, "settlement failed; retrying later");
            }
        }
        if !progressed || Instant::now() >= stop_at {
            break;
        }
    }
    let remaining: u64 = redis::cmd("ZCOUNT")
        .arg(&due_key)
        .arg("-inf")
        .arg(redis_now_ms(&mut conn, keys).await?)
        .query_async(&mut conn)
        .await?;
    summary.remaining_due = remaining;
    Ok(summary)
}

/// Removes a packet's index entry and its failure count (both on the `{reclaim}` slot).
async fn forget_entry(conn: &mut super::Conn, keys: &Keys, packet_id: &str) -> Result<(), Error> {
    let _: (i64, i64) = redis::pipe()
        .atomic()
        .cmd("ZREM")
        .arg(keys.reclaim_due())
        .arg(packet_id)
        .cmd("HDEL")
        .arg(keys.reclaim_retries())
        .arg(packet_id)
        .query_async(conn)
        .await?;
    Ok(())
}

/// The account a packet's settlement refunds, as [`SettleCall`] takes it: the sender's wallet
/// (its hash, ledger, "sent" history and journal), or a merchant packet's budget (its hash,
/// ledger and journal; a merchant has no "sent" history, so its ledger stands in for that key,
/// which `lua/settle.lua` then leaves alone).
#[derive(Debug, Clone)]
pub struct Payer {
    /// The wallet's or the merchant's hash.
    pub hash: String,
    /// Its ledger list.
    pub ledger: String,
    /// The sender's "sent" history; a merchant's ledger.
    pub sent: String,
    /// The money journal of its tag.
    pub journal: String,
}

impl Payer {
    /// User `user_id`'s wallet.
    pub fn wallet(keys: &Keys, user_id: &str) -> Payer {
        let w = keys.wallet(user_id);
        Payer {
            hash: w.wallet,
            ledger: w.ledger,
            sent: w.sent,
            journal: w.journal,
        }
    }

    /// Merchant `merchant_id`'s budget.
    pub fn merchant(keys: &Keys, merchant_id: &str) -> Payer {
        let m = keys.merchant(merchant_id);
        Payer {
            hash: m.merchant,
            sent: m.ledger.clone(),
            ledger: m.ledger,
            journal: m.journal,
        }
    }
}

impl<'a> SettleCall<'a> {
    /// The settle call of packet `packet_id` (its keys `pk`) refunding `payer`: the packet's
    /// keys are kept `retention_secs` s once settled, the payer's ledger `ledger_cap` items;
    /// `call_id` is this call's id (its re-run answers its first answer).
    pub fn of(
        pk: &'a PacketKeys,
        payer: &'a Payer,
        packet_id: &'a str,
        retention_secs: u64,
        ledger_cap: u32,
        call_id: &'a str,
    ) -> SettleCall<'a> {
        SettleCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            order: &pk.order,
            claims: &pk.claims,
            wallet: &payer.hash,
            ledger: &payer.ledger,
            recipients: &pk.recipients,
            sent: &payer.sent,
            journal: &payer.journal,
            coupons: &pk.coupons,
            tickets: &pk.tickets,
            packet_id,
            retention_secs,
            ledger_cap,
            call_id,
        }
    }
}

/// `settle.lua`'s reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SettleReply {
    /// `missing`: the packet's keys are gone (retention passed).
    Missing,
    /// `draw_due`: a draw packet's draw is due: run it first.
    DrawDue,
    /// `not_due <expires_at>`: the packet expires at `expires_at_ms` (Unix ms).
    NotDue {
        /// The packet's `expires_at`, Unix ms.
        expires_at_ms: i64,
    },
    /// `settled <refund> <settled_now> <coupon_refund>`: the packet is settled (now or
    /// before), a coupon packet's unredeemed coupons refunded too.
    Settled(Settlement),
    /// `coupons_open <refund> <settled_now> <redeem_by>`: settled, but the coupon packet's
    /// coupons are redeemable until `redeem_by_ms` (Unix ms): settle again then.
    CouponsOpen(Settlement, i64),
    /// `pending <refund> <settled_now> (<user> <share record> <claim state>)*`: claims to
    /// re-drive first.
    Pending(Settlement, Vec<PendingClaim>),
}

/// The refund of a `settled` or `pending` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settlement {
    /// Whether this call settled the packet.
    settled_now: bool,
    /// The refund this call made, cents (0 unless `settled_now`).
    refunded_cents: i64,
    /// The unredeemed coupons this call refunded, cents.
    coupon_refund_cents: i64,
}

/// A claim `settle.lua` found pending.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingClaim {
    /// The grabber.
    user_id: String,
    /// Their share.
    share: Share,
    /// When they claimed it, Unix ms.
    claimed_at_ms: i64,
}

impl SettleCall<'_> {
    /// `settle.lua`'s reply as a [`SettleReply`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn reply(reply: Value) -> Result<SettleReply, Error> {
        let reply = texts("settle", reply)?;
        let settlement = |reply: &[String]| -> Result<Settlement, Error> {
            let settled_now = int("settle", reply.get(2))? == 1;
            Ok(Settlement {
                settled_now,
                refunded_cents: if settled_now {
                    int("settle", reply.get(1))?
                } else {
                    0
                },
                coupon_refund_cents: 0,
            })
        };
        Ok(match reply.first().map(String::as_str) {
            Some("missing") => SettleReply::Missing,
            Some("draw_due") => SettleReply::DrawDue,
            Some("not_due") => SettleReply::NotDue {
                expires_at_ms: int("settle", reply.get(1))?,
            },
            Some("settled") => SettleReply::Settled(Settlement {
                // Replies of scripts loaded before coupon payouts have no fourth element.
                coupon_refund_cents: match reply.get(3) {
                    None => 0,
                    some => int("settle", some)?,
                },
                ..settlement(&reply)?
            }),
            Some("coupons_open") => {
                SettleReply::CouponsOpen(settlement(&reply)?, int("settle", reply.get(3))?)
            }
            Some("pending") => {
                let settlement = settlement(&reply)?;
                let mut claims = Vec::new();
                for claim in reply[3..].chunks(3) {
                    let [user, share, state] = claim else {
                        return Err(Error::bad_reply("settle", "short pending claim"));
                    };
                    let (_, claimed_at_ms) = parse_claim_state(state)?;
                    claims.push(PendingClaim {
                        user_id: user.clone(),
                        share: Share::parse(share)?,
                        claimed_at_ms,
                    });
                }
                SettleReply::Pending(settlement, claims)
            }
            _ => return Err(Error::bad_reply("settle", format!("{reply:?}"))),
        })
    }
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
        return forget_entry(&mut conn, keys, packet_id).await;
    }
    let pk = keys.packet(packet_id);
    let (sender, sharer, merchant): (Option<String>, Option<String>, Option<String>) =
        redis::cmd("HMGET")
            .arg(&pk.meta)
            .arg("sender_id")
            .arg("sharer_id")
            .arg("merchant_id")
            .query_async(&mut conn)
            .await?;
    let Some(sender) = sender.or(sharer) else {
        if now >= due_at + PHANTOM_GRACE_MS {
            return forget_entry(&mut conn, keys, packet_id).await;
        }
        // Not yet a minute overdue: a create may still be in flight. Look again then.
        let _: i64 = redis::cmd("ZADD")
            .arg(&due_key)
            .arg("XX")
            .arg(due_at + PHANTOM_GRACE_MS)
            .arg(packet_id)
            .query_async(&mut conn)
            .await?;
        return Ok(());
    };
    // The payer's account: the sender's wallet, or a merchant packet's budget (same slot).
    let payer = match &merchant {
        Some(m) => Payer::merchant(keys, m),
        None => Payer::wallet(keys, &sender),
    };
    // At most three times: a draw packet's draw first, then settle (maybe reporting pending
    // claims), re-drive them, settle again.
    for _ in 0..3 {
        let call = call_id();
        let reply: Value = SettleCall::of(
            &pk,
            &payer,
            packet_id,
            cfg.packets.retention_secs,
            crate::wallet::rules::LEDGER_CAP,
            &call,
        )
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        match SettleCall::reply(reply)? {
            SettleReply::Missing => {
                // Gone between the HGET and now (retention passed): nothing left to refund.
                return forget_entry(&mut conn, keys, packet_id).await;
            }
            SettleReply::DrawDue => {
                crate::packets::draw::run(store, packet_id).await?;
            }
            SettleReply::NotDue { expires_at_ms } => {
                // The index entry was written just before the packet; move it to the real deadline.
                let _: i64 = redis::cmd("ZADD")
                    .arg(&due_key)
                    .arg("XX")
                    .arg(expires_at_ms)
                    .arg(packet_id)
                    .query_async(&mut conn)
                    .await?;
                return Ok(());
            }
            SettleReply::Settled(settlement) => {
                count_settlement(settlement, summary);
                return forget_entry(&mut conn, keys, packet_id).await;
            }
            SettleReply::CouponsOpen(settlement, redeem_by_ms) => {
                // The coupons' second phase: the entry moves to their redeem_by (and its
                // failure count goes; the first phase is done).
                count_settlement(settlement, summary);
                let _: (i64, i64) = redis::pipe()
                    .atomic()
                    .cmd("ZADD")
                    .arg(&due_key)
                    .arg("XX")
                    .arg(redeem_by_ms)
                    .arg(packet_id)
                    .cmd("HDEL")
                    .arg(keys.reclaim_retries())
                    .arg(packet_id)
                    .query_async(&mut conn)
                    .await?;
                return Ok(());
            }
            SettleReply::Pending(settlement, claims) => {
                count_settlement(settlement, summary);
                for claim in claims {
                    let packet = ClaimedPacket {
                        packet_id,
                        sender_id: &sender,
                        merchant_id: merchant.as_deref(),
                    };
                    redrive_claim(
                        store,
                        packet,
                        &claim.user_id,
                        &claim.share,
                        claim.claimed_at_ms,
                        true,
                        &call_id(),
                    )
                    .await?;
                    summary.redriven += 1;
                }
            }
        }
    }
    Err(Error::Internal(format!(
        "packet {packet_id}: claims still pending after their re-drive"
    )))
}

/// Adds a `settled`/`pending` reply of `settle.lua` to the summary if this call settled it.
fn count_settlement(settlement: Settlement, summary: &mut ReclaimSummary) {
    if settlement.settled_now {
        summary.settled += 1;
        summary.refunded_cents += settlement.refunded_cents;
    }
    summary.refunded_cents += settlement.coupon_refund_cents;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_ten_minutes() {
        assert_eq!(backoff_ms(1), 5_000);
        assert_eq!(backoff_ms(2), 10_000);
        assert_eq!(backoff_ms(7), 320_000);
        assert_eq!(backoff_ms(8), 600_000);
        assert_eq!(backoff_ms(u32::MAX), 600_000);
        assert_eq!(backoff_ms(0), 5_000);
    }
}
