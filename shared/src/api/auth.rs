//! Where the caller's identity comes from ([`AuthMode`], `HONGBAO_AUTH_MODE`): the JWT claim
//! `sub` behind API Gateway's authorizer, or, under `sam local` only, the `x-user-id` header.

use crate::domain::settings::Setting;
use crate::domain::{ConfigError, Lookup};

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
}
