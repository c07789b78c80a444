//! `POST /packets/{id}/grab`: at most one share of a red packet per user
//! (`store::packets::grab_with_password`, `grab.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use super::store as packets;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{Caller, OptionalJsonBody, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::refusal::Rfc3339;
use crate::api::state::ApiState;
use crate::packets::http::no_packet;
use crate::packets::rules::password::PasswordText;
use crate::packets::rules::{GrabOutcome, Share};

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

crate::api::refusal::ref_fields!(ShareBody);

/// A draw packet's grab during its entry window (202): the caller is one of its entrants (a
/// repeat answers the same); grab again from `draw_at` for the draw's answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EnteredBody {
    /// The packet.
    pub packet_id: String,
    /// Always `true`: the caller is an entrant.
    pub entered: bool,
    /// RFC 3339: when the draw happens (Redis `TIME`).
    #[schema(format = DateTime)]
    pub draw_at: String,
}

crate::api::refusal::refusals! {
    /// What `POST /packets/{id}/grab` refuses, beside the answers every route shares.
    pub enum GrabRefusal {
        /// 403: a targeted packet, and the caller is not one of its recipients
        /// (`not_a_recipient`; nothing written), or a password packet, and the grab's password is
        /// missing or wrong (`wrong_password`; only the guess is counted, by the grab rate limit,
        /// the packet's guess budget and the caller's guesses on it) or the caller's guesses on
        /// it are exhausted (`guesses_exhausted`; nothing written).
        403 GrabForbiddenError {
            /// a targeted packet, and the caller is not one of its recipients; nothing written
            NotARecipient = "not_a_recipient",
            /// a password packet, and the body's `password` is missing or wrong: the guess
            /// counts toward the grab rate limit, the packet's guess budget and the caller's
            /// `HONGBAO_GUESSES_PER_USER`; nothing else written
            WrongPassword = "wrong_password",
            /// a password packet, and the caller's wrong guesses on it reached
            /// `HONGBAO_GUESSES_PER_USER`: their password attempts on it are refused for good
            /// (the password is not compared); nothing written
            GuessesExhausted = "guesses_exhausted",
        }
        404 NotFoundError {
            /// no such packet
            NotFound = "not_found",
        }
        /// 409: the caller already grabbed a share of this packet (`share` is it).
        409 AlreadyGrabbedError {
            /// the caller's earlier share is in `share`
            AlreadyGrabbed = "already_grabbed" {
                /// The share the caller grabbed earlier.
                share: ShareBody,
            },
        }
        /// 410: every share has been grabbed (`sold_out`), the packet expired (`expired`), its
        /// sender cancelled it (`cancelled`), or a draw packet's draw is complete and the caller
        /// did not win (`not_drawn`). Nothing written.
        410 GrabGoneError {
            /// every share has been grabbed; nothing written
            SoldOut = "sold_out",
            /// the packet expired; nothing written
            Expired = "expired",
            /// its sender cancelled it; nothing written
            Cancelled = "cancelled",
            /// a draw packet's draw is complete and the caller did not win; nothing written
            NotDrawn = "not_drawn",
        }
        /// 425: a scheduled packet before its opening; retry after `Retry-After` seconds (the
        /// time to `opens_at`, rounded up). Nothing written.
        425 NotOpenYetError retry_after "seconds until the packet opens, rounded up" {
            /// a scheduled packet before `opens_at`; retry after `Retry-After` seconds; nothing
            /// written
            NotOpenYet = "not_open_yet" {
                /// When grabs open, RFC 3339.
                opens_at: Rfc3339,
            },
        }
        /// 429: too many grab attempts by the caller, or a password packet's wrong guesses
        /// (every user's) passed its guess budget, and the caller has had their one guess of
        /// the window; a right password is never refused so. Nothing written.
        429 RateLimitedError retry_after "seconds to wait before retrying" {
            /// too many grab attempts, or guesses on a password packet whose guess budget is
            /// spent; retry after `Retry-After` seconds; nothing written
            RateLimited = "rate_limited",
        }
    }
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
    refusals: GrabRefusal::REFUSALS,
    replay: None,
};

/// `POST /packets/{id}/grab`: 200 [`ShareBody`], 202 [`EnteredBody`] (a draw packet's entry);
/// or a [`GrabRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "red packets", operation_id = "grab_share",
    summary = "Grab a share of a red packet",
    description = "Takes the next share of the packet for the caller, at most one per user; claim it before `claim_by` (`POST /packets/{id}/claim`). A password packet needs the body `{\"password\": \"...\"}`; any other packet takes no body (or an empty object). A draw packet is not first come, first served: until `draw_at` a grab enters the caller in its draw (202); from then on a winner's grab answers their share (200) and anyone else's 410 `not_drawn`.",
    request_body = GrabRequest,
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "a share won (a draw packet's: the caller won the draw)", body = ShareBody),
        (status = 202, description = "a draw packet during its entry window: the caller is an entrant", body = EnteredBody),
    )
)]
pub(crate) async fn grab(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<GrabRequest>,
) -> Result<Response, ApiError> {
    let password = body.and_then(|b| b.password).map(|p| p.normalised());
    let outcome = packets::grab_with_password(&state.store, &id, &user, password.as_ref()).await?;
    let (counted, answer) = match outcome {
        GrabOutcome::Grabbed { share, claim_by_ms } => (
            Some(metrics::GRAB_WON),
            Ok(Json(ShareBody::new(&id, &share, Some(claim_by_ms))).into_response()),
        ),
        GrabOutcome::Entered { draw_at_ms } => (
            Some(metrics::DRAW_ENTERED),
            Ok((
                StatusCode::ACCEPTED,
                Json(EnteredBody {
                    packet_id: id.clone(),
                    entered: true,
                    draw_at: rfc3339(draw_at_ms),
                }),
            )
                .into_response()),
        ),
        GrabOutcome::NotDrawn => (
            None,
            Err(GrabRefusal::NotDrawn
                .because("the draw is complete and you did not win a share; nothing was written")),
        ),
        GrabOutcome::AlreadyGrabbed(share) => (
            Some(metrics::GRAB_ALREADY_GRABBED),
            Err(GrabRefusal::AlreadyGrabbed {
                share: ShareBody::new(&id, &share, None),
            }
            .because("you already grabbed a share of this packet")),
        ),
        GrabOutcome::NotFound => (
            None,
            Err(GrabRefusal::NotFound.because(no_packet(&id))),
        ),
        GrabOutcome::NotARecipient => (
            None,
            Err(GrabRefusal::NotARecipient
                .because("this red packet is for its recipients only; nothing was written")),
        ),
        GrabOutcome::RateLimited { retry_after_ms } => (
            Some(metrics::GRAB_RATE_LIMITED),
            Err(GrabRefusal::RateLimited
                .because("too many grab attempts; slow down")
                .retry_after_ms(retry_after_ms)),
        ),
        GrabOutcome::Expired => (
            Some(metrics::GRAB_EXPIRED),
            Err(GrabRefusal::Expired.because("this packet has expired")),
        ),
        GrabOutcome::SoldOut => (
            Some(metrics::GRAB_SOLD_OUT),
            Err(GrabRefusal::SoldOut.because("every share has been grabbed")),
        ),
        GrabOutcome::WrongPassword => (
            Some(metrics::GRAB_WRONG_PASSWORD),
            Err(GrabRefusal::WrongPassword.because(
                "this red packet needs its password (body {\"password\": \"...\"}); a missing or wrong one counts toward the grab rate limit and writes nothing else",
            )),
        ),
        GrabOutcome::GuessesExhausted => (
            None,
            Err(GrabRefusal::GuessesExhausted.because(
                "your wrong guesses of this red packet's password reached the limit: no further password of yours is tried on it; nothing was written",
            )),
        ),
        GrabOutcome::Cancelled => (
            None,
            Err(GrabRefusal::Cancelled
                .because("the sender cancelled this packet; nothing was written")),
        ),
        GrabOutcome::NotOpenYet {
            opens_at_ms,
            retry_after_ms,
        } => (
            Some(metrics::GRAB_NOT_OPEN_YET),
            Err(GrabRefusal::NotOpenYet {
                opens_at: Rfc3339(rfc3339(opens_at_ms)),
            }
            .because("this red packet opens at opens_at; nothing was written")
            .retry_after_ms(retry_after_ms)),
        ),
    };
    if let Some(name) = counted {
        metrics::count(name, 1);
    }
    answer
}
