//! reconcile-cron's rules: a wallet or a merchant's budget, as read in one atomic step (its
//! hash, its ledger, the journal entries of its hash tag not exported yet), checked against
//! itself. The walk that reads them is [`crate::store::reconcile`].
//!
//! Every script that moves a balance writes the movement's ledger item and journal entry in
//! the same step (`lua/ledger.lua`, `lua/journal.lua`), so the rules below hold after every
//! script; one that is broken is money moved outside the scripts (or a bug in one).

use std::collections::{BTreeMap, HashMap};

use super::journal::{self, Kind};
use crate::merchants::rules::Books;
use crate::wallet::rules::{Entry, EntryKind};

/// The largest integer a Lua number holds exactly, 2^53 − 1: no balance is above it.
const MAX_EXACT_CENTS: i64 = (1 << 53) - 1;

/// The hash field of a ledger's trimmed cents: every item pushed off the ledger's end
/// (`lua/ledger.lua`, [`crate::wallet::rules::LEDGER_CAP`] kept) added up, cents. No field: none
/// trimmed.
pub const LEDGER_TRIMMED_FIELD: &str = "ledger_trimmed_cents";

/// Whose books a ledger is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgerOwner {
    /// A user's wallet (`<prefix>:{t}:wallet:<user>`).
    Wallet,
    /// A merchant's budget (`<prefix>:{t}:merchant:<merchant>`).
    Merchant,
}

impl LedgerOwner {
    /// The name logs and metrics use: `wallet` or `merchant`.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerOwner::Wallet => "wallet",
            LedgerOwner::Merchant => "merchant",
        }
    }

    /// The ledger kind that a journal entry of `kind` of this holder has, and whether the
    /// entry's reference may carry a `/<part>` the ledger's does not (a merchant packet
    /// share's coupon refund: journal `<packet_id>/<share_id>`, ledger `<packet_id>`). `None`:
    /// an entry of another holder, or one that moves no balance.
    fn ledger_kind(self, kind: Kind) -> Option<(EntryKind, bool)> {
        Some(match (self, kind) {
            (LedgerOwner::Wallet, Kind::Deposit) => (EntryKind::Deposit, false),
            (LedgerOwner::Wallet, Kind::PacketDebit) => (EntryKind::PacketDebit, false),
            (LedgerOwner::Wallet, Kind::ClaimCredit) => (EntryKind::ClaimCredit, false),
            (LedgerOwner::Wallet, Kind::RefundCredit) => (EntryKind::RefundCredit, false),
            (LedgerOwner::Wallet, Kind::Withdrawal) => (EntryKind::Withdrawal, false),
            (LedgerOwner::Merchant, Kind::MerchantDeposit) => (EntryKind::Deposit, false),
            (LedgerOwner::Merchant, Kind::MerchantWithdrawal) => (EntryKind::Withdrawal, false),
            (LedgerOwner::Merchant, Kind::MerchantPacketDebit) => (EntryKind::PacketDebit, false),
            (LedgerOwner::Merchant, Kind::MerchantRefund) => (EntryKind::RefundCredit, false),
            (LedgerOwner::Merchant, Kind::MerchantCouponRefund) => (EntryKind::RefundCredit, true),
            _ => return None,
        })
    }
}

/// One account as read in one atomic step on its hash tag.
#[derive(Debug, Clone, Copy)]
pub struct Account<'a> {
    /// A wallet or a merchant's budget.
    pub holder: LedgerOwner,
    /// The wallet's user or the merchant id (the journal entries' `user`).
    pub id: &'a str,
    /// The account's hash (`HGETALL`): a wallet's `balance`, a merchant's books
    /// ([`Books::from_fields`]), and [`LEDGER_TRIMMED_FIELD`].
    pub fields: &'a HashMap<String, String>,
    /// The ledger's items, newest first.
    pub ledger: &'a [String],
}

/// What a reconciliation finds wrong with one account ([`reconcile`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// A field of the account's hash that is not an integer (a balance: of 0 to 2^53 − 1
    /// cents).
    Field {
        /// The field.
        name: String,
        /// The stored value.
        stored: String,
    },
    /// A ledger item that is not `kind|amount_cents|at_ms|reference`.
    LedgerEntry {
        /// The item.
        item: String,
    },
    /// The balance is not the trimmed cents plus the ledger's amounts.
    LedgerSum {
        /// The balance, cents.
        balance_cents: i64,
        /// [`LEDGER_TRIMMED_FIELD`], cents.
        trimmed_cents: i64,
        /// The sum of the ledger's amounts, cents.
        ledger_cents: i64,
    },
    /// A merchant's books do not close ([`Books::close`]: deposited − withdrawn = balance +
    /// reserved + outstanding + paid, no counter negative).
    Books {
        /// The books as read.
        books: Books,
    },
    /// One movement in the ledger twice: a packet debit or claim credit with the same
    /// reference (each is applied once per packet), a deposit or withdrawal with the same
    /// reference within the dedup window (`HONGBAO_DEPOSIT_DEDUP_SECS`: the reference's record
    /// is kept that long, so within it a reference is applied once), or two refunds equal in
    /// every field.
    Twice {
        /// The ledger's kind.
        kind: &'static str,
        /// The reference (deposit or withdrawal reference, or packet id).
        reference: String,
    },
    /// A journal entry of the account that moves money, of the time the ledger still covers,
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

/// Checks one account as read in one atomic step, with the journal entries still unexported
/// on its hash tag (`journal`, any order; other accounts' are ignored) and the dedup window
/// of deposit and withdrawal references, `dedup_ms` (ms). The rules, each a [`Mismatch`] when
/// broken:
///
/// - every number of the hash is an integer, a balance one of 0 to 2^53 − 1 cents, and every
///   ledger item parses; a merchant's books close;
/// - the balance is [`LEDGER_TRIMMED_FIELD`] plus the sum of the ledger's amounts, whatever
///   the ledger's length (`lua/ledger.lua` adds each trimmed item's cents to the field);
/// - no movement is in the ledger twice: a packet debit or claim credit once per packet, a
///   deposit or withdrawal once per reference within `dedup_ms` (a reference used again
///   after its record was forgotten is one more movement), a refund once per packet and time;
/// - each journal entry of the account that moves money is in the ledger, if the ledger
///   reaches back to its time, and its balance after the movement is the balance less the
///   ledger's later amounts. An exported entry is gone from the journal, so only the ones
///   left are checked; a gap among them (a failed export of one entry) changes nothing.
pub fn reconcile(account: &Account, journal: &[journal::Entry], dedup_ms: i64) -> Vec<Mismatch> {
    let mut found = Vec::new();
    let int = |name: &str, range: std::ops::RangeInclusive<i64>, found: &mut Vec<Mismatch>| {
        let stored = account.fields.get(name)?;
        match stored.parse::<i64>() {
            Ok(v) if range.contains(&v) => Some(v),
            _ => {
                found.push(Mismatch::Field {
                    name: name.to_string(),
                    stored: stored.clone(),
                });
                None
            }
        }
    };
    let balance_cents = int("balance", 0..=MAX_EXACT_CENTS, &mut found).unwrap_or(0);
    let trimmed = int(LEDGER_TRIMMED_FIELD, i64::MIN..=i64::MAX, &mut found);
    if account.holder == LedgerOwner::Merchant {
        match Books::from_fields(account.fields) {
            Ok(books) if books.close() => {}
            Ok(books) => found.push(Mismatch::Books { books }),
            Err(_) => {} // a field that is not an integer: reported below, by name
        }
        for name in [
            "reserved",
            "outstanding",
            "paid_cash",
            "paid_coupons",
            "deposited",
            "withdrawn",
        ] {
            int(name, i64::MIN..=i64::MAX, &mut found);
        }
    }
    let mut entries = Vec::with_capacity(account.ledger.len());
    for item in account.ledger {
        match Entry::parse(item) {
            Ok(e) => entries.push(e),
            Err(_) => found.push(Mismatch::LedgerEntry { item: item.clone() }),
        }
    }
    if !found.is_empty() {
        return found;
    }
    let trimmed_cents = trimmed.unwrap_or(0);
    let ledger_cents: i64 = entries.iter().map(|e| e.amount_cents).sum();
    if trimmed_cents + ledger_cents != balance_cents {
        found.push(Mismatch::LedgerSum {
            balance_cents,
            trimmed_cents,
            ledger_cents,
        });
    }
    found.extend(twice(&entries, dedup_ms));
    // A ledger never trimmed reaches back to the account's first movement.
    let whole = trimmed.is_none();
    let oldest_ms = entries.last().map_or(i64::MIN, |e| e.at_ms);
    for j in journal.iter().filter(|j| j.user_id == account.id) {
        let Some((kind, with_part)) = account.holder.ledger_kind(j.kind) else {
            continue;
        };
        // A trimmed ledger's oldest millisecond may have lost some of its items.
        let covered = whole || j.at_ms > oldest_ms;
        if j.amount_cents == 0 || (!whole && j.at_ms < oldest_ms) {
            continue;
        }
        let same_reference = |e: &Entry| {
            e.reference == j.reference
                || (with_part
                    && j.reference
                        .strip_prefix(e.reference.as_str())
                        .is_some_and(|rest| rest.starts_with('/')))
        };
        let at = entries.iter().position(|e| {
            e.kind == kind
                && e.amount_cents == j.amount_cents
                && e.at_ms == j.at_ms
                && same_reference(e)
        });
        let Some(at) = at else {
            if !covered {
                continue;
            }
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

/// The movements of `entries` (newest first) that are in the ledger twice ([`Mismatch::Twice`]).
fn twice(entries: &[Entry], dedup_ms: i64) -> Vec<Mismatch> {
    let mut found = Vec::new();
    // (kind, reference) -> the times seen, for the kinds applied once per reference.
    let mut seen: BTreeMap<(&'static str, &str), Vec<i64>> = BTreeMap::new();
    let mut refunds = std::collections::BTreeSet::new();
    for e in entries {
        let kind = e.kind.as_str();
        let repeated = match e.kind {
            EntryKind::RefundCredit => {
                !refunds.insert((e.reference.as_str(), e.amount_cents, e.at_ms))
            }
            EntryKind::Deposit | EntryKind::Withdrawal => {
                let times = seen.entry((kind, e.reference.as_str())).or_default();
                let within = times.iter().any(|t| (t - e.at_ms).abs() < dedup_ms);
                times.push(e.at_ms);
                within
            }
            EntryKind::PacketDebit | EntryKind::ClaimCredit => {
                let times = seen.entry((kind, e.reference.as_str())).or_default();
                times.push(e.at_ms);
                times.len() > 1
            }
        };
        if repeated {
            found.push(Mismatch::Twice {
                kind,
                reference: e.reference.clone(),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests;
