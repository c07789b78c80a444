//! Settings: environment variables, each declared once as a [`Setting`] (name, default, meaning)
//! next to the rules that read it, and parsed through a [`Lookup`].
//!
//! A function reads only the settings of the features it serves (see
//! [`crate::lambda::Function::features`]), so an invalid `HONGBAO_VOTE_SITE` stops the vote function and
//! nothing else. The defaults are parsed from the same [`Setting::default`] text the
//! configuration table of `docs/configuration.md` shows, and a test checks that the table is
//! exactly the declared settings.
//! A [`Lookup`] answers only for a [`Setting`] (there is no read by a bare name), and a test
//! runs every function's settings check through a recording lookup to show that each variable
//! read is declared.

use std::str::FromStr;

/// One environment variable: its name, its default (as `docs/configuration.md` shows it; `(none)`
/// for a variable without one) and what it means (that page's wording, units included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The variable's name, e.g. `HONGBAO_MAX_COUNT`.
    pub name: &'static str,
    /// The default value as text (parsed like a set value), or `(none)`.
    pub default: &'static str,
    /// Unit and meaning, one line of Markdown.
    pub meaning: &'static str,
}

impl Setting {
    /// The configuration table's row: `` | `NAME` | `default` | meaning | ``.
    pub fn markdown_row(&self) -> String {
        let default = if self.default == NO_DEFAULT {
            NO_DEFAULT.to_string()
        } else {
            format!("`{}`", self.default)
        };
        format!("| `{}` | {} | {} |", self.name, default, self.meaning)
    }
}

/// The [`Setting::default`] of a variable without a default.
pub const NO_DEFAULT: &str = "(none)";

/// A configuration variable that is set but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    /// The variable's name.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ConfigError {
    /// A [`ConfigError`] for `setting` set to `value` ([`ConfigError::named`]).
    pub fn new(setting: &Setting, value: impl ToString, reason: impl Into<String>) -> Self {
        Self::named(setting.name, value.to_string(), reason)
    }

    /// A [`ConfigError`] for the variable `name` set to `value`, with the value already
    /// redacted ([`redacted`]): the error is printed at cold start, so it must never carry a
    /// password.
    pub fn named(name: &'static str, value: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            name,
            value: redacted(name, &value.into()),
            reason: reason.into(),
        }
    }
}

/// `value` of the variable `name` as it may be printed: `REDACTED` for a variable whose
/// name says it holds a secret (`PASSWORD`, `TOKEN`, `SECRET`, a name ending in `_KEY`), a
/// URL's password replaced by `REDACTED`
/// (`rediss://app:REDACTED@host:6379`), or a value that is not a URL but has `user:pass@`
/// in it cut down to what follows the `@`. A comma-separated list of URLs (a `REDIS_URL` node
/// list) has each URL's password replaced; any other list with an `@` in it is cut down to what
/// follows its last `@` (the URL parser would read a later entry's password as a path).
/// Everything else unchanged.
pub fn redacted(name: &str, value: &str) -> String {
    const HIDDEN: &str = "REDACTED";
    let upper = name.to_ascii_uppercase();
    if ["PASSWORD", "TOKEN", "SECRET"]
        .iter()
        .any(|w| upper.contains(w))
        || upper.ends_with("_KEY")
    {
        return HIDDEN.to_string();
    }
    if value.contains(',') {
        let entries: Vec<&str> = value.split(',').collect();
        if entries
            .iter()
            .all(|e| url::Url::parse(e.trim()).is_ok_and(|u| u.has_host()))
        {
            return entries
                .iter()
                .map(|e| redacted(name, e.trim()))
                .collect::<Vec<_>>()
                .join(",");
        }
        if let Some(at) = value.rfind('@') {
            return format!("{HIDDEN}@{}", &value[at + 1..]);
        }
    }
    if let Ok(mut u) = url::Url::parse(value) {
        if u.password().is_some() && u.set_password(Some(HIDDEN)).is_ok() {
            return u.to_string();
        }
        if u.has_host() && u.password().is_none() {
            return value.to_string();
        }
    }
    match value.rfind('@') {
        Some(at) if value[..at].contains(':') => format!("{HIDDEN}@{}", &value[at + 1..]),
        _ => value.to_string(),
    }
}

/// Where settings come from: a function from a variable name to its value (the process
/// environment in production, a closure in tests). Blank values count as unset.
pub struct Lookup<'a>(&'a dyn Fn(&str) -> Option<String>);

impl<'a> Lookup<'a> {
    /// A lookup through `f`.
    pub fn new(f: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Lookup(f)
    }

    /// The trimmed value of `setting`, or `None` when it is unset or blank.
    pub fn raw(&self, setting: &Setting) -> Option<String> {
        (self.0)(setting.name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// The value of `setting` exactly as set (a password's spaces are its own), or `None` when
    /// it is unset or blank.
    pub fn secret(&self, setting: &Setting) -> Option<String> {
        (self.0)(setting.name).filter(|v| !v.trim().is_empty())
    }

    /// The value of `setting` parsed as `T`, or its default parsed as `T` when unset.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable when the value does not parse.
    ///
    /// # Panics
    /// When the declared default does not parse as `T` (a bug caught by the unit tests).
    pub fn get<T: FromStr>(&self, setting: &Setting) -> Result<T, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        match self.raw(setting) {
            Some(v) => v
                .parse()
                .map_err(|e: T::Err| ConfigError::new(setting, &v, e.to_string())),
            None => Ok(setting.default.parse().unwrap_or_else(|e: T::Err| {
                panic!("the default of {} does not parse: {e}", setting.name)
            })),
        }
    }

    /// Like [`Lookup::get`], and refuses a value below `min`.
    ///
    /// # Errors
    /// [`ConfigError`] when the value does not parse or is below `min`.
    pub fn at_least<T>(&self, setting: &Setting, min: T) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + std::fmt::Display + Copy,
        T::Err: std::fmt::Display,
    {
        let v: T = self.get(setting)?;
        if v < min {
            return Err(ConfigError::new(
                setting,
                v,
                format!("must be at least {min}"),
            ));
        }
        Ok(v)
    }
}

/// A lookup with nothing set: every setting takes its default.
pub fn defaults() -> Lookup<'static> {
    Lookup(&|_| None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Setting = Setting {
        name: "X_MS",
        default: "5",
        meaning: "ms",
    };

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redacted("REDIS_URL", "rediss://u:p%40ss@h:6379/0"),
            "rediss://u:REDACTED@h:6379/0"
        );
        assert_eq!(redacted("REDIS_URL", "redis://h:6379"), "redis://h:6379");
        assert_eq!(
            redacted("REDIS_URL", "rediss://app@h:6379"),
            "rediss://app@h:6379"
        );
        assert_eq!(redacted("REDIS_URL", "u:pw@h:6379"), "REDACTED@h:6379");
        assert_eq!(redacted("REDIS_PASSWORD", "pw"), "REDACTED");
        assert_eq!(redacted("HONGBAO_KEY_PREFIX", "hb"), "hb");
        let e = ConfigError::named("REDIS_URL", "redis://:topsecret@h", "bad");
        assert!(!e.to_string().contains("topsecret"));
        // Node lists: every entry's password, whatever the list's shape.
        assert_eq!(
            redacted("REDIS_URL", "rediss://u:p1@a:6379, rediss://u:p2@b:6379"),
            "rediss://u:REDACTED@a:6379,rediss://u:REDACTED@b:6379"
        );
        assert_eq!(
            redacted("REDIS_URL", "redis://a:1,redis://b:2"),
            "redis://a:1,redis://b:2"
        );
        for list in [
            "redis://u:p1@a:1,,redis://u:p2@b:2",
            "redis://u:p1@a:1,b:2,redis://u:p2@c:3",
            "redis://u:p1,p2@a:1",
        ] {
            let shown = redacted("REDIS_URL", list);
            assert!(
                !shown.contains("p1") && !shown.contains("p2"),
                "{list}: {shown}"
            );
        }
        assert_eq!(
            redacted(
                "HONGBAO_DEPOSIT_PRINCIPALS",
                "arn:aws:iam::1:role/a,arn:aws:iam::1:role/b"
            ),
            "arn:aws:iam::1:role/a,arn:aws:iam::1:role/b"
        );
    }

    #[test]
    fn values_defaults_and_errors() {
        assert_eq!(defaults().get::<u64>(&S).unwrap(), 5);
        let set = |v: &'static str| move |n: &str| (n == "X_MS").then(|| v.to_string());
        let f = set(" 7 ");
        assert_eq!(Lookup::new(&f).get::<u64>(&S).unwrap(), 7);
        let f = set("  ");
        assert_eq!(Lookup::new(&f).get::<u64>(&S).unwrap(), 5);
        let f = set("x");
        assert_eq!(Lookup::new(&f).get::<u64>(&S).unwrap_err().name, "X_MS");
        let f = set("0");
        assert!(Lookup::new(&f).at_least(&S, 1u64).is_err());
        assert_eq!(S.markdown_row(), "| `X_MS` | `5` | ms |");
    }
}
