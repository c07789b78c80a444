//! `POST /merchants/{merchant_id}/withdrawals` (AWS_IAM): money paid out of a merchant's
//! budget once per reference (`store::books::withdraw`, `lua/withdraw.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{IamPrincipal, JsonBody, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::merchants::http::{check_caller, movement, MovementBody, MovementRequest};
use crate::wallet::rules::WithdrawalOutcome;

crate::api::refusal::refusals! {
    /// What `POST /merchants/{merchant_id}/withdrawals` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum MerchantWithdrawRefusal {

        402 MerchantInsufficientFundsError {
            /// the balance is below `amount_cents` (`balance_cents`; money in open packets
            /// and outstanding coupons is not in it); nothing written
            InsufficientFunds = "insufficient_funds" {
                /// The balance, cents.
                balance_cents: i64,
            },
        }
        409 MerchantWithdrawConflictError {
            /// the reference was paid out before with another amount; nothing written
            IdempotencyKeyReused = "idempotency_key_reused",
        }
    }
}

/// `POST /merchants/{merchant_id}/withdrawals` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): the template's `MerchantWithdraw` event.
pub const OPERATION: Operation = Operation {
    event: "MerchantWithdraw",
    method: Method::Post,
    path: "/merchants/{merchant_id}/withdrawals",
    auth: Auth::Iam {
        principals: &crate::merchants::rules::MERCHANT_PRINCIPALS,
        tenant: Tenant::Merchant("the path's `merchant_id`"),
    },
    refusals: MerchantWithdrawRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the merchant and the body's `reference`",
        kept: "`HONGBAO_DEPOSIT_DEDUP_SECS` (30 days)",
        changed: Changed::Refused("idempotency_key_reused"),
        also: "`repeat: true`",
    }),
};

/// `POST /merchants/{merchant_id}/withdrawals` (AWS_IAM): 201 [`MovementBody`]; or a
/// [`MerchantWithdrawRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "merchants", operation_id = "merchant_withdraw",
    summary = "Withdraw from a merchant's budget (AWS_IAM)",
    description = "Pays `amount_cents` out of the merchant's budget, once per `reference` (a repeat answers `repeat: true`), if its balance covers it. Only AWS_IAM-signed calls of the principals in `HONGBAO_MERCHANT_PRINCIPALS`; the caller moves the money on.",
    params(("merchant_id" = String, Path, description = "the merchant: 1 to 64 of `A-Z a-z 0-9 _ . : -`", pattern = "^[A-Za-z0-9_.:-]{1,64}$")),
    request_body = MovementRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "paid out (or a repeat of the same reference)", body = MovementBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn withdraw(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(merchant_id): Path<String>,
    body: Result<JsonBody<MovementRequest>, ApiError>,
) -> Result<(StatusCode, Replayed, Json<MovementBody>), ApiError> {
    check_caller(&state, arn.as_deref(), &merchant_id)?;
    let MovementRequest {
        amount_cents,
        reference,
    } = movement(body)?;
    let (balance_cents, repeat) =
        match store::withdraw(&state.store, &merchant_id, amount_cents, &reference).await? {
            WithdrawalOutcome::Applied { balance_cents } => {
                metrics::count(metrics::WITHDRAWN, 1);
                metrics::count(metrics::WITHDRAWN_CENTS, amount_cents.max(0) as u64);
                crate::merchants::http::note_balance(&state, &merchant_id, balance_cents, false);
                (balance_cents, false)
            }
            WithdrawalOutcome::Repeat { balance_cents } => (balance_cents, true),
            WithdrawalOutcome::ReferenceReused => {
                return Err(MerchantWithdrawRefusal::IdempotencyKeyReused
                    .because("this reference was paid out before with a different amount"))
            }
            WithdrawalOutcome::InsufficientFunds { balance_cents } => {
                return Err(
                    MerchantWithdrawRefusal::InsufficientFunds { balance_cents }.because(format!(
                        "balance {balance_cents} cents is below amount_cents {amount_cents}"
                    )),
                )
            }
        };
    Ok((
        StatusCode::CREATED,
        Replayed(repeat),
        Json(MovementBody {
            merchant_id,
            balance_cents,
            reference,
            repeat,
        }),
    ))
}
