//! A user's red-packet history over HTTP, served by the grab function:
//!
//! | route | answer | errors |
//! | --- | --- | --- |
//! | `GET /packets?role=sent\|received&limit=1..100&cursor=` | 200 [`HistoryBody`], newest first | 400 (bad `role`, `limit`, `cursor`, unknown parameter) |
//! | `GET /packets/summary?year=2026` | 200 [`SummaryBody`] | 400 (bad `year`) |
//!
//! Both read the caller's own history only (the caller is the JWT `sub`).
//!
//! | file | handler |
//! | --- | --- |
//! | `list.rs` | [`list`] |
//! | `summary.rs` | [`summary`] |

pub mod list;
pub mod summary;

use super::operation::Routes;
use utoipa_axum::routes;

/// The history routes (the grab function serves them): `GET /packets`, `GET /packets/summary`.
pub fn routes() -> Routes {
    Routes::new()
        .route(&list::OPERATION, routes!(list::list))
        .route(&summary::OPERATION, routes!(summary::summary))
}

pub use list::{HistoryBody, HistoryItemBody, ReceivedItemBody, SentItemBody};
pub use summary::{SummaryBody, TotalsBody};
