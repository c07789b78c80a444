//! Wallets as pure rules: amounts, ledger entries, deposit limits and who may deposit or
//! withdraw. The atomic steps are `lua/wallet_credit.lua`, `lua/withdraw.lua`,
//! `lua/transfer_release.lua` and (for debits and refunds) `lua/create_packet.lua` and
//! `lua/settle.lua`, called by [`crate::store::wallet`].

use super::settings::Setting;
use super::{BadRecord, ConfigError, Lookup};

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
    meaning: "how long a deposit or withdrawal `reference` is remembered, s (≥ 1)",
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
    default: super::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to deposit; an entry ending in `*` is a prefix (`arn:aws:sts::123456789012:assumed-role/payments/*`). Unset: every deposit is 403 (logged at cold start)",
};

/// `HONGBAO_WITHDRAWAL_PRINCIPALS`.
pub const WITHDRAWAL_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_WITHDRAWAL_PRINCIPALS",
    default: super::settings::NO_DEFAULT,
    meaning: "comma-separated IAM `userArn`s allowed to withdraw (`POST /wallet/withdrawals`), as for `HONGBAO_DEPOSIT_PRINCIPALS`. Unset: every withdrawal is 403 (logged at cold start)",
};

/// `HONGBAO_SUPPORT_PRINCIPALS`.
pub const SUPPORT_PRINCIPALS: Setting = Setting {
    name: "HONGBAO_SUPPORT_PRINCIPALS",
    default: super::settings::NO_DEFAULT,
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
    /// ≥ 1).
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
        Self::from_lookup(&super::settings::defaults()).expect("the defaults are valid")
    }
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
            deposit_dedup_secs: lookup.at_least(&DEPOSIT_DEDUP_SECS, 1)?,
            max_balance_cents,
            deposit_principals: IamPrincipals::from_lookup(lookup, &DEPOSIT_PRINCIPALS)?,
            withdrawal_principals: IamPrincipals::from_lookup(lookup, &WITHDRAWAL_PRINCIPALS)?,
            support_principals: IamPrincipals::from_lookup(lookup, &SUPPORT_PRINCIPALS)?,
        })
    }
}

/// The IAM callers allowed to deposit, to withdraw or to read the support look-ups: exact `userArn`s, or prefixes (entries
/// that end in `*`, e.g. `arn:aws:sts::123456789012:assumed-role/payments/*`). Empty: nobody.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IamPrincipals {
    entries: Vec<String>,
}

/// The name [`IamPrincipals`] had when only deposits were IAM-signed.
pub type DepositPrincipals = IamPrincipals;

impl IamPrincipals {
    /// Reads `setting` (unset: nobody).
    ///
    /// # Errors
    /// [`ConfigError`] naming `setting` when its value does not parse ([`Self::parse`]).
    pub fn from_lookup(lookup: &Lookup<'_>, setting: &Setting) -> Result<Self, ConfigError> {
        match lookup.raw(setting) {
            Some(v) => Self::parse(&v).map_err(|reason| ConfigError::new(setting, &v, reason)),
            None => Ok(Self::default()),
        }
    }

    /// Parses a comma-separated list; blanks around entries are ignored.
    ///
    /// # Errors
    /// A reason when an entry is empty, is a bare `*`, or has a `*` anywhere but at its end.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for raw in list.split(',') {
            let e = raw.trim();
            if e.is_empty() {
                return Err("an entry is empty".into());
            }
            let stem = e.strip_suffix('*').unwrap_or(e);
            if stem.is_empty() || stem.contains('*') {
                return Err(format!(
                    "entry {e:?}: `*` may only end an entry that names an ARN prefix"
                ));
            }
            entries.push(e.to_string());
        }
        Ok(IamPrincipals { entries })
    }

    /// Whether no principal is allowed (the variable is unset).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `user_arn` matches an entry exactly, or starts with an entry's text before its
    /// trailing `*`.
    pub fn allows(&self, user_arn: &str) -> bool {
        self.entries.iter().any(|e| match e.strip_suffix('*') {
            Some(prefix) => user_arn.starts_with(prefix),
            None => user_arn == e,
        })
    }
}

/// The kind of a ledger entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The result of [`crate::store::wallet::credit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credit {
    /// The balance after the call, cents.
    pub balance_cents: i64,
    /// Whether this call credited the money (false: an earlier call did, or a conflict).
    pub applied: bool,
    /// The transfer id was seen before with a different fingerprint; nothing changed.
    pub conflict: bool,
    /// The credit would have taken the balance over the limit; nothing changed.
    pub balance_limit: bool,
}

/// The transfer id (idempotency record id) of the claim credit of `packet_id`.
pub fn claim_transfer_id(packet_id: &str) -> String {
    format!("claim:{packet_id}")
}

/// The outcome of [`crate::store::wallet::deposit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepositOutcome {
    /// Credited now.
    Applied {
        /// Balance after, cents.
        balance_cents: i64,
    },
    /// This reference was deposited before with the same amount: nothing changed.
    Repeat {
        /// Current balance, cents.
        balance_cents: i64,
    },
    /// This reference was used before with a different amount: nothing changed.
    ReferenceReused,
    /// The balance would exceed `HONGBAO_MAX_BALANCE_CENTS`: nothing changed.
    BalanceLimit {
        /// Current balance, cents.
        balance_cents: i64,
    },
}

/// The idempotency record id of the withdrawal `reference` (beside deposits' `dep:<reference>`
/// in the wallet's records hash).
pub fn withdrawal_record_id(reference: &str) -> String {
    format!("wd:{reference}")
}

/// The outcome of [`crate::store::wallet::withdraw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawalOutcome {
    /// Paid out now.
    Applied {
        /// Balance after, cents.
        balance_cents: i64,
    },
    /// This reference was paid out before with the same amount: nothing changed.
    Repeat {
        /// Current balance, cents.
        balance_cents: i64,
    },
    /// This reference was used before with a different amount: nothing changed.
    ReferenceReused,
    /// The balance is below the amount: nothing changed (no record either: the same
    /// reference may be tried again).
    InsufficientFunds {
        /// Current balance, cents.
        balance_cents: i64,
    },
}

/// What a reconciliation finds wrong with one wallet ([`reconcile`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The stored balance is not an integer of 0 to 2^53 − 1 cents.
    Balance {
        /// The stored value.
        stored: String,
    },
    /// A ledger item that is not `kind|amount_cents|at_ms|reference`.
    LedgerEntry {
        /// The item.
        item: String,
    },
    /// The ledger is whole (fewer than [`LEDGER_CAP`] entries: none ever trimmed), and its
    /// amounts do not add up to the balance.
    LedgerSum {
        /// The balance, cents.
        balance_cents: i64,
        /// The sum of the ledger's amounts, cents.
        ledger_cents: i64,
    },
    /// One movement in the ledger twice: a deposit, withdrawal, packet debit or claim credit
    /// with the same reference (each is applied once per reference), or two entries equal in
    /// every field.
    Twice {
        /// The ledger's kind.
        kind: &'static str,
        /// The reference (deposit or withdrawal reference, or packet id).
        reference: String,
    },
    /// A journal entry of the wallet that moves money, of the time the ledger still covers,
    /// with no ledger entry of the same kind, amount, time and reference.
    NotInLedger {
        /// The entry's `event_id`.
        event_id: String,
    },
    /// A journal entry's balance after the movement is not the balance less every later
    /// movement of the ledger.
    JournalBalance {
        /// The entry's `event_id`.
        event_id: String,
        /// What the ledger says the balance was after it, cents.
        expected_cents: i64,
        /// What the entry says, cents.
        journal_cents: i64,
    },
}

/// The largest integer a Lua number holds exactly, 2^53 − 1: no balance is above it.
const MAX_EXACT_CENTS: i64 = (1 << 53) - 1;

/// Checks one wallet as read in one atomic step: its stored `balance` (`None`: no balance
/// field, 0), its `ledger` items newest first (at most [`LEDGER_CAP`]) and the journal entries
/// still unexported on its hash tag (`journal`, any order; the other users' and the merchants'
/// are ignored). The rules, each a [`Mismatch`] when broken:
///
/// - the balance is an integer of 0 to 2^53 − 1 cents and every ledger item parses;
/// - a whole ledger (fewer than [`LEDGER_CAP`] items, so none was trimmed) adds up to the
///   balance: every movement of a wallet writes its ledger item in the same script
///   (`lua/wallet_credit.lua`, `withdraw.lua`, `create_packet.lua`, `settle.lua`, `cancel.lua`);
/// - no movement is in the ledger twice (idempotency keys make each one once);
/// - each journal entry of the user that moves money (`lua/journal.lua`, written in the same
///   script as the ledger item) is in the ledger, if the ledger reaches back to its time, and
///   its balance after the movement is the balance less the ledger's later amounts. An
///   exported entry is gone from the journal, so only the ones left are checked; a gap among
///   them (a failed export of one entry) changes nothing.
///
/// A trimmed ledger's sum says nothing (its oldest movements are gone): such a wallet is
/// checked by the other rules only.
pub fn reconcile(
    user_id: &str,
    balance: Option<&str>,
    ledger: &[String],
    journal: &[super::journal::Entry],
) -> Vec<Mismatch> {
    let mut found = Vec::new();
    let balance_cents = match balance.map(str::parse::<i64>) {
        None => 0,
        Some(Ok(b)) if (0..=MAX_EXACT_CENTS).contains(&b) => b,
        Some(_) => {
            found.push(Mismatch::Balance {
                stored: balance.unwrap_or_default().to_string(),
            });
            return found;
        }
    };
    let mut entries = Vec::with_capacity(ledger.len());
    for item in ledger {
        match Entry::parse(item) {
            Ok(e) => entries.push(e),
            Err(_) => found.push(Mismatch::LedgerEntry { item: item.clone() }),
        }
    }
    if !found.is_empty() {
        return found;
    }
    let whole = ledger.len() < LEDGER_CAP as usize;
    let ledger_cents: i64 = entries.iter().map(|e| e.amount_cents).sum();
    if whole && ledger_cents != balance_cents {
        found.push(Mismatch::LedgerSum {
            balance_cents,
            ledger_cents,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in &entries {
        let once = e.kind != EntryKind::RefundCredit;
        let key = if once {
            (e.kind.as_str(), e.reference.as_str(), 0, 0)
        } else {
            (
                e.kind.as_str(),
                e.reference.as_str(),
                e.amount_cents,
                e.at_ms,
            )
        };
        if !seen.insert(key) {
            found.push(Mismatch::Twice {
                kind: e.kind.as_str(),
                reference: e.reference.clone(),
            });
        }
    }
    let oldest_ms = entries.last().map_or(i64::MIN, |e| e.at_ms);
    for j in journal
        .iter()
        .filter(|j| j.user_id == user_id && j.amount_cents != 0 && !j.kind.is_merchant())
    {
        if !whole && j.at_ms < oldest_ms {
            continue;
        }
        let at = entries.iter().position(|e| {
            e.kind.as_str() == j.kind.as_str()
                && e.amount_cents == j.amount_cents
                && e.at_ms == j.at_ms
                && e.reference == j.reference
        });
        let Some(at) = at else {
            found.push(Mismatch::NotInLedger {
                event_id: j.event_id.clone(),
            });
            continue;
        };
        let later: i64 = entries[..at].iter().map(|e| e.amount_cents).sum();
        if balance_cents - later != j.balance_cents {
            found.push(Mismatch::JournalBalance {
                event_id: j.event_id.clone(),
                expected_cents: balance_cents - later,
                journal_cents: j.balance_cents,
            });
        }
    }
    found
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

    fn journal(
        kind: &str,
        amount: i64,
        at: i64,
        reference: &str,
        balance: i64,
    ) -> crate::domain::journal::Entry {
        let fields: std::collections::BTreeMap<String, String> = [
            ("event_id", format!("e{at}")),
            ("kind", kind.to_string()),
            ("user", "alice".to_string()),
            ("amount", amount.to_string()),
            ("ref", reference.to_string()),
            ("at", at.to_string()),
            ("balance", balance.to_string()),
            ("extra", if amount == 0 { "0" } else { "" }.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        crate::domain::journal::Entry::from_fields("hb:{0000}:journal", "1-0", &fields).unwrap()
    }

    fn ledger(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_wallet_whose_ledger_and_journal_agree_reconciles() {
        let items = ledger(&["packet_debit|-300|20|p1", "deposit|1000|10|d1"]);
        let j = [
            journal("deposit", 1000, 10, "d1", 1000),
            journal("packet_debit", -300, 20, "p1", 700),
        ];
        assert_eq!(reconcile("alice", Some("700"), &items, &j), vec![]);
        // Another user's entries and entries that move no money are not this wallet's rules.
        let other = [journal("packet_cancelled", 0, 30, "p1", 5)];
        assert_eq!(reconcile("alice", Some("700"), &items, &other), vec![]);
        assert_eq!(reconcile("bob", None, &[], &j), vec![]);
    }

    #[test]
    fn a_whole_ledger_must_add_up_to_the_balance() {
        let items = ledger(&["deposit|1000|10|d1"]);
        assert_eq!(
            reconcile("alice", Some("1001"), &items, &[]),
            vec![Mismatch::LedgerSum {
                balance_cents: 1001,
                ledger_cents: 1000
            }]
        );
        // A trimmed ledger (LEDGER_CAP items) says nothing of the balance by its sum.
        let full: Vec<String> = (0..LEDGER_CAP)
            .map(|i| format!("deposit|1|{i}|d{i}"))
            .collect();
        assert_eq!(reconcile("alice", Some("5000"), &full, &[]), vec![]);
    }

    #[test]
    fn a_movement_in_the_ledger_twice_is_found() {
        let items = ledger(&["claim_credit|50|20|p1", "claim_credit|50|10|p1"]);
        assert_eq!(
            reconcile("alice", Some("100"), &items, &[]),
            vec![Mismatch::Twice {
                kind: "claim_credit",
                reference: "p1".into()
            }]
        );
        // A packet refunds its sender twice at most: at the cancel and at settlement.
        let refunds = ledger(&["refund_credit|5|20|p1", "refund_credit|7|10|p1"]);
        assert_eq!(reconcile("alice", Some("12"), &refunds, &[]), vec![]);
    }

    #[test]
    fn a_journal_entry_must_be_in_the_ledger_with_its_balance() {
        let items = ledger(&["deposit|1000|10|d1"]);
        let missing = [journal("withdrawal", -100, 20, "w1", 900)];
        assert_eq!(
            reconcile("alice", Some("1000"), &items, &missing),
            vec![Mismatch::NotInLedger {
                event_id: "e20".into()
            }]
        );
        let wrong = [journal("deposit", 1000, 10, "d1", 999)];
        assert_eq!(
            reconcile("alice", Some("1000"), &items, &wrong),
            vec![Mismatch::JournalBalance {
                event_id: "e10".into(),
                expected_cents: 1000,
                journal_cents: 999
            }]
        );
    }

    #[test]
    fn a_bad_balance_or_ledger_item_is_found() {
        assert_eq!(
            reconcile("alice", Some("-1"), &[], &[]),
            vec![Mismatch::Balance {
                stored: "-1".into()
            }]
        );
        assert_eq!(
            reconcile("alice", Some("1"), &ledger(&["deposit|x|1|d"]), &[]),
            vec![Mismatch::LedgerEntry {
                item: "deposit|x|1|d".into()
            }]
        );
    }
}
