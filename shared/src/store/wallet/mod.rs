//! Wallets: balances in cents, a ledger, and exactly-once credits, one operation per file:
//!
//! | file | operation | script |
//! | --- | --- | --- |
//! | `get.rs` | [`get`], [`balance`] | (a pipeline) |
//! | `credit.rs` | [`credit`] of a [`Transfer`] | `wallet_credit.lua` |
//! | `deposit.rs` | [`deposit`] | `wallet_credit.lua` |
//! | `withdraw.rs` | [`withdraw`] | `withdraw.lua` |
//! | `release.rs` | claim step 4, the claim credit's record un-pinned | `transfer_release.lua` |
//!
//! A wallet lives on its owner's hash slot (see [`super::keys`]). Debits happen inside
//! create-packet's script (a packet paid for) and `withdraw.lua` (money paid out, once per
//! reference); credits (deposits, claim credits) go through `wallet_credit.lua`, which applies
//! each transfer id once; refunds are applied by `settle.lua` on the sender's slot.

mod credit;
mod deposit;
mod get;
mod release;
mod withdraw;

pub use crate::domain::wallet::{
    claim_transfer_id, withdrawal_record_id, Credit, DepositOutcome, Entry, EntryKind, Wallet,
    WithdrawalOutcome, LEDGER_CAP, LEDGER_PAGE,
};
pub use credit::{credit, Transfer};
pub use deposit::deposit;
pub use get::{balance, get};
pub(crate) use release::release_claim_record;
pub use withdraw::withdraw;
