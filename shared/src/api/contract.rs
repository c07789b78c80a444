//! The HTTP contract's answers for what no route matches: 404 `not_found`, 405
//! `method_not_allowed` with `Allow`, and axum's own plain-text 413 as `payload_too_large`.

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::Layer;

use super::error::ApiError;
use super::extract;

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
