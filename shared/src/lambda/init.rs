//! A sandbox's Init: JSON tracing, the function's settings, the Redis store, a first
//! connection and the eviction-policy check, once per sandbox before the first event (as the
//! AWS Lambda Rust runtime's examples build everything expensive once).

use tracing_subscriber::filter::Targets;

use super::emf::init_metrics;
use super::settings::{log_filter, settings, Settings};
use super::Function;
use crate::api::state::ApiState;
use crate::domain::{ConfigError, Lookup};
use crate::store::redis_auth::IamTarget;
use crate::store::{EvictionVerdict, Store};
use crate::wallet::rules::IamPrincipals;

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

/// Initialises a sandbox for `function`: JSON tracing, its settings ([`settings`] over the
/// process environment: the connection settings and only its features' settings), the Redis
/// password from Secrets Manager when `REDIS_PASSWORD_SECRET_ARN` names it, a [`Store`] that
/// lives for the process, a first connection attempt (so a bad endpoint, CA or
/// password is one clear log line at cold start; requests then answer 503 while the store
/// keeps retrying), and the eviction-policy check ([`check_eviction`]).
///
/// # Errors
/// [`InitError::Config`] when a setting the function reads is invalid,
/// [`InitError::Secret`] when the password's secret cannot be read, and
/// [`InitError::Eviction`] when the server's policy evicts keys: the function then fails Init
/// with that message instead of running misconfigured.
pub async fn init(function: Function) -> Result<ApiState, InitError> {
    let env = |name: &str| std::env::var(name).ok();
    let lookup = Lookup::new(&env);
    // Tracing first, so that a bad setting stops Init with a logged message.
    init_tracing(&lookup)?;
    let Settings {
        mut config,
        auth,
        metrics,
        ..
    } = settings(function, &lookup)?;
    if let Some(secret_id) = config.redis_auth.password_secret.clone() {
        let client = aws_sdk_secretsmanager::Client::new(&super::aws::sdk_config().await);
        let password = super::secrets::read_password(&client, &secret_id)
            .await
            .inspect_err(|e| tracing::error!(error = %e, "the Redis password's secret"))?;
        config.redis_auth.password = Some(password);
    }
    init_metrics(&metrics);
    let state = ApiState::new(Store::new(config), auth);
    log_unset_principals(function, &lookup)?;
    match state.store.connect_at_cold_start().await {
        Ok(()) => check_eviction(&state.store).await?,
        Err(e) => {
            tracing::error!(error = %e, "redis not ready at cold start; requests answer 503 until it is");
        }
    }
    Ok(state)
}

/// Logs, for each principals setting of the function's AWS_IAM operations that is unset, the
/// routes that therefore refuse every caller (403): one line at cold start, where an operator
/// looking for the cause of a 403 reads.
///
/// # Errors
/// [`ConfigError`] when a principals setting does not parse (as the settings already checked).
fn log_unset_principals(function: Function, lookup: &Lookup<'_>) -> Result<(), ConfigError> {
    let mut by_setting: Vec<(&'static str, Vec<String>)> = Vec::new();
    for op in function.operations() {
        let Some(setting) = op.principals() else {
            continue;
        };
        if !IamPrincipals::from_lookup(lookup, setting)?.is_empty() {
            continue;
        }
        match by_setting
            .iter_mut()
            .find(|(name, _)| *name == setting.name)
        {
            Some((_, routes)) => routes.push(op.route_key()),
            None => by_setting.push((setting.name, vec![op.route_key()])),
        }
    }
    for (name, routes) in by_setting {
        let verb = if routes.len() == 1 {
            "refuses"
        } else {
            "refuse"
        };
        tracing::info!(
            "{name} is unset: {} {verb} every caller (403)",
            routes.join(", ")
        );
    }
    Ok(())
}

/// What an eviction refusal tells the operator to do.
const NOEVICTION: &str = "Set maxmemory-policy to noeviction in the cache's parameter group \
     (full memory then refuses writes with 503; nothing is evicted)";

/// Why a sandbox refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// An environment variable is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server's `maxmemory-policy` may evict a key that guards money or a scarce thing.
    #[error("{0}")]
    Eviction(String),
    /// The Redis password's secret could not be read (`REDIS_PASSWORD_SECRET_ARN`).
    #[error(transparent)]
    Secret(#[from] super::secrets::SecretError),
}

/// Checks the server's `maxmemory-policy` ([`Store::check_eviction_policy`]): an evicting
/// policy is refused, and a refused `INFO` logs that the policy could not be checked. A Redis
/// error here is logged, not fatal (requests answer 503 meanwhile).
///
/// Every key an evicting policy may take guards a scarce thing: `allkeys-*` may take a wallet;
/// `volatile-*` may take any key with a TTL, and those include a call's kept answer (kept the
/// re-send horizon, 960 s: evicted, a re-sent hold, redeem or release applies again), a coupon
/// pool's codes and a settled packet's records. Only an ElastiCache Serverless cache, whose
/// policy no one can set (it evicts keys with a TTL at its data storage limit), starts with a
/// warning: that deployment is documented as keeping no guarantee.
///
/// # Errors
/// [`InitError::Eviction`] for an `allkeys-*` or `volatile-*` policy (`volatile-*` on a
/// serverless cache: a warning).
pub async fn check_eviction(store: &Store) -> Result<(), InitError> {
    let serverless = store.config().redis_auth.iam_target == IamTarget::ElastiCacheServerless;
    match store.check_eviction_policy().await {
        Ok(EvictionVerdict::AllKeys(policy)) => Err(InitError::Eviction(format!(
            "the Redis server's maxmemory-policy is {policy}: it may evict any key, a wallet \
             balance or an idempotency record included, so money could be lost or paid twice. \
             {NOEVICTION}"
        ))),
        Ok(EvictionVerdict::Volatile(policy)) if serverless => {
            tracing::warn!(
                policy,
                "an ElastiCache Serverless cache at its data storage limit evicts keys with a \
                 TTL: a call's kept answer, a coupon pool or a settled packet's records may \
                 vanish early, and a checkout call re-sent after it could apply again; keep the \
                 limit well above use (the store memory alarm)"
            );
            Ok(())
        }
        Ok(EvictionVerdict::Volatile(policy)) => Err(InitError::Eviction(format!(
            "the Redis server's maxmemory-policy is {policy}: under memory pressure it evicts \
             keys with a TTL, and those guard scarce things: a call's kept answer (a hold, \
             redeem or release re-sent within 960 s would apply again), a coupon pool's codes, \
             a settled packet's records. {NOEVICTION}"
        ))),
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
