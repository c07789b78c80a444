//! `POST /packets/{id}/grab`: at most one share of a red packet per user
//! (`store::packets::grab_with_password`, `lua/grab.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;

use super::no_packet;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{Caller, OptionalJsonBody, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::domain::packets::password::PasswordText;
use crate::domain::packets::{GrabOutcome, Share};
use crate::store::packets;

/// The optional body of `POST /packets/{id}/grab`.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrabRequest {
    /// A password packet's password, as the sender set it (NFC-normalised before it is
    /// compared, case-sensitive).
    #[schema(value_type = Option<String>, max_length = 32)]
    #[serde(default)]
    pub password: Option<PasswordText>,
}

/// A share: `{packet_id, share_id, amount_cents, grabbed_at, claim_by}` (`claim_by` only in the
/// answer of the grab that got it).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ShareBody {
    /// The packet.
    pub packet_id: String,
    /// 1 for the first share grabbed.
    #[schema(minimum = 1)]
    pub share_id: u32,
    /// Cents.
    pub amount_cents: i64,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
    /// RFC 3339: claim before this.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub claim_by: Option<String>,
}

crate::api::schemas::error_doc! {
    /// 409: the caller already grabbed a share of this packet (`share` is it).
    AlreadyGrabbedError, AlreadyGrabbedCode [AlreadyGrabbed],
    /// The share the caller grabbed earlier.
    share: ShareBody,
}

impl ShareBody {
    fn new(packet_id: &str, share: &Share, claim_by_ms: Option<i64>) -> Self {
        ShareBody {
            packet_id: packet_id.to_string(),
            share_id: share.share_id,
            amount_cents: share.amount_cents,
            grabbed_at: rfc3339(share.grabbed_at_ms),
            claim_by: claim_by_ms.map(rfc3339),
        }
    }
}

/// `POST /packets/{id}/grab` (JWT): the template's `GrabPacket` event.
pub const OPERATION: Operation = Operation {
    event: "GrabPacket",
    method: Method::Post,
    path: "/packets/{id}/grab",
    auth: Auth::Jwt,
};

/// `POST /packets/{id}/grab`: 200 [`ShareBody`]; 401, 404, 409 `already_grabbed` (+`share`),
/// 410 `sold_out` / `expired` / `cancelled`, 425 `not_open_yet` (+`opens_at`) + `Retry-After` (seconds,
/// rounded up), 429 `rate_limited` + `Retry-After`.
#[utoipa::path(
    post, path = OPERATION.path, tag = "red packets", operation_id = "grab_share",
    summary = "Grab a share of a red packet",
    description = "Takes the next share of the packet for the caller, at most one per user; claim it before `claim_by` (`POST /packets/{id}/claim`). A password packet needs the body `{\"password\": \"...\"}`; any other packet takes no body (or an empty object).",
    request_body = GrabRequest,
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "a share won", body = ShareBody),
        (status = 403, description = "`not_a_recipient` (a targeted packet, and the caller is not one of its recipients) or `wrong_password` (a password packet, and the body's `password` is missing or wrong: the attempt counts toward the grab rate limit); nothing else written", body = crate::api::schemas::GrabForbiddenError),
        (status = 404, description = "`not_found`: no such packet", body = crate::api::schemas::NotFoundError),
        (status = 409, description = "`already_grabbed`: the caller's earlier share is in `share`", body = AlreadyGrabbedError),
        (status = 410, description = "`sold_out`, `expired` or `cancelled` (by its sender); nothing written", body = crate::api::schemas::GrabGoneError),
        (status = 425, description = "`not_open_yet`: a scheduled packet before `opens_at`; retry after `Retry-After` seconds; nothing written", body = crate::api::schemas::NotOpenYetError, headers(("Retry-After" = u32, description = "seconds until the packet opens, rounded up"))),
        (status = 429, description = "`rate_limited`: too many grab attempts; retry after `Retry-After` seconds; nothing written", body = crate::api::schemas::RateLimitedError, headers(("Retry-After" = u32, description = "seconds to wait before retrying"))),
    )
)]
pub(crate) async fn grab(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<GrabRequest>,
) -> Result<Json<ShareBody>, ApiError> {
    let password = body.and_then(|b| b.password).map(|p| p.normalised());
    let outcome = packets::grab_with_password(&state.store, &id, &user, password.as_ref()).await?;
    let (counted, answer) = match outcome {
        GrabOutcome::Grabbed { share, claim_by_ms } => (
            Some(metrics::GRAB_WON),
            Ok(Json(ShareBody::new(&id, &share, Some(claim_by_ms)))),
        ),
        GrabOutcome::AlreadyGrabbed(share) => (
            Some(metrics::GRAB_ALREADY_GRABBED),
            Err(ApiError::conflict(
                "already_grabbed",
                "you already grabbed a share of this packet",
            )
            .with("share", ShareBody::new(&id, &share, None))),
        ),
        GrabOutcome::NotFound => (
            None,
            Err(no_packet(&id)),
        ),
        GrabOutcome::NotARecipient => (
            None,
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "not_a_recipient",
                "this red packet is for its recipients only; nothing was written",
            )),
        ),
        GrabOutcome::RateLimited { retry_after_ms } => (
            Some(metrics::GRAB_RATE_LIMITED),
            Err(ApiError::rate_limited(
                "too many grab attempts; slow down",
                retry_after_ms,
            )),
        ),
        GrabOutcome::Expired => (
            Some(metrics::GRAB_EXPIRED),
            Err(ApiError::gone("expired", "this packet has expired")),
        ),
        GrabOutcome::SoldOut => (
            Some(metrics::GRAB_SOLD_OUT),
            Err(ApiError::gone("sold_out", "every share has been grabbed")),
        ),
        GrabOutcome::WrongPassword => (
            Some(metrics::GRAB_WRONG_PASSWORD),
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "wrong_password",
                "this red packet needs its password (body {\"password\": \"...\"}); a missing or wrong one counts toward the grab rate limit and writes nothing else",
            )),
        ),
        GrabOutcome::Cancelled => (
            None,
            Err(ApiError::gone(
                "cancelled",
                "the sender cancelled this packet; nothing was written",
            )),
        ),
        GrabOutcome::NotOpenYet {
            opens_at_ms,
            retry_after_ms,
        } => (
            Some(metrics::GRAB_NOT_OPEN_YET),
            Err(ApiError::new(
                StatusCode::TOO_EARLY,
                "not_open_yet",
                "this red packet opens at opens_at; nothing was written",
            )
            .with("opens_at", rfc3339(opens_at_ms))
            .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))),
        ),
    };
    if let Some(name) = counted {
        metrics::count(name, 1);
    }
    answer
}
