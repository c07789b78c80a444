//! Order codes over HTTP: the next-order-code function's router (`POST /order-codes`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::AppState;
use super::error::ApiError;
use super::extract::Caller;
use crate::domain::order_codes::{Outcome, MAX_BATCH};
use crate::store::order_codes;

/// The routes of the next-order-code function.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/order-codes", post(next_codes))
}

/// The next-order-code function's router.
pub fn router(state: AppState) -> Router {
    super::contract(routes().with_state(state))
}

/// The body of `POST /order-codes`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CountBody {
    /// Codes to take, `1..=100` (default 1).
    #[serde(default = "one_code")]
    #[schema(minimum = 1, maximum = 100, default = 1)]
    count: i64,
}

fn one_code() -> i64 {
    1
}

/// The number of codes a `POST /order-codes` body asks for: an empty body means 1, otherwise
/// a JSON object `{"count": N}` with an integer `N` in `1..=100` (`count` may be left out).
///
/// # Errors
/// 400 `invalid_request` for malformed JSON, a repeated key, a non-object, unknown fields, a
/// non-integer or out-of-range `count`.
pub(crate) fn order_code_count(body: &[u8]) -> Result<u32, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(1);
    }
    super::extract::no_duplicate_keys(body)?;
    let invalid = |e: serde_json::Error| ApiError::invalid(format!("invalid JSON body: {e}"));
    let v: Value = serde_json::from_slice(body).map_err(invalid)?;
    if !v.is_object() {
        return Err(ApiError::invalid(
            "the body must be a JSON object like {\"count\": 10}",
        ));
    }
    let b: CountBody = serde_json::from_value(v).map_err(invalid)?;
    match u32::try_from(b.count) {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(format!(
            "count must be an integer 1..={MAX_BATCH}"
        ))),
    }
}

/// The answer: the business day and the codes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CodesBody {
    /// The business day, `YYYY-MM-DD`.
    pub date: String,
    /// `count` codes, `yyMMdd` + suffix, in the day's order.
    pub codes: Vec<String>,
}

/// `POST /order-codes` with an optional body `{"count": N}` (`1..=100`, default 1), any
/// authenticated caller (see [`crate::store::order_codes`]).
///
/// 201 [`CodesBody`]; 503 `exhausted` with `"date"` and `Retry-After` (seconds until the next
/// business day) when fewer than `count` codes are left today, none taken; 429 `rate_limited`
/// with `"date"` and `Retry-After` (seconds to the next business day) when the caller's daily
/// quota would be passed, none taken; 400
/// `invalid_request` and 401 `unauthorized` before Redis is touched; 503 `unavailable`.
#[utoipa::path(
    post, path = "/order-codes", tag = "order codes",
    request_body(content = Option<CountBody>, description = "optional; an empty body means one code"),
    responses(
        (status = 201, description = "the codes, all or none", body = CodesBody),
        (status = 400, description = "invalid request, nothing written", body = super::schemas::ErrorDoc),
        (status = 401, description = "no valid caller identity", body = super::schemas::ErrorDoc),
        (status = 429, description = "rate limited or quota used up; `Retry-After` (s)", body = super::schemas::ErrorDoc, headers(("Retry-After" = u64, description = "seconds"))),
        (status = 500, description = "internal error (not retryable)", body = super::schemas::ErrorDoc),
        (status = 503, description = "Redis unavailable; `Retry-After` (s); retries are safe", body = super::schemas::ErrorDoc, headers(("Retry-After" = u64, description = "seconds"))),
    )
)]
pub(crate) async fn next_codes(
    State(state): State<AppState>,
    Caller(user): Caller,
    body: Bytes,
) -> Result<(StatusCode, Json<CodesBody>), ApiError> {
    let count = order_code_count(&body)?;
    match order_codes::next_codes(&state.store, &user, count).await? {
        Outcome::Issued { date, codes } => Ok((
            StatusCode::CREATED,
            Json(CodesBody {
                date: date.to_string(),
                codes,
            }),
        )),
        Outcome::Exhausted {
            date,
            retry_after_secs,
        } => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "exhausted",
            format!(
                "fewer than {count} order codes are left for {date}; the next business day \
                 starts in {retry_after_secs} s"
            ),
        )
        .with("date", date.to_string())
        .retry_after(retry_after_secs)),
        Outcome::QuotaExceeded {
            date,
            used,
            retry_after_secs,
        } => Err(ApiError::rate_limited(
            format!(
                "{count} more order codes would pass your {} of {date}                  (HONGBAO_ORDER_CODES_PER_USER_PER_DAY; {used} taken); the next business day                  starts in {retry_after_secs} s",
                state.store.config().order_codes.per_user_per_day
            ),
            (retry_after_secs * 1000) as i64,
        )
        .with("date", date.to_string())),
    }
}
