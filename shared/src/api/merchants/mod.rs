//! Merchant accounts over HTTP (AWS_IAM, callers in `HONGBAO_MERCHANT_PRINCIPALS`: the team's
//! backend): the merchant function's router, one handler per operation, named as the store's
//! operations ([`crate::store::merchants`]) and the scripts.
//!
//! | route | handler |
//! | --- | --- |
//! | `GET /merchants/{merchant_id}` | [`get`](mod@get) |
//! | `POST /merchants/{merchant_id}/deposits` | [`deposit`](mod@deposit) |
//! | `POST /merchants/{merchant_id}/withdrawals` | [`withdraw`](mod@withdraw) |
//! | `POST /merchant-packets` | [`create_packet`](mod@create_packet) |
//! | `GET /merchants/{merchant_id}/packets` | [`list_packets`](mod@list_packets) |
//!
//! No JWT caller reaches a merchant's money: every route is AWS_IAM-signed. A merchant packet
//! is then grabbed and claimed through the red packets' own routes (the grab and claim
//! functions), as any packet.

pub mod create_packet;
pub mod deposit;
pub mod get;
pub mod list_packets;
pub mod withdraw;

use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::JsonBody;
use super::operation::Routes;
use super::state::ApiState;
use crate::domain::is_reference;
use crate::domain::merchants::MERCHANT_PRINCIPALS;
use crate::domain::wallet::MAX_DEPOSIT_CENTS;
use crate::domain::{is_merchant_id, MAX_MERCHANT_ID_CHARS};
use utoipa_axum::routes;

pub use get::MerchantBody;

/// The routes of the merchant function.
pub fn routes() -> Routes {
    Routes::new()
        .route(&get::OPERATION, routes!(get::get_merchant))
        .route(&deposit::OPERATION, routes!(deposit::deposit))
        .route(&withdraw::OPERATION, routes!(withdraw::withdraw))
        .route(
            &create_packet::OPERATION,
            routes!(create_packet::create_packet),
        )
        .route(
            &list_packets::OPERATION,
            routes!(list_packets::list_packets),
        )
}

/// The body of a merchant's deposit or withdrawal.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"amount_cents": 100000, "reference": "topup-20261128-0001"}))]
pub struct MovementRequest {
    /// Cents, `1..=10^11`.
    #[schema(minimum = 1, maximum = 100_000_000_000_i64)]
    pub amount_cents: i64,
    /// 1 to 64 visible ASCII characters; the idempotency key of the movement (per merchant
    /// and direction).
    #[schema(pattern = "^[!-~]{1,64}$")]
    pub reference: String,
}

/// The answer to a merchant's deposit or withdrawal.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MovementBody {
    /// The merchant.
    pub merchant_id: String,
    /// The budget's balance afterwards, cents.
    pub balance_cents: i64,
    /// The movement's reference.
    pub reference: String,
    /// `true` when another call applied this reference before (nothing moved now); the same
    /// call re-sent (a lost reply) answers as its first run did.
    pub repeat: bool,
}

/// Checks a call of a merchant route, in this order: AWS_IAM-signed by a principal of
/// `HONGBAO_MERCHANT_PRINCIPALS` (`arn`), then the merchant id of the path, then that the
/// principal acts for that merchant ([`check_merchant`]).
///
/// # Errors
/// 403 `forbidden` naming the setting; 400 `invalid_request` for a bad merchant id; 403
/// `forbidden` naming the merchant.
pub(crate) fn check_caller(
    state: &ApiState,
    arn: Option<&str>,
    merchant_id: &str,
) -> Result<(), ApiError> {
    check_principal(state, arn)?;
    if !is_merchant_id(merchant_id) {
        return Err(ApiError::invalid(format!(
            "merchant_id must be 1 to {MAX_MERCHANT_ID_CHARS} of A-Z a-z 0-9 _ . : -"
        )));
    }
    check_merchant(state, arn, merchant_id)
}

/// Checks that `arn` acts for `merchant_id` (a principal bound to merchants in
/// `HONGBAO_MERCHANT_PRINCIPALS`, `<principal>=<merchant>|…`, acts only for those).
///
/// # Errors
/// 403 `forbidden` naming the merchant and the setting.
pub(crate) fn check_merchant(
    state: &ApiState,
    arn: Option<&str>,
    merchant_id: &str,
) -> Result<(), ApiError> {
    crate::api::operation::act_for(
        &state.store.config().merchants.principals,
        &MERCHANT_PRINCIPALS,
        arn,
        Some(merchant_id),
    )
}

/// Checks that a call of a merchant route is AWS_IAM-signed by a principal of
/// `HONGBAO_MERCHANT_PRINCIPALS` (`arn`).
///
/// # Errors
/// 403 `forbidden` naming the setting.
pub(crate) fn check_principal(state: &ApiState, arn: Option<&str>) -> Result<(), ApiError> {
    let principals = &state.store.config().merchants.principals;
    if !arn.is_some_and(|arn| principals.allows(arn)) {
        return Err(ApiError::forbidden(format!(
            "merchant routes are answered only to AWS_IAM-signed calls of the principals in {}",
            MERCHANT_PRINCIPALS.name
        )));
    }
    Ok(())
}

/// Counts `MerchantLowBalance` and logs the merchant and its balance when a merchant packet
/// or a withdrawal left `merchant_id`'s budget with `balance_cents`, below
/// `HONGBAO_MERCHANT_LOW_BALANCE_CENTS`, or when a merchant packet was `refused` for want of
/// funds (the team tops the budget up before its orders' packets are refused).
pub(crate) fn note_balance(state: &ApiState, merchant_id: &str, balance_cents: i64, refused: bool) {
    if refused || state.store.config().merchants.is_low(balance_cents) {
        super::metrics::count(super::metrics::MERCHANT_LOW_BALANCE, 1);
        tracing::warn!(
            merchant_id,
            balance_cents,
            refused,
            "a merchant's budget is low (HONGBAO_MERCHANT_LOW_BALANCE_CENTS)"
        );
    }
}

/// Checks a movement's body after [`check_caller`]: a JSON object of its shape,
/// `amount_cents` in `1..=10^11`, `reference`.
///
/// # Errors
/// The body's rejection (400, 413, 415); 400 `invalid_request` naming the field.
pub(crate) fn movement(
    body: Result<JsonBody<MovementRequest>, ApiError>,
) -> Result<MovementRequest, ApiError> {
    let JsonBody(m) = body?;
    if !(1..=MAX_DEPOSIT_CENTS).contains(&m.amount_cents) {
        return Err(ApiError::invalid(format!(
            "amount_cents must be 1..={MAX_DEPOSIT_CENTS}"
        )));
    }
    if !is_reference(&m.reference) {
        return Err(ApiError::invalid(
            "reference must be 1 to 64 visible ASCII characters",
        ));
    }
    Ok(m)
}
