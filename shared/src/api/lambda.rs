//! The Lambda side shared by every function's `main`: one-time initialisation (tracing, the
//! function's settings, the Redis store, a connection attempt during Init) and serving a
//! router to API Gateway events.
//!
//! Following the AWS Lambda Rust runtime examples: everything expensive is built once per
//! sandbox, before the first event, and reused by every invocation.

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use tower::Layer;

use tracing_subscriber::filter::Targets;

use super::config::{log_filter, AppState, AuthMode, AUTH_MODE, SAM_LOCAL};
use super::metrics::MetricsSettings;
use crate::domain::{ConfigError, Lookup};
use crate::store::{EvictionVerdict, Feature, Store};

/// Sets up `tracing` for a Lambda function: JSON lines to stdout (CloudWatch), levels from
/// `RUST_LOG` ([`log_filter`]; `info` when it does not parse, and then the error is returned
/// so that Init can stop with it, logged), no ANSI colours, no timestamps (CloudWatch adds them), and other
/// crates capped at `debug` so no raw event with its credentials is ever logged
/// (`credential_safe_levels`). A second call changes nothing.
///
/// # Errors
/// [`ConfigError`] naming `RUST_LOG` when it does not parse (tracing is set up at `info`).
pub fn init_tracing(lookup: &Lookup<'_>) -> Result<(), ConfigError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = log_filter(lookup);
    let _ = tracing_subscriber::fmt()
        // The builder's own ceiling is INFO: lift it, so `RUST_LOG` alone decides (before,
        // `RUST_LOG=debug` printed nothing below INFO).
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .json()
        .with_current_span(false)
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .finish()
        .with(filter.clone().unwrap_or_else(|_| {
            Targets::new().with_default(tracing_subscriber::filter::LevelFilter::INFO)
        }))
        .with(credential_safe_levels())
        .try_init();
    filter.map(drop)
}

/// A second filter under `RUST_LOG`: only hongbao's own code may log at `trace`; every other
/// crate stops at `debug`. `lambda_runtime` logs each raw invocation event at `trace`
/// ("raw JSON event received from Lambda"): the caller's `Authorization` header, cookies, and
/// the `x-amz-security-token` of a SigV4-signed call. Whatever `RUST_LOG` or the template's
/// `LogLevel` says, those lines are never formatted.
fn credential_safe_levels() -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    Targets::new()
        .with_default(LevelFilter::DEBUG)
        .with_target("hongbao", LevelFilter::TRACE)
}

/// One of hongbao's Lambda functions: its name (`functions/<name>`, and the `Binary` of its
/// resource in `template.yaml`) and the features whose settings it reads at Init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `create-packet`: POST /packets.
    CreatePacket,
    /// `grab`: GET /packets/{id}, POST /packets/{id}/grab, the history routes.
    Grab,
    /// `claim`: POST /packets/{id}/claim.
    Claim,
    /// `wallet`: GET /wallet, POST /wallet/deposits, POST /wallet/withdrawals.
    Wallet,
    /// `reclaim-cron`: the EventBridge schedule's refunds.
    ReclaimCron,
    /// `next-order-code`: POST /order-codes.
    NextOrderCode,
    /// `vote`: the article-voting routes.
    Vote,
    /// `ledger-export`: the EventBridge schedule's export of the money journal.
    LedgerExport,
    /// `coupon`: the coupon-drop routes (campaigns, grabs, coupons, redeem).
    Coupon,
}

impl Function {
    /// Every function, in `template.yaml`'s order.
    pub const ALL: [Function; 9] = [
        Function::CreatePacket,
        Function::Grab,
        Function::Claim,
        Function::Wallet,
        Function::ReclaimCron,
        Function::NextOrderCode,
        Function::Vote,
        Function::LedgerExport,
        Function::Coupon,
    ];

    /// The binary's name (`create-packet`, `grab`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Function::CreatePacket => "create-packet",
            Function::Grab => "grab",
            Function::Claim => "claim",
            Function::Wallet => "wallet",
            Function::ReclaimCron => "reclaim-cron",
            Function::NextOrderCode => "next-order-code",
            Function::Vote => "vote",
            Function::LedgerExport => "ledger-export",
            Function::Coupon => "coupon",
        }
    }

    /// The function named `name`, if any.
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The features whose settings the function reads ([`crate::store::Config::load`]); the
    /// others keep their defaults, so a setting the function does not use never stops it.
    pub fn features(self) -> &'static [Feature] {
        match self {
            Function::CreatePacket | Function::Grab | Function::Claim => &[Feature::Packets],
            Function::Wallet => &[Feature::Wallet],
            Function::ReclaimCron => &[Feature::Packets, Feature::Reclaim],
            Function::NextOrderCode => &[Feature::OrderCodes],
            Function::Vote => &[Feature::Voting],
            Function::LedgerExport => &[Feature::LedgerExport],
            Function::Coupon => &[Feature::Coupons],
        }
    }
}

/// What a sandbox's Init reads before it touches Redis: the store's configuration, the
/// identity mode, the log filter and the metrics' namespace and dimension.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Connection settings and the function's feature rules.
    pub config: crate::store::Config,
    /// Where the caller's identity comes from (`HONGBAO_AUTH_MODE`).
    pub auth: AuthMode,
    /// Which log lines are printed (`RUST_LOG`, [`log_filter`]).
    pub log: Targets,
    /// Where the metrics go ([`super::metrics::METRICS_NAMESPACE`], the function's name).
    pub metrics: MetricsSettings,
}

/// Reads and checks every setting `function` reads at Init, through `lookup` (a variable name
/// to its value): exactly what [`init`] does with the process environment before it
/// connects. No network, no AWS call: `tests/template_matrix.py` runs it on the environment
/// `template.yaml` renders for each parameter combination (`examples/check_settings.rs`).
///
/// # Errors
/// [`InitError::Config`] naming the first variable the function cannot start with.
pub fn settings(
    function: Function,
    lookup: &crate::domain::Lookup<'_>,
) -> Result<Settings, InitError> {
    let log = log_filter(lookup)?;
    let auth = AuthMode::from_lookup(lookup)?;
    // `sam local` sets AWS_SAM_LOCAL=true; Lambda never does, and the template never declares
    // it, so a deployed function cannot trust a header for its caller.
    let sam_local = lookup.raw(&SAM_LOCAL).is_some_and(|v| v == "true");
    if auth == AuthMode::Header && !sam_local {
        return Err(ConfigError::new(
            &AUTH_MODE,
            "header",
            "the caller from x-user-id is for `sam local` only (AWS_SAM_LOCAL=true): anyone can \
             send any header",
        )
        .into());
    }
    let config = crate::store::Config::load(lookup, function.features())?;
    let metrics = MetricsSettings::from_lookup(lookup)?;
    Ok(Settings {
        config,
        auth,
        log,
        metrics,
    })
}

/// Initialises a sandbox for `function`: JSON tracing, its settings ([`settings`] over the
/// process environment: the connection settings and only its features' settings), a
/// [`Store`] that lives for the process, a first connection attempt (so a bad endpoint, CA or
/// password is one clear log line at cold start; requests then answer 503 while the store
/// keeps retrying), and the eviction-policy check ([`check_eviction`]).
///
/// # Errors
/// [`InitError::Config`] when a setting the function reads is invalid, and
/// [`InitError::Eviction`] when the server may evict any key: the function then fails Init
/// with that message instead of running misconfigured.
pub async fn init(function: Function) -> Result<AppState, InitError> {
    let env = |name: &str| std::env::var(name).ok();
    let lookup = Lookup::new(&env);
    // Tracing first, so that a bad setting stops Init with a logged message.
    init_tracing(&lookup)?;
    let Settings {
        config,
        auth,
        metrics,
        ..
    } = settings(function, &lookup)?;
    init_metrics(&metrics);
    let state = AppState::new(Store::new(config), auth);
    if function.features().contains(&Feature::Wallet) {
        let rules = &state.store.config().wallet;
        if rules.deposit_principals.is_empty() {
            tracing::info!(
                "HONGBAO_DEPOSIT_PRINCIPALS is unset: POST /wallet/deposits refuses every caller (403)"
            );
        }
        if rules.withdrawal_principals.is_empty() {
            tracing::info!(
                "HONGBAO_WITHDRAWAL_PRINCIPALS is unset: POST /wallet/withdrawals refuses every \
                 caller (403)"
            );
        }
    }
    if function.features().contains(&Feature::Coupons)
        && state.store.config().coupons.principals.is_empty()
    {
        tracing::info!(
            "HONGBAO_COUPON_PRINCIPALS is unset: POST /campaigns, POST /campaigns/{{id}}/codes and \
             POST /coupons/redeem refuse every caller (403)"
        );
    }
    match state.store.connect_at_cold_start().await {
        Ok(()) => check_eviction(&state.store).await?,
        Err(e) => {
            tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
        }
    }
    Ok(state)
}

/// The sandbox's EMF collector (`metrics_cloudwatch_embedded`), installed by [`init_metrics`].
static COLLECTOR: std::sync::OnceLock<&'static metrics_cloudwatch_embedded::Collector> =
    std::sync::OnceLock::new();

/// Installs the CloudWatch Embedded Metric Format recorder once per sandbox: the namespace
/// and the dimension `Function` of `settings` (see [`super::metrics`]). [`for_api_gateway`] and
/// [`super::reclaim::serve`] flush it after every invocation, with the Lambda request id as
/// the property `RequestId`. A second call, or a recorder already installed, is logged and
/// ignored.
pub fn init_metrics(settings: &MetricsSettings) {
    use metrics_cloudwatch_embedded::Builder;
    if COLLECTOR.get().is_some() {
        return;
    }
    match Builder::new()
        .cloudwatch_namespace(settings.namespace.clone())
        .with_dimension("Function", settings.function.clone())
        .init()
    {
        Ok(collector) => {
            super::metrics::describe();
            let _ = COLLECTOR.set(collector);
        }
        Err(e) => tracing::warn!(error = %e, "metrics recorder not installed"),
    }
}

/// Prints the metrics recorded since the last flush as one EMF line on stdout, with the
/// invocation's `request_id` as the property `RequestId` (nothing without a recorder, or when
/// no metric moved).
pub(crate) fn flush_metrics(request_id: Option<&str>) {
    let Some(collector) = COLLECTOR.get() else {
        return;
    };
    match request_id {
        Some(id) => collector.set_property("RequestId", id.to_string()),
        None => collector.remove_property("RequestId"),
    };
    if let Err(e) = collector.flush(std::io::stdout().lock()) {
        tracing::warn!(error = %e, "metrics not flushed");
    }
}

/// Serves `router` to API Gateway events until the sandbox ends (`lambda_http::run` of
/// [`for_api_gateway`]: the stage taken off the path, one `LatencyMs` per request and the
/// metrics flushed after each one).
///
/// # Errors
/// The Lambda runtime's, when it cannot reach the Runtime API.
pub async fn serve(router: Router) -> Result<(), lambda_runtime::Error> {
    lambda_http::run(for_api_gateway(router)).await
}

/// Why a sandbox refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// An environment variable is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server's `maxmemory-policy` may evict a wallet or an idempotency record.
    #[error("{0}")]
    Eviction(String),
}

/// Checks the server's `maxmemory-policy` ([`Store::check_eviction_policy`]): `allkeys-*` is
/// refused, `volatile-*` logs one warning, and a refused `INFO` logs that the policy could not
/// be checked. A Redis error here is logged, not fatal (requests answer 503 meanwhile).
///
/// # Errors
/// [`InitError::Eviction`] for an `allkeys-*` policy.
pub async fn check_eviction(store: &Store) -> Result<(), InitError> {
    match store.check_eviction_policy().await {
        Ok(EvictionVerdict::AllKeys(policy)) => Err(InitError::Eviction(format!(
            "the Redis server's maxmemory-policy is {policy}: it may evict any key, a wallet \
             balance or an idempotency record included, so money could be lost or paid twice. \
             Set maxmemory-policy to noeviction (or volatile-*) in the cache's parameter group"
        ))),
        Ok(EvictionVerdict::Volatile(policy)) => {
            tracing::warn!(
                policy,
                "maxmemory-policy evicts keys with a TTL: money records have none, but packet \
                 records and rate limits may vanish early under memory pressure; prefer noeviction"
            );
            Ok(())
        }
        Ok(EvictionVerdict::Safe(policy)) => {
            tracing::info!(policy, "maxmemory-policy checked");
            Ok(())
        }
        Ok(EvictionVerdict::Unknown(why)) => {
            tracing::warn!(reason = %why, "maxmemory-policy could not be checked (INFO not allowed)");
            Ok(())
        }
        Err(e) => {
            tracing::error!(error = %e, "maxmemory-policy could not be checked");
            Ok(())
        }
    }
}

/// `router` as API Gateway events reach it: with a named stage (not `$default`), the HTTP API
/// puts the stage in front of the path (`/prod/packets`), which is taken off before routing.
/// A function hands `for_api_gateway(its router)` to `lambda_http::run`; the tests call the
/// same.
pub fn for_api_gateway(router: Router) -> Router {
    let staged = middleware::from_fn(strip_stage).layer(router);
    Router::new().fallback_service(middleware::from_fn(time_request).layer(staged))
}

/// Records the handler time of every request as `LatencyMs`, then flushes the invocation's
/// metrics as one EMF line ([`super::metrics`]).
async fn time_request(req: Request, next: Next) -> Response {
    let request_id = req.lambda_context_ref().map(|c| c.request_id.clone());
    let started = std::time::Instant::now();
    let resp = next.run(req).await;
    super::metrics::latency_ms(started.elapsed().as_secs_f64() * 1000.0);
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
