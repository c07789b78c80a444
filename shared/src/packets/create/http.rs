//! `POST /packets`: the sender creates a red packet, debited from their wallet
//! (`store::packets::create`, `create_packet.lua`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;

use super::store as packets;
use crate::api::error::ApiError;
use crate::api::extract::{Caller, JsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::domain::is_reference;
use crate::packets::http::PacketBody;
use crate::packets::rules::{CreateOutcome, PacketRequest};

crate::api::refusal::refusals! {
    /// What `POST /packets` refuses, beside the answers every route shares.
    pub enum CreateRefusal {

        402 InsufficientFundsError {
            /// the balance is below `total_cents` (`balance_cents`); nothing written
            InsufficientFunds = "insufficient_funds" {
                /// The balance, cents.
                balance_cents: i64,
            },
        }
        409 IdempotencyKeyReusedError in CreateConflictError {
            /// the key was used with a different request
            IdempotencyKeyReused = "idempotency_key_reused",
        }
        /// 409: the sender has `HONGBAO_MAX_OPEN_PACKETS_PER_USER` packets open.
        409 TooManyOpenPacketsError in CreateConflictError retry_after "seconds until the first of the sender's open packets expires" {
            /// the sender has `HONGBAO_MAX_OPEN_PACKETS_PER_USER` packets open (neither
            /// expired nor cancelled); retry after `Retry-After` seconds, or cancel one;
            /// nothing written
            TooManyOpenPackets = "too_many_open_packets" {
                /// The bound, packets.
                max_open_packets: u32,
            },
        }
        429 RateLimitedError retry_after "seconds to wait before retrying" {
            /// the sender's `HONGBAO_PACKETS_PER_MINUTE` or `HONGBAO_PACKETS_PER_DAY` is used
            /// up; retry after `Retry-After` seconds; nothing written
            RateLimited = "rate_limited",
        }
    }
}

/// `POST /packets` (JWT): the template's `CreatePacket` event.
pub const OPERATION: Operation = Operation {
    event: "CreatePacket",
    method: Method::Post,
    path: "/packets",
    auth: Auth::Jwt,
    refusals: CreateRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the `Idempotency-Key` header (sent with the same body)",
        kept: "`HONGBAO_IDEMPOTENCY_TTL_SECS` (1 day)",
        changed: Changed::Refused("idempotency_key_reused"),
        also: "",
    }),
};

/// `POST /packets`: 201 [`PacketBody`]; or a [`CreateRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "red packets", operation_id = "create_packet",
    summary = "Create a red packet",
    description = "Debits the caller (the sender) the total and creates a lucky or fixed red packet of `count` shares, optionally targeted at `recipients`. With an `Idempotency-Key`, a repeat of the same request returns the same packet, debited once.",
    request_body = crate::packets::rules::PacketRequest,
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, description = "1 to 64 visible ASCII characters: a repeat with the same key and body returns the same packet, debited once", pattern = "^[!-~]{1,64}$")),
    responses(
        (status = 201, description = "created (or the earlier packet of this Idempotency-Key)", body = PacketBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    Caller(sender): Caller,
    headers: HeaderMap,
    JsonBody(req): JsonBody<PacketRequest>,
) -> Result<(StatusCode, Replayed, Json<PacketBody>), ApiError> {
    let idempotency_key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => match v.to_str() {
            Ok(k) if is_reference(k) => Some(k.to_string()),
            _ => {
                return Err(ApiError::invalid(
                    "Idempotency-Key must be 1 to 64 visible ASCII characters",
                ))
            }
        },
    };
    let new = state.store.config().packets.check(req)?;
    let created = packets::create(&state.store, &sender, &new, idempotency_key.as_deref())
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(match idempotency_key {
                Some(_) => "the packet may have been created: a retry with the same Idempotency-Key and body returns it, debited once",
                None => "the packet may have been created: a retry without an Idempotency-Key may create and debit a second packet (send an Idempotency-Key, or look at GET /packets?role=sent first)",
            })
        })?;
    match created {
        CreateOutcome::Created(p) => {
            metrics::count(metrics::PACKET_CREATED, 1);
            metrics::count(metrics::PACKET_CREATED_CENTS, p.total_cents.max(0) as u64);
            Ok((
                StatusCode::CREATED,
                Replayed(false),
                Json(PacketBody::from(&p)),
            ))
        }
        CreateOutcome::Repeat(p) => Ok((
            StatusCode::CREATED,
            Replayed(true),
            Json(PacketBody::from(&p)),
        )),
        CreateOutcome::InsufficientFunds { balance_cents } => Err(
            CreateRefusal::InsufficientFunds { balance_cents }.because(format!(
                "balance {balance_cents} cents is below total_cents {}",
                new.total_cents
            )),
        ),
        CreateOutcome::IdempotencyKeyReused => Err(CreateRefusal::IdempotencyKeyReused
            .because("this Idempotency-Key was used with a different request")),
        CreateOutcome::RateLimited {
            retry_after_ms,
            per_day,
        } => {
            let rules = &state.store.config().packets;
            Err(CreateRefusal::RateLimited
                .because(if per_day {
                    format!(
                        "at most {} red packets per day per sender (HONGBAO_PACKETS_PER_DAY)",
                        rules.packets_per_day
                    )
                } else {
                    format!(
                        "at most {} red packets per minute per sender (HONGBAO_PACKETS_PER_MINUTE)",
                        rules.packets_per_minute
                    )
                })
                .retry_after_ms(retry_after_ms))
        }
        CreateOutcome::TooManyOpen { retry_after_ms } => {
            let max_open_packets = state.store.config().packets.max_open_packets;
            Err(CreateRefusal::TooManyOpenPackets { max_open_packets }
                .because(format!(
                    "at most {max_open_packets} open red packets per sender \
                     (HONGBAO_MAX_OPEN_PACKETS_PER_USER): cancel one or wait until one expires"
                ))
                .retry_after_ms(retry_after_ms))
        }
    }
}
