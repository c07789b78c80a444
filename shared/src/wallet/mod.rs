//! Wallets: balances in cents, a ledger, and exactly-once deposits, withdrawals and claim
//! credits:
//!
//! | route | auth | folder | store step | script |
//! | --- | --- | --- | --- | --- |
//! | `GET /wallet` | JWT | `get/` | [`get()`], [`balance`] | (a pipeline) |
//! | `POST /wallet/deposits` | AWS_IAM, `HONGBAO_DEPOSIT_PRINCIPALS` | `deposit/` | [`deposit()`] ([`crate::store::books`]) | `lua/deposit.lua` |
//! | `POST /wallet/withdrawals` | AWS_IAM, `HONGBAO_WITHDRAWAL_PRINCIPALS` | `withdraw/` | [`withdraw()`] ([`crate::store::books`]) | `lua/withdraw.lua` |
//!
//! Each folder holds the operation's handler (`http.rs`) and store step (`store.rs`); the two
//! money-moving IAM routes check their callers and bodies alike ([`http`]). The wallet function
//! also serves the support look-ups ([`crate::support`]). Claim steps 2 and 4 on the
//! grabber's slot are here too: [`credit()`](credit::credit) of a [`Transfer`] (`wallet_credit.lua`) and
//! [`release`] (`transfer_release.lua`, the claim credit's record un-pinned). The pure rules
//! (amounts, ledger entries, limits, who may deposit or withdraw) are in [`rules`].
//!
//! A wallet lives on its owner's hash slot (see [`crate::store::keys`]). Debits happen inside
//! create-packet's script (a packet paid for) and `withdraw.lua` (money paid out, once per
//! reference); deposits go through `deposit.lua` (once per reference), claim credits through
//! `wallet_credit.lua` (once per transfer id); refunds are applied by `settle.lua` on the
//! sender's slot.

pub mod credit;
pub mod deposit;
pub mod get;
pub mod http;
pub mod release;
pub mod rules;
pub mod withdraw;

pub use credit::{credit, Transfer};
pub use deposit::store::deposit;
pub use get::store::{balance, get};
pub use rules::{
    claim_transfer_id, withdrawal_record_id, Credit, DepositOutcome, Entry, EntryKind, Wallet,
    WithdrawalOutcome, LEDGER_CAP, LEDGER_PAGE,
};
pub use withdraw::store::withdraw;

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the wallet function (beside the support look-ups).
pub fn routes() -> Routes {
    Routes::new()
        .route(&get::http::OPERATION, routes!(get::http::get_wallet))
        .route(&deposit::http::OPERATION, routes!(deposit::http::deposit))
        .route(
            &withdraw::http::OPERATION,
            routes!(withdraw::http::withdraw),
        )
}
