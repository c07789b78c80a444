//! `POST /packets/{id}/cancel`: the sender cancels an open red packet and gets its un-grabbed
//! shares back at once (`store::packets::cancel`, `cancel.lua`).

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
use crate::packets::http::PacketStatus;
use crate::packets::rules::CancelOutcome;

/// The answer of a cancel (the same for a repeat).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CancelBody {
    /// 24 hex digits.
    pub packet_id: String,
    /// `cancelled`.
    #[schema(value_type = crate::packets::rules::Status)]
    pub status: &'static str,
    /// The un-grabbed shares refunded to the sender's wallet at the cancel, cents (grabbed
    /// shares stay claimable until `expires_at`; reclaim-cron refunds the unclaimed ones then).
    pub refunded_cents: i64,
    /// RFC 3339: when it was cancelled.
    #[schema(format = DateTime)]
    pub cancelled_at: String,
}

crate::api::refusal::refusals! {
    /// What `POST /packets/{id}/cancel` refuses, beside the answers every route shares.
    pub enum CancelRefusal {

        403 ForbiddenError {
            /// only the packet's sender may cancel it; nothing written
            Forbidden = "forbidden",
        }
        404 NotFoundError {
            /// no such packet
            NotFound = "not_found",
        }
        /// 409: the packet is sold out, expired or settled: nothing is left to cancel. Nothing
        /// written.
        409 NotCancellableError {
            /// sold out, expired or settled (`status`); nothing written
            NotCancellable = "not_cancellable" {
                /// The packet's status: `sold_out`, `expired` or `settled`.
                status: PacketStatus,
            },
        }
    }
}

/// `POST /packets/{id}/cancel` (JWT): the template's `CancelPacket` event.
pub const OPERATION: Operation = Operation {
    event: "CancelPacket",
    method: Method::Post,
    path: "/packets/{id}/cancel",
    auth: Auth::Jwt,
    refusals: CancelRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the packet (`id`)",
        kept: "the packet's life and `HONGBAO_RETENTION_SECS` after it",
        changed: Changed::Nothing,
        also: "moves nothing",
    }),
};

/// `POST /packets/{id}/cancel`: 200 [`CancelBody`] (a repeat: the same figures); or a
/// [`CancelRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "red packets", operation_id = "cancel_packet",
    summary = "Cancel a red packet",
    description = "The sender stops an open (or scheduled) packet: later grabs answer 410 `cancelled`, and the un-grabbed shares are refunded to the sender's wallet in the same step. Shares already grabbed stay claimable until `expires_at`; the unclaimed ones are refunded then. A repeat answers the same figures and moves nothing.",
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "cancelled (now or by an earlier call: the same figures)", body = CancelBody),
    )
)]
pub(crate) async fn cancel(
    State(state): State<ApiState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<(Replayed, Json<CancelBody>), ApiError> {
    let outcome = packets::cancel(&state.store, &id, &caller)
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(
                "the packet may have been cancelled: a retry answers the same figures",
            )
        })?;
    match outcome {
        CancelOutcome::Cancelled {
            refunded_cents,
            cancelled_at_ms,
            earlier,
        } => {
            if !earlier {
                metrics::count(metrics::PACKET_CANCELLED, 1);
            }
            Ok((
                Replayed(earlier),
                Json(CancelBody {
                    packet_id: id,
                    status: "cancelled",
                    refunded_cents,
                    cancelled_at: rfc3339(cancelled_at_ms),
                }),
            ))
        }
        CancelOutcome::NotFound => Err(CancelRefusal::NotFound.because(no_packet(&id))),
        CancelOutcome::Forbidden => Err(CancelRefusal::Forbidden
            .because("only the sender may cancel this red packet; nothing was written")),
        CancelOutcome::NotCancellable(status) => Err(CancelRefusal::NotCancellable {
            status: PacketStatus(status.as_str()),
        }
        .because(format!(
            "the packet is {}: nothing is left to cancel; nothing was written",
            status.as_str()
        ))),
    }
}
