//! Claim step 2: a claimed share credited to the grabber's wallet once per transfer id, with
//! their received history entry: one EVALSHA of `lua/wallet_credit.lua` on the owner's hash
//! slot, its reply parsed into a [`Credit`].

use crate::store::scripts::WalletCreditCall;
use redis::Value;

use crate::store::keys::Keys;
use crate::store::scripts::{int, texts, Call};
use crate::store::{Error, Store};
use crate::wallet::rules::{Credit, LEDGER_CAP};

impl WalletCreditCall<'_> {
    /// `wallet_credit.lua`'s reply, `<applied|repeat|conflict> <balance>`, as a [`Credit`].
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
        };
        match reply.first().map(String::as_str) {
            Some("applied") => credit.applied = true,
            Some("repeat") => {}
            Some("conflict") => credit.conflict = true,
            _ => return Err(Error::bad_reply("wallet_credit", format!("{reply:?}"))),
        }
        Ok(credit)
    }
}

/// A claim credit to apply once.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    /// Unique per wallet: `claim:<packet_id>` ([`crate::wallet::rules::claim_transfer_id`]).
    pub transfer_id: &'a str,
    /// Amount, cents (> 0).
    pub amount_cents: i64,
    /// Ledger reference (the packet id).
    pub reference: &'a str,
    /// What must match when the transfer id is seen again (the amount).
    pub fingerprint: &'a str,
    /// How long the idempotency record is kept, ms; 0 pins it until claim step 4
    /// (`release_claim_record`): a claim credit must be remembered for as long as the claim
    /// can be re-driven.
    pub keep_ms: u64,
    /// The grabber's entry in their received history
    /// ([`crate::history::rules::ReceivedEntry::member`]), written by the same script, so
    /// exactly when the credit is applied.
    pub history_entry: &'a str,
    /// The claim call's id (16 hex digits, fresh per claim call; empty for a re-drive without
    /// one): the record keeps it, so that call's re-run, at any later moment, answers
    /// [`Credit::applied`] as its first run did, and another call's answers a repeat.
    pub call: &'a str,
}

/// Credits `transfer.amount_cents` to `user_id` unless `transfer.transfer_id` was applied
/// before (its record lives in the wallet's idempotency hash, without a TTL; see
/// `lua/records.lua`). Never refused for the balance limit: the money already exists.
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
        amount_cents: transfer.amount_cents,
        reference: transfer.reference,
        transfer_id: transfer.transfer_id,
        fingerprint: transfer.fingerprint,
        keep_ms: transfer.keep_ms,
        ledger_cap: LEDGER_CAP,
        history_entry: transfer.history_entry,
        history_retention_ms: store.config().history.retention_ms,
        user_id,
        call: transfer.call,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    WalletCreditCall::credit(reply)
}
