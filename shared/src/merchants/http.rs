//! What a merchant's HTTP routes check alike: the caller (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`,
//! acting for the merchant in the path), a deposit's or withdrawal's body and answer, and the
//! balance metric.

use serde::{Deserialize, Serialize};

use crate::api::error::ApiError;
use crate::api::extract::JsonBody;
use crate::api::state::ApiState;
use crate::domain::is_reference;
use crate::domain::{is_merchant_id, MAX_MERCHANT_ID_CHARS};
use crate::merchants::rules::MERCHANT_PRINCIPALS;
use crate::wallet::rules::MAX_DEPOSIT_CENTS;

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
        crate::api::metrics::count(crate::api::metrics::MERCHANT_LOW_BALANCE, 1);
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
