//! `POST /wallet/deposits` (AWS_IAM): money credited to a wallet once per reference
//! (`store::books::deposit`, `lua/deposit.lua`).

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
use crate::wallet::rules::{DepositOutcome, MAX_DEPOSIT_CENTS};

/// The body of `POST /wallet/deposits`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DepositRequest {
    /// Whose wallet: 1 to 255 printable characters.
    #[schema(min_length = 1, max_length = 255)]
    pub user_id: String,
    /// Cents, `1..=10^11`.
    #[schema(minimum = 1, maximum = 100_000_000_000_i64)]
    pub amount_cents: i64,
    /// 1 to 64 visible ASCII characters; the idempotency key of the deposit (per user).
    #[schema(pattern = "^[!-~]{1,64}$")]
    pub reference: String,
}

/// The answer to a deposit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DepositBody {
    /// Whose wallet.
    pub user_id: String,
    /// Balance afterwards, cents.
    pub balance_cents: i64,
    /// The deposit's reference.
    pub reference: String,
    /// `true` when another call deposited this reference before (nothing credited now); the
    /// same call re-sent (a lost reply) answers as its first run did.
    pub repeat: bool,
}

crate::api::refusal::refusals! {
    /// What `POST /wallet/deposits` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum DepositRefusal {

        /// 409: the reference was deposited before with another amount
        /// (`idempotency_key_reused`), or the deposit would pass `HONGBAO_MAX_BALANCE_CENTS`
        /// (`balance_limit`).
        409 DepositConflictError {
            /// the reference was deposited before with another amount; nothing written
            IdempotencyKeyReused = "idempotency_key_reused",
            /// the balance would pass `HONGBAO_MAX_BALANCE_CENTS`; nothing written
            BalanceLimit = "balance_limit",
        }
    }
}

/// `POST /wallet/deposits` (AWS_IAM, `HONGBAO_DEPOSIT_PRINCIPALS`): the template's `Deposit` event.
pub const OPERATION: Operation = Operation {
    event: "Deposit",
    method: Method::Post,
    path: "/wallet/deposits",
    auth: Auth::Iam {
        principals: &crate::wallet::rules::DEPOSIT_PRINCIPALS,
        tenant: Tenant::Users,
    },
    refusals: DepositRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the body's `reference`",
        kept: "`HONGBAO_DEPOSIT_DEDUP_SECS` (30 days)",
        changed: Changed::Refused("idempotency_key_reused"),
        also: "`repeat: true`",
    }),
};

/// `POST /wallet/deposits` (AWS_IAM): 201 [`DepositBody`]; or a [`DepositRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "wallet", operation_id = "deposit",
    summary = "Deposit into a wallet (AWS_IAM)",
    description = "Credits `amount_cents` to `user_id`'s wallet, once per `reference` (a repeat answers `repeat: true`). Only AWS_IAM-signed calls of the principals in `HONGBAO_DEPOSIT_PRINCIPALS`.",
    request_body = DepositRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "applied (or a repeat of the same reference)", body = DepositBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn deposit(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<DepositRequest>, ApiError>,
) -> Result<(StatusCode, Replayed, Json<DepositBody>), ApiError> {
    let rules = &state.store.config().wallet;
    let route = MovementRoute {
        what: "deposits",
        setting: crate::wallet::rules::DEPOSIT_PRINCIPALS.name,
        principals: &rules.deposit_principals,
        max_cents: MAX_DEPOSIT_CENTS,
    };
    let Movement {
        user_id,
        amount_cents,
        reference,
    } = movement(&route, arn, body)?;
    let (balance_cents, repeat) =
        match store::deposit(&state.store, &user_id, amount_cents, &reference).await? {
            DepositOutcome::Applied { balance_cents } => {
                metrics::count(metrics::DEPOSITED, 1);
                metrics::count(metrics::DEPOSITED_CENTS, amount_cents.max(0) as u64);
                (balance_cents, false)
            }
            DepositOutcome::Repeat { balance_cents } => (balance_cents, true),
            DepositOutcome::ReferenceReused => {
                return Err(DepositRefusal::IdempotencyKeyReused
                    .because("this reference was deposited before with a different amount"))
            }
            DepositOutcome::BalanceLimit { balance_cents } => {
                return Err(DepositRefusal::BalanceLimit.because(format!(
                    "the balance ({balance_cents} cents) plus this deposit would exceed \
                         HONGBAO_MAX_BALANCE_CENTS ({} cents)",
                    rules.max_balance_cents
                )))
            }
        };
    Ok((
        StatusCode::CREATED,
        Replayed(repeat),
        Json(DepositBody {
            user_id,
            balance_cents,
            reference,
            repeat,
        }),
    ))
}

impl From<DepositRequest> for Movement {
    fn from(r: DepositRequest) -> Self {
        Movement {
            user_id: r.user_id,
            amount_cents: r.amount_cents,
            reference: r.reference,
        }
    }
}
