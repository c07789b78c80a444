//! One replay convention for every operation a client may send again: [`Replay`], declared once
//! in the operation's `Operation`, answers a call sent again
//! (its idempotency key seen before) with the first call's status and body and the header
//! `Idempotent-Replayed: true` ([`Replayed`]), and refuses a call that reuses the key with
//! other parameters with the declared 409, nothing written.
//!
//! Derived from the declarations: the header in the OpenAPI document (on each such operation's
//! success answers, [`super::openapi::document`]) and the table of docs/idempotency.md
//! ([`table`], checked by a test). Stripe's idempotency convention is the model: one header on
//! every replay, a reused key with other parameters refused.

use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponseParts, ResponseParts};

/// The header a replay carries (`Idempotent-Replayed: true`), as HTTP/2 and API Gateway write
/// header names: lower case.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// How an operation answers a call sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replay {
    /// What makes two calls one (e.g. "the body's `reference`").
    pub key: &'static str,
    /// How long the key is remembered, and the setting that says so.
    pub kept: &'static str,
    /// What a call that reuses the key with other parameters gets.
    pub changed: Changed,
    /// What a replay does beside answering, or "".
    pub also: &'static str,
}

/// What a call that reuses an idempotency key with other parameters gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// Refused 409 with this code (one of the operation's refusals), nothing written.
    Refused(&'static str),
    /// Nothing: the key is the whole call (a path, the caller), so there is no other call
    /// under it.
    Nothing,
    /// The call updates what the key names, as this says (a hold takes the new total).
    Updates(&'static str),
}

/// Adds `Idempotent-Replayed: true` to an answer when it is a replay (`Replayed(true)`), and
/// nothing otherwise: `(status, Replayed(repeat), Json(body))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed(pub bool);

impl IntoResponseParts for Replayed {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut res: ResponseParts) -> Result<ResponseParts, Self::Error> {
        if self.0 {
            res.headers_mut().insert(
                HeaderName::from_static(REPLAYED_HEADER),
                HeaderValue::from_static("true"),
            );
        }
        Ok(res)
    }
}

/// docs/idempotency.md's table: a row `| route | key | kept | a replay | a changed replay |`
/// for each `(route, replay)` of `routes` (an operation's `METHOD /path` and its [`Replay`],
/// in the functions' order).
pub fn table<'a>(routes: impl IntoIterator<Item = (String, &'a Replay)>) -> String {
    let mut out = String::from(
        "| route | the same call is | remembered | sent again | sent again with other parameters |\n\
         | --- | --- | --- | --- | --- |\n",
    );
    for (route, replay) in routes {
        let also = match replay.also {
            "" => String::new(),
            also => format!("; {also}"),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | the first status and body, `Idempotent-Replayed: true`{also} | {} |\n",
            route,
            replay.key,
            replay.kept,
            match replay.changed {
                Changed::Refused(code) => format!("409 `{code}`, nothing written"),
                Changed::Nothing => "— (the key is the whole call)".to_string(),
                Changed::Updates(what) => what.to_string(),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

    #[test]
    fn a_replay_carries_the_header() {
        let response = (Replayed(true), "body").into_response();

        assert_eq!(response.headers()[REPLAYED_HEADER], "true");
    }

    #[test]
    fn a_first_answer_carries_no_header() {
        let response = (Replayed(false), "body").into_response();

        assert!(response.headers().get(REPLAYED_HEADER).is_none());
    }
}
