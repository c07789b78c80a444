//! Coupon entries of the journal on their way to the feed: ledger-export calls [`prepare`] on
//! every batch it reads, before publishing it.

use std::collections::HashMap;

use crate::coupons::rules::campaign_no;
use crate::domain::journal::{Entry, Kind};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::{Error, Store};

use crate::coupons::facts::{facts, CampaignFacts};
use crate::coupons::list::store::remember;

/// Gives each coupon entry of `entries` its code and its campaign's public id (each campaign
/// end and draw too) (a generated code's entry holds its index,
/// which the campaign's key turns into the code; a merchant packet's share's entry
/// `<packet_id>/<share_id>`, whose code is `<packet_id>.<share_id>`) and puts each issued coupon in its user's
/// coupon list again ([`remember`], idempotent): the list is complete once the entry is
/// exported, also when the grab's function stopped before writing it. Money entries are left
/// as they are.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the batch is then not published; the
/// next run prepares it again).
pub async fn prepare(store: &Store, entries: &mut [Entry]) -> Result<(), Error> {
    let campaign_draw = |e: &Entry| e.drawn().is_some_and(|r| !is_packet_id(r));
    if !entries
        .iter()
        .any(|e| e.kind.is_coupon() || campaign_draw(e))
    {
        return Ok(());
    }
    let mut conn = store.conn().await?;
    let mut shapes: HashMap<String, Option<CampaignFacts>> = HashMap::new();
    for e in entries.iter_mut() {
        // A campaign's end or draw: its public id (its reference is the number's id).
        if e.kind == Kind::CampaignEnded || campaign_draw(e) {
            let id = e.reference.clone();
            if let Some(no) = campaign_no(&id) {
                if !shapes.contains_key(&id) {
                    let s = facts(store, &mut conn, &id, no).await?;
                    shapes.insert(id.clone(), s);
                }
                e.campaign_id = shapes[&id].as_ref().map(CampaignFacts::public_id);
            }
            continue;
        }
        if !matches!(
            e.kind,
            Kind::CouponIssued | Kind::CouponRedeemed | Kind::CouponReleased
        ) {
            continue;
        }
        let Some((campaign_id, item)) = e.coupon_parts() else {
            continue;
        };
        let (campaign_id, item) = (campaign_id.to_string(), item.to_string());
        if is_packet_id(&campaign_id) {
            // A merchant packet's share's coupon: `<packet_id>/<share_id>`.
            e.code = Some(format!("{campaign_id}.{item}"));
            if e.kind == Kind::CouponIssued {
                let meta = Keys::new(&store.config().key_prefix)
                    .packet(&campaign_id)
                    .meta;
                let redeem_by: Option<i64> = redis::cmd("HGET")
                    .arg(&meta)
                    .arg("redeem_by")
                    .query_async(&mut conn)
                    .await?;
                // Gone: past its redeem_by and retention, the list need not show it.
                if let Some(redeem_by_ms) = redeem_by {
                    remember(
                        store,
                        &mut conn,
                        &e.user_id,
                        &e.reference,
                        e.at_ms,
                        redeem_by_ms,
                    )
                    .await?;
                }
            }
            continue;
        }
        let Some(no) = campaign_no(&campaign_id) else {
            continue;
        };
        if !shapes.contains_key(&campaign_id) {
            let s = facts(store, &mut conn, &campaign_id, no).await?;
            shapes.insert(campaign_id.clone(), s);
        }
        let Some(s) = &shapes[&campaign_id] else {
            // The campaign's keys are gone: the index is all the entry can say.
            e.code = Some(item);
            continue;
        };
        e.campaign_id = Some(s.public_id());
        e.code = Some(match (&s.key, item.parse::<u64>()) {
            (Some(key), Ok(index)) => key.code(no, index),
            _ => item.clone(),
        });
        if e.kind == Kind::CouponIssued {
            remember(
                store,
                &mut conn,
                &e.user_id,
                &e.reference,
                e.at_ms,
                s.redeem_by_ms,
            )
            .await?;
        }
    }
    Ok(())
}
