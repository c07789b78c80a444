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
//! * `GET /docs/swagger-ui/*`: Swagger UI's scripts and styles, the files of the npm package
//!   `swagger-ui-dist` in the directory `HONGBAO_SWAGGER_UI_DIR` names (`scripts/serve.py` sets
//!   it to `tests/clients/node_modules/swagger-ui-dist`, installed by `scripts/install-deps.sh`),
//!   so the page needs no network.
//!
//! Settings are the environment variables of the README (all features read), plus
//! `HONGBAO_SERVE_ADDR` (default `127.0.0.1:3000`) and `HONGBAO_SWAGGER_UI_DIR`.
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
use tower_http::services::ServeDir;

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
/// under `/docs/swagger-ui/` from `swagger_ui` (the `swagger-ui-dist` package's directory).
fn docs_page(swagger_ui: Option<String>) -> Router {
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
    match swagger_ui {
        Some(dir) => router.nest_service("/docs/swagger-ui", ServeDir::new(dir)),
        None => {
            tracing::warn!("HONGBAO_SWAGGER_UI_DIR is not set: /docs cannot load Swagger UI");
            router
        }
    }
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
    let swagger_ui = env("HONGBAO_SWAGGER_UI_DIR");
    // The page is only as good as Swagger UI's files: without them it loads blank.
    let docs = match &swagger_ui {
        Some(dir)
            if std::path::Path::new(dir)
                .join("swagger-ui-bundle.js")
                .is_file() =>
        {
            "/docs"
        }
        _ => "/openapi.json (no Swagger UI files: /docs would be blank)",
    };
    let app = hongbao::lambda::app(state)
        .layer(middleware::from_fn(as_api_gateway))
        .merge(docs_page(swagger_ui));
    let addr = env("HONGBAO_SERVE_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    tracing::info!(%addr, principal = LOCAL_PRINCIPAL, "hongbao API listening");
    println!("hongbao API on http://{addr} (identity: x-user-id header; docs: {docs})");
    axum::serve(listener, app).await?;
    Ok(())
}
