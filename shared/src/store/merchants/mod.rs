//! Merchant accounts: a budget in cents, its books, a ledger, and exactly-once deposits and
//! withdrawals, one operation per file:
//!
//! | file | operation | script |
//! | --- | --- | --- |
//! | `get.rs` | [`get`]: the books and a ledger page | (a pipeline) |
//! | `deposit.rs` | [`deposit`] | `merchant_deposit.lua` |
//! | `withdraw.rs` | [`withdraw`] | `withdraw.lua` (`owner` `merchant`) |
//! | `create_packet.rs` | [`create_packet`]: an order's packet, paid from the budget | `merchant_create_packet.lua` |
//! | `list_packets.rs` | [`list_packets`]: a page of the merchant's packets | (its index, then each packet's view) |
//!
//! A merchant's keys live on its own hash slot ([`crate::store::keys::Keys::merchant`]); each
//! movement is one script there that moves its counters, writes its ledger entry and its
//! journal entry together, so the books ([`crate::domain::merchants::Books`]) close after
//! every step.

mod create_packet;
mod deposit;
mod get;
mod list_packets;
mod withdraw;

pub use create_packet::create_packet;
pub use deposit::deposit;
pub use get::get;
pub use list_packets::{list_packets, PacketsPage};
pub use withdraw::withdraw;

use redis::Value;

use crate::domain::wallet::{DepositOutcome, WithdrawalOutcome};
use crate::store::scripts::{int, texts};
use crate::store::Error;

/// A merchant movement script's reply, `<outcome> <balance>`, as (outcome, balance cents).
///
/// # Errors
/// [`Error::Internal`] for a reply of another shape.
fn reply(script: &str, reply: Value) -> Result<(String, i64), Error> {
    let reply = texts(script, reply)?;
    let balance_cents = int(script, reply.get(1))?;
    match reply.into_iter().next() {
        Some(outcome) => Ok((outcome, balance_cents)),
        None => Err(Error::bad_reply(script, "empty reply")),
    }
}

/// `merchant_deposit.lua`'s reply as a [`DepositOutcome`].
///
/// # Errors
/// [`Error::Internal`] for a reply of another shape.
fn deposit_outcome(value: Value) -> Result<DepositOutcome, Error> {
    let (outcome, balance_cents) = reply("merchant_deposit", value)?;
    Ok(match outcome.as_str() {
        "applied" => DepositOutcome::Applied { balance_cents },
        "repeat" => DepositOutcome::Repeat { balance_cents },
        "conflict" => DepositOutcome::ReferenceReused,
        "balance_limit" => DepositOutcome::BalanceLimit { balance_cents },
        other => return Err(Error::bad_reply("merchant_deposit", other)),
    })
}

/// `withdraw.lua`'s reply as a [`WithdrawalOutcome`].
///
/// # Errors
/// [`Error::Internal`] for a reply of another shape.
fn withdrawal_outcome(value: Value) -> Result<WithdrawalOutcome, Error> {
    let (outcome, balance_cents) = reply("withdraw", value)?;
    Ok(match outcome.as_str() {
        "applied" => WithdrawalOutcome::Applied { balance_cents },
        "repeat" => WithdrawalOutcome::Repeat { balance_cents },
        "conflict" => WithdrawalOutcome::ReferenceReused,
        "insufficient_funds" => WithdrawalOutcome::InsufficientFunds { balance_cents },
        other => return Err(Error::bad_reply("withdraw", other)),
    })
}
