//! Merchant accounts: a budget in cents, its books, a ledger, exactly-once deposits and
//! withdrawals, and an order's packet paid from the budget. Every route is AWS_IAM-signed by a
//! caller in `HONGBAO_MERCHANT_PRINCIPALS` (the team's backend) acting for the merchant
//! ([`http`]); no JWT caller reaches a merchant's money. A merchant packet is then grabbed and
//! claimed through the red packets' own routes, as any packet.
//!
//! | route | folder | store step | script |
//! | --- | --- | --- | --- |
//! | `GET /merchants/{merchant_id}` | `get/` | [`get()`]: the books and a ledger page | (a pipeline) |
//! | `POST /merchants/{merchant_id}/deposits` | `deposit/` | [`deposit()`] ([`crate::store::books`]) | `lua/deposit.lua` (`owner` `merchant`) |
//! | `POST /merchants/{merchant_id}/withdrawals` | `withdraw/` | [`withdraw()`] ([`crate::store::books`]) | `lua/withdraw.lua` (`owner` `merchant`) |
//! | `POST /merchant-packets` | `create_packet/` | [`create_packet()`]: an order's packet | `merchant_create_packet.lua` |
//! | `GET /merchants/{merchant_id}/packets` | `list_packets/` | [`list_packets()`]: a page of the merchant's packets | (its index, then each packet's view) |
//!
//! Each folder holds the operation's handler (`http.rs`), its store step (`store.rs`) and its
//! script; the pure rules (books, merchant packets, coupon terms) are in [`rules`].
//!
//! A merchant's keys live on its own hash slot ([`crate::store::keys::Keys::merchant`]); each
//! movement is one script there that moves its counters, writes its ledger entry and its
//! journal entry together, so the books ([`rules::Books`]) close after
//! every step.

pub mod create_packet;
pub mod deposit;
pub mod get;
pub mod http;
pub mod list_packets;
pub mod rules;
pub mod withdraw;

pub use create_packet::store::create_packet;
pub use deposit::store::deposit;
pub use get::store::get;
pub use list_packets::store::{list_packets, PacketsPage};
pub use withdraw::store::withdraw;

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the merchant function.
pub fn routes() -> Routes {
    Routes::new()
        .route(&get::http::OPERATION, routes!(get::http::get_merchant))
        .route(&deposit::http::OPERATION, routes!(deposit::http::deposit))
        .route(
            &withdraw::http::OPERATION,
            routes!(withdraw::http::withdraw),
        )
        .route(
            &create_packet::http::OPERATION,
            routes!(create_packet::http::create_packet),
        )
        .route(
            &list_packets::http::OPERATION,
            routes!(list_packets::http::list_packets),
        )
}
