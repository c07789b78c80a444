//! `POST /merchants/{merchant_id}/deposits` (AWS_IAM): money paid into a merchant's budget
//! once per reference (`store::books::deposit`, `lua/deposit.lua`).

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
use crate::merchants::rules::MAX_MERCHANT_BALANCE_CENTS;
use crate::wallet::rules::DepositOutcome;

crate::api::refusal::refusals! {
    /// What `POST /merchants/{merchant_id}/deposits` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum MerchantDepositRefusal {

        /// 409: the reference was deposited before with another amount
        /// (`idempotency_key_reused`), or the balance would pass 10^15 cents
        /// (`balance_limit`).
        409 MerchantDepositConflictError {
            /// the reference was deposited before with another amount; nothing written
            IdempotencyKeyReused = "idempotency_key_reused",
            /// the merchant's balance would pass 10^15 cents; nothing written
            BalanceLimit = "balance_limit",
        }
    }
}

/// `POST /merchants/{merchant_id}/deposits` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): the template's `MerchantDeposit` event.
pub const OPERATION: Operation = Operation {
    event: "MerchantDeposit",
    method: Method::Post,
    path: "/merchants/{merchant_id}/deposits",
    auth: Auth::Iam {
        principals: &crate::merchants::rules::MERCHANT_PRINCIPALS,
        tenant: Tenant::Merchant("the path's `merchant_id`"),
    },
    refusals: MerchantDepositRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the merchant and the body's `reference`",
        kept: "`HONGBAO_DEPOSIT_DEDUP_SECS` (30 days)",
        changed: Changed::Refused("idempotency_key_reused"),
        also: "`repeat: true`",
    }),
};

/// `POST /merchants/{merchant_id}/deposits` (AWS_IAM): 201 [`MovementBody`]; or a
/// [`MerchantDepositRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "merchants", operation_id = "merchant_deposit",
    summary = "Deposit into a merchant's budget (AWS_IAM)",
    description = "Credits `amount_cents` to the merchant's budget, once per `reference` (a repeat answers `repeat: true`). The budget pays for the merchant's red packets; no JWT caller can spend it. Only AWS_IAM-signed calls of the principals in `HONGBAO_MERCHANT_PRINCIPALS`.",
    params(("merchant_id" = String, Path, description = "the merchant: 1 to 64 of `A-Z a-z 0-9 _ . : -`", pattern = "^[A-Za-z0-9_.:-]{1,64}$")),
    request_body = MovementRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "applied (or a repeat of the same reference)", body = MovementBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn deposit(
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
        match store::deposit(&state.store, &merchant_id, amount_cents, &reference).await? {
            DepositOutcome::Applied { balance_cents } => {
                metrics::count(metrics::DEPOSITED, 1);
                metrics::count(metrics::DEPOSITED_CENTS, amount_cents.max(0) as u64);
                (balance_cents, false)
            }
            DepositOutcome::Repeat { balance_cents } => (balance_cents, true),
            DepositOutcome::ReferenceReused => {
                return Err(MerchantDepositRefusal::IdempotencyKeyReused
                    .because("this reference was deposited before with a different amount"))
            }
            DepositOutcome::BalanceLimit { balance_cents } => {
                return Err(MerchantDepositRefusal::BalanceLimit.because(format!(
                    "the balance ({balance_cents} cents) plus this deposit would exceed \
                     {MAX_MERCHANT_BALANCE_CENTS} cents"
                )))
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
