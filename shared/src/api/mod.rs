//! HTTP: the contract every handler shares. A handler sits in its operation's folder
//! (`packets/grab/http.rs`, beside its store step and its script), declaring its [`Operation`]
//! (route, auth, template event); a feature's `routes()` routes them ([`Routes`]), and
//! [`crate::lambda::Function::routes`] says which function serves which (`functions.json`
//! lists the result; `make serve` merges them all into one API, [`crate::lambda::app`]).
//!
//! Following the AWS Lambda Rust runtime's `http-axum` examples, a function's `main` builds its
//! router once and hands it to `lambda_http::run` (through [`crate::lambda::serve`], which
//! takes a named stage off the path). The scheduled functions have no router
//! ([`crate::lambda::reclaim`], [`crate::lambda::ledger_export`]). Every answer is JSON:
//! handlers return `Result<_, ApiError>`, extractors reject with an [`ApiError`], and
//! [`contract()`] turns the router's own 404 and 405 into the contract's `not_found` and
//! `method_not_allowed` (with `Allow`), and axum's plain-text 413 into `payload_too_large`.

pub mod auth;
mod contract;

pub mod error;
pub mod extract;
pub mod metrics;
pub mod openapi;
pub mod operation;
pub mod refusal;
pub mod replay;
pub mod schemas;
pub mod state;

pub use auth::AuthMode;
pub use contract::contract;
pub use error::ApiError;
pub use operation::{Operation, Routes};
pub use state::ApiState;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::Request;
    use axum::http::{header, StatusCode};
    use tower::ServiceExt;

    /// A body over 2 MiB is 413 `payload_too_large` in the contract's JSON shape on every route
    /// that reads one (before, `POST /order-codes` answered axum's `text/plain` "Failed to
    /// buffer the request body", the JSON routes 400 `invalid_request`), and through
    /// [`contract`] also behind an extractor of axum's own. Nothing reaches Redis: the store
    /// here has none.
    #[tokio::test]
    async fn bodies_over_the_limit_are_413_json() {
        let state = ApiState::new(
            crate::store::Store::new(crate::store::Config::default()),
            AuthMode::Header,
        );
        let big = vec![b' '; error::MAX_BODY_BYTES + 1];
        async fn raw(_: axum::body::Bytes) -> &'static str {
            "ok"
        }
        let plain = contract(axum::Router::new().route("/raw", axum::routing::post(raw)));
        let app = |state: ApiState| {
            contract(
                crate::packets::create_routes()
                    .merge(crate::order_codes::routes())
                    .merge(crate::voting::routes())
                    .into_router()
                    .with_state(state),
            )
        };
        for (router, method, path) in [
            (app(state.clone()), "POST", "/order-codes"),
            (app(state.clone()), "POST", "/packets"),
            (app(state.clone()), "POST", "/articles"),
            (app(state.clone()), "POST", "/articles/1/vote"),
            (app(state.clone()), "PUT", "/articles/1/groups"),
            (
                contract(
                    crate::order_codes::routes()
                        .into_router()
                        .with_state(state.clone()),
                ),
                "POST",
                "/order-codes",
            ),
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
}
