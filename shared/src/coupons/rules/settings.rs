//! The coupon function's settings: who may call its AWS_IAM routes, the merchant backend's
//! (`HONGBAO_COUPON_PRINCIPALS`), and the per-user visit limit.

use super::campaign::VisitLimit;
use crate::domain::settings::{Setting, NO_DEFAULT};
use crate::domain::{ConfigError, Lookup};
use crate::wallet::rules::IamPrincipals;

/// `HONGBAO_COUPON_PRINCIPALS`.
pub const COUPON_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_COUPON_PRINCIPALS",
    default: NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to call the coupon function's AWS_IAM routes, the merchant backend's (campaigns, their codes, the checkout: the operations of `functions.json` whose `principals` is this setting), as for `HONGBAO_DEPOSIT_PRINCIPALS`; an entry `<principal>=<merchant>[|<merchant>…]` acts only for those merchants (403 on another merchant's campaigns and coupons, and on campaigns created without a merchant; nothing written), one without `=` for every merchant. Unset: each of them is 403 (logged at cold start)",
};

/// `HONGBAO_COUPON_VISIT_LIMIT`.
pub const COUPON_VISIT_LIMIT: Setting = Setting {
    name: "HONGBAO_COUPON_VISIT_LIMIT",
    default: "10",
    meaning: "grabs of one user in one campaign per window answered `not_started` or `already_grabbed` (counted in the grab's own atomic step; a win is not counted); past it 429 + `Retry-After`, nothing else written; `0` disables",
};

/// `HONGBAO_COUPON_VISIT_WINDOW_MS`.
pub const COUPON_VISIT_WINDOW_MS: Setting = Setting {
    name: "HONGBAO_COUPON_VISIT_WINDOW_MS",
    default: "10000",
    meaning: "the visit limit's window, ms (≥ 1; a fixed window opened by the first counted visit, its deadline from Redis `TIME`)",
};

/// The coupon settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[
    COUPON_PRINCIPALS,
    COUPON_VISIT_LIMIT,
    COUPON_VISIT_WINDOW_MS,
];

/// The configured rules of the coupon function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponRules {
    /// IAM principals (`requestContext.authorizer.iam.userArn`) allowed to call the coupon
    /// function's AWS_IAM routes (`HONGBAO_COUPON_PRINCIPALS`); empty: nobody.
    pub principals: IamPrincipals,
    /// The visit limit per user per campaign: answers `not_started` and `already_grabbed` count.
    pub visits: VisitLimit,
}

impl Default for CouponRules {
    fn default() -> Self {
        Self::from_lookup(&crate::domain::settings::defaults()).expect("the defaults are valid")
    }
}

impl CouponRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        Ok(CouponRules {
            principals: IamPrincipals::from_lookup(lookup, &COUPON_PRINCIPALS)?,
            visits: VisitLimit {
                per_window: lookup.get(&COUPON_VISIT_LIMIT)?,
                window_ms: lookup.at_least(&COUPON_VISIT_WINDOW_MS, 1)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let r = CouponRules::default();
        assert!(r.principals.is_empty());
        assert_eq!(
            r.visits,
            VisitLimit {
                per_window: 10,
                window_ms: 10_000
            }
        );
        for (name, value) in [
            ("HONGBAO_COUPON_VISIT_WINDOW_MS", "0"),
            ("HONGBAO_COUPON_VISIT_LIMIT", "-1"),
            ("HONGBAO_COUPON_PRINCIPALS", "*"),
        ] {
            let env = move |n: &str| (n == name).then(|| value.to_string());
            let err = CouponRules::from_lookup(&Lookup::new(&env)).unwrap_err();
            assert_eq!(err.name, name);
        }
    }
}
