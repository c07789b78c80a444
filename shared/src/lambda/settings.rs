//! What a function reads at Init ([`settings`]), and [`all_settings`]: the table of every
//! setting of every layer (`docs/configuration.md`'s table is checked against it).

use tracing_subscriber::filter::Targets;

use super::{Function, InitError};
use crate::api::auth::{AuthMode, AUTH_MODE, SAM_LOCAL};
use crate::api::metrics::MetricsSettings;
use crate::domain::settings::Setting;
use crate::domain::{ConfigError, Lookup};

/// `RUST_LOG`.
pub const RUST_LOG: Setting = Setting {
    name: "RUST_LOG",
    default: "info",
    meaning: "log filter: a level, or `target=level` directives (JSON logs to CloudWatch); a value that does not parse stops Init",
};

/// [`RUST_LOG`] parsed: a list of `[target=]level` directives (`info`, `warn,hongbao=debug`),
/// by `tracing_subscriber::filter::Targets` (which needs no regex engine, unlike `EnvFilter`,
/// whose span-field filters no function here uses: a smaller bootstrap).
///
/// # Errors
/// [`ConfigError`] naming `RUST_LOG` when a directive does not parse.
pub fn log_filter(lookup: &Lookup<'_>) -> Result<Targets, ConfigError> {
    lookup.get(&RUST_LOG)
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
    /// Where the metrics go ([`crate::api::metrics::METRICS_NAMESPACE`], the function's name).
    pub metrics: MetricsSettings,
}

/// Reads and checks every setting `function` reads at Init, through `lookup` (a variable name
/// to its value): exactly what [`super::init()`] does with the process environment before it
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

/// Every setting, grouped as `docs/configuration.md`'s table lists them: connection, API,
/// red packets, history, reclaim, wallet, order codes, coupon drops, merchants, voting, ledger
/// export, metrics and logging.
pub fn all_settings() -> Vec<Setting> {
    use crate::coupons::rules::settings as coupon_settings;
    use crate::domain::journal;
    use crate::history::rules as history;
    use crate::merchants::rules as merchants;
    use crate::order_codes::rules as order_codes;
    use crate::packets::rules as packets;
    use crate::voting::rules as voting;
    use crate::wallet::rules as wallet;
    [
        crate::store::config::SETTINGS,
        &[AUTH_MODE, SAM_LOCAL],
        packets::SETTINGS,
        history::SETTINGS,
        packets::RECLAIM_SETTINGS,
        wallet::SETTINGS,
        order_codes::SETTINGS,
        coupon_settings::SETTINGS,
        merchants::SETTINGS,
        voting::SETTINGS,
        journal::SETTINGS,
        crate::api::metrics::SETTINGS,
        &[RUST_LOG],
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration table of `docs/configuration.md` (linked from the README) is exactly
    /// the declared settings, in order, with their defaults and meanings: the table lives in the
    /// code, the page shows it.
    #[test]
    fn readme_configuration_table_matches_the_code() {
        let readme = include_str!("../../../docs/configuration.md");
        let table: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.starts_with("| variable | default |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let expected: Vec<String> = all_settings().iter().map(Setting::markdown_row).collect();
        if table != expected {
            panic!(
                "docs/configuration.md's table differs from the settings declared in the code; \
                 replace its rows with:\n{}",
                expected.join("\n")
            );
        }
        let mut names: Vec<&str> = all_settings().iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            all_settings().len(),
            "a setting is declared twice"
        );
    }

    /// The table checks the real loader: every variable any function's Init settings check
    /// (`lambda::settings`) asks for is a declared setting, and every declared
    /// setting is asked for by some function (none is declared but parsed elsewhere, or
    /// parsed from a string literal with its default typed again). IAM auth is on so that the
    /// conditional reads happen too.
    #[test]
    fn every_variable_read_is_a_declared_setting() {
        use crate::lambda::{settings, Function};
        use std::cell::RefCell;
        let asked = RefCell::new(std::collections::BTreeSet::new());
        let env = |name: &str| {
            asked.borrow_mut().insert(name.to_string());
            match name {
                "REDIS_URL" => Some("rediss://hb.abc.use1.cache.amazonaws.com:6379".into()),
                "REDIS_AUTH" => Some("iam".into()),
                "REDIS_USERNAME" => Some("app".into()),
                "REDIS_IAM_CACHE_NAME" => Some("hb".into()),
                "HONGBAO_EVENT_BUS_NAME" => Some("hb-ledger".into()),
                _ => None,
            }
        };
        for &function in Function::ALL {
            settings(function, &Lookup::new(&env)).unwrap();
        }
        let asked = asked.into_inner();
        let declared: std::collections::BTreeSet<String> =
            all_settings().iter().map(|s| s.name.to_string()).collect();
        let undeclared: Vec<&String> = asked.difference(&declared).collect();
        assert!(
            undeclared.is_empty(),
            "read but not declared: {undeclared:?}"
        );
        let unread: Vec<&String> = declared.difference(&asked).collect();
        assert!(unread.is_empty(), "declared but never read: {unread:?}");
    }

    /// A log filter or a metrics namespace that cannot be used stops Init naming its variable
    /// (a bad `RUST_LOG` used to become `info` silently, and CloudWatch drops the metrics of a
    /// namespace outside its rules).
    #[test]
    fn log_and_metrics_settings_are_checked() {
        use crate::lambda::{settings, Function, InitError};
        for (name, value) in [
            ("RUST_LOG", "hongbao=loud"),
            ("RUST_LOG", "info,=debug=x"),
            ("HONGBAO_METRICS_NAMESPACE", "AWS/Lambda"),
            ("HONGBAO_METRICS_NAMESPACE", "my metrics"),
            ("HONGBAO_METRICS_NAMESPACE", &"n".repeat(256)),
        ] {
            let env = |n: &str| (n == name).then(|| value.to_string());
            match settings(Function::Grab, &Lookup::new(&env)) {
                Err(InitError::Config(e)) => assert_eq!(e.name, name, "{name}={value}"),
                other => panic!("{name}={value}: {other:?}"),
            }
        }
        for (name, value) in [
            ("RUST_LOG", "warn,hongbao=debug"),
            ("RUST_LOG", "trace"),
            ("HONGBAO_METRICS_NAMESPACE", "team/hongbao-prod#1"),
        ] {
            let env = |n: &str| (n == name).then(|| value.to_string());
            settings(Function::Vote, &Lookup::new(&env)).unwrap();
        }
        let env = |n: &str| (n == "AWS_LAMBDA_FUNCTION_NAME").then(|| "hb-grab".to_string());
        let s = settings(Function::Grab, &Lookup::new(&env)).unwrap();
        assert_eq!(
            (s.metrics.namespace.as_str(), s.metrics.function.as_str()),
            ("hongbao", "hb-grab")
        );
    }

    /// A function's Init takes its caller from a header only under `sam local`: anywhere else
    /// (Lambda itself) anyone could send any `x-user-id`, so `header` stops Init there.
    #[test]
    fn header_identity_only_under_sam_local() {
        use crate::lambda::{settings, Function, InitError};
        let env = |sam_local: Option<&'static str>| {
            move |n: &str| match n {
                "HONGBAO_AUTH_MODE" => Some("header".to_string()),
                "AWS_SAM_LOCAL" => sam_local.map(str::to_string),
                _ => None,
            }
        };
        for sam_local in [None, Some("false"), Some("TRUE "), Some("1")] {
            let env = env(sam_local);
            match settings(Function::Grab, &Lookup::new(&env)) {
                Err(InitError::Config(e)) => assert_eq!(e.name, "HONGBAO_AUTH_MODE"),
                other => panic!("AWS_SAM_LOCAL={sam_local:?}: {other:?}"),
            }
        }
        let env = env(Some("true"));
        let s = settings(Function::Grab, &Lookup::new(&env)).unwrap();
        assert_eq!(s.auth, AuthMode::Header);
    }

    /// Every declared default parses (the `Default` of each rule set reads them).
    #[test]
    fn defaults_parse() {
        let _ = crate::store::Config::from_lookup(|_| None).unwrap();
        let _ = AuthMode::from_lookup(&crate::domain::settings::defaults()).unwrap();
    }
}
