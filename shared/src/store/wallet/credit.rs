//! Credits applied once per transfer id (deposits, claim credits): one EVALSHA of
//! `lua/wallet_credit.lua` on the owner's hash slot, its reply parsed into a [`Credit`].

use crate::store::scripts::WalletCreditCall;
use redis::Value;

use crate::domain::wallet::{Credit, EntryKind, LEDGER_CAP};
use crate::store::keys::Keys;
use crate::store::scripts::{int, texts, Call};
use crate::store::{Error, Store};

impl WalletCreditCall<'_> {
    /// `wallet_credit.lua`'s reply, `<applied|repeat|conflict|balance_limit> <balance>`, as a
    /// [`Credit`].
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn credit(reply: Value) -> Result<Credit, Error> {
        let reply = texts("wallet_credit", reply)?;
        let balance_cents = int("wallet_credit", reply.get(1))?;
        let mut credit = Credit {
            balance_cents,
            applied: false,
            conflict: false,
            balance_limit: false,
        };
        match reply.first().map(String::as_str) {
            Some("applied") => credit.applied = true,
            Some("repeat") => {}
            Some("conflict") => credit.conflict = true,
            Some("balance_limit") => credit.balance_limit = true,
            _ => return Err(Error::bad_reply("wallet_credit", format!("{reply:?}"))),
        }
        Ok(credit)
    }
}

/// A credit to apply once.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    /// Unique per wallet: `dep:<reference>` or `claim:<packet_id>`.
    pub transfer_id: &'a str,
    /// Amount, cents (> 0).
    pub amount_cents: i64,
    /// Ledger kind.
    pub kind: EntryKind,
    /// Ledger reference.
    pub reference: &'a str,
    /// What must match when the transfer id is seen again (e.g. the amount).
    pub fingerprint: &'a str,
    /// How long the idempotency record is kept, ms; 0 pins it until claim step 4 (`release_claim_record`)
    /// (a claim credit must be remembered for as long as the claim can be re-driven).
    pub keep_ms: u64,
    /// Refuse the credit ([`Credit::balance_limit`]) if the balance would exceed this many
    /// cents; 0 for credits that must never be refused (claim credits).
    pub balance_limit_cents: i64,
    /// A claim credit's entry in the owner's received history
    /// ([`crate::domain::history::ReceivedEntry::member`]), written by the same script, so
    /// exactly when the credit is applied; `None` for deposits.
    pub history_entry: Option<&'a str>,
    /// The call's id (16 hex digits, fresh per deposit or claim call; empty for none): the
    /// record keeps it, so that call's re-run, at any later moment, answers
    /// [`Credit::applied`] as its first run did, and another call's answers a repeat.
    pub call: &'a str,
}

/// Credits `transfer.amount_cents` to `user_id` unless `transfer.transfer_id` was applied
/// before (its record lives in the wallet's idempotency hash, without a TTL; see
/// `lua/records.lua`).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; retrying with the same transfer is safe.
/// [`Error::Internal`] when the balance would pass 2^53 - 1 cents (nothing written).
pub async fn credit(
    store: &Store,
    user_id: &str,
    transfer: &Transfer<'_>,
) -> Result<Credit, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let wk = keys.wallet(user_id);
    let mut conn = store.conn().await?;
    let reply: Value = WalletCreditCall {
        wallet: &wk.wallet,
        ledger: &wk.ledger,
        records: &wk.records,
        records_forget: &wk.records_forget,
        received: &wk.received,
        sent: &wk.sent,
        history_totals: &wk.history_totals,
        journal: &wk.journal,
        call_answer: &if transfer.call.is_empty() {
            wk.wallet.clone()
        } else {
            Keys::call_answer(&wk.wallet, transfer.call)
        },
        amount_cents: transfer.amount_cents,
        kind: transfer.kind.as_str(),
        reference: transfer.reference,
        transfer_id: transfer.transfer_id,
        fingerprint: transfer.fingerprint,
        keep_ms: transfer.keep_ms,
        ledger_cap: LEDGER_CAP,
        balance_limit_cents: transfer.balance_limit_cents,
        history_entry: transfer.history_entry.unwrap_or(""),
        history_retention_ms: store.config().history.retention_ms,
        user_id,
        call: transfer.call,
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    WalletCreditCall::credit(reply)
}
