//! Money-conservation audit, for tests, the demo and operators.
//!
//! The invariant: sum of wallet balances + money held by packets = sum of deposits, where a
//! packet holds `total - refunded - credited claims` cents (a claim is credited once its wallet
//! transfer record exists). This reads per packet and per wallet; it is an audit tool, not a
//! request path.

use crate::error::Error;
use crate::keys::{is_packet_id, Keys};
use crate::store::Store;

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
            let transfer_id = crate::wallet::claim_transfer_id(packet_id);
            let (recorded, legacy): (bool, bool) = redis::pipe()
                .cmd("HEXISTS")
                .arg(keys.wallet(&user).records)
                .arg(&transfer_id)
                .cmd("EXISTS")
                .arg(keys.legacy_transfer(&user, &transfer_id))
                .query_async(&mut conn)
                .await?;
            recorded || legacy
        };
        if applied {
            let record: String = redis::cmd("HGET")
                .arg(&pk.grabs)
                .arg(&user)
                .query_async(&mut conn)
                .await?;
            credited += crate::packets::Share::parse(&record)?.amount_cents;
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
}

impl Totals {
    /// Wallets plus packets, cents: must equal the sum of deposits.
    pub fn total(&self) -> i64 {
        self.wallets_cents + self.packets_cents
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
    let mut t = Totals::default();
    for u in users {
        t.wallets_cents += crate::wallet::balance(store, u).await?;
    }
    for p in packet_ids {
        t.packets_cents += packet_holding(store, p).await?;
    }
    Ok(t)
}
