//! `GET /merchants/{merchant_id}/packets`'s store step: a page of the merchant's packets,
//! newest first, from its packets index (a sorted set by `created_at`, written by
//! `merchant_create_packet.lua`), each packet read as `GET /packets/{id}` reads it, without its grabs.

use crate::merchants::rules::PacketsCursor;
use crate::packets::rules::PacketView;
use crate::packets::view::store::summaries;
use crate::store::keys::Keys;
use crate::store::{Error, Store};

/// A page of a merchant's packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketsPage {
    /// The packets, newest first; a packet whose keys are gone (its retention passed) is left
    /// out, so a page may hold fewer than asked.
    pub packets: Vec<PacketView>,
    /// Where the next page starts; `None` after the last page.
    pub next: Option<PacketsCursor>,
}

/// Up to `limit` of `merchant_id`'s packets created before `before` (newest first; from the
/// newest when `None`). Paging is stable while packets are created: the order is
/// (`created_at`, packet id) descending, and a cursor is the last item's pair.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub async fn list_packets(
    store: &Store,
    merchant_id: &str,
    limit: u32,
    before: Option<&PacketsCursor>,
) -> Result<PacketsPage, Error> {
    let index = Keys::new(&store.config().key_prefix)
        .merchant(merchant_id)
        .packets;
    let mut conn = store.conn().await?;
    let mut candidates: Vec<(String, i64)> = Vec::new();
    let upper = match before {
        Some(c) => {
            // Packets of the cursor's very millisecond that sort before it (rare: one
            // merchant's creates in the same ms), then everything older.
            let mut same: Vec<(String, i64)> = redis::cmd("ZRANGE")
                .arg(&index)
                .arg(c.created_at_ms)
                .arg(c.created_at_ms)
                .arg("BYSCORE")
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await?;
            same.retain(|(id, _)| id.as_str() < c.packet_id.as_str());
            same.sort_by(|a, b| b.0.cmp(&a.0));
            candidates.extend(same);
            format!("({}", c.created_at_ms)
        }
        None => "+inf".to_string(),
    };
    let older: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&index)
        .arg(upper)
        .arg("-inf")
        .arg("BYSCORE")
        .arg("REV")
        .arg("LIMIT")
        .arg(0)
        .arg(limit)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    candidates.extend(older);
    candidates.truncate(limit as usize);
    let next = (candidates.len() == limit as usize)
        .then(|| candidates.last())
        .flatten()
        .map(|(id, at)| PacketsCursor {
            created_at_ms: *at,
            packet_id: id.clone(),
        });
    let ids: Vec<String> = candidates.into_iter().map(|(id, _)| id).collect();
    let packets = summaries(store, &ids)
        .await?
        .into_iter()
        .flatten()
        .collect();
    Ok(PacketsPage { packets, next })
}
