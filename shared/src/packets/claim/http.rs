//! `POST /packets/{id}/claim`: the grabber's share credited to their wallet, once
//! (`store::packets::claim`, `claim.lua` and the steps after it).

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::store as packets;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{Caller, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::packets::http::no_packet;
use crate::packets::rules::ClaimOutcome;

/// The body of a successful claim.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClaimBody {
    /// The packet.
    pub packet_id: String,
    /// The claimed share.
    #[schema(minimum = 1)]
    pub share_id: u32,
    /// Cents.
    pub amount_cents: i64,
    /// The caller's balance after the credit, cents (a coupon payout credits nothing: the
    /// balance as it is).
    pub balance_cents: i64,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub claimed_at: String,
    /// `true` when an earlier call credited it (nothing credited now).
    pub repeat: bool,
    /// A merchant packet paid out as coupons: the coupon the share became (absent: the share
    /// went into the wallet).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupon: Option<ClaimedCouponBody>,
}

/// A share claimed as a coupon: redeem it at checkout (`POST /coupons/hold`, `/redeem`,
/// `/release`) by its code, before `redeem_by`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClaimedCouponBody {
    /// `<packet_id>.<share_id>`.
    #[schema(pattern = "^[0-9a-f]{24}\\.[1-9][0-9]{0,5}$")]
    pub code: String,
    /// What it takes off an order: the share, cents (never more than the order).
    #[schema(minimum = 1)]
    pub amount_off_cents: i64,
    /// The smallest order total it applies to, cents; absent: any order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1)]
    pub min_order_cents: Option<i64>,
    /// RFC 3339: redeemable before this.
    #[schema(format = DateTime)]
    pub redeem_by: String,
}

crate::api::refusal::refusals! {
    /// What `POST /packets/{id}/claim` refuses, beside the answers every route shares.
    pub enum ClaimRefusal {

        /// 404: no such packet (`not_found`), or the caller grabbed no share of it (`no_share`).
        404 ClaimNotFoundError {
            /// no such packet
            NotFound = "not_found",
            /// the caller grabbed no share of it
            NoShare = "no_share",
        }
        /// 410: the claim window of the packet has closed.
        410 ExpiredError {
            /// the claim window has closed
            Expired = "expired",
        }
    }
}

/// `POST /packets/{id}/claim` (JWT): the template's `ClaimPacket` event.
pub const OPERATION: Operation = Operation {
    event: "ClaimPacket",
    method: Method::Post,
    path: "/packets/{id}/claim",
    auth: Auth::Jwt,
    refusals: ClaimRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the packet and the caller",
        kept: "the packet's life and `HONGBAO_RETENTION_SECS` after it",
        changed: Changed::Nothing,
        also: "`repeat: true`, credits nothing",
    }),
};

/// `POST /packets/{id}/claim`: 200 [`ClaimBody`]; or a [`ClaimRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "red packets", operation_id = "claim_share",
    summary = "Claim a grabbed share",
    description = "Credits the caller's grabbed share of the packet to their wallet, once: later calls answer the same with `repeat: true`. A merchant packet paid out as coupons (`payout: coupon`) credits nothing: the share becomes the caller's coupon (`coupon`), in `GET /coupons` and redeemable at checkout until `redeem_by`.",
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "the share credited to the caller's wallet (once; `repeat` on later calls)", body = ClaimBody),
    )
)]
pub(crate) async fn claim(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<(Replayed, Json<ClaimBody>), ApiError> {
    match packets::claim(&state.store, &id, &user).await? {
        ClaimOutcome::Claimed {
            share,
            balance_cents,
            coupon,
            claimed_at_ms,
            repeat,
        } => Ok((
            Replayed(repeat),
            Json({
                if !repeat {
                    metrics::count(metrics::CLAIMED, 1);
                    metrics::count(metrics::CLAIMED_CENTS, share.amount_cents.max(0) as u64);
                }
                ClaimBody {
                    packet_id: id,
                    share_id: share.share_id,
                    amount_cents: share.amount_cents,
                    balance_cents,
                    claimed_at: rfc3339(claimed_at_ms),
                    repeat,
                    coupon: coupon.map(|c| ClaimedCouponBody {
                        code: c.code,
                        amount_off_cents: c.amount_off_cents,
                        min_order_cents: c.min_order_cents,
                        redeem_by: rfc3339(c.redeem_by_ms),
                    }),
                }
            }),
        )),
        ClaimOutcome::NotFound => Err(ClaimRefusal::NotFound.because(no_packet(&id))),
        ClaimOutcome::NoShare => {
            Err(ClaimRefusal::NoShare.because("you grabbed no share of this packet"))
        }
        ClaimOutcome::Expired => {
            Err(ClaimRefusal::Expired.because("the claim window of this packet has closed"))
        }
    }
}
