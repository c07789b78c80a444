//! The whole hongbao HTTP API on one local port, for `curl`, a browser or an app under
//! development: every function's router merged as `template.yaml` routes them
//! ([`hongbao::lambda::app`]). `make serve` runs it (`scripts/serve.py` starts a `redis-server` on
//! a free port first, unless `REDIS_URL` is set).
//!
//! Local only, never deployed:
//! * identity comes from the `x-user-id` header (`HONGBAO_AUTH_MODE=header`): anyone can be
//!   anyone;
//! * every request arrives as API Gateway would deliver it after its `AWS_IAM` authorizer
//!   accepted the local principal [`LOCAL_PRINCIPAL`], so the IAM routes (deposits,
//!   withdrawals, the coupon merchant routes, the support look-ups) work when
//!   `HONGBAO_DEPOSIT_PRINCIPALS`, `HONGBAO_WITHDRAWAL_PRINCIPALS`, `HONGBAO_COUPON_PRINCIPALS`
//!   and `HONGBAO_SUPPORT_PRINCIPALS` name it (`scripts/serve.py` sets all four).
//!
//! Beside the API, for reading it (not routes of the API: not in `openapi.json`, never
//! deployed):
//! * `GET /docs`: the API reference page, Swagger UI rendering `/openapi.json`;
//! * `GET /openapi.json`: the document this build generates (the committed `openapi.json`: a
//!   unit test keeps them equal);
//! * `GET /docs/swagger-ui/swagger-ui-bundle.js` and `…/swagger-ui.css`: Swagger UI's script
//!   and styles, built into the example by the crate `swagger-ui-dist` (no npm, no download),
//!   so the page works offline in any clone that can `make serve`.
//!
//! Settings are the environment variables of the README (all features read), plus
//! `HONGBAO_SERVE_ADDR` (default `127.0.0.1:3000`).
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 HONGBAO_AUTH_MODE=header \
//!   HONGBAO_DEPOSIT_PRINCIPALS=arn:aws:iam::000000000000:user/hongbao-local \
//!   HONGBAO_WITHDRAWAL_PRINCIPALS=arn:aws:iam::000000000000:user/hongbao-local \
//!   cargo run -p hongbao --example serve
//! ```

use axum::extract::Request;
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{Html, Response};
use axum::routing::get;
use axum::Router;
use hongbao::api::{ApiState, AuthMode};
use hongbao::domain::Lookup;
use hongbao::lambda::Function;
use hongbao::store::{Config, Feature, Store};
use lambda_http::request::RequestContext;
use swagger_ui_dist::{ApiDefinition, OpenApiSource};

/// The IAM `userArn` every local request carries, as if signed by this principal.
const LOCAL_PRINCIPAL: &str = "arn:aws:iam::000000000000:user/hongbao-local";

/// Adds the request context API Gateway would add: stage `$default` and the IAM authorizer's
/// principal [`LOCAL_PRINCIPAL`].
async fn as_api_gateway(mut req: Request, next: Next) -> Response {
    let ctx = serde_json::json!({
        "stage": "$default",
        "http": {"method": req.method().as_str(), "path": req.uri().path()},
        "authorizer": {"iam": {"userArn": LOCAL_PRINCIPAL}},
    });
    let ctx = serde_json::from_value(ctx).expect("a valid request context");
    req.extensions_mut()
        .insert(RequestContext::ApiGatewayV2(ctx));
    next.run(req).await
}

/// The `/docs` page (Swagger UI over `/openapi.json`), `/openapi.json`, and Swagger UI's files
/// under `/docs/swagger-ui/` (the `swagger-ui-dist` crate's routes; its own page there is
/// unused: `/docs` is ours, with the mark `make docs-check` waits for).
fn docs_page() -> Router {
    // Generated once; the process keeps it to the end.
    let openapi: &'static str = hongbao::lambda::openapi::json().leak();
    let router = Router::new()
        .route(
            "/docs",
            get(|| async { Html(include_str!("serve_docs.html")) }),
        )
        .route(
            "/openapi.json",
            get(move || async move { ([(header::CONTENT_TYPE, "application/json")], openapi) }),
        );
    router.merge(swagger_ui_dist::generate_routes(ApiDefinition {
        uri_prefix: "/docs/swagger-ui",
        api_definition: OpenApiSource::Uri("/openapi.json"),
        title: Some("hongbao API"),
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).ok();
    let lookup = Lookup::new(&env);
    hongbao::lambda::init_tracing(&lookup)?;
    // Every feature of the functions that answer HTTP (the routes `app` serves), as their
    // sandboxes read them.
    let mut features: Vec<Feature> = Function::ALL
        .iter()
        .filter(|f| !f.operations().is_empty())
        .flat_map(|f| f.features().iter().copied())
        .collect();
    features.sort_by_key(|f| f.name());
    features.dedup();
    let config = Config::load(&lookup, &features)?;
    let auth = AuthMode::from_lookup(&lookup)?;
    if auth != AuthMode::Header {
        return Err("make serve needs HONGBAO_AUTH_MODE=header (identity from x-user-id)".into());
    }
    let state = ApiState::new(Store::new(config), auth);
    if let Err(e) = state.store.connect_at_cold_start().await {
        tracing::warn!(error = %e, "redis not reachable yet; requests answer 503 until it is");
    }
    let app = hongbao::lambda::app(state)
        .layer(middleware::from_fn(as_api_gateway))
        .merge(docs_page());
    let addr = env("HONGBAO_SERVE_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    tracing::info!(%addr, principal = LOCAL_PRINCIPAL, "hongbao API listening");
    println!("hongbao API on http://{addr} (identity: x-user-id header; docs: /docs)");
    axum::serve(listener, app).await?;
    Ok(())
}
