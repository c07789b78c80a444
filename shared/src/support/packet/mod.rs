//! `GET /support/packets/{id}?cursor=`'s store step, one page of 100 share positions at a
//! time (its Redis time bounded by the page, as the view's): the packet as its sender sees it
//! with the page (`packet_view.lua`), each of the page's grabs with its claim state,
//! whether each pending claim's credit already landed in the grabber's wallet, the refund's
//! schedule in the reclaim index, and the unexported journal entries that mention the packet
//! (its sender's journal: debit, refunds, settlement, cancel; the page's claimed grabbers'
//! journals: their claim credits; a coupon packet's coupon entries, on its own tag). A
//! merchant packet paid out as coupons shows each of the page's claimed shares' coupon and
//! its state.

pub mod http;

use std::collections::{BTreeSet, HashMap};

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::coupons::rules::checkout::IssuedRecord;
use crate::coupons::rules::CouponState;
use crate::domain::journal::Entry;
use crate::merchants::rules::share_code;
use crate::packets::rules::{ClaimState, PacketView, Share};
use crate::packets::view::store::{read_page, PacketRead};
use crate::store::keys::{user_tag, Keys};
use crate::store::{Error, Store};
use crate::wallet::rules::claim_transfer_id;

/// Grabbers' slots read at once.
const IN_FLIGHT: usize = 16;

/// What support sees of one red packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketLookup {
    /// The packet as its sender sees it with the page (`GET /packets/{id}` and its
    /// `next_cursor`), the page's reveal included once the packet is finished.
    pub view: PacketView,
    /// The page's grabs in share-id order, each with its claim state.
    pub grabs: Vec<GrabLookup>,
    /// When the sender cancelled it, Unix ms (Redis `TIME`); `None` if never.
    pub cancelled_at_ms: Option<i64>,
    /// Cents refunded to the sender at the cancel (0 if never cancelled).
    pub cancel_refunded_cents: i64,
    /// When reclaim-cron settled it (refunded what was not grabbed or claimed), Unix ms;
    /// `None` while it is not settled.
    pub settled_at_ms: Option<i64>,
    /// Its entry in the reclaim index, Unix ms: when reclaim-cron settles it (`None` once
    /// settled and forgotten).
    pub refund_due_at_ms: Option<i64>,
    /// Failed settlement attempts reclaim-cron recorded (backing off between them).
    pub refund_failed_attempts: u64,
    /// The unexported journal entries whose reference is the packet, oldest first: the
    /// sender's and the page's claimed grabbers' (the same sender's on every page).
    pub journal: Vec<Entry>,
    /// Whether every journal searched was read whole (`false`: one held more than
    /// [`crate::support::store::JOURNAL_READ_LIMIT`] entries, and entries of the packet may be missing).
    pub journal_complete: bool,
}

/// One grab of a packet, as support sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrabLookup {
    /// The grabber.
    pub user_id: String,
    /// The share grabbed.
    pub share: Share,
    /// Its claim.
    pub claim: ClaimState,
    /// Whether the grabber's wallet holds the claim's credit: always for a done or re-driven
    /// claim, never for an unclaimed share; for a pending claim, whether step 2 (the credit)
    /// landed before the claim was marked done. Never for a coupon packet's share.
    pub credited: bool,
    /// A coupon packet's claimed share: its coupon's code and state (by Redis `TIME`).
    pub coupon: Option<(String, CouponState)>,
}

/// The support look-up of `packet_id`'s page of [`crate::packets::rules::GRABS_PAGE`] share
/// positions from share id `from` (1 for the first page; the view's `next_cursor` for the
/// next); `None` for no such packet (including ids of the wrong shape). Read-only.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub async fn packet(
    store: &Store,
    packet_id: &str,
    from: u32,
) -> Result<Option<PacketLookup>, Error> {
    let Some(PacketRead { view, claims, meta }) = read_page(store, packet_id, from).await? else {
        return Ok(None);
    };
    let keys = Keys::new(&store.config().key_prefix);
    let keys = &keys;
    let mut conn = store.conn().await?;
    let redeem_by_ms = view
        .packet
        .merchant
        .as_ref()
        .and_then(|m| m.coupon.as_ref())
        .map(|c| c.redeem_by_ms);
    // The page's shares' coupons only (a coupon packet's hash holds one per claimed share).
    let share_ids: Vec<String> = view
        .grabs
        .iter()
        .map(|g| g.share.share_id.to_string())
        .collect();
    let mut pipe = redis::pipe();
    pipe.cmd("TIME");
    if redeem_by_ms.is_some() && !share_ids.is_empty() {
        pipe.cmd("HMGET")
            .arg(keys.packet(packet_id).coupons)
            .arg(&share_ids);
    }
    let (secs, micros, records): (i64, i64, Vec<Option<String>>) = {
        let mut replies: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
        let records = match replies.len() {
            2 => redis::from_redis_value(replies.pop().unwrap_or(redis::Value::Nil))
                .map_err(|e| Error::bad_reply("HMGET", e.to_string()))?,
            _ => Vec::new(),
        };
        let (secs, micros): (i64, i64) =
            redis::from_redis_value(replies.pop().unwrap_or(redis::Value::Nil))
                .map_err(|e| Error::bad_reply("TIME", e.to_string()))?;
        (secs, micros, records)
    };
    let coupons: HashMap<String, String> = share_ids
        .into_iter()
        .zip(records)
        .filter_map(|(id, r)| Some((id, r?)))
        .collect();
    let now_ms = secs * 1000 + micros / 1000;
    let coupon_of = |share: &Share| -> Result<Option<(String, CouponState)>, Error> {
        let (Some(redeem_by_ms), Some(text)) =
            (redeem_by_ms, coupons.get(&share.share_id.to_string()))
        else {
            return Ok(None);
        };
        let record = IssuedRecord::parse(text).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Some((
            share_code(packet_id, share.share_id),
            record.state(now_ms, redeem_by_ms),
        )))
    };
    let mut parsed = Vec::with_capacity(view.grabs.len());
    for g in &view.grabs {
        let claim = ClaimState::parse(claims.get(&g.user_id).map(String::as_str))?;
        parsed.push((g.user_id.clone(), g.share, claim, coupon_of(&g.share)?));
    }
    let grabs: Vec<GrabLookup> = stream::iter(parsed.into_iter().map(
        |(user_id, share, claim, coupon)| async move {
            let credited = match claim {
                _ if redeem_by_ms.is_some() => false,
                ClaimState::Unclaimed => false,
                ClaimState::Done { .. } | ClaimState::Redriven { .. } => true,
                ClaimState::Pending { .. } => {
                    credit_landed(store, keys, &user_id, packet_id).await?
                }
            };
            Ok::<_, Error>(GrabLookup {
                user_id,
                share,
                claim,
                credited,
                coupon,
            })
        },
    ))
    .buffered(IN_FLIGHT)
    .try_collect()
    .await?;
    let (due, failed): (Option<i64>, Option<u64>) = redis::pipe()
        .cmd("ZSCORE")
        .arg(keys.reclaim_due())
        .arg(packet_id)
        .cmd("HGET")
        .arg(keys.reclaim_retries())
        .arg(packet_id)
        .query_async(&mut conn)
        .await?;
    // The sender's journal, then every claimed grabber's (distinct tags).
    let mut journals = BTreeSet::from([keys.packet_journal(packet_id)]);
    journals.extend(
        grabs
            .iter()
            .filter(|g| g.claim != ClaimState::Unclaimed)
            .map(|g| keys.journal_of_tag(&user_tag(&g.user_id))),
    );
    let found: Vec<(Vec<Entry>, bool)> = stream::iter(journals.into_iter().map(|key| async move {
        let share_prefix = format!("{packet_id}/");
        crate::support::store::unexported(store, &key, |e: &Entry| {
            e.reference == packet_id || e.reference.starts_with(&share_prefix)
        })
        .await
    }))
    .buffered(IN_FLIGHT)
    .try_collect()
    .await?;
    let journal_complete = found.iter().all(|(_, complete)| *complete);
    let mut journal: Vec<Entry> = found.into_iter().flat_map(|(e, _)| e).collect();
    journal.sort_by(|a, b| (a.at_ms, &a.stream_id).cmp(&(b.at_ms, &b.stream_id)));
    let at = |field: &str| meta.get(field).and_then(|v| v.parse::<i64>().ok());
    Ok(Some(PacketLookup {
        grabs,
        cancelled_at_ms: at("cancelled_at"),
        cancel_refunded_cents: at("cancel_refunded_cents").unwrap_or(0),
        settled_at_ms: at("settled_at"),
        refund_due_at_ms: due,
        refund_failed_attempts: failed.unwrap_or(0),
        journal,
        journal_complete,
        view,
    }))
}

/// Whether `user_id`'s wallet holds the credit of its claim on `packet_id` (its transfer
/// record): one round trip on the grabber's slot.
async fn credit_landed(
    store: &Store,
    keys: &Keys,
    user_id: &str,
    packet_id: &str,
) -> Result<bool, Error> {
    let transfer_id = claim_transfer_id(packet_id);
    let mut conn = store.conn().await?;
    Ok(redis::cmd("HEXISTS")
        .arg(keys.wallet(user_id).records)
        .arg(&transfer_id)
        .query_async(&mut conn)
        .await?)
}
