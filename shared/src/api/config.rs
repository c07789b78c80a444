//! The API's own settings (where the caller's identity comes from, the log filter), the state
//! every router shares, and the table of every setting of every layer (the README's
//! configuration table is checked against it).

use std::sync::Arc;

use crate::domain::settings::Setting;
use crate::domain::{ConfigError, Lookup};
use crate::store::Store;
use tracing_subscriber::filter::Targets;

/// `HONGBAO_AUTH_MODE`.
pub const AUTH_MODE: Setting = Setting {
    name: "HONGBAO_AUTH_MODE",
    default: "jwt",
    meaning: "`jwt` (claim `sub`) or `header` (`x-user-id` and `x-iam-principal`; local development only: a function's Init refuses it unless `AWS_SAM_LOCAL` is `true`)",
};

/// `AWS_SAM_LOCAL`: set to `true` by `sam local` in the containers it runs (never by Lambda,
/// and the template never declares it), the one place where a Lambda function may take its
/// caller from a header.
pub const SAM_LOCAL: Setting = Setting {
    name: "AWS_SAM_LOCAL",
    default: "false",
    meaning:
        "set to `true` by `sam local`: only then may a function run with `HONGBAO_AUTH_MODE=header`",
};

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

/// How the caller's user id is found in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// The verified JWT claim `sub` (`requestContext.authorizer.jwt.claims.sub`). The default.
    Jwt,
    /// The `x-user-id` header. For local development only: anyone can send any header.
    Header,
}

impl AuthMode {
    /// Reads [`AUTH_MODE`].
    ///
    /// # Errors
    /// [`ConfigError`] for anything but `jwt` or `header`.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let value: String = lookup.get(&AUTH_MODE)?;
        match value.as_str() {
            "jwt" => Ok(AuthMode::Jwt),
            "header" => Ok(AuthMode::Header),
            _ => Err(ConfigError::new(
                &AUTH_MODE,
                value,
                "expected `jwt` or `header`",
            )),
        }
    }
}

/// What every handler gets: the store (connection and feature rules) and the identity mode.
/// Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The Redis store, built once per sandbox.
    pub store: Arc<Store>,
    /// Where the caller's identity comes from.
    pub auth: AuthMode,
}

impl AppState {
    /// A state over `store` with identity from `auth`.
    pub fn new(store: Store, auth: AuthMode) -> Self {
        AppState {
            store: Arc::new(store),
            auth,
        }
    }
}

/// Every setting, grouped as the README's configuration table lists them: connection, API,
/// red packets, history, reclaim, wallet, order codes, coupon drops, voting, ledger export,
/// metrics and logging.
pub fn all_settings() -> Vec<Setting> {
    use crate::domain::{coupons, history, journal, order_codes, packets, voting, wallet};
    [
        crate::store::config::SETTINGS,
        &[AUTH_MODE, SAM_LOCAL],
        packets::SETTINGS,
        history::SETTINGS,
        packets::RECLAIM_SETTINGS,
        wallet::SETTINGS,
        order_codes::SETTINGS,
        coupons::rules::SETTINGS,
        voting::SETTINGS,
        journal::SETTINGS,
        &super::metrics::SETTINGS,
        &[RUST_LOG],
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_modes() {
        let f = |v: &'static str| move |n: &str| (n == "HONGBAO_AUTH_MODE").then(|| v.to_string());
        assert_eq!(
            AuthMode::from_lookup(&crate::domain::settings::defaults()).unwrap(),
            AuthMode::Jwt
        );
        assert_eq!(
            AuthMode::from_lookup(&Lookup::new(&f("header"))).unwrap(),
            AuthMode::Header
        );
        assert!(AuthMode::from_lookup(&Lookup::new(&f("none"))).is_err());
    }

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
        use crate::api::lambda::{settings, Function};
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
        for function in Function::ALL {
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
        use crate::api::lambda::{settings, Function, InitError};
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
        use crate::api::lambda::{settings, Function, InitError};
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
