//! `GET /support/packets/{id}?cursor=` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): a red packet
//! as its sender sees it, its grabs a page of 100 share positions at a time with their claim
//! states, the refund, and the unexported journal entries that mention it
//! (its store step: [`crate::support::packet()`]).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::packets::grabs::http::parse_cursor;
use crate::packets::http::no_packet;
use crate::packets::view::http::PacketViewBody;
use crate::support::{self, GrabLookup, PacketLookup};
use crate::support::{check_caller, JournalEntryBody};

/// The body of `GET /support/packets/{id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportPacketBody {
    /// The packet as its sender sees it, with the page (`GET /packets/{id}`, or a later page
    /// of it).
    pub packet: PacketViewBody,
    /// The page's grabs in share-id order (those of its 100 share positions from the cursor
    /// that were grabbed), each with its claim state.
    pub grabs: Vec<SupportGrabBody>,
    /// What went back to the sender, and when.
    pub refund: SupportRefundBody,
    /// The unexported money-journal entries whose reference is the packet (the sender's
    /// debit, refunds, settlement or cancel, on every page; the page's grabbers' claim
    /// credits), oldest first.
    /// Exported entries are on the event bus and in its archive.
    pub journal: Vec<JournalEntryBody>,
    /// `false` when a journal held more entries than one look-up reads (500; the export is
    /// behind), so entries of this packet may be missing from `journal`.
    pub journal_complete: bool,
    /// Pass as `cursor` for the next page of grabs; `null` after the last.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// One grab (`grabs` of `SupportPacketBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportGrabBody {
    /// The grabber.
    pub user_id: String,
    /// 1 for the first share grabbed.
    #[schema(minimum = 1)]
    pub share_id: u32,
    /// Cents.
    pub amount_cents: i64,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
    /// `unclaimed`; `pending` (accepted, the credit or its `done` mark not both recorded yet:
    /// the next claim call or reclaim-cron finishes it); `done`; `redriven` (left pending when
    /// the claim window closed, completed by reclaim-cron).
    pub claim: crate::support::ClaimStateBody,
    /// RFC 3339: when the claim was accepted; `null` when unclaimed.
    #[schema(format = DateTime, required = true)]
    pub claimed_at: Option<String>,
    /// Whether the share is in the grabber's wallet (for a `pending` claim: whether its
    /// credit already landed); never for a coupon packet's share.
    pub credited: bool,
    /// A coupon packet's claimed share: its coupon's code (`<packet_id>.<share_id>`, looked
    /// up whole by `GET /support/coupons/{code}`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupon_code: Option<String>,
    /// With `coupon_code`: `issued`, `held`, `redeemed` or `expired`, by Redis `TIME`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, value_type = Option<crate::coupons::rules::CouponState>)]
    pub coupon_state: Option<&'static str>,
}

/// `refund` of `SupportPacketBody`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportRefundBody {
    /// Cents refunded to the sender so far (at a cancel and at settlement).
    pub refunded_cents: i64,
    /// Of those, cents refunded at the sender's cancel.
    pub cancel_refunded_cents: i64,
    /// RFC 3339: when the sender cancelled it; `null` if never.
    #[schema(format = DateTime, required = true)]
    pub cancelled_at: Option<String>,
    /// RFC 3339: when reclaim-cron settled it; `null` while unsettled.
    #[schema(format = DateTime, required = true)]
    pub settled_at: Option<String>,
    /// RFC 3339: when reclaim-cron is due to settle it (its reclaim index entry); `null` once
    /// settled.
    #[schema(format = DateTime, required = true)]
    pub due_at: Option<String>,
    /// Settlement attempts that failed (reclaim-cron backs off and retries).
    pub failed_attempts: u64,
}

impl From<PacketLookup> for SupportPacketBody {
    fn from(l: PacketLookup) -> Self {
        SupportPacketBody {
            refund: SupportRefundBody {
                refunded_cents: l.view.packet.refunded_cents,
                cancel_refunded_cents: l.cancel_refunded_cents,
                cancelled_at: l.cancelled_at_ms.map(rfc3339),
                settled_at: l.settled_at_ms.map(rfc3339),
                due_at: l.refund_due_at_ms.map(rfc3339),
                failed_attempts: l.refund_failed_attempts,
            },
            next_cursor: l.view.next_cursor.map(|c| c.to_string()),
            packet: l.view.into(),
            grabs: l.grabs.into_iter().map(SupportGrabBody::from).collect(),
            journal: l.journal.into_iter().map(JournalEntryBody::from).collect(),
            journal_complete: l.journal_complete,
        }
    }
}

impl From<GrabLookup> for SupportGrabBody {
    fn from(g: GrabLookup) -> Self {
        SupportGrabBody {
            user_id: g.user_id,
            share_id: g.share.share_id,
            amount_cents: g.share.amount_cents,
            grabbed_at: rfc3339(g.share.grabbed_at_ms),
            claim: g.claim.into(),
            claimed_at: g.claim.claimed_at_ms().map(rfc3339),
            credited: g.credited,
            coupon_state: g.coupon.as_ref().map(|(_, s)| s.as_str()),
            coupon_code: g.coupon.map(|(c, _)| c),
        }
    }
}

crate::api::refusal::refusals! {
    /// What `GET /support/packets/{id}` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum SupportPacketRefusal {

        404 NotFoundError {
            /// no such packet
            NotFound = "not_found",
        }
    }
}

/// `GET /support/packets/{id}` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): the template's `SupportPacket` event.
pub const OPERATION: Operation = Operation {
    event: "SupportPacket",
    method: Method::Get,
    path: "/support/packets/{id}",
    auth: Auth::Iam {
        principals: &crate::wallet::rules::SUPPORT_PRINCIPALS,
        tenant: Tenant::Users,
    },
    refusals: SupportPacketRefusal::REFUSALS,
    replay: None,
};

/// `GET /support/packets/{id}` (AWS_IAM): 200 [`SupportPacketBody`]; 400 for a bad cursor; or a
/// [`SupportPacketRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "support", operation_id = "support_packet",
    summary = "Look up a red packet for support (AWS_IAM)",
    description = "The packet as its sender sees it, its grabs a page of 100 share positions at a time (from `cursor`; `next_cursor` gives the next page) with each claim state (`unclaimed`, `pending`, `done`, `redriven`) and whether its share is in the grabber's wallet, the refund, and the money-journal entries that mention it and are not exported yet (the sender's, and the page's grabbers'). Read-only; no password or idempotency fingerprint is ever shown. Only AWS_IAM-signed calls of the principals in `HONGBAO_SUPPORT_PRINCIPALS`.",
    params(
        ("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page (default: the first page)")
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "the packet, a page of its grabs and claims, its refund and journal entries", body = SupportPacketBody),
        (status = 400, description = "`invalid_request`: a cursor this route did not give; nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn support_packet(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<SupportPacketBody>, ApiError> {
    check_caller(&state, arn.as_deref())?;
    let from = parse_cursor(query.as_deref())?;
    match support::packet(&state.store, &id, from).await? {
        Some(lookup) => Ok(Json(lookup.into())),
        None => Err(SupportPacketRefusal::NotFound.because(no_packet(&id))),
    }
}
