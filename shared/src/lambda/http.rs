//! Serving an axum router to API Gateway HTTP API events (`lambda_http`): the stage taken off
//! the path, each request timed, the metrics flushed after each invocation.

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use tower::Layer;

use super::emf::flush_metrics;
use super::Function;

/// Serves `router` to API Gateway events until the sandbox ends (`lambda_http::run` of
/// [`for_api_gateway`]: the stage taken off the path, one `LatencyMs` per request and the
/// metrics flushed after each one).
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve(router: Router) -> Result<(), lambda_runtime::Error> {
    lambda_http::run(for_api_gateway(router)).await
}

/// An HTTP function's whole life: its Init ([`super::init`]), then [`serve`] of its router
/// ([`Function::router`]) until the sandbox ends.
///
/// # Errors
/// Init's ([`super::InitError`]), the Lambda runtime's, or that `function` is a scheduled one
/// (it has no router).
pub async fn run_http(function: Function) -> Result<(), lambda_runtime::Error> {
    let state = super::init(function).await?;
    let Some(router) = function.router(state) else {
        return Err(format!("{} is not an HTTP function", function.name()).into());
    };
    serve(router).await
}

/// `router` as API Gateway events reach it: with a named stage (not `$default`), the HTTP API
/// puts the stage in front of the path (`/prod/packets`), which is taken off before routing.
/// A function hands `for_api_gateway(its router)` to `lambda_http::run`; the tests call the
/// same.
pub fn for_api_gateway(router: Router) -> Router {
    let staged = middleware::from_fn(strip_stage).layer(router);
    Router::new().fallback_service(middleware::from_fn(time_request).layer(staged))
}

/// Records the handler time of every request as `LatencyMs` and counts it (`Requests`, and
/// `Answered4xx` / `Answered5xx` by its status), then flushes the invocation's metrics as one
/// EMF line ([`crate::api::metrics`]).
async fn time_request(req: Request, next: Next) -> Response {
    use crate::api::metrics;
    let request_id = req.lambda_context_ref().map(|c| c.request_id.clone());
    let started = std::time::Instant::now();
    let resp = next.run(req).await;
    metrics::latency_ms(started.elapsed().as_secs_f64() * 1000.0);
    metrics::count(metrics::REQUESTS, 1);
    let status = resp.status();
    if status.is_client_error() {
        metrics::count(metrics::ANSWERED_4XX, 1);
    } else if status.is_server_error() {
        metrics::count(metrics::ANSWERED_5XX, 1);
    }
    flush_metrics(request_id.as_deref());
    resp
}

async fn strip_stage(mut req: Request, next: Next) -> Response {
    let stage = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.stage.clone(),
        _ => None,
    };
    if let Some(stage) = stage.filter(|s| s != "$default" && !s.is_empty()) {
        let prefix = format!("/{stage}");
        let path = req.uri().path();
        let rest = if path == prefix {
            Some("/")
        } else {
            path.strip_prefix(&prefix).filter(|r| r.starts_with('/'))
        };
        if let Some(rest) = rest {
            let mut target = rest.to_string();
            if let Some(q) = req.uri().query() {
                target = format!("{target}?{q}");
            }
            if let Ok(uri) = target.parse() {
                *req.uri_mut() = uri;
            }
        }
    }
    next.run(req).await
}
