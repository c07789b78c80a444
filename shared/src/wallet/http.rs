//! What the two money-moving IAM routes of a wallet (`POST /wallet/deposits`,
//! `POST /wallet/withdrawals`) check alike: the caller and the body (`movement`).

use crate::api::error::ApiError;
use crate::api::extract::JsonBody;
use crate::domain::{is_reference, is_user_id, MAX_USER_ID_CHARS};
use crate::wallet::rules::IamPrincipals;

/// A money-moving IAM route (`POST /wallet/deposits`, `POST /wallet/withdrawals`): who may call
/// it and the largest amount it moves.
pub(crate) struct MovementRoute<'a> {
    /// What the route moves, plural, as its refusal names it: `deposits`, `withdrawals`.
    pub what: &'static str,
    /// The setting that lists its principals, e.g. `HONGBAO_DEPOSIT_PRINCIPALS`.
    pub setting: &'static str,
    /// The AWS_IAM principals it accepts.
    pub principals: &'a IamPrincipals,
    /// The largest `amount_cents`, cents.
    pub max_cents: i64,
}

/// The checked body of a money-moving IAM route.
pub(crate) struct Movement {
    /// Whose wallet: 1 to 255 printable characters.
    pub user_id: String,
    /// Cents, `1..=max_cents` of the route.
    pub amount_cents: i64,
    /// 1 to 64 visible ASCII characters: the movement's idempotency key (per user).
    pub reference: String,
}

/// Checks a call of a money-moving IAM route, in this order: AWS_IAM-signed by one of the
/// route's principals (`arn`), a JSON body of its shape, `user_id`, `amount_cents` in
/// `1..=max_cents`, `reference`.
///
/// # Errors
/// 403 `forbidden` naming the route's setting; the body's rejection (400, 413, 415); 400
/// `invalid_request` naming the field.
pub(crate) fn movement<T: Into<Movement>>(
    route: &MovementRoute<'_>,
    arn: Option<String>,
    body: Result<JsonBody<T>, ApiError>,
) -> Result<Movement, ApiError> {
    if !arn.is_some_and(|arn| route.principals.allows(&arn)) {
        return Err(ApiError::forbidden(format!(
            "{} are accepted only from AWS_IAM-signed calls of the principals in {}",
            route.what, route.setting
        )));
    }
    let JsonBody(b) = body?;
    let m: Movement = b.into();
    if !is_user_id(&m.user_id) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    if !(1..=route.max_cents).contains(&m.amount_cents) {
        return Err(ApiError::invalid(format!(
            "amount_cents must be 1..={}",
            route.max_cents
        )));
    }
    if !is_reference(&m.reference) {
        return Err(ApiError::invalid(
            "reference must be 1 to 64 visible ASCII characters",
        ));
    }
    Ok(m)
}
