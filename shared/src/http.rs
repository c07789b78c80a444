//! HTTP helpers for API Gateway HTTP API (payload format 2.0): routing, caller identity, JSON
//! bodies and the JSON error shape `{"error": code, "message": text}`.

use lambda_http::http::{header, Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::config::AuthMode;
use crate::error::Error;

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
    pub extra: Option<serde_json::Map<String, Value>>,
    /// `Retry-After` header, seconds.
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    /// An error without extras.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: None,
            retry_after_secs: None,
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// Adds an extra top-level field.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), value);
        self
    }

    /// Sets `Retry-After`, seconds.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// The JSON response.
    pub fn into_response(self) -> Response<Body> {
        let mut body = serde_json::Map::new();
        body.insert("error".into(), json!(self.code));
        body.insert("message".into(), json!(self.message));
        if let Some(extra) = self.extra {
            body.extend(extra);
        }
        let mut resp = json_response(self.status, &Value::Object(body));
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut().insert(header::RETRY_AFTER, secs.into());
        }
        resp
    }
}

impl From<Error> for ApiError {
    /// 503 `unavailable` with `Retry-After: 1` for Redis trouble, 500 `internal` for bugs.
    fn from(e: Error) -> Self {
        match e {
            Error::Unavailable(detail) => {
                tracing::warn!(%detail, "redis unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the data store is unavailable; retry shortly (retries are safe)",
                )
                .retry_after(1)
            }
            Error::Internal(detail) => {
                tracing::error!(%detail, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
        }
    }
}

/// A JSON response with `status` and `body`.
pub fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::Text(body.to_string()))
        .expect("static headers are valid")
}

/// The routes of the hongbao HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /packets` (create-packet).
    CreatePacket,
    /// `GET /packets/{id}` (grab).
    ViewPacket(String),
    /// `POST /packets/{id}/grab` (grab).
    Grab(String),
    /// `POST /packets/{id}/claim` (claim).
    Claim(String),
    /// `GET /wallet` (wallet).
    GetWallet,
    /// `POST /wallet/deposits` (wallet).
    Deposit,
    /// `POST /order-codes` (next-order-code).
    OrderCodes,
    /// `POST /articles` (vote).
    PostArticle,
    /// `GET /articles` (vote).
    ListArticles,
    /// `POST /articles/{id}/vote` (vote).
    VoteArticle(String),
    /// `PUT /articles/{id}/groups` (vote).
    SetArticleGroups(String),
    /// `GET /groups/{group}/articles` (vote).
    GroupArticles(String),
}

/// Matches the request's method and path to a [`Route`].
///
/// The path is `rawPath` without a leading stage name (`/prod/packets` -> `/packets`).
///
/// # Errors
/// 404 `not_found` for an unknown path, 405 `method_not_allowed` (with `Allow`) for a known
/// path with another method.
pub fn route(req: &Request) -> Result<Route, ApiError> {
    let mut path = req.raw_http_path().to_string();
    if path.is_empty() {
        path = req.uri().path().to_string();
    }
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref() {
        if let Some(stage) = ctx.stage.as_deref().filter(|s| *s != "$default") {
            let prefix = format!("/{stage}");
            if path == prefix || path.starts_with(&format!("{prefix}/")) {
                path = path[prefix.len()..].to_string();
            }
        }
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let method = req.method();
    let (allowed, route): (&str, Option<Route>) = match segments.as_slice() {
        ["packets"] => (
            "POST",
            (method == Method::POST).then_some(Route::CreatePacket),
        ),
        ["packets", id] => (
            "GET",
            (method == Method::GET).then(|| Route::ViewPacket(id.to_string())),
        ),
        ["packets", id, "grab"] => (
            "POST",
            (method == Method::POST).then(|| Route::Grab(id.to_string())),
        ),
        ["packets", id, "claim"] => (
            "POST",
            (method == Method::POST).then(|| Route::Claim(id.to_string())),
        ),
        ["wallet"] => ("GET", (method == Method::GET).then_some(Route::GetWallet)),
        ["wallet", "deposits"] => ("POST", (method == Method::POST).then_some(Route::Deposit)),
        ["order-codes"] => (
            "POST",
            (method == Method::POST).then_some(Route::OrderCodes),
        ),
        // One path, two methods: `allowed` lists both.
        ["articles"] => (
            "GET, POST",
            if method == Method::GET {
                Some(Route::ListArticles)
            } else if method == Method::POST {
                Some(Route::PostArticle)
            } else {
                None
            },
        ),
        ["articles", id, "vote"] => (
            "POST",
            (method == Method::POST).then(|| Route::VoteArticle(id.to_string())),
        ),
        ["articles", id, "groups"] => (
            "PUT",
            (method == Method::PUT).then(|| Route::SetArticleGroups(id.to_string())),
        ),
        ["groups", group, "articles"] => (
            "GET",
            (method == Method::GET).then(|| Route::GroupArticles(group.to_string())),
        ),
        _ => return Err(ApiError::not_found(format!("no route for {method} {path}"))),
    };
    route.ok_or_else(|| {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{method} is not allowed on {path}; use {allowed}"),
        )
        .with("allow", json!(allowed))
    })
}

/// Whether `id` is a valid user id: 1 to 64 characters of `[A-Za-z0-9_-]`.
pub fn is_user_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The caller's user id: the JWT claim `sub` (verified by the HTTP API JWT authorizer), or,
/// when `mode` is [`AuthMode::Header`], the `x-user-id` header.
///
/// # Errors
/// 401 `unauthorized` when it is missing or not a valid user id ([`is_user_id`]).
pub fn caller(req: &Request, mode: AuthMode) -> Result<String, ApiError> {
    let id = match mode {
        AuthMode::Jwt => match req.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .and_then(|j| j.claims.get("sub"))
                .cloned(),
            _ => None,
        },
        AuthMode::Header => req
            .headers()
            .get("x-user-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let unauthorized = |m: &str| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m);
    match id {
        None => Err(unauthorized(match mode {
            AuthMode::Jwt => "no verified JWT claim `sub` in the request",
            AuthMode::Header => "no x-user-id header",
        })),
        Some(id) if is_user_id(&id) => Ok(id),
        Some(_) => Err(unauthorized(
            "the user id must be 1 to 64 characters of [A-Za-z0-9_-]",
        )),
    }
}

/// The IAM principal of a request authorized by API Gateway's `AWS_IAM` authorizer
/// (`requestContext.authorizer.iam.userArn`, e.g.
/// `arn:aws:sts::123456789012:assumed-role/payments/backend-1`), or `None` for any other request.
pub fn iam_caller_arn(req: &Request) -> Option<String> {
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.iam.as_ref())
            .and_then(|iam| iam.user_arn.clone())
            .filter(|arn| !arn.is_empty()),
        _ => None,
    }
}

/// Parses the JSON body into `T` (declare `T` with `#[serde(deny_unknown_fields)]`).
///
/// # Errors
/// 400 `invalid_request` for an empty or malformed body, wrong types, fractional amounts and
/// unknown fields; the message says which.
pub fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    let bytes: &[u8] = req.body().as_ref();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("a JSON body is required"));
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))
}

/// The path parameter `id` (or the id parsed from the path).
pub fn path_id(req: &Request, parsed: &str) -> String {
    req.path_parameters_ref()
        .and_then(|p| p.first("id"))
        .map(str::to_string)
        .unwrap_or_else(|| parsed.to_string())
}

/// Formats Unix milliseconds as an RFC 3339 UTC time with milliseconds (`...T12:00:00.000Z`).
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids() {
        assert!(is_user_id("alice_01-x"));
        assert!(!is_user_id(""));
        assert!(!is_user_id(&"a".repeat(65)));
        assert!(is_user_id(&"a".repeat(64)));
        assert!(!is_user_id("a{b}"));
        assert!(!is_user_id("é"));
    }

    #[test]
    fn times() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
