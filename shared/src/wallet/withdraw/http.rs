//! `POST /wallet/withdrawals` (AWS_IAM): money paid out of a wallet once per reference
//! (`store::books::withdraw`, `lua/withdraw.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{IamPrincipal, JsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::wallet::http::{movement, Movement, MovementRoute};
use crate::wallet::rules::{WithdrawalOutcome, MAX_WITHDRAWAL_CENTS};

/// The body of `POST /wallet/withdrawals`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawalRequest {
    /// Whose wallet: 1 to 255 printable characters.
    #[schema(min_length = 1, max_length = 255)]
    pub user_id: String,
    /// Cents, `1..=10^11`.
    #[schema(minimum = 1, maximum = 100_000_000_000_i64)]
    pub amount_cents: i64,
    /// 1 to 64 visible ASCII characters; the idempotency key of the withdrawal (per user).
    #[schema(pattern = "^[!-~]{1,64}$")]
    pub reference: String,
}

/// The answer to a withdrawal.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WithdrawalBody {
    /// Whose wallet.
    pub user_id: String,
    /// Balance afterwards, cents.
    pub balance_cents: i64,
    /// The withdrawal's reference.
    pub reference: String,
    /// `true` when another call paid this reference out before (nothing paid now); the same
    /// call re-sent (a lost reply) answers as its first run did.
    pub repeat: bool,
}

crate::api::refusal::refusals! {
    /// What `POST /wallet/withdrawals` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum WithdrawRefusal {

        402 InsufficientFundsError {
            /// the balance is below `amount_cents` (`balance_cents`); nothing written
            InsufficientFunds = "insufficient_funds" {
                /// The balance, cents.
                balance_cents: i64,
            },
        }
        409 IdempotencyKeyReusedError {
            /// the reference was paid out before with another amount; nothing written
            IdempotencyKeyReused = "idempotency_key_reused",
        }
    }
}

/// `POST /wallet/withdrawals` (AWS_IAM, `HONGBAO_WITHDRAWAL_PRINCIPALS`): the template's `Withdraw` event.
pub const OPERATION: Operation = Operation {
    event: "Withdraw",
    method: Method::Post,
    path: "/wallet/withdrawals",
    auth: Auth::Iam {
        principals: &crate::wallet::rules::WITHDRAWAL_PRINCIPALS,
        tenant: Tenant::Users,
    },
    refusals: WithdrawRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the body's `reference`",
        kept: "`HONGBAO_DEPOSIT_DEDUP_SECS` (30 days)",
        changed: Changed::Refused("idempotency_key_reused"),
        also: "`repeat: true`",
    }),
};

/// `POST /wallet/withdrawals` (AWS_IAM): 201 [`WithdrawalBody`]; or a [`WithdrawRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "wallet", operation_id = "withdraw",
    summary = "Withdraw from a wallet (AWS_IAM)",
    description = "Pays `amount_cents` out of `user_id`'s wallet, once per `reference` (a repeat answers `repeat: true`), if the balance covers it. Only AWS_IAM-signed calls of the principals in `HONGBAO_WITHDRAWAL_PRINCIPALS`; the caller moves the money on (a bank transfer, the payment ledger).",
    request_body = WithdrawalRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "paid out (or a repeat of the same reference)", body = WithdrawalBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn withdraw(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<WithdrawalRequest>, ApiError>,
) -> Result<(StatusCode, Replayed, Json<WithdrawalBody>), ApiError> {
    let rules = &state.store.config().wallet;
    let route = MovementRoute {
        what: "withdrawals",
        setting: crate::wallet::rules::WITHDRAWAL_PRINCIPALS.name,
        principals: &rules.withdrawal_principals,
        max_cents: MAX_WITHDRAWAL_CENTS,
    };
    let Movement {
        user_id,
        amount_cents,
        reference,
    } = movement(&route, arn, body)?;
    let (balance_cents, repeat) =
        match store::withdraw(&state.store, &user_id, amount_cents, &reference).await? {
            WithdrawalOutcome::Applied { balance_cents } => {
                metrics::count(metrics::WITHDRAWN, 1);
                metrics::count(metrics::WITHDRAWN_CENTS, amount_cents.max(0) as u64);
                (balance_cents, false)
            }
            WithdrawalOutcome::Repeat { balance_cents } => (balance_cents, true),
            WithdrawalOutcome::ReferenceReused => {
                return Err(WithdrawRefusal::IdempotencyKeyReused
                    .because("this reference was paid out before with a different amount"))
            }
            WithdrawalOutcome::InsufficientFunds { balance_cents } => {
                return Err(
                    WithdrawRefusal::InsufficientFunds { balance_cents }.because(format!(
                        "balance {balance_cents} cents is below amount_cents {amount_cents}"
                    )),
                )
            }
        };
    Ok((
        StatusCode::CREATED,
        Replayed(repeat),
        Json(WithdrawalBody {
            user_id,
            balance_cents,
            reference,
            repeat,
        }),
    ))
}

impl From<WithdrawalRequest> for Movement {
    fn from(r: WithdrawalRequest) -> Self {
        Movement {
            user_id: r.user_id,
            amount_cents: r.amount_cents,
            reference: r.reference,
        }
    }
}
