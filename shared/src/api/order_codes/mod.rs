//! Order codes over HTTP: the next-order-code function's router (`POST /order-codes`), its one
//! handler in [`next`] (named as the store's operation, [`crate::store::order_codes::next`]).

pub mod next;

use super::operation::Routes;
use utoipa_axum::routes;

/// The routes of the next-order-code function.
pub fn routes() -> Routes {
    Routes::new().route(&next::OPERATION, routes!(next::next_codes))
}
