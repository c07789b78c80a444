//! Wallets as pure rules: amounts, ledger entries, deposit limits and who may deposit or
//! withdraw. The atomic steps are `lua/deposit.lua`, `lua/withdraw.lua`, `lua/wallet_credit.lua`,
//! `lua/transfer_release.lua` and (for debits and refunds) `create_packet.lua` and
//! `lua/settle.lua`, called by [`crate::wallet`].

use crate::domain::resend::{LAMBDA_MAX_TIMEOUT_SECS, NODE_CLOCK_MARGIN_SECS, RESEND_HORIZON_SECS};
use crate::domain::settings::Setting;
use crate::domain::{BadRecord, ConfigError, Lookup};

/// Largest single deposit, cents (10^11 = one billion units). A balance is bounded separately
/// by `HONGBAO_MAX_BALANCE_CENTS` ([`WalletRules::max_balance_cents`]), which
/// keeps it far below 2^53, the largest integer Lua's numbers hold exactly.
pub const MAX_DEPOSIT_CENTS: i64 = 100_000_000_000;

/// Largest single withdrawal, cents (10^11, as for deposits: [`MAX_DEPOSIT_CENTS`]).
pub const MAX_WITHDRAWAL_CENTS: i64 = MAX_DEPOSIT_CENTS;

/// Entries `GET /wallet` returns, newest first.
pub const LEDGER_PAGE: isize = 50;

/// Ledger entries kept per wallet (the API returns the newest 50).
pub const LEDGER_CAP: u32 = 1000;

/// The highest `HONGBAO_MAX_BALANCE_CENTS` accepted: 10^15 cents, a safe distance below
/// 2^53 (the largest integer a Lua script's numbers hold exactly), so claim credits and
/// refunds on top of a full balance stay exact.
pub const MAX_BALANCE_LIMIT_CENTS: i64 = 1_000_000_000_000_000;

/// `HONGBAO_DEPOSIT_DEDUP_SECS`.
pub const DEPOSIT_DEDUP_SECS: Setting = Setting {
    name: "HONGBAO_DEPOSIT_DEDUP_SECS",
    default: "2592000",
    meaning: "how long a deposit or withdrawal `reference` is remembered, s (≥ 960, the re-send horizon: Lambda's 900 s maximum timeout + 60 s)",
};
/// `HONGBAO_MAX_BALANCE_CENTS`.
pub const MAX_BALANCE_CENTS: Setting = Setting {
    name: "HONGBAO_MAX_BALANCE_CENTS",
    default: "10000000000000",
    meaning: "largest balance a deposit may produce, cents (1..=10^15); claim credits and refunds are never refused",
};
/// `HONGBAO_DEPOSIT_PRINCIPALS`.
pub const DEPOSIT_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_DEPOSIT_PRINCIPALS",
    default: crate::domain::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to deposit; an entry ending in `*` is a prefix (`arn:aws:sts::123456789012:assumed-role/payments/*`). Unset: every deposit is 403 (logged at cold start)",
};

/// `HONGBAO_WITHDRAWAL_PRINCIPALS`.
pub const WITHDRAWAL_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_WITHDRAWAL_PRINCIPALS",
    default: crate::domain::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to withdraw (`POST /wallet/withdrawals`), as for `HONGBAO_DEPOSIT_PRINCIPALS`. Unset: every withdrawal is 403 (logged at cold start)",
};

/// `HONGBAO_SUPPORT_PRINCIPALS`.
pub const SUPPORT_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_SUPPORT_PRINCIPALS",
    default: crate::domain::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to read the support look-ups (`GET /support/packets/{id}`, `GET /support/wallets/{user_id}`, `GET /support/coupons/{code}`), as for `HONGBAO_DEPOSIT_PRINCIPALS`. Unset: every look-up is 403",
};

/// The wallet settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[
    DEPOSIT_DEDUP_SECS,
    MAX_BALANCE_CENTS,
    DEPOSIT_PRINCIPALS,
    WITHDRAWAL_PRINCIPALS,
    SUPPORT_PRINCIPALS,
];

/// The configured rules of deposits and withdrawals (the wallet function reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletRules {
    /// Seconds a deposit or withdrawal `reference` is remembered (`HONGBAO_DEPOSIT_DEDUP_SECS`,
    /// ≥ [`RESEND_HORIZON_SECS`] when read from the settings).
    pub deposit_dedup_secs: u64,
    /// Largest balance a deposit may produce, cents (`HONGBAO_MAX_BALANCE_CENTS`, at most
    /// [`MAX_BALANCE_LIMIT_CENTS`]). Claim credits and refunds are never refused: they move
    /// money that already exists, and refusing them would strand it.
    pub max_balance_cents: i64,
    /// IAM principals (`requestContext.authorizer.iam.userArn`) allowed to call
    /// `POST /wallet/deposits` (`HONGBAO_DEPOSIT_PRINCIPALS`); see [`IamPrincipals`].
    pub deposit_principals: IamPrincipals,
    /// IAM principals allowed to call `POST /wallet/withdrawals`
    /// (`HONGBAO_WITHDRAWAL_PRINCIPALS`); see [`IamPrincipals`].
    pub withdrawal_principals: IamPrincipals,
    /// IAM principals allowed to read the support look-ups (`GET /support/packets/{id}`,
    /// `GET /support/wallets/{user_id}`; `HONGBAO_SUPPORT_PRINCIPALS`); see [`IamPrincipals`].
    pub support_principals: IamPrincipals,
}

impl Default for WalletRules {
    fn default() -> Self {
        Self::from_lookup(&crate::domain::settings::defaults()).expect("the defaults are valid")
    }
}

/// `HONGBAO_DEPOSIT_DEDUP_SECS`, refused below [`RESEND_HORIZON_SECS`]: a re-sent deposit or
/// withdrawal finds the record its first run wrote only while the reference is remembered, and
/// one re-sent after the record was pruned would be applied again.
fn deposit_dedup_secs(lookup: &Lookup<'_>) -> Result<u64, ConfigError> {
    let secs: u64 = lookup.get(&DEPOSIT_DEDUP_SECS)?;
    if secs < RESEND_HORIZON_SECS {
        return Err(ConfigError::new(
            &DEPOSIT_DEDUP_SECS,
            secs,
            format!(
                "must be at least {RESEND_HORIZON_SECS}, the re-send horizon (a call can be sent \
                 again for as long as the Lambda invocation that made it runs, at most \
                 {LAMBDA_MAX_TIMEOUT_SECS} s, plus {NODE_CLOCK_MARGIN_SECS} s for the Redis nodes' \
                 clocks): a deposit or withdrawal re-sent after its reference was forgotten would \
                 be applied again"
            ),
        ));
    }
    Ok(secs)
}

impl WalletRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let max_balance_cents: i64 = lookup.get(&MAX_BALANCE_CENTS)?;
        if !(1..=MAX_BALANCE_LIMIT_CENTS).contains(&max_balance_cents) {
            return Err(ConfigError::new(
                &MAX_BALANCE_CENTS,
                max_balance_cents,
                format!("must be 1..={MAX_BALANCE_LIMIT_CENTS}"),
            ));
        }
        Ok(WalletRules {
            deposit_dedup_secs: deposit_dedup_secs(lookup)?,
            max_balance_cents,
            deposit_principals: IamPrincipals::from_lookup(lookup, &DEPOSIT_PRINCIPALS)?,
            withdrawal_principals: IamPrincipals::from_lookup(lookup, &WITHDRAWAL_PRINCIPALS)?,
            support_principals: IamPrincipals::from_lookup(lookup, &SUPPORT_PRINCIPALS)?,
        })
    }
}

/// The IAM callers allowed to deposit, to withdraw or to read the support look-ups, or to call
/// the merchant and coupon routes: exact `userArn`s, or prefixes (entries that end in `*`,
/// e.g. `arn:aws:sts::123456789012:assumed-role/payments/*`). Empty: nobody.
///
/// In `HONGBAO_MERCHANT_PRINCIPALS` and `HONGBAO_COUPON_PRINCIPALS` an entry may name the
/// merchants it acts for: `<principal>=<merchant>[|<merchant>…]` (a platform whose merchants
/// each run their own backend); an entry without `=` acts for every merchant. A caller matched
/// by several entries acts for the merchants of all of them ([`Self::acts_for`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IamPrincipals {
    entries: Vec<PrincipalEntry>,
}

/// One entry of an [`IamPrincipals`] list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PrincipalEntry {
    /// The `userArn`, or its prefix before a trailing `*`.
    pattern: String,
    /// Whether `pattern` is a prefix (the entry ended in `*`).
    prefix: bool,
    /// The merchants it acts for; `None`: every merchant.
    merchants: Option<Vec<String>>,
}

impl PrincipalEntry {
    fn matches(&self, user_arn: &str) -> bool {
        if self.prefix {
            user_arn.starts_with(&self.pattern)
        } else {
            user_arn == self.pattern
        }
    }
}

/// The name [`IamPrincipals`] had when only deposits were IAM-signed.
pub type DepositPrincipals = IamPrincipals;

/// The settings whose entries may name merchants (`<principal>=<merchant>|…`): the routes
/// of a merchant's budget, packets, campaigns and checkout.
const MERCHANT_BOUND_SETTINGS: [&str; 2] =
    ["HONGBAO_MERCHANT_PRINCIPALS", "HONGBAO_COUPON_PRINCIPALS"];

impl IamPrincipals {
    /// Reads `setting` (unset: nobody).
    ///
    /// # Errors
    /// [`ConfigError`] naming `setting` when its value does not parse ([`Self::parse`]), or
    /// when an entry names merchants in a setting whose routes act for users, not merchants
    /// (deposits, withdrawals, support look-ups).
    pub fn from_lookup(lookup: &Lookup<'_>, setting: &Setting) -> Result<Self, ConfigError> {
        let Some(v) = lookup.raw(setting) else {
            return Ok(Self::default());
        };
        let parsed = Self::parse(&v).map_err(|reason| ConfigError::new(setting, &v, reason))?;
        if parsed.is_bound() && !MERCHANT_BOUND_SETTINGS.contains(&setting.name) {
            return Err(ConfigError::new(
                setting,
                &v,
                format!(
                    "an entry names merchants (`=`), but these routes act for users: only {} \
                     bind a principal to merchants",
                    MERCHANT_BOUND_SETTINGS.join(" and ")
                ),
            ));
        }
        Ok(parsed)
    }

    /// Parses a comma-separated list of `<principal>` or `<principal>=<merchant>[|<merchant>…]`
    /// entries; blanks around entries, principals and merchants are ignored.
    ///
    /// # Errors
    /// A reason when an entry is empty, is a bare `*`, has a `*` anywhere but at the end of
    /// its principal, or names a merchant that is not a merchant id
    /// ([`crate::domain::is_merchant_id`]).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for raw in list.split(',') {
            let e = raw.trim();
            if e.is_empty() {
                return Err("an entry is empty".into());
            }
            let (principal, merchants) = match e.split_once('=') {
                None => (e, None),
                Some((principal, list)) => {
                    let merchants: Vec<String> =
                        list.split('|').map(|m| m.trim().to_string()).collect();
                    if let Some(bad) = merchants.iter().find(|m| !crate::domain::is_merchant_id(m))
                    {
                        return Err(format!(
                            "entry {e:?}: merchant {bad:?} is not a merchant id (after `=`, \
                             merchant ids separated by `|`, each 1 to 64 of A-Z a-z 0-9 _ . : -)"
                        ));
                    }
                    (principal.trim(), Some(merchants))
                }
            };
            let stem = principal.strip_suffix('*').unwrap_or(principal);
            if stem.is_empty() || stem.contains('*') {
                return Err(format!(
                    "entry {e:?}: `*` may only end an entry that names an ARN prefix"
                ));
            }
            entries.push(PrincipalEntry {
                pattern: stem.to_string(),
                prefix: principal.ends_with('*'),
                merchants,
            });
        }
        Ok(IamPrincipals { entries })
    }

    /// Whether no principal is allowed (the variable is unset).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether some entry names the merchants it acts for.
    pub fn is_bound(&self) -> bool {
        self.entries.iter().any(|e| e.merchants.is_some())
    }

    /// Whether `user_arn` matches an entry exactly, or starts with an entry's text before its
    /// trailing `*`.
    pub fn allows(&self, user_arn: &str) -> bool {
        self.entries.iter().any(|e| e.matches(user_arn))
    }

    /// The merchants `user_arn` acts for: `None` when an entry without merchants matches it
    /// (every merchant), else those of every matching entry (empty when none matches).
    pub fn merchants_of(&self, user_arn: &str) -> Option<Vec<&str>> {
        let mut merchants = Vec::new();
        for e in self.entries.iter().filter(|e| e.matches(user_arn)) {
            match &e.merchants {
                None => return None,
                Some(ms) => merchants.extend(ms.iter().map(String::as_str)),
            }
        }
        Some(merchants)
    }

    /// Whether `user_arn` may act for `merchant_id` (`None`: something no merchant owns, such
    /// as a campaign created without a merchant, which only an entry without merchants may
    /// touch).
    pub fn acts_for(&self, user_arn: &str, merchant_id: Option<&str>) -> bool {
        match (self.merchants_of(user_arn), merchant_id) {
            (None, _) => self.allows(user_arn),
            (Some(ms), Some(m)) => ms.contains(&m),
            (Some(_), None) => false,
        }
    }
}

/// The kind of a ledger entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[schema(description = "A ledger entry's kind.")]
pub enum EntryKind {
    /// Money paid in by a trusted backend (positive).
    Deposit,
    /// A packet paid for (negative).
    PacketDebit,
    /// A grabbed share claimed (positive).
    ClaimCredit,
    /// An expired packet's remainder returned to its sender (positive).
    RefundCredit,
    /// Money paid out to a trusted backend (negative).
    Withdrawal,
}

impl EntryKind {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Deposit => "deposit",
            EntryKind::PacketDebit => "packet_debit",
            EntryKind::ClaimCredit => "claim_credit",
            EntryKind::RefundCredit => "refund_credit",
            EntryKind::Withdrawal => "withdrawal",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "deposit" => EntryKind::Deposit,
            "packet_debit" => EntryKind::PacketDebit,
            "claim_credit" => EntryKind::ClaimCredit,
            "refund_credit" => EntryKind::RefundCredit,
            "withdrawal" => EntryKind::Withdrawal,
            _ => return None,
        })
    }
}

/// One ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What moved the money.
    pub kind: EntryKind,
    /// Signed amount, cents (debits are negative).
    pub amount_cents: i64,
    /// The deposit reference or the packet id.
    pub reference: String,
    /// When, Unix ms (Redis `TIME`).
    pub at_ms: i64,
}

impl Entry {
    /// Parses a ledger item `kind|amount_cents|at_ms|reference`.
    ///
    /// # Errors
    /// [`BadRecord`] for any other shape.
    pub fn parse(item: &str) -> Result<Self, BadRecord> {
        let bad = || BadRecord(format!("bad ledger entry {item:?}"));
        let mut it = item.splitn(4, '|');
        let kind = it.next().and_then(EntryKind::parse).ok_or_else(bad)?;
        let amount_cents = it.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let at_ms = it.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let reference = it.next().ok_or_else(bad)?.to_string();
        Ok(Entry {
            kind,
            amount_cents,
            reference,
            at_ms,
        })
    }
}

/// A wallet as `GET /wallet` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wallet {
    /// Balance, cents.
    pub balance_cents: i64,
    /// The newest [`LEDGER_PAGE`] entries, newest first.
    pub entries: Vec<Entry>,
}

/// The result of [`crate::wallet::credit()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credit {
    /// The balance after the call, cents.
    pub balance_cents: i64,
    /// Whether this call credited the money (false: an earlier call did, or a conflict).
    pub applied: bool,
    /// The transfer id was seen before with a different fingerprint; nothing changed.
    pub conflict: bool,
}

/// The transfer id (idempotency record id) of the claim credit of `packet_id`.
pub fn claim_transfer_id(packet_id: &str) -> String {
    format!("claim:{packet_id}")
}

/// The outcome of [`crate::store::books::deposit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepositOutcome {
    /// Credited now.
    Applied {
        /// Balance after, cents.
        balance_cents: i64,
    },
    /// Another call deposited this reference before with the same amount: nothing changed.
    /// (The same call sent again answers its first answer, [`DepositOutcome::Applied`] with
    /// the balance it gave: the call id is in the reference's record.)
    Repeat {
        /// Current balance, cents.
        balance_cents: i64,
    },
    /// This reference was used before with a different amount: nothing changed.
    ReferenceReused,
    /// The balance would exceed `HONGBAO_MAX_BALANCE_CENTS`: nothing moved (this answer is
    /// kept under the call's id, with a TTL, so the same call re-sent answers it again).
    BalanceLimit {
        /// Current balance, cents.
        balance_cents: i64,
    },
}

/// The idempotency record id of the deposit `reference` in its owner's records hash.
pub fn deposit_record_id(reference: &str) -> String {
    format!("dep:{reference}")
}

/// The idempotency record id of the withdrawal `reference` (beside deposits' `dep:<reference>`
/// in its owner's records hash).
pub fn withdrawal_record_id(reference: &str) -> String {
    format!("wd:{reference}")
}

/// The outcome of [`crate::store::books::withdraw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawalOutcome {
    /// Paid out now.
    Applied {
        /// Balance after, cents.
        balance_cents: i64,
    },
    /// Another call paid this reference out before with the same amount: nothing changed.
    /// (The same call sent again answers its first answer, [`WithdrawalOutcome::Applied`]
    /// with the balance it gave: the call id is in the reference's record.)
    Repeat {
        /// Current balance, cents.
        balance_cents: i64,
    },
    /// This reference was used before with a different amount: nothing changed.
    ReferenceReused,
    /// The balance is below the amount: nothing moved (the reference is not recorded: another
    /// call may use it again; this answer is kept under the call's id for
    /// `HONGBAO_IDEMPOTENCY_TTL_SECS`, with a TTL, so the same call re-sent answers it again).
    InsufficientFunds {
        /// Current balance, cents.
        balance_cents: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_entries() {
        let e = Entry::parse("deposit|500|1700000000000|ref|with|pipes").unwrap();
        assert_eq!(e.kind, EntryKind::Deposit);
        assert_eq!(e.amount_cents, 500);
        assert_eq!(e.reference, "ref|with|pipes");
        assert_eq!(
            Entry::parse("packet_debit|-5|1|abc").unwrap().amount_cents,
            -5
        );
        assert!(Entry::parse("bogus|1|1|x").is_err());
        assert!(Entry::parse("deposit|1|1").is_err());
    }

    #[test]
    fn deposit_principals() {
        assert!(WalletRules::default().deposit_principals.is_empty());
        assert!(!WalletRules::default().deposit_principals.allows(""));
        let p = DepositPrincipals::parse(
            "arn:aws:iam::123456789012:user/ops, arn:aws:sts::123456789012:assumed-role/payments/*",
        )
        .unwrap();
        assert!(p.allows("arn:aws:iam::123456789012:user/ops"));
        assert!(!p.allows("arn:aws:iam::123456789012:user/ops2"));
        assert!(p.allows("arn:aws:sts::123456789012:assumed-role/payments/backend-1"));
        assert!(!p.allows("arn:aws:sts::123456789012:assumed-role/paymentsX/backend-1"));
        assert!(!p.allows("arn:aws:sts::123456789012:assumed-role/other/x"));
    }

    /// An entry `<principal>=<merchant>|…` acts for its merchants only; one without `=` for
    /// every merchant; a caller matched by several acts for all of theirs.
    #[test]
    fn a_bound_principal_acts_for_its_merchants_only() {
        let p = IamPrincipals::parse(
            "arn:x:role/ops, arn:x:role/shop-a*=shop-a|shop-c, arn:x:role/shop-a-2=shop-b",
        )
        .unwrap();

        assert!(p.acts_for("arn:x:role/ops", Some("shop-b")));
        assert!(p.acts_for("arn:x:role/ops", None));
        assert!(p.acts_for("arn:x:role/shop-a-1", Some("shop-c")));
        assert!(!p.acts_for("arn:x:role/shop-a-1", Some("shop-b")));
        assert!(!p.acts_for("arn:x:role/shop-a-1", None));
        assert!(p.acts_for("arn:x:role/shop-a-2", Some("shop-b")));
        assert!(!p.acts_for("arn:x:role/other", Some("shop-a")));
    }

    #[test]
    fn a_merchant_that_is_no_merchant_id_is_refused() {
        for bad in [
            "arn:x:role/a=",
            "arn:x:role/a=shop a",
            "arn:x:role/a=x||y",
            "=shop-a",
        ] {
            assert!(IamPrincipals::parse(bad).is_err(), "{bad}");
        }
    }

    /// Deposits, withdrawals and support look-ups act for users: an entry naming merchants
    /// there is refused at Init rather than read as a limit it would not be.
    #[test]
    fn merchants_are_named_only_where_routes_act_for_merchants() {
        let v = |n: &str| (n == "HONGBAO_DEPOSIT_PRINCIPALS").then(|| "arn:x:a=shop-a".to_string());
        let err = IamPrincipals::from_lookup(&Lookup::new(&v), &DEPOSIT_PRINCIPALS).unwrap_err();
        assert!(err.to_string().contains("act for users"), "{err}");
        let v =
            |n: &str| (n == "HONGBAO_MERCHANT_PRINCIPALS").then(|| "arn:x:a=shop-a".to_string());
        let merchants = &crate::merchants::rules::MERCHANT_PRINCIPALS;
        assert!(IamPrincipals::from_lookup(&Lookup::new(&v), merchants).is_ok());
    }

    /// A deposit's or withdrawal's reference is remembered at least the re-send horizon: a
    /// shorter `HONGBAO_DEPOSIT_DEDUP_SECS` is refused, naming the horizon.
    #[test]
    fn deposit_dedup_outlives_the_resend_horizon() {
        let rules = |value: &'static str| {
            let f = move |n: &str| (n == DEPOSIT_DEDUP_SECS.name).then(|| value.to_string());
            WalletRules::from_lookup(&Lookup::new(&f))
        };

        let short = rules("959").unwrap_err();
        let at_horizon = rules("960").unwrap();

        assert_eq!(short.name, "HONGBAO_DEPOSIT_DEDUP_SECS");
        assert!(short.reason.contains("at least 960"), "{short}");
        assert_eq!(at_horizon.deposit_dedup_secs, 960);
    }
}
