//! `GET /support/coupons/{code}`'s store step: a coupon code found from the code alone (its
//! campaign and issuing pool, `store::coupons::locate`), its record in that pool
//! (issued to whom, held or redeemed by which order), the releases the pool remembers for it
//! (the `<code>\n<order>` fields beside its record), and the unexported journal entries of it
//! (`coupon_issued`, `coupon_redeemed`, `coupon_released` on the pool's tag).

pub mod http;

use crate::coupons::locate::locate;
use crate::coupons::rules::checkout::IssuedRecord;
use crate::domain::journal::Entry;
use crate::store::{Error, Store};

/// What support sees of one coupon code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponLookup {
    /// The campaign the code belongs to.
    pub campaign_id: String,
    /// The campaign's title.
    pub title: String,
    /// Until when the coupon may be redeemed (exclusive), Unix ms.
    pub redeem_by_ms: i64,
    /// Its record, `None` while the code is not issued (still in its pool, or never issued
    /// once the campaign closed).
    pub issued: Option<IssuedRecord>,
    /// The holds and redemptions released, oldest first.
    pub releases: Vec<ReleaseLookup>,
    /// The unexported journal entries of the coupon, oldest first.
    pub journal: Vec<Entry>,
    /// Whether the pool's journal was read whole (see [`crate::support::store::JOURNAL_READ_LIMIT`]).
    pub journal_complete: bool,
    /// Redis `TIME` of the look-up, Unix ms: what the coupon's state is judged at (a hold
    /// lapses, `redeem_by` passes).
    pub now_ms: i64,
}

/// One release of a coupon (`POST /coupons/release`), as its pool remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseLookup {
    /// The order whose hold or redemption was released.
    pub order_reference: String,
    /// `hold` or `redemption`.
    pub released: String,
    /// When, Unix ms (Redis `TIME`).
    pub released_at_ms: i64,
}

/// The support look-up of coupon `code`; `None` for a code of no campaign. Read-only.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub async fn coupon(store: &Store, code: &str) -> Result<Option<CouponLookup>, Error> {
    let mut conn = store.conn().await?;
    let Some(at) = locate(store, &mut conn, code).await? else {
        return Ok(None);
    };
    let (record, (secs, micros)): (Option<String>, (i64, i64)) = redis::pipe()
        .cmd("HGET")
        .arg(&at.issued)
        .arg(&at.keyed)
        .cmd("TIME")
        .query_async(&mut conn)
        .await?;
    let issued = record
        .map(|r| IssuedRecord::parse(&r))
        .transpose()
        .map_err(|e| Error::Internal(e.to_string()))?;
    // A code or generated index holds none of `*?[]\`, so it is its own glob pattern.
    let mut releases = Vec::new();
    let mut iter: redis::AsyncIter<(String, String)> = redis::cmd("HSCAN")
        .arg(&at.issued)
        .cursor_arg(0)
        .arg("MATCH")
        .arg(format!("{}\n*", at.keyed))
        .arg("COUNT")
        .arg(1_000)
        .clone()
        .iter_async(&mut conn)
        .await?;
    while let Some(item) = iter.next_item().await {
        let (field, memory) = item?;
        let order = field.split_once('\n').map_or("", |(_, o)| o).to_string();
        if order.is_empty() {
            // `<code>\n`: the mark of the coupon's last release, not an order's memory.
            continue;
        }
        let mut parts = memory.split('\n');
        let (Some(released), Some(at_ms)) = (parts.next(), parts.next()) else {
            return Err(Error::Internal(format!("release memory {memory:?}")));
        };
        releases.push(ReleaseLookup {
            order_reference: order,
            released: released.to_string(),
            released_at_ms: at_ms
                .parse()
                .map_err(|_| Error::Internal(format!("release memory {memory:?}")))?,
        });
    }
    drop(iter);
    releases.sort_by_key(|r| r.released_at_ms);
    let reference = format!("{}/{}", at.campaign_id, at.keyed);
    let (journal, journal_complete) =
        crate::support::store::unexported(store, &at.journal, |e| e.reference == reference).await?;
    Ok(Some(CouponLookup {
        campaign_id: at.shown_id(),
        title: at.facts.title.clone(),
        redeem_by_ms: at.facts.redeem_by_ms,
        issued,
        releases,
        journal,
        journal_complete,
        now_ms: secs * 1000 + micros / 1000,
    }))
}
