//! Merchant accounts as pure rules: a merchant's id, who may move its money, and its books.
//! A merchant's budget pays for the red packets it gives its customers to share; the team's
//! backend tops it up and draws it down (AWS_IAM), and no JWT caller can spend it. The atomic
//! steps are `lua/deposit.lua` and `lua/withdraw.lua`, called by
//! [`crate::merchants`].

use std::collections::HashMap;

pub mod coupons;
pub mod packets;

pub use coupons::{parse_share_code, share_code, CouponTerms, ShareCode, ShareCoupon};
pub use packets::{
    IssuedTerms, MerchantOrigin, MerchantPacketOutcome, MerchantPacketRequest, NewMerchantPacket,
    PacketsCursor, Payout,
};

use crate::domain::settings::Setting;
use crate::domain::{BadRecord, ConfigError, Lookup};
use crate::wallet::rules::{Entry, IamPrincipals};

/// Largest merchant balance, cents: 10^15, a safe distance below 2^53 (the largest integer a
/// Lua script's numbers hold exactly), so every sum of the books stays exact. A deposit that
/// would pass it is refused.
pub const MAX_MERCHANT_BALANCE_CENTS: i64 = 1_000_000_000_000_000;

/// `HONGBAO_MERCHANT_PRINCIPALS`.
pub const MERCHANT_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_MERCHANT_PRINCIPALS",
    default: crate::domain::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to call the merchant function's routes, the team's backend (merchant budgets: the operations of `functions.json` whose `principals` is this setting), as for `HONGBAO_DEPOSIT_PRINCIPALS`; an entry `<principal>=<merchant>[|<merchant>…]` acts only for those merchants (403 on another's budget or packets, nothing written), one without `=` for every merchant. Unset: each of them is 403 (logged at cold start)",
};

/// `HONGBAO_MERCHANT_LOW_BALANCE_CENTS`.
pub const MERCHANT_LOW_BALANCE_CENTS: Setting = Setting {
    name: "HONGBAO_MERCHANT_LOW_BALANCE_CENTS",
    default: "10000",
    meaning: "a merchant budget's balance below this many cents is low: a merchant packet or a withdrawal that leaves the balance below it, and a merchant packet refused for want of funds, count `MerchantLowBalance` (its alarm) and log the merchant and the balance; `0`: only the refusals count",
};

/// The merchant settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[MERCHANT_PRINCIPALS, MERCHANT_LOW_BALANCE_CENTS];

/// The configured rules of the merchant routes (the merchant function reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerchantRules {
    /// IAM principals (`requestContext.authorizer.iam.userArn`) allowed to call the merchant
    /// routes (`HONGBAO_MERCHANT_PRINCIPALS`); see [`IamPrincipals`].
    pub principals: IamPrincipals,
    /// A budget's balance below this is low, cents (`HONGBAO_MERCHANT_LOW_BALANCE_CENTS`,
    /// default 10,000 = 100.00): see [`MerchantRules::is_low`].
    pub low_balance_cents: i64,
}

impl Default for MerchantRules {
    fn default() -> Self {
        Self::from_lookup(&crate::domain::settings::defaults()).expect("the defaults are valid")
    }
}

impl MerchantRules {
    /// Reads the merchant settings.
    ///
    /// # Errors
    /// [`ConfigError`] naming the setting that does not parse
    /// (`HONGBAO_MERCHANT_PRINCIPALS`, or `HONGBAO_MERCHANT_LOW_BALANCE_CENTS` below 0).
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        Ok(MerchantRules {
            principals: IamPrincipals::from_lookup(lookup, &MERCHANT_PRINCIPALS)?,
            low_balance_cents: lookup.at_least(&MERCHANT_LOW_BALANCE_CENTS, 0)?,
        })
    }

    /// Whether a budget left with `balance_cents` is low: below
    /// `HONGBAO_MERCHANT_LOW_BALANCE_CENTS`.
    pub fn is_low(&self, balance_cents: i64) -> bool {
        balance_cents < self.low_balance_cents
    }
}

/// A merchant's books: every cent it ever deposited is in exactly one place. Each counter is
/// a field of the merchant's hash, moved only by the scripts, each movement in one atomic
/// step with its ledger entry and journal entry, so the books close at every moment:
///
/// `deposited − withdrawn = balance + reserved + outstanding_coupons + paid_cash +
/// paid_coupons` ([`Books::close`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Books {
    /// Money the merchant may spend or withdraw, cents.
    pub balance_cents: i64,
    /// Cents in open merchant packets: paid for, not yet claimed, refunded or turned into a
    /// coupon.
    pub reserved_cents: i64,
    /// Cents of coupons issued from shares and neither redeemed nor expired.
    pub outstanding_coupon_cents: i64,
    /// Cents claimed into grabbers' wallets.
    pub paid_cash_cents: i64,
    /// Cents of coupons redeemed at checkout.
    pub paid_coupon_cents: i64,
    /// Every deposit's cents, added up.
    pub deposited_cents: i64,
    /// Every withdrawal's cents, added up.
    pub withdrawn_cents: i64,
}

impl Books {
    /// The fields of the merchant's hash (`balance`, `reserved`, `outstanding`, `paid_cash`,
    /// `paid_coupons`, `deposited`, `withdrawn`; a missing one is 0, an account never used
    /// has none).
    ///
    /// # Errors
    /// [`BadRecord`] when a field is not an integer.
    pub fn from_fields(fields: &HashMap<String, String>) -> Result<Books, BadRecord> {
        let int = |name: &str| -> Result<i64, BadRecord> {
            fields.get(name).map_or(Ok(0), |v| {
                v.parse()
                    .map_err(|_| BadRecord(format!("merchant field `{name}` is {v:?}")))
            })
        };
        Ok(Books {
            balance_cents: int("balance")?,
            reserved_cents: int("reserved")?,
            outstanding_coupon_cents: int("outstanding")?,
            paid_cash_cents: int("paid_cash")?,
            paid_coupon_cents: int("paid_coupons")?,
            deposited_cents: int("deposited")?,
            withdrawn_cents: int("withdrawn")?,
        })
    }

    /// Whether the books close: what came in less what went out is where it is now,
    /// `deposited − withdrawn = balance + reserved + outstanding_coupons + paid_cash +
    /// paid_coupons`, and no counter is negative.
    pub fn close(&self) -> bool {
        let parts = [
            self.balance_cents,
            self.reserved_cents,
            self.outstanding_coupon_cents,
            self.paid_cash_cents,
            self.paid_coupon_cents,
            self.deposited_cents,
            self.withdrawn_cents,
        ];
        parts.iter().all(|c| *c >= 0)
            && self.deposited_cents - self.withdrawn_cents
                == self.balance_cents
                    + self.reserved_cents
                    + self.outstanding_coupon_cents
                    + self.paid_cash_cents
                    + self.paid_coupon_cents
    }
}

/// A merchant account as `GET /merchants/{merchant_id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merchant {
    /// The books.
    pub books: Books,
    /// One page of the ledger, newest first.
    pub ledger: Vec<Entry>,
    /// Ledger entries kept in all (the newest [`crate::wallet::rules::LEDGER_CAP`] at most).
    pub ledger_len: u64,
    /// The offset of the next, older page; `None` on the last page.
    pub next_offset: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn books_close_when_every_cent_deposited_is_in_one_place() {
        let fields = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>()
        };
        assert!(Books::from_fields(&fields(&[])).unwrap().close());
        let books = Books::from_fields(&fields(&[
            ("balance", "600"),
            ("reserved", "150"),
            ("outstanding", "50"),
            ("paid_cash", "100"),
            ("paid_coupons", "40"),
            ("deposited", "1000"),
            ("withdrawn", "60"),
        ]))
        .unwrap();
        assert!(books.close());
        assert!(!Books {
            balance_cents: 601,
            ..books
        }
        .close());
        assert!(!Books {
            reserved_cents: -1,
            balance_cents: 751,
            ..books
        }
        .close());
        assert!(Books::from_fields(&fields(&[("balance", "1.5")])).is_err());
    }
}
