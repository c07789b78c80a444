//! Red packets over HTTP: the create-packet, grab and claim functions' routers, handlers and
//! response bodies.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::config::AppState;
use super::error::{rfc3339, ApiError};
use super::extract::{shown, Caller, JsonBody, OptionalJsonBody, Path};
use super::metrics;
use crate::domain::is_reference;
use crate::domain::packets::password::PasswordText;
use crate::domain::packets::{
    ClaimOutcome, CreateOutcome, GrabOutcome, Packet, PacketRequest, PacketView, Share,
};
use crate::store::packets;

pub(crate) mod cancel;

/// The routes of the create-packet function, the sender's: `POST /packets`,
/// `POST /packets/{id}/cancel`.
pub(crate) fn create_routes() -> Router<AppState> {
    Router::new()
        .route("/packets", post(create))
        .route("/packets/{id}/cancel", post(cancel::cancel))
}

/// The routes of the grab function: `GET /packets/{id}`, `POST /packets/{id}/grab`, and the
/// caller's history, `GET /packets` and `GET /packets/summary` ([`super::history`]).
pub(crate) fn grab_routes() -> Router<AppState> {
    Router::new()
        .route("/packets", get(super::history::list))
        .route("/packets/summary", get(super::history::summary))
        .route("/packets/{id}", get(view))
        .route("/packets/{id}/grab", post(grab))
}

/// The routes of the claim function: `POST /packets/{id}/claim`.
pub(crate) fn claim_routes() -> Router<AppState> {
    Router::new().route("/packets/{id}/claim", post(claim))
}

/// The create-packet function's router.
pub fn create_router(state: AppState) -> Router {
    super::contract(create_routes().with_state(state))
}

/// The grab function's router.
pub fn grab_router(state: AppState) -> Router {
    super::contract(grab_routes().with_state(state))
}

/// The claim function's router.
pub fn claim_router(state: AppState) -> Router {
    super::contract(claim_routes().with_state(state))
}

/// The packet fields every packet answer carries.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketBody {
    /// 24 hex digits.
    pub packet_id: String,
    /// Who paid for it.
    pub sender_id: String,
    /// Total, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: u32,
    /// `lucky` or `fixed`.
    #[schema(value_type = super::schemas::ModeDoc)]
    pub mode: &'static str,
    /// `double_mean` or `line_cut`; `null` for fixed packets.
    #[schema(value_type = Option<super::schemas::SplitDoc>, required = true)]
    pub split: Option<&'static str>,
    /// Greeting or `null`.
    #[schema(required = true)]
    pub greeting: Option<String>,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// RFC 3339: the deadline for grabs and claims.
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// RFC 3339: when grabs open (`created_at` unless the packet was scheduled with
    /// `opens_in_secs`).
    #[schema(format = DateTime)]
    pub opens_at: String,
    /// The cover id the sender chose, or `null`.
    #[schema(required = true)]
    pub cover: Option<String>,
    /// The fairness receipt: lowercase hex SHA-256 of
    /// `hongbao-shares-v1:<salt hex>:<c1>,...,<cn>` (the shares in cents, share-id order),
    /// fixed at creation; `reveal` proves it once the packet is no longer open. `null` only
    /// for packets created before receipts.
    #[schema(required = true, pattern = "^[0-9a-f]{64}$")]
    pub commitment: Option<String>,
    /// Whether grabbing it needs its password (the password itself is never shown).
    pub password_protected: bool,
}

impl From<&Packet> for PacketBody {
    fn from(p: &Packet) -> Self {
        PacketBody {
            packet_id: p.packet_id.clone(),
            sender_id: p.sender_id.clone(),
            total_cents: p.total_cents,
            count: p.count,
            mode: p.mode.as_str(),
            split: p.split.map(|s| s.as_str()),
            greeting: p.greeting.clone(),
            created_at: rfc3339(p.created_at_ms),
            expires_at: rfc3339(p.expires_at_ms),
            opens_at: rfc3339(p.opens_at_ms),
            cover: p.cover.clone(),
            commitment: p.commitment.clone(),
            password_protected: p.password_verifier.is_some(),
        }
    }
}

/// `POST /packets`: 201 [`PacketBody`]; 400, 401, 402 `insufficient_funds` (+`balance_cents`),
/// 409 `idempotency_key_reused`, 429 `rate_limited` + `Retry-After` (the sender's
/// `HONGBAO_PACKETS_PER_MINUTE` is used up; nothing written).
#[utoipa::path(
    post, path = "/packets", tag = "red packets", operation_id = "create_packet",
    summary = "Create a red packet",
    description = "Debits the caller (the sender) the total and creates a lucky or fixed red packet of `count` shares, optionally targeted at `recipients`. With an `Idempotency-Key`, a repeat of the same request returns the same packet, debited once.",
    request_body = super::schemas::PacketRequestDoc,
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, description = "1 to 64 visible ASCII characters: a repeat with the same key and body returns the same packet, debited once", pattern = "^[!-~]{1,64}$")),
    responses(
        (status = 201, description = "created (or the earlier packet of this Idempotency-Key)", body = PacketBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 402, description = "`insufficient_funds`: the balance is below `total_cents` (`balance_cents`); nothing written", body = super::schemas::InsufficientFundsError),
        (status = 409, description = "`idempotency_key_reused`: the key was used with a different request", body = super::schemas::IdempotencyKeyReusedError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
        (status = 429, description = "`rate_limited`: the sender's `HONGBAO_PACKETS_PER_MINUTE` is used up; retry after `Retry-After` seconds; nothing written", body = super::schemas::RateLimitedError, headers(("Retry-After" = u32, description = "seconds to wait before retrying"))),
    )
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(sender): Caller,
    headers: HeaderMap,
    JsonBody(req): JsonBody<PacketRequest>,
) -> Result<(StatusCode, Json<PacketBody>), ApiError> {
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
        CreateOutcome::Created(p) | CreateOutcome::Repeat(p) => {
            Ok((StatusCode::CREATED, Json(PacketBody::from(&p))))
        }
        CreateOutcome::InsufficientFunds { balance_cents } => Err(ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_funds",
            format!(
                "balance {balance_cents} cents is below total_cents {}",
                new.total_cents
            ),
        )
        .with("balance_cents", balance_cents)),
        CreateOutcome::IdempotencyKeyReused => Err(ApiError::conflict(
            "idempotency_key_reused",
            "this Idempotency-Key was used with a different request",
        )),
        CreateOutcome::RateLimited { retry_after_ms } => Err(ApiError::rate_limited(
            format!(
                "at most {} red packets per minute per sender (HONGBAO_PACKETS_PER_MINUTE)",
                state.store.config().packets.packets_per_minute
            ),
            retry_after_ms,
        )),
    }
}

/// The body of `GET /packets/{id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketViewBody {
    /// The packet's fields.
    #[serde(flatten)]
    pub packet: PacketBody,
    /// `scheduled`, `open`, `sold_out`, `cancelled`, `expired` or `settled`.
    #[schema(value_type = super::schemas::StatusDoc)]
    pub status: &'static str,
    /// Shares grabbed so far.
    pub grabbed_count: u32,
    /// Sum of grabbed shares, cents.
    pub grabbed_cents: i64,
    /// Refunded at settlement, cents.
    pub refunded_cents: i64,
    /// Grabs in grab order.
    pub grabs: Vec<GrabBody>,
    /// The largest share once every share is grabbed, else `null`.
    #[schema(required = true)]
    pub best_luck: Option<BestLuckBody>,
    /// The fairness receipt's proof, once the packet is sold out, expired or settled (absent
    /// while it is scheduled or open): check that SHA-256 of
    /// `hongbao-shares-v1:<salt>:<shares_cents joined by ",">` is `commitment`, that the
    /// shares sum to `total_cents`, and that your grab's `share_id` holds your amount.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reveal: Option<RevealBody>,
}

/// `reveal` of `PacketViewBody`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RevealBody {
    /// The salt committed to, 64 lowercase hex digits (secret until now).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub salt: String,
    /// Every share's amount, cents, in share-id order (share 1 first): `count` of them.
    pub shares_cents: Vec<i64>,
}

/// One grab of a packet (`grabs` of `PacketViewBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GrabBody {
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
    /// Whether it was claimed.
    pub claimed: bool,
}

/// `best_luck` of `PacketViewBody`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BestLuckBody {
    /// The luckiest grabber.
    pub user_id: String,
    /// Their share, cents.
    pub amount_cents: i64,
}

impl From<PacketView> for PacketViewBody {
    fn from(v: PacketView) -> Self {
        PacketViewBody {
            packet: PacketBody::from(&v.packet),
            status: v.status.as_str(),
            grabbed_count: v.packet.grabbed_count,
            grabbed_cents: v.packet.grabbed_cents,
            refunded_cents: v.packet.refunded_cents,
            grabs: v
                .grabs
                .into_iter()
                .map(|g| GrabBody {
                    user_id: g.user_id,
                    share_id: g.share.share_id,
                    amount_cents: g.share.amount_cents,
                    grabbed_at: rfc3339(g.share.grabbed_at_ms),
                    claimed: g.claimed,
                })
                .collect(),
            best_luck: v.best_luck.map(|(user_id, amount_cents)| BestLuckBody {
                user_id,
                amount_cents,
            }),
            reveal: v.reveal.map(|r| RevealBody {
                salt: r.salt,
                shares_cents: r.shares_cents,
            }),
        }
    }
}

/// `GET /packets/{id}`: 200 [`PacketViewBody`]; 401, 404.
#[utoipa::path(
    get, path = "/packets/{id}", tag = "red packets", operation_id = "view_packet",
    summary = "View a red packet",
    description = "The packet, its status, its grabs in grab order and, once every share is grabbed, the best luck. A targeted packet is shown only to its sender and recipients.",
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "the packet, its grabs and best luck", body = PacketViewBody),
        (status = 403, description = "`forbidden`: a targeted packet, shown only to its sender and recipients", body = super::schemas::ForbiddenError),
        (status = 404, description = "`not_found`: no such packet", body = super::schemas::NotFoundError),
    )
)]
pub(crate) async fn view(
    State(state): State<AppState>,
    Caller(viewer): Caller,
    Path(id): Path<String>,
) -> Result<Json<PacketViewBody>, ApiError> {
    match packets::view_as(&state.store, &id, &viewer).await? {
        packets::ViewAs::Found(v) => Ok(Json((*v).into())),
        packets::ViewAs::NotFound => Err(ApiError::not_found(format!("no packet {}", shown(&id)))),
        packets::ViewAs::Forbidden => Err(ApiError::forbidden(
            "this red packet is shown only to its sender and recipients",
        )),
    }
}

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

super::schemas::error_doc! {
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

/// `POST /packets/{id}/grab`: 200 [`ShareBody`]; 401, 404, 409 `already_grabbed` (+`share`),
/// 410 `sold_out` / `expired` / `cancelled`, 425 `not_open_yet` (+`opens_at`) + `Retry-After` (seconds,
/// rounded up), 429 `rate_limited` + `Retry-After`.
#[utoipa::path(
    post, path = "/packets/{id}/grab", tag = "red packets", operation_id = "grab_share",
    summary = "Grab a share of a red packet",
    description = "Takes the next share of the packet for the caller, at most one per user; claim it before `claim_by` (`POST /packets/{id}/claim`). A password packet needs the body `{\"password\": \"...\"}`; any other packet takes no body (or an empty object).",
    request_body = GrabRequest,
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "a share won", body = ShareBody),
        (status = 403, description = "`not_a_recipient` (a targeted packet, and the caller is not one of its recipients) or `wrong_password` (a password packet, and the body's `password` is missing or wrong: the attempt counts toward the grab rate limit); nothing else written", body = super::schemas::GrabForbiddenError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
        (status = 404, description = "`not_found`: no such packet", body = super::schemas::NotFoundError),
        (status = 409, description = "`already_grabbed`: the caller's earlier share is in `share`", body = AlreadyGrabbedError),
        (status = 410, description = "`sold_out`, `expired` or `cancelled` (by its sender); nothing written", body = super::schemas::GrabGoneError),
        (status = 425, description = "`not_open_yet`: a scheduled packet before `opens_at`; retry after `Retry-After` seconds; nothing written", body = super::schemas::NotOpenYetError, headers(("Retry-After" = u32, description = "seconds until the packet opens, rounded up"))),
        (status = 429, description = "`rate_limited`: too many grab attempts; retry after `Retry-After` seconds; nothing written", body = super::schemas::RateLimitedError, headers(("Retry-After" = u32, description = "seconds to wait before retrying"))),
    )
)]
pub(crate) async fn grab(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<GrabRequest>,
) -> Result<Json<ShareBody>, ApiError> {
    let password = body.and_then(|b| b.password).map(|p| p.normalised());
    let outcome = packets::grab_with_password(&state.store, &id, &user, password.as_ref()).await?;
    let counted = match outcome {
        GrabOutcome::Grabbed { .. } => Some(metrics::GRAB_WON),
        GrabOutcome::AlreadyGrabbed(_) => Some(metrics::GRAB_ALREADY_GRABBED),
        GrabOutcome::RateLimited { .. } => Some(metrics::GRAB_RATE_LIMITED),
        GrabOutcome::Expired => Some(metrics::GRAB_EXPIRED),
        GrabOutcome::SoldOut => Some(metrics::GRAB_SOLD_OUT),
        GrabOutcome::NotOpenYet { .. } => Some(metrics::GRAB_NOT_OPEN_YET),
        GrabOutcome::WrongPassword => Some(metrics::GRAB_WRONG_PASSWORD),
        GrabOutcome::NotFound | GrabOutcome::NotARecipient | GrabOutcome::Cancelled => None,
    };
    if let Some(name) = counted {
        metrics::count(name, 1);
    }
    match outcome {
        GrabOutcome::Grabbed { share, claim_by_ms } => {
            Ok(Json(ShareBody::new(&id, &share, Some(claim_by_ms))))
        }
        GrabOutcome::AlreadyGrabbed(share) => Err(ApiError::conflict(
            "already_grabbed",
            "you already grabbed a share of this packet",
        )
        .with("share", ShareBody::new(&id, &share, None))),
        GrabOutcome::NotFound => Err(ApiError::not_found(format!("no packet {}", shown(&id)))),
        GrabOutcome::NotARecipient => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_a_recipient",
            "this red packet is for its recipients only; nothing was written",
        )),
        GrabOutcome::RateLimited { retry_after_ms } => Err(ApiError::rate_limited(
            "too many grab attempts; slow down",
            retry_after_ms,
        )),
        GrabOutcome::Expired => Err(ApiError::gone("expired", "this packet has expired")),
        GrabOutcome::SoldOut => Err(ApiError::gone("sold_out", "every share has been grabbed")),
        GrabOutcome::WrongPassword => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "wrong_password",
            "this red packet needs its password (body {\"password\": \"...\"}); a missing or wrong one counts toward the grab rate limit and writes nothing else",
        )),
        GrabOutcome::Cancelled => Err(ApiError::gone(
            "cancelled",
            "the sender cancelled this packet; nothing was written",
        )),
        GrabOutcome::NotOpenYet {
            opens_at_ms,
            retry_after_ms,
        } => Err(ApiError::new(
            StatusCode::TOO_EARLY,
            "not_open_yet",
            "this red packet opens at opens_at; nothing was written",
        )
        .with("opens_at", rfc3339(opens_at_ms))
        .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))),
    }
}

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
    /// The caller's balance after the credit, cents.
    pub balance_cents: i64,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub claimed_at: String,
    /// `true` when an earlier call credited it (nothing credited now).
    pub repeat: bool,
}

/// `POST /packets/{id}/claim`: 200 [`ClaimBody`]; 401, 404 `not_found` / `no_share`,
/// 410 `expired`.
#[utoipa::path(
    post, path = "/packets/{id}/claim", tag = "red packets", operation_id = "claim_share",
    summary = "Claim a grabbed share",
    description = "Credits the caller's grabbed share of the packet to their wallet, once: later calls answer the same with `repeat: true`.",
    params(("id" = String, Path, description = "packet id, 24 hex digits", pattern = "^[0-9a-f]{24}$")),
    responses(
        (status = 200, description = "the share credited to the caller's wallet (once; `repeat` on later calls)", body = ClaimBody),
        (status = 404, description = "`not_found` (no such packet) or `no_share` (the caller grabbed none)", body = super::schemas::ClaimNotFoundError),
        (status = 410, description = "`expired`: the claim window has closed", body = super::schemas::ExpiredError),
    )
)]
pub(crate) async fn claim(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<ClaimBody>, ApiError> {
    match packets::claim(&state.store, &id, &user).await? {
        ClaimOutcome::Claimed {
            share,
            balance_cents,
            claimed_at_ms,
            repeat,
        } => Ok(Json({
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
            }
        })),
        ClaimOutcome::NotFound => Err(ApiError::not_found(format!("no packet {}", shown(&id)))),
        ClaimOutcome::NoShare => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_share",
            "you grabbed no share of this packet",
        )),
        ClaimOutcome::Expired => Err(ApiError::gone(
            "expired",
            "the claim window of this packet has closed",
        )),
    }
}
