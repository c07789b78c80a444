//! Money-conservation audit, for tests, the demo and operators.
//!
//! The invariant: sum of wallet balances + merchant budgets' balances + money held by packets
//! = sum of deposits − sum of withdrawals (the wallets' and the merchants'), where a packet
//! holds `total - refunded - credited claims` cents (a claim is credited once its wallet
//! transfer record exists); a merchant packet's cents are its merchant's `reserved` and
//! `paid_cash`, which are not counted again. A share claimed as a coupon leaves the packet
//! for its merchant's `outstanding` coupons, then `paid_coupons` once redeemed: both are
//! counted ([`Totals::coupons_cents`]), as money still owed or spent on a discount. This reads per packet and per wallet; it
//! is an audit tool, not a request path. The integration tests check the invariant at
//! checkpoints and at the end of a run.
//!
//! Conservation alone cannot see money that is *stuck*: a packet that lost its reclaim-index
//! entry still "holds" its money, and nobody will ever refund it. [`stuck_packets`] finds such
//! packets (with `SCAN`, which is fine for an operations tool).

use super::error::Error;
use super::keys::{is_packet_id, Keys};
use super::Store;

/// Cents packet `packet_id` holds: not yet refunded and not yet credited to a grabber.
/// 0 for a packet that does not exist (or whose settled records have expired).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn packet_holding(store: &Store, packet_id: &str) -> Result<i64, Error> {
    if !is_packet_id(packet_id) {
        return Ok(0);
    }
    let keys = Keys::new(&store.config().key_prefix);
    let pk = keys.packet(packet_id);
    let mut conn = store.conn().await?;
    let (total, refunded): (Option<i64>, Option<i64>) = redis::cmd("HMGET")
        .arg(&pk.meta)
        .arg("total_cents")
        .arg("refunded_cents")
        .query_async(&mut conn)
        .await?;
    let Some(total) = total else { return Ok(0) };
    let claims: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(&pk.claims)
        .query_async(&mut conn)
        .await?;
    let mut credited = 0;
    for (user, state) in claims {
        let applied = if state.starts_with("done:") {
            true
        } else {
            let transfer_id = crate::wallet::rules::claim_transfer_id(packet_id);
            redis::cmd("HEXISTS")
                .arg(keys.wallet(&user).records)
                .arg(&transfer_id)
                .query_async(&mut conn)
                .await?
        };
        if applied {
            let record: String = redis::cmd("HGET")
                .arg(&pk.grabs)
                .arg(&user)
                .query_async(&mut conn)
                .await?;
            credited += crate::packets::rules::Share::parse(&record)?.amount_cents;
        }
    }
    Ok(total - refunded.unwrap_or(0) - credited)
}

/// The audit of a set of wallets and packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Sum of the wallets' balances, cents.
    pub wallets_cents: i64,
    /// Sum of the packets' holdings, cents.
    pub packets_cents: i64,
    /// Sum of the merchant budgets' balances, cents ([`totals_of`]; 0 from [`totals`]).
    pub merchants_cents: i64,
    /// Sum of the merchants' coupons issued from shares, outstanding or redeemed, cents
    /// ([`totals_of`]; 0 from [`totals`]).
    pub coupons_cents: i64,
}

impl Totals {
    /// Wallets plus merchant budgets plus packets plus coupons, cents: must equal the sum of
    /// deposits less the sum of withdrawals.
    pub fn total(&self) -> i64 {
        self.wallets_cents + self.merchants_cents + self.packets_cents + self.coupons_cents
    }
}

/// Sums the balances of `users` and the holdings of `packet_ids`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn totals(
    store: &Store,
    users: &[String],
    packet_ids: &[String],
) -> Result<Totals, Error> {
    totals_of(store, users, &[], packet_ids).await
}

/// Sums the balances of `users`, the budgets' balances of `merchants` and the holdings of
/// `packet_ids` (user and merchant packets alike).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn totals_of(
    store: &Store,
    users: &[String],
    merchants: &[String],
    packet_ids: &[String],
) -> Result<Totals, Error> {
    let mut t = Totals::default();
    for m in merchants {
        let books = crate::merchants::get::store::get(store, m, 0).await?.books;
        t.merchants_cents += books.balance_cents;
        t.coupons_cents += books.outstanding_coupon_cents + books.paid_coupon_cents;
    }
    for u in users {
        t.wallets_cents += crate::wallet::get::store::balance(store, u).await?;
    }
    for p in packet_ids {
        t.packets_cents += packet_holding(store, p).await?;
    }
    Ok(t)
}

/// A funded packet past its deadline that reclaim-cron will never see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StuckPacket {
    /// The packet.
    pub packet_id: String,
    /// Its deadline, Unix ms (Redis `TIME`): `expires_at`, or a coupon packet's `redeem_by`.
    pub expires_at_ms: i64,
    /// Cents it holds (see [`packet_holding`]).
    pub held_cents: i64,
}

/// Every packet that is not settled, whose `expires_at` (by Redis `TIME`) has passed, and that
/// has no entry in the reclaim index: money that no reclaim run will refund; and every coupon
/// packet settled but for its coupons, past their `redeem_by` without an entry (its
/// `expires_at_ms` is then the `redeem_by`, its held cents the coupons never redeemed). `SCAN`s every
/// master (see [`super::Conn::scan_keys`]); meant for audits, the demo and operators.
/// Repair by putting the id back into the index (`ZADD <prefix>:{reclaim}:due <expires_at> <id>`).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn stuck_packets(store: &Store) -> Result<Vec<StuckPacket>, Error> {
    let prefix = &store.config().key_prefix;
    let keys = Keys::new(prefix);
    let mut conn = store.conn().await?;
    let (secs, micros): (i64, i64) = conn
        .query_on_slot_of(&keys.reclaim_due(), &redis::cmd("TIME"))
        .await?;
    let now = secs * 1000 + micros / 1000;
    let mut stuck = Vec::new();
    for key in conn
        .scan_keys(&format!("{prefix}:{{*}}:packet:*"), "hash")
        .await?
    {
        // Meta hashes end in the packet id; the other packet keys have a suffix.
        let Some(packet_id) = key.rsplit(':').next().filter(|id| is_packet_id(id)) else {
            continue;
        };
        if keys.packet(packet_id).meta != key {
            continue;
        }
        type Fields = (
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
        let (status, expires_at, redeem_by, coupons_settled, open): Fields = redis::cmd("HMGET")
            .arg(&key)
            .arg("status")
            .arg("expires_at")
            .arg("redeem_by")
            .arg("coupons_settled_at")
            .arg("coupon_open_cents")
            .query_async(&mut conn)
            .await?;
        let (Some(status), Some(expires_at)) = (status, expires_at) else {
            continue;
        };
        // A coupon packet settled at expiry is due again at its coupons' redeem_by.
        let (due_at, coupons_due) = match (status.as_str(), redeem_by, coupons_settled) {
            ("settled", Some(by), None) => (by, true),
            ("settled", _, _) => continue,
            _ => (expires_at, false),
        };
        if due_at > now {
            continue;
        }
        let indexed: Option<f64> = redis::cmd("ZSCORE")
            .arg(keys.reclaim_due())
            .arg(packet_id)
            .query_async(&mut conn)
            .await?;
        if indexed.is_none() {
            stuck.push(StuckPacket {
                packet_id: packet_id.to_string(),
                expires_at_ms: due_at,
                held_cents: if coupons_due {
                    open.unwrap_or(0)
                } else {
                    packet_holding(store, packet_id).await?
                },
            });
        }
    }
    stuck.sort_by(|a, b| a.packet_id.cmp(&b.packet_id));
    Ok(stuck)
}

/// One movement as an exported event reports it (the `detail` of a ledger-export event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedMovement {
    /// The event's `event_id` (a duplicate delivery repeats it).
    pub event_id: String,
    /// Whose wallet.
    pub user_id: String,
    /// Signed amount, cents.
    pub amount_cents: i64,
}

/// One user's line of a [`Reconciliation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserReconciliation {
    /// The user.
    pub user_id: String,
    /// Their balance in Redis now, cents.
    pub balance_cents: i64,
    /// The sum of their distinct events' amounts, cents.
    pub events_cents: i64,
    /// Their distinct events.
    pub events: usize,
}

impl UserReconciliation {
    /// Balance less the events' sum, cents: 0 when the events account for the whole balance;
    /// otherwise money moved without an event reaching the feed (or before the journal
    /// existed: a wallet's balance from before the upgrade shows here as a positive gap).
    pub fn gap_cents(&self) -> i64 {
        self.balance_cents - self.events_cents
    }
}

/// Exported events against the wallets: per user, balance = sum of the events' amounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciliation {
    /// Every user of the events, by user id.
    pub users: Vec<UserReconciliation>,
    /// Events given, duplicates included.
    pub events: usize,
    /// Deliveries dropped as duplicates (an `event_id` seen before).
    pub duplicates: usize,
}

impl Reconciliation {
    /// The users whose balance the events do not account for.
    pub fn gaps(&self) -> Vec<&UserReconciliation> {
        self.users.iter().filter(|u| u.gap_cents() != 0).collect()
    }
}

/// Reconciles exported events (at-least-once: duplicates are dropped by `event_id`) with the
/// wallets in Redis: per user of the events, the balance now and the sum of their events.
/// Run it when no money moves (or once the feed has caught up: `LedgerExportLagMs` 0).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] when one
/// `event_id` comes with two different users or amounts (not a duplicate: a corrupt feed).
pub async fn reconcile(
    store: &Store,
    events: &[ExportedMovement],
) -> Result<Reconciliation, Error> {
    use std::collections::btree_map::{BTreeMap, Entry};
    let mut seen: BTreeMap<&str, &ExportedMovement> = BTreeMap::new();
    let mut duplicates = 0;
    for e in events {
        match seen.entry(&e.event_id) {
            Entry::Vacant(v) => {
                v.insert(e);
            }
            Entry::Occupied(o) if *o.get() == e => duplicates += 1,
            Entry::Occupied(o) => {
                return Err(Error::bad_reply(
                    "reconcile",
                    format!(
                        "event {} twice with different contents: {:?} {e:?}",
                        o.key(),
                        o.get()
                    ),
                ))
            }
        }
    }
    let mut sums: BTreeMap<&str, (i64, usize)> = BTreeMap::new();
    for e in seen.values() {
        let s = sums.entry(&e.user_id).or_default();
        s.0 += e.amount_cents;
        s.1 += 1;
    }
    let mut users = Vec::with_capacity(sums.len());
    for (user, (events_cents, n)) in sums {
        users.push(UserReconciliation {
            user_id: user.to_string(),
            balance_cents: crate::wallet::get::store::balance(store, user).await?,
            events_cents,
            events: n,
        });
    }
    Ok(Reconciliation {
        users,
        events: events.len(),
        duplicates,
    })
}
