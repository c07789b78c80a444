//! Extractors that keep the HTTP contract: the caller's identity ([`Caller`], 401), the IAM
//! principal of a signed call ([`IamPrincipal`]), and bodies ([`RawBody`], [`JsonBody`]: 400
//! `invalid_request` saying what is wrong, 413 `payload_too_large` over 2 MiB).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use serde::de::DeserializeOwned;

use super::config::{AppState, AuthMode};
use super::error::ApiError;
use crate::domain::{is_user_id, MAX_USER_ID_CHARS};

/// The caller's user id: the JWT claim `sub` (verified by the HTTP API JWT authorizer), or,
/// when the state's [`AuthMode`] is [`AuthMode::Header`], the `x-user-id` header.
///
/// Rejection: 401 `unauthorized` when it is missing or not a valid user id
/// ([`is_user_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller(pub String);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        caller(parts, state.auth).map(Caller)
    }
}

/// The caller's user id in `parts` (see [`Caller`]).
///
/// # Errors
/// 401 `unauthorized` when it is missing or not a valid user id.
pub fn caller(parts: &Parts, mode: AuthMode) -> Result<String, ApiError> {
    let id = match mode {
        AuthMode::Jwt => match parts.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .and_then(|j| j.claims.get("sub"))
                .cloned(),
            _ => None,
        },
        AuthMode::Header => parts
            .headers
            .get("x-user-id")
            .and_then(|v| String::from_utf8(v.as_bytes().to_vec()).ok()),
    };
    match id {
        None => Err(ApiError::unauthorized(match mode {
            AuthMode::Jwt => "no verified JWT claim `sub` in the request",
            AuthMode::Header => "no x-user-id header",
        })),
        Some(id) if is_user_id(&id) => Ok(id),
        Some(_) => Err(ApiError::unauthorized(format!(
            "the user id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        ))),
    }
}

/// The IAM principal of a request authorized by API Gateway's `AWS_IAM` authorizer
/// (`requestContext.authorizer.iam.userArn`, e.g.
/// `arn:aws:sts::123456789012:assumed-role/payments/backend-1`), or `None` for any other
/// request. Never rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IamPrincipal(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IamPrincipal {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let arn = match parts.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.iam.as_ref())
                .and_then(|iam| iam.user_arn.clone())
                .filter(|arn| !arn.is_empty()),
            _ => None,
        };
        Ok(IamPrincipal(arn))
    }
}

/// A JSON body parsed into `T` (declare `T` with `#[serde(deny_unknown_fields)]`). Unlike
/// `axum::Json` it needs no `Content-Type` (API Gateway clients often send none) and answers
/// in the contract's shape.
///
/// Rejection: 400 `invalid_request` for an empty or malformed body, wrong types, fractional
/// amounts and unknown fields; the message says which (serde's text names the field); 413
/// `payload_too_large` as [`RawBody`].
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The request body as bytes, like `axum::body::Bytes` but rejecting in the contract's shape.
///
/// Rejection: 413 `payload_too_large` for a body over axum's default limit
/// ([`super::error::MAX_BODY_BYTES`]; axum's own answer is `text/plain`), 400
/// `invalid_request` when the body cannot be read.
#[derive(Debug, Clone)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(|e| match e.status() {
                axum::http::StatusCode::PAYLOAD_TOO_LARGE => ApiError::payload_too_large(),
                _ => ApiError::invalid(format!("could not read the body: {e}")),
            })
    }
}

/// Parses a JSON body into `T`.
///
/// # Errors
/// 400 `invalid_request`: "a JSON body is required" for an empty body, else "invalid JSON
/// body: ..." with serde's explanation.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("a JSON body is required"));
    }
    no_duplicate_keys(bytes)?;
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))
}

/// Refuses a JSON document in which an object, at any depth, names a key twice
/// (`{"count": 100, "count": 1}`). RFC 8259 §4 leaves such a document's meaning to the parser
/// (serde_json keeps the last value when it builds a `Value`, a derived struct refuses), so a
/// request that a proxy, a WAF or a log reader may read differently is refused on every route.
///
/// # Errors
/// 400 `invalid_request` naming the repeated key (cut to [`shown`]'s length), or serde's
/// explanation for malformed JSON.
pub(crate) fn no_duplicate_keys(bytes: &[u8]) -> Result<(), ApiError> {
    use serde::de::Deserializer as _;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_any(UniqueKeys)
        .and_then(|()| de.end())
        .map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))
}

/// A visitor that walks a whole JSON value and fails on an object's repeated key.
struct UniqueKeys;

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key `{}`",
                    shown(&key)
                )));
            }
            map.next_value_seed(UniqueKeys)?;
        }
        Ok(())
    }
}

/// The longest text, in characters, that an error message echoes back (a path id, a key).
pub const SHOWN_CHARS: usize = 64;

/// `text` as an error message may echo it: at most [`SHOWN_CHARS`] characters, then `…` when
/// it was longer, and control characters escaped (`{:?}`-style) so a message never carries a
/// raw line break or a bidi override out of the caller's input.
pub fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(SHOWN_CHARS)
        .flat_map(|c| {
            if c.is_control() || crate::domain::is_invisible_format(c) {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if text.chars().nth(SHOWN_CHARS).is_some() {
        out.push('…');
    }
    out
}
