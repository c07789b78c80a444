//! The JSON error answer `{"error": code, "message": text, ...extras}` and how every failure
//! becomes one.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::domain::Invalid;
use crate::store::Error;

/// The largest request body a route reads, bytes: axum's default body limit (2 MiB); a larger
/// one is answered 413 `payload_too_large` ([`ApiError::payload_too_large`]).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// An error answer: status, machine-readable code, human-readable message, and optional extra
/// top-level fields and `Retry-After` seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status (4xx or 5xx).
    pub status: StatusCode,
    /// The `error` field, e.g. `sold_out`.
    pub code: &'static str,
    /// The `message` field.
    pub message: String,
    /// Extra fields merged into the body (e.g. `share` for `already_grabbed`).
    pub extra: Map<String, Value>,
    /// `Retry-After` header, seconds.
    pub retry_after_secs: Option<u64>,
}

/// The body of an [`ApiError`].
#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: &'a str,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

impl ApiError {
    /// An error without extras.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: Map::new(),
            retry_after_secs: None,
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 401 `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 413 `payload_too_large`: the body is over axum's default limit ([`MAX_BODY_BYTES`]).
    pub fn payload_too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than 2 MiB",
        )
    }

    /// 409 with `code`.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 410 with `code`.
    pub fn gone(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, code, message)
    }

    /// 429 `rate_limited` with `Retry-After` rounded up to whole seconds (at least 1).
    pub fn rate_limited(message: impl Into<String>, retry_after_ms: i64) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
            .retry_after((retry_after_ms.max(1) as u64).div_ceil(1000))
    }

    /// Adds an extra top-level field.
    pub fn with(mut self, key: &str, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).expect("extras serialize");
        self.extra.insert(key.to_string(), value);
        self
    }

    /// Sets `Retry-After` to `ms` milliseconds rounded up to whole seconds (at least 1).
    pub fn retry_after_ms(self, ms: i64) -> Self {
        self.retry_after((ms.max(1) as u64).div_ceil(1000))
    }

    /// Sets `Retry-After`, seconds.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }
}

impl IntoResponse for ApiError {
    /// The JSON body with `Content-Type: application/json`, and `Retry-After` when set.
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.code,
            message: &self.message,
            extra: &self.extra,
        };
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

impl From<Invalid> for ApiError {
    /// 400 `invalid_request` with the rule's message.
    fn from(e: Invalid) -> Self {
        ApiError::invalid(e.0)
    }
}

/// The message of 503 `unavailable`: what is true of every request. A route whose retry is not
/// safe says so with [`ApiError::on_unavailable`].
pub const UNAVAILABLE: &str = "the data store is unavailable; retry after Retry-After seconds";

impl ApiError {
    /// For a 503 `unavailable`, the message with `what_a_retry_does` appended (what the
    /// request may have done and what a retry of it would do); any other error unchanged.
    pub fn on_unavailable(mut self, what_a_retry_does: &str) -> Self {
        if self.code == "unavailable" {
            self.message = format!("{UNAVAILABLE}; {what_a_retry_does}");
        }
        self
    }
}

impl From<Error> for ApiError {
    /// 503 `unavailable` with `Retry-After: 1` for Redis trouble, 500 `internal` for bugs.
    fn from(e: Error) -> Self {
        match e {
            Error::Unavailable(detail) => {
                tracing::warn!(%detail, "redis unavailable");
                super::metrics::count(super::metrics::UNAVAILABLE, 1);
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", UNAVAILABLE)
                    .retry_after(1)
            }
            Error::Internal(detail) => {
                tracing::error!(%detail, "internal error");
                super::metrics::count(super::metrics::INTERNAL, 1);
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
        }
    }
}

/// Formats Unix milliseconds as an RFC 3339 UTC time with milliseconds (`...T12:00:00.000Z`),
/// the API's time format.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[tokio::test]
    async fn error_bodies() {
        let resp = ApiError::rate_limited("slow down", 1001)
            .with("votes", 3)
            .into_response();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": "rate_limited", "message": "slow down", "votes": 3})
        );
    }
}
