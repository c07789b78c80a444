//! A user's red-packet history: pages of the sent and received lists, newest first,
//! and the yearly totals.
//!
//! The entries are written by the scripts that move the money they record, on the user's own
//! hash slot: `create_packet.lua` adds the sender's sent entry with the debit,
//! `lua/wallet_credit.lua` the grabber's received entry with a claim's credit (once per
//! transfer id, so re-drives add nothing), and `lua/settle.lua` writes the refund into the sent
//! entry. Each list is a sorted set read with `ZREVRANGEBYLEX` (see
//! [`rules`] for the members); nothing in it has a TTL, and entries older than
//! `HONGBAO_HISTORY_RETENTION_DAYS` are pruned by those scripts (`lua/history.lua`).
//!
//! | route | answer | errors |
//! | --- | --- | --- |
//! | `GET /packets?role=sent\|received&limit=1..100&cursor=` | 200 [`HistoryBody`](list::http::HistoryBody), newest first | 400 (bad `role`, `limit`, `cursor`, unknown parameter) |
//! | `GET /packets/summary?year=2026` | 200 [`SummaryBody`](summary::http::SummaryBody) | 400 (bad `year`) |
//!
//! Both read the caller's own history only (the caller is the JWT `sub`); the grab function
//! serves them. One folder per operation, its handler (`http.rs`) and store step (`store.rs`)
//! side by side: `list/` (with `history_page.lua`) and `summary/` (one `HMGET`); the pure rules
//! (entries, cursors, business years) in [`rules`].

pub mod list;
pub mod rules;
pub mod summary;

pub use list::store::page;
pub use rules::{Cursor, Entry, Page, Role, Summary, Totals};
pub use summary::store::summary;

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The history routes (the grab function serves them): `GET /packets`, `GET /packets/summary`.
pub fn routes() -> Routes {
    Routes::new()
        .route(&list::http::OPERATION, routes!(list::http::list))
        .route(&summary::http::OPERATION, routes!(summary::http::summary))
}
