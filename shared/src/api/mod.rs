//! HTTP: one axum [`Router`] per function, built from the same handlers `make serve` merges
//! into one API ([`app`]).
//!
//! | function | router | routes |
//! | --- | --- | --- |
//! | create-packet | [`packets::create_router`] | `POST /packets` |
//! | grab | [`packets::grab_router`] | `GET /packets/{id}`, `POST /packets/{id}/grab`, `GET /packets` and `GET /packets/summary` ([`history`]) |
//! | claim | [`packets::claim_router`] | `POST /packets/{id}/claim` |
//! | wallet | [`wallet::router`] | `GET /wallet`, `POST /wallet/deposits`, `POST /wallet/withdrawals` |
//! | next-order-code | [`order_codes::router`] | `POST /order-codes` |
//! | vote | [`voting::router`] | `POST /articles`, `GET /articles`, `POST /articles/{id}/vote`, `PUT /articles/{id}/groups`, `GET /groups/{group}/articles` |
//! | coupon | [`coupons::router`] | `POST /campaigns`, `GET /campaigns/{id}`, `POST /campaigns/{id}/codes`, `POST /campaigns/{id}/grab`, `GET /coupons`, `POST /coupons/redeem` |
//! | reclaim-cron | [`reclaim::run`] (an EventBridge event, no router) | |
//!
//! Following the AWS Lambda Rust runtime's `http-axum` examples, a function's `main` builds its
//! router once and hands it to `lambda_http::run` (through [`lambda::for_api_gateway`], which
//! takes a named stage off the path). Every answer is JSON: handlers return
//! `Result<_, ApiError>`, extractors reject with an [`ApiError`], and [`contract`] turns the
//! router's own 404 and 405 into the contract's `not_found` and `method_not_allowed` (with
//! `Allow`), and axum's plain-text 413 into `payload_too_large`.

pub mod config;
pub mod coupons;
pub mod error;
pub mod extract;
pub mod history;
pub mod lambda;
pub mod ledger_export;
pub mod metrics;
pub mod openapi;
pub mod order_codes;
pub mod packets;
pub mod reclaim;
pub mod schemas;
pub mod voting;
pub mod wallet;

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::Layer;

pub use config::{AppState, AuthMode};
pub use error::ApiError;

/// The whole HTTP API in one router: every function's routes, as the template routes them
/// (what `make serve` runs).
pub fn app(state: AppState) -> Router {
    contract(
        Router::new()
            .merge(packets::create_routes())
            .merge(packets::grab_routes())
            .merge(packets::claim_routes())
            .merge(wallet::routes())
            .merge(order_codes::routes())
            .merge(voting::routes())
            .merge(coupons::routes())
            .with_state(state),
    )
}

/// Adds the contract's answers for what the routes do not match: an unknown path is 404
/// `not_found`, a known path with another method 405 `method_not_allowed` with the allowed
/// methods in the `Allow` header and the `allow` field (`GET, POST`; axum's implicit `HEAD` of
/// a `GET` route is not listed, API Gateway never routes it), and a body over 2 MiB that an
/// extractor of axum's own refused (`text/plain` 413) is 413 `payload_too_large` (the
/// contract's extractors, [`extract::RawBody`] and [`extract::JsonBody`], answer it
/// themselves).
pub fn contract(router: Router) -> Router {
    // Around the whole router, not `Router::layer`: a route's layers run inside its
    // `MethodRouter`, before it adds the `Allow` header to a 405.
    let inner = router.fallback(not_found);
    Router::new().fallback_service(middleware::from_fn(method_not_allowed).layer(inner))
}

async fn not_found(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route for {method} {}",
        extract::shown(uri.path())
    ))
}

async fn method_not_allowed(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let resp = next.run(req).await;
    if resp.status() == StatusCode::PAYLOAD_TOO_LARGE
        && resp.headers().get(header::CONTENT_TYPE)
            != Some(&HeaderValue::from_static("application/json"))
    {
        return ApiError::payload_too_large().into_response();
    }
    if resp.status() != StatusCode::METHOD_NOT_ALLOWED
        || resp.headers().get(header::CONTENT_TYPE).is_some()
    {
        return resp;
    }
    let allowed = resp
        .headers()
        .get(header::ALLOW)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "HEAD")
        .collect::<Vec<_>>()
        .join(", ");
    let mut answer = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {}; use {allowed}",
            extract::shown(&path)
        ),
    )
    .with("allow", &allowed)
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&allowed) {
        answer.headers_mut().insert(header::ALLOW, v);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn ok() -> &'static str {
        "ok"
    }

    /// A body over 2 MiB is 413 `payload_too_large` in the contract's JSON shape on every route
    /// that reads one (before, `POST /order-codes` answered axum's `text/plain` "Failed to
    /// buffer the request body", the JSON routes 400 `invalid_request`), and through
    /// [`contract`] also behind an extractor of axum's own. Nothing reaches Redis: the store
    /// here has none.
    #[tokio::test]
    async fn bodies_over_the_limit_are_413_json() {
        let state = AppState::new(
            crate::store::Store::new(crate::store::Config::default()),
            AuthMode::Header,
        );
        let big = vec![b' '; error::MAX_BODY_BYTES + 1];
        async fn raw(_: axum::body::Bytes) -> &'static str {
            "ok"
        }
        let plain = contract(Router::new().route("/raw", axum::routing::post(raw)));
        for (router, method, path) in [
            (app(state.clone()), "POST", "/order-codes"),
            (app(state.clone()), "POST", "/packets"),
            (app(state.clone()), "POST", "/articles"),
            (app(state.clone()), "POST", "/articles/1/vote"),
            (app(state.clone()), "PUT", "/articles/1/groups"),
            (order_codes::router(state.clone()), "POST", "/order-codes"),
            (plain.clone(), "POST", "/raw"),
        ] {
            let req = Request::builder()
                .method(method)
                .uri(path)
                .header("x-user-id", "alice")
                .body(axum::body::Body::from(big.clone()))
                .unwrap();
            let resp = router.oneshot(req).await.unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::PAYLOAD_TOO_LARGE,
                "{method} {path}"
            );
            assert_eq!(
                resp.headers()[header::CONTENT_TYPE],
                "application/json",
                "{method} {path}"
            );
            let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
                .await
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["error"], "payload_too_large", "{method} {path}");
            assert!(v["message"].as_str().unwrap().contains("2 MiB"), "{v}");
        }
    }

    /// 404 and 405 are the contract's JSON answers, 405 with `Allow` (header and field).
    #[tokio::test]
    async fn unknown_paths_and_methods() {
        let router = contract(Router::new().route("/articles", get(ok).post(ok)));
        let send = |method: &str, path: &str| {
            let req = Request::builder()
                .method(method)
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap();
            router.clone().oneshot(req)
        };
        let resp = send("DELETE", "/articles").await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(resp.headers()[header::ALLOW], "GET, POST");
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"], "method_not_allowed");
        assert_eq!(v["allow"], "GET, POST");
        let resp = send("GET", "/nowhere").await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        // A long path is cut before it is echoed (a 10,000-character id once came back
        // whole).
        let long = format!("/{}", "x".repeat(10_000));
        let body = axum::body::to_bytes(send("GET", &long).await.unwrap().into_body(), 1 << 16)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let message = v["message"].as_str().unwrap();
        assert!(message.chars().count() < 100, "{message}");
        assert!(message.ends_with('…'), "{message}");
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            send("GET", "/articles").await.unwrap().status(),
            StatusCode::OK
        );
    }
}
