//! Extractors that keep the HTTP contract: the caller's identity ([`Caller`], 401), the IAM
//! principal of a signed call ([`IamPrincipal`]), path parameters ([`Path`]: 400
//! `invalid_request` for text that is not percent-encoded UTF-8), and bodies ([`RawBody`],
//! [`JsonBody`], [`OptionalJsonBody`]: 400 `invalid_request` saying what is wrong, 413
//! `payload_too_large` over 2 MiB, 415 `unsupported_media_type` for a body that is not
//! declared `application/json`), and query strings ([`query_params`]: each known parameter at
//! most once, no other).

use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use serde::de::DeserializeOwned;

use super::auth::AuthMode;
use super::error::ApiError;
use super::state::ApiState;
use crate::domain::{is_user_id, MAX_USER_ID_CHARS};

/// The caller's user id: the JWT claim `sub` (verified by the HTTP API JWT authorizer), or,
/// when the state's [`AuthMode`] is [`AuthMode::Header`], the `x-user-id` header.
///
/// Rejection: 401 `unauthorized` when it is missing or not a valid user id
/// ([`is_user_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller(pub String);

impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
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
/// request. When the state's [`AuthMode`] is [`AuthMode::Header`] (local runs only: `make
/// serve`, `sam local start-api`, whose API Gateway emulation has no IAM authorizer), an
/// `x-iam-principal` header stands for it. Never rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IamPrincipal(pub Option<String>);

impl FromRequestParts<ApiState> for IamPrincipal {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ApiState,
    ) -> Result<Self, Self::Rejection> {
        if state.auth == AuthMode::Header {
            if let Some(arn) = parts
                .headers
                .get("x-iam-principal")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|arn| !arn.is_empty())
            {
                return Ok(IamPrincipal(Some(arn.to_string())));
            }
        }
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

/// A JSON object body parsed into `T` (declare `T` with `#[serde(deny_unknown_fields)]`),
/// answering in the contract's shape.
///
/// Rejection: 400 `invalid_request` for an empty or malformed body, a top-level value that is
/// not an object (serde would bind an array to a struct's fields by position), wrong types,
/// fractional amounts and unknown fields; the message says which (serde's text names the
/// field); 415 `unsupported_media_type` unless the body is declared `application/json`
/// ([`check_json_content_type`]); 413 `payload_too_large` as [`RawBody`].
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = req.headers().get(CONTENT_TYPE).cloned();
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        if is_blank(&bytes) {
            return Err(ApiError::invalid("a JSON body is required"));
        }
        check_json_content_type(content_type.as_ref())?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// An optional JSON object body: `None` for an empty (or all-whitespace) body, which needs no
/// `Content-Type`, else parsed and refused as [`JsonBody`].
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let content_type = req.headers().get(CONTENT_TYPE).cloned();
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        if is_blank(&bytes) {
            return Ok(OptionalJsonBody(None));
        }
        check_json_content_type(content_type.as_ref())?;
        parse_json(&bytes).map(|b| OptionalJsonBody(Some(b)))
    }
}

/// Whether a body is empty or only JSON whitespace.
pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Checks the declared type of a request body: `Content-Type: application/json`, with no
/// parameter other than `charset=utf-8` (any case, quoted or not). RFC 8259 §8.1: JSON
/// exchanged between systems is UTF-8, so `charset=utf-16` is refused rather than misread;
/// a form, `text/plain` or multipart body is refused rather than parsed as JSON by accident
/// (a browser sends those cross-origin without a preflight).
///
/// # Errors
/// 415 `unsupported_media_type` naming what was sent (or that nothing was).
pub fn check_json_content_type(value: Option<&HeaderValue>) -> Result<(), ApiError> {
    let refuse = |sent: &str| {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("the body must be sent as Content-Type: application/json (sent: {sent})"),
        )
    };
    let Some(value) = value else {
        return Err(refuse("no Content-Type"));
    };
    let text = value
        .to_str()
        .map_err(|_| refuse("a header that is not text"))?;
    let parsed: mime::Mime = text.parse().map_err(|_| refuse(&shown(text)))?;
    let json = parsed.type_() == mime::APPLICATION
        && parsed.subtype() == mime::JSON
        && parsed.suffix().is_none();
    let params_ok = parsed
        .params()
        .all(|(name, value)| name == mime::CHARSET && value.as_str().eq_ignore_ascii_case("utf-8"));
    if json && params_ok {
        Ok(())
    } else {
        Err(refuse(&shown(text)))
    }
}

/// A path parameter, like `axum::extract::Path` but answering in the contract's shape.
///
/// Rejection: 400 `invalid_request` when the parameter is not percent-encoded UTF-8
/// (`/packets/%ff`) or does not parse as `T`; axum's own answer is `text/plain`.
#[derive(Debug, Clone)]
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| Path(v))
            .map_err(|e| match e {
                PathRejection::FailedToDeserializePathParams(e)
                    if matches!(e.kind(), ErrorKind::InvalidUtf8InPathParam { .. }) =>
                {
                    ApiError::invalid("a path parameter is not percent-encoded UTF-8 text")
                }
                e => ApiError::invalid(format!("bad path parameter: {}", shown(&e.body_text()))),
            })
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
/// 400 `invalid_request`: "a JSON body is required" for an empty body, "the body must be a
/// JSON object" for an array, a string, a number, `true`/`false` or `null`, else "invalid JSON
/// body: ..." with serde's explanation.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if is_blank(bytes) {
        return Err(ApiError::invalid("a JSON body is required"));
    }
    no_duplicate_keys(bytes)?;
    // The document is valid JSON now: its first non-whitespace byte says what it is.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::invalid("the body must be a JSON object"));
    }
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

/// Walks a query string (`role=sent&limit=5`, percent-decoded, `None` for none): hands each
/// parameter to `take` as `(name, value)`, in order, after checking that its name is one of
/// `known` and was not given before. `only` names the known parameters for the refusal
/// (`role, limit and cursor`). `take` checks the value.
///
/// # Errors
/// 400 `invalid_request`: `unknown query parameter "<name>" (only <only>)` (the name cut by
/// [`shown`]), `<name> is given twice`, or `take`'s error.
pub fn query_params(
    query: Option<&str>,
    known: &[&str],
    only: &str,
    mut take: impl FnMut(&str, &str) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let mut seen = Vec::with_capacity(known.len());
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !known.contains(&name.as_ref()) {
            return Err(ApiError::invalid(format!(
                "unknown query parameter {:?} (only {only})",
                shown(&name)
            )));
        }
        if seen.contains(&name) {
            return Err(ApiError::invalid(format!("{name} is given twice")));
        }
        take(&name, &value)?;
        seen.push(name);
    }
    Ok(())
}

/// Checks a page's query: `limit` (1..=100, default 20: `history::rules::parse_limit`) and
/// `cursor`, each at most once, nothing else. `cursor` is taken by `parse_cursor` (`None`: not
/// a `next_cursor` this route gave out). Returns `(limit, cursor)`.
///
/// # Errors
/// 400 `invalid_request` naming the parameter, as [`query_params`].
pub fn page_query<C>(
    query: Option<&str>,
    parse_cursor: impl Fn(&str) -> Option<C>,
) -> Result<(u32, Option<C>), ApiError> {
    use crate::history::rules::{parse_limit, DEFAULT_LIMIT};
    let (mut limit, mut cursor) = (None, None);
    query_params(
        query,
        &["limit", "cursor"],
        "limit and cursor",
        |name, value| {
            if name == "limit" {
                limit = Some(parse_limit(value)?);
            } else {
                cursor = Some(parse_cursor(value).ok_or_else(|| {
                    ApiError::invalid("cursor must be the next_cursor of a previous page")
                })?);
            }
            Ok(())
        },
    )?;
    Ok((limit.unwrap_or(DEFAULT_LIMIT), cursor))
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

#[cfg(test)]
mod page_query_tests {
    use super::page_query;

    fn digits(v: &str) -> Option<u64> {
        v.parse().ok()
    }

    #[test]
    fn no_query_is_the_first_page_of_twenty() {
        assert_eq!(page_query(None, digits).unwrap(), (20, None));
    }

    #[test]
    fn a_limit_and_a_cursor_are_taken() {
        assert_eq!(
            page_query(Some("limit=5&cursor=12"), digits).unwrap(),
            (5, Some(12))
        );
    }

    #[test]
    fn a_limit_outside_1_to_100_is_refused() {
        for bad in ["limit=0", "limit=101", "limit=x"] {
            assert!(page_query(Some(bad), digits).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cursor_the_route_did_not_give_is_refused() {
        assert!(page_query(Some("cursor=x"), digits).is_err());
    }

    #[test]
    fn a_parameter_given_twice_or_unknown_is_refused() {
        for bad in ["limit=1&limit=2", "role=sent"] {
            assert!(page_query(Some(bad), digits).is_err(), "{bad}");
        }
    }
}
