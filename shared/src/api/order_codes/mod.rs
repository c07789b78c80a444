//! Order codes over HTTP: the next-order-code function's router (`POST /order-codes`), its one
//! handler in [`next`] (named as the store's operation, [`crate::store::order_codes::next`]).

pub mod next;

use axum::routing::post;
use axum::Router;

use super::state::ApiState;

/// The routes of the next-order-code function.
pub(crate) fn routes() -> Router<ApiState> {
    Router::new().route("/order-codes", post(next::next_codes))
}

/// The next-order-code function's router.
pub fn router(state: ApiState) -> Router {
    super::contract(routes().with_state(state))
}
