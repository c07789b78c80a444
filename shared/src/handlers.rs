//! The request handlers of the HTTP functions. Each function's `main` builds one [`Store`] and
//! passes every request to its handler here; handlers never fail (errors become JSON answers).
//!
//! | function | routes |
//! | --- | --- |
//! | create-packet | `POST /packets` |
//! | grab | `GET /packets/{id}`, `POST /packets/{id}/grab` |
//! | claim | `POST /packets/{id}/claim` |
//! | wallet | `GET /wallet`, `POST /wallet/deposits` |

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::MAX_EXPIRES_IN_SECS;
use crate::http::{self, caller, json_body, json_response, path_id, rfc3339, ApiError, Route};
use crate::packets::{self, ClaimOutcome, CreateOutcome, GrabOutcome, NewPacket, Packet, Share};
use crate::split::{LuckySplit, Mode};
use crate::store::Store;
use crate::wallet::{self, DepositOutcome, MAX_DEPOSIT_CENTS};

/// The longest greeting, characters.
pub const MAX_GREETING_CHARS: usize = 100;

/// Default `expires_in_secs`: one day.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 86_400;

fn respond(result: Result<Response<Body>, ApiError>) -> Response<Body> {
    result.unwrap_or_else(ApiError::into_response)
}

fn wrong_function(route: &Route) -> ApiError {
    ApiError::not_found(format!("this function does not serve {route:?}"))
}

/// Handler of the create-packet function: `POST /packets`.
pub async fn create_packet(store: &Store, req: Request) -> Response<Body> {
    respond(create_packet_inner(store, req).await)
}

/// The body of `POST /packets`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    total_cents: i64,
    count: i64,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    split: Option<LuckySplit>,
    #[serde(default)]
    expires_in_secs: Option<i64>,
    #[serde(default)]
    greeting: Option<String>,
}

/// Checks a create request against the contract and the configured limits.
///
/// # Errors
/// 400 `invalid_request` naming the offending field.
pub fn validate_new_packet(
    cfg: &crate::config::Config,
    body: &[u8],
) -> Result<NewPacket, ApiError> {
    let b: CreateBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))?;
    let mode = b.mode.unwrap_or(Mode::Lucky);
    if !(1..=i64::from(cfg.max_count)).contains(&b.count) {
        return Err(ApiError::invalid(format!("count must be 1..={}", cfg.max_count)));
    }
    if !(b.count..=cfg.max_total_cents).contains(&b.total_cents) {
        return Err(ApiError::invalid(format!(
            "total_cents must be count..={} (every share is at least 1 cent)",
            cfg.max_total_cents
        )));
    }
    if mode == Mode::Fixed && b.total_cents % b.count != 0 {
        return Err(ApiError::invalid("a fixed packet needs total_cents divisible by count"));
    }
    if mode == Mode::Fixed && b.split.is_some() {
        return Err(ApiError::invalid("split applies to lucky packets only"));
    }
    let expires = b.expires_in_secs.unwrap_or(DEFAULT_EXPIRES_IN_SECS as i64);
    if !(1..=MAX_EXPIRES_IN_SECS as i64).contains(&expires) {
        return Err(ApiError::invalid(format!("expires_in_secs must be 1..={MAX_EXPIRES_IN_SECS}")));
    }
    if let Some(g) = &b.greeting {
        if g.chars().count() > MAX_GREETING_CHARS {
            return Err(ApiError::invalid(format!("greeting must be at most {MAX_GREETING_CHARS} characters")));
        }
        if g.contains('\0') {
            return Err(ApiError::invalid("greeting must not contain NUL"));
        }
    }
    Ok(NewPacket {
        total_cents: b.total_cents,
        count: b.count as u32,
        mode,
        split: b.split.unwrap_or(LuckySplit::DoubleMean),
        expires_in_secs: expires as u64,
        greeting: b.greeting.filter(|g| !g.is_empty()),
    })
}

/// Whether `s` is a valid idempotency key or deposit reference: 1 to 64 visible ASCII
/// characters.
pub fn is_reference(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

async fn create_packet_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let route = http::route(&req)?;
    if route != Route::CreatePacket {
        return Err(wrong_function(&route));
    }
    let sender = caller(&req, store.config().auth_mode)?;
    let idempotency_key = match req.headers().get("idempotency-key") {
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
    let new = validate_new_packet(store.config(), req.body().as_ref())?;
    match packets::create(store, &sender, &new, idempotency_key.as_deref()).await? {
        CreateOutcome::Created(p) | CreateOutcome::Repeat(p) => {
            Ok(json_response(StatusCode::CREATED, &Value::Object(packet_json(&p))))
        }
        CreateOutcome::InsufficientFunds { balance_cents } => Err(ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "insufficient_funds",
            format!("balance {balance_cents} cents is below total_cents {}", new.total_cents),
        )
        .with("balance_cents", json!(balance_cents))),
        CreateOutcome::IdempotencyKeyReused => Err(ApiError::new(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            "this Idempotency-Key was used with a different request",
        )),
    }
}

/// The packet fields every packet answer carries.
pub fn packet_json(p: &Packet) -> serde_json::Map<String, Value> {
    let v = json!({
        "packet_id": p.packet_id,
        "sender_id": p.sender_id,
        "total_cents": p.total_cents,
        "count": p.count,
        "mode": p.mode.as_str(),
        "split": p.split.map(LuckySplit::as_str),
        "greeting": p.greeting,
        "created_at": rfc3339(p.created_at_ms),
        "expires_at": rfc3339(p.expires_at_ms),
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// A share as JSON: `{packet_id, share_id, amount_cents, grabbed_at, claim_by}`.
pub fn share_json(packet_id: &str, share: &Share, claim_by_ms: Option<i64>) -> Value {
    let mut v = json!({
        "packet_id": packet_id,
        "share_id": share.share_id,
        "amount_cents": share.amount_cents,
        "grabbed_at": rfc3339(share.grabbed_at_ms),
    });
    if let Some(ms) = claim_by_ms {
        v["claim_by"] = json!(rfc3339(ms));
    }
    v
}

/// Handler of the grab function: `GET /packets/{id}` and `POST /packets/{id}/grab`.
pub async fn grab(store: &Store, req: Request) -> Response<Body> {
    respond(grab_inner(store, req).await)
}

async fn grab_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let route = http::route(&req)?;
    let user = caller(&req, store.config().auth_mode)?;
    match route {
        Route::ViewPacket(parsed) => {
            let id = path_id(&req, &parsed);
            let Some(v) = packets::view(store, &id).await? else {
                return Err(ApiError::not_found(format!("no packet {id}")));
            };
            let mut body = packet_json(&v.packet);
            body.insert("status".into(), json!(v.status.as_str()));
            body.insert("grabbed_count".into(), json!(v.packet.grabbed_count));
            body.insert("grabbed_cents".into(), json!(v.packet.grabbed_cents));
            body.insert("refunded_cents".into(), json!(v.packet.refunded_cents));
            let grabs: Vec<Value> = v
                .grabs
                .iter()
                .map(|g| {
                    json!({
                        "user_id": g.user_id,
                        "share_id": g.share.share_id,
                        "amount_cents": g.share.amount_cents,
                        "grabbed_at": rfc3339(g.share.grabbed_at_ms),
                        "claimed": g.claimed,
                    })
                })
                .collect();
            body.insert("grabs".into(), Value::Array(grabs));
            body.insert(
                "best_luck".into(),
                v.best_luck
                    .map(|(u, a)| json!({"user_id": u, "amount_cents": a}))
                    .unwrap_or(Value::Null),
            );
            Ok(json_response(StatusCode::OK, &Value::Object(body)))
        }
        Route::Grab(parsed) => {
            let id = path_id(&req, &parsed);
            match packets::grab(store, &id, &user).await? {
                GrabOutcome::Grabbed { share, claim_by_ms } => {
                    Ok(json_response(StatusCode::OK, &share_json(&id, &share, Some(claim_by_ms))))
                }
                GrabOutcome::AlreadyGrabbed(share) => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "already_grabbed",
                    "you already grabbed a share of this packet",
                )
                .with("share", share_json(&id, &share, None))),
                GrabOutcome::NotFound => Err(ApiError::not_found(format!("no packet {id}"))),
                GrabOutcome::RateLimited { retry_after_ms } => Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "too many grab attempts; slow down",
                )
                .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))),
                GrabOutcome::Expired => {
                    Err(ApiError::new(StatusCode::GONE, "expired", "this packet has expired"))
                }
                GrabOutcome::SoldOut => {
                    Err(ApiError::new(StatusCode::GONE, "sold_out", "every share has been grabbed"))
                }
            }
        }
        other => Err(wrong_function(&other)),
    }
}

/// Handler of the claim function: `POST /packets/{id}/claim`.
pub async fn claim(store: &Store, req: Request) -> Response<Body> {
    respond(claim_inner(store, req).await)
}

async fn claim_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    let Route::Claim(parsed) = http::route(&req)? else {
        return Err(ApiError::not_found("this function serves POST /packets/{id}/claim only"));
    };
    let user = caller(&req, store.config().auth_mode)?;
    let id = path_id(&req, &parsed);
    match packets::claim(store, &id, &user).await? {
        ClaimOutcome::Claimed { share, balance_cents, claimed_at_ms, repeat } => Ok(json_response(
            StatusCode::OK,
            &json!({
                "packet_id": id,
                "share_id": share.share_id,
                "amount_cents": share.amount_cents,
                "balance_cents": balance_cents,
                "claimed_at": rfc3339(claimed_at_ms),
                "repeat": repeat,
            }),
        )),
        ClaimOutcome::NotFound => Err(ApiError::not_found(format!("no packet {id}"))),
        ClaimOutcome::NoShare => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_share",
            "you grabbed no share of this packet",
        )),
        ClaimOutcome::Expired => {
            Err(ApiError::new(StatusCode::GONE, "expired", "the claim window of this packet has closed"))
        }
    }
}

/// Handler of the wallet function: `GET /wallet` and `POST /wallet/deposits`.
pub async fn wallet(store: &Store, req: Request) -> Response<Body> {
    respond(wallet_inner(store, req).await)
}

/// The body of `POST /wallet/deposits`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositBody {
    user_id: String,
    amount_cents: i64,
    reference: String,
}

async fn wallet_inner(store: &Store, req: Request) -> Result<Response<Body>, ApiError> {
    match http::route(&req)? {
        Route::GetWallet => {
            let user = caller(&req, store.config().auth_mode)?;
            let w = wallet::get(store, &user).await?;
            let entries: Vec<Value> = w
                .entries
                .iter()
                .map(|e| {
                    json!({
                        "kind": e.kind.as_str(),
                        "amount_cents": e.amount_cents,
                        "reference": e.reference,
                        "at": rfc3339(e.at_ms),
                    })
                })
                .collect();
            Ok(json_response(
                StatusCode::OK,
                &json!({"user_id": user, "balance_cents": w.balance_cents, "entries": entries}),
            ))
        }
        Route::Deposit => {
            if !http::is_iam_caller(&req) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "deposits are accepted only from AWS_IAM-signed calls of trusted backends",
                ));
            }
            let b: DepositBody = json_body(&req)?;
            if !http::is_user_id(&b.user_id) {
                return Err(ApiError::invalid("user_id must be 1 to 64 characters of [A-Za-z0-9_-]"));
            }
            if !(1..=MAX_DEPOSIT_CENTS).contains(&b.amount_cents) {
                return Err(ApiError::invalid(format!("amount_cents must be 1..={MAX_DEPOSIT_CENTS}")));
            }
            if !is_reference(&b.reference) {
                return Err(ApiError::invalid("reference must be 1 to 64 visible ASCII characters"));
            }
            let (balance, repeat) =
                match wallet::deposit(store, &b.user_id, b.amount_cents, &b.reference).await? {
                    DepositOutcome::Applied { balance_cents } => (balance_cents, false),
                    DepositOutcome::Repeat { balance_cents } => (balance_cents, true),
                    DepositOutcome::ReferenceReused => {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            "idempotency_key_reused",
                            "this reference was deposited before with a different amount",
                        ))
                    }
                };
            Ok(json_response(
                StatusCode::CREATED,
                &json!({"user_id": b.user_id, "balance_cents": balance, "reference": b.reference, "repeat": repeat}),
            ))
        }
        other => Err(wrong_function(&other)),
    }
}

/// Handler of the reclaim-cron function (an EventBridge scheduled event): runs one
/// [`crate::reclaim::run`] and returns its summary as JSON
/// `{"settled", "refunded_cents", "redriven", "remaining_due", "skipped_locked"}`.
///
/// # Errors
/// [`crate::error::Error`] when Redis is unavailable (the invocation fails; the next scheduled
/// run continues).
pub async fn reclaim_cron(store: &Store) -> Result<Value, crate::error::Error> {
    let summary = crate::reclaim::run(store).await?;
    tracing::info!(
        settled = summary.settled,
        refunded_cents = summary.refunded_cents,
        redriven = summary.redriven,
        remaining_due = summary.remaining_due,
        skipped_locked = summary.skipped_locked,
        "reclaim run finished"
    );
    Ok(serde_json::to_value(summary).expect("summary serializes"))
}
