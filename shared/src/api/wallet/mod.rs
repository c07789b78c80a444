//! Wallets over HTTP: the wallet function's router (`GET /wallet`, `POST /wallet/deposits`,
//! `POST /wallet/withdrawals`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::config::AppState;
use super::error::{rfc3339, ApiError};
use super::extract::{Caller, IamPrincipal, JsonBody};
use crate::domain::wallet::{
    DepositOutcome, WithdrawalOutcome, MAX_DEPOSIT_CENTS, MAX_WITHDRAWAL_CENTS,
};
use crate::domain::{is_reference, is_user_id, MAX_USER_ID_CHARS};
use crate::store::wallet;

/// The routes of the wallet function.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/wallet", get(get_wallet))
        .route("/wallet/deposits", post(deposit))
        .route("/wallet/withdrawals", post(withdraw))
}

/// The wallet function's router.
pub fn router(state: AppState) -> Router {
    super::contract(routes().with_state(state))
}

/// The body of `GET /wallet`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WalletBody {
    /// The caller.
    pub user_id: String,
    /// Balance, cents.
    pub balance_cents: i64,
    /// The newest entries (at most 50), newest first.
    pub entries: Vec<EntryBody>,
}

/// One ledger entry (`entries` of `WalletBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EntryBody {
    /// `deposit`, `packet_debit`, `claim_credit`, `refund_credit` or `withdrawal`.
    #[schema(value_type = super::schemas::EntryKindDoc)]
    pub kind: &'static str,
    /// Signed amount, cents (debits are negative).
    pub amount_cents: i64,
    /// The deposit or withdrawal reference, or the packet id.
    pub reference: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub at: String,
}

/// `GET /wallet`: 200 [`WalletBody`]; 401.
#[utoipa::path(
    get, path = "/wallet", tag = "wallet", operation_id = "get_wallet",
    summary = "The caller's wallet",
    description = "The caller's balance and their newest ledger entries (at most 50), newest first.",
    responses(
        (status = 200, description = "balance and the newest ledger entries", body = WalletBody),
    )
)]
pub(crate) async fn get_wallet(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<WalletBody>, ApiError> {
    let w = wallet::get(&state.store, &user).await?;
    Ok(Json(WalletBody {
        user_id: user,
        balance_cents: w.balance_cents,
        entries: w
            .entries
            .into_iter()
            .map(|e| EntryBody {
                kind: e.kind.as_str(),
                amount_cents: e.amount_cents,
                reference: e.reference,
                at: rfc3339(e.at_ms),
            })
            .collect(),
    }))
}

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
    /// `true` when this reference was deposited before (nothing credited now).
    pub repeat: bool,
}

/// `POST /wallet/deposits` (AWS_IAM): 201 [`DepositBody`]; 400, 403 `forbidden`, 409
/// `idempotency_key_reused` / `balance_limit`.
#[utoipa::path(
    post, path = "/wallet/deposits", tag = "wallet", operation_id = "deposit",
    summary = "Deposit into a wallet (AWS_IAM)",
    description = "Credits `amount_cents` to `user_id`'s wallet, once per `reference` (a repeat answers `repeat: true`). Only AWS_IAM-signed calls of the principals in `HONGBAO_DEPOSIT_PRINCIPALS`.",
    request_body = DepositRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "applied (or a repeat of the same reference)", body = DepositBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 403, description = "`forbidden`: not a signed call of a deposit principal", body = super::schemas::ForbiddenError),
        (status = 409, description = "`idempotency_key_reused` (the reference with another amount) or `balance_limit`", body = super::schemas::DepositConflictError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
    )
)]
pub(crate) async fn deposit(
    State(state): State<AppState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<DepositRequest>, ApiError>,
) -> Result<(StatusCode, Json<DepositBody>), ApiError> {
    let rules = &state.store.config().wallet;
    if !arn.is_some_and(|arn| rules.deposit_principals.allows(&arn)) {
        return Err(ApiError::forbidden(
            "deposits are accepted only from AWS_IAM-signed calls of the principals in \
             HONGBAO_DEPOSIT_PRINCIPALS",
        ));
    }
    let JsonBody(b) = body?;
    if !is_user_id(&b.user_id) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    if !(1..=MAX_DEPOSIT_CENTS).contains(&b.amount_cents) {
        return Err(ApiError::invalid(format!(
            "amount_cents must be 1..={MAX_DEPOSIT_CENTS}"
        )));
    }
    if !is_reference(&b.reference) {
        return Err(ApiError::invalid(
            "reference must be 1 to 64 visible ASCII characters",
        ));
    }
    let (balance_cents, repeat) =
        match wallet::deposit(&state.store, &b.user_id, b.amount_cents, &b.reference).await? {
            DepositOutcome::Applied { balance_cents } => (balance_cents, false),
            DepositOutcome::Repeat { balance_cents } => (balance_cents, true),
            DepositOutcome::ReferenceReused => {
                return Err(ApiError::conflict(
                    "idempotency_key_reused",
                    "this reference was deposited before with a different amount",
                ))
            }
            DepositOutcome::BalanceLimit { balance_cents } => {
                return Err(ApiError::conflict(
                    "balance_limit",
                    format!(
                        "the balance ({balance_cents} cents) plus this deposit would exceed \
                         HONGBAO_MAX_BALANCE_CENTS ({} cents)",
                        rules.max_balance_cents
                    ),
                ))
            }
        };
    Ok((
        StatusCode::CREATED,
        Json(DepositBody {
            user_id: b.user_id,
            balance_cents,
            reference: b.reference,
            repeat,
        }),
    ))
}

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
    /// `true` when this reference was paid out before (nothing paid now).
    pub repeat: bool,
}

/// `POST /wallet/withdrawals` (AWS_IAM): 201 [`WithdrawalBody`]; 400, 402 `insufficient_funds`
/// (+`balance_cents`), 403 `forbidden`, 409 `idempotency_key_reused`. Nothing is written but
/// on 201.
#[utoipa::path(
    post, path = "/wallet/withdrawals", tag = "wallet", operation_id = "withdraw",
    summary = "Withdraw from a wallet (AWS_IAM)",
    description = "Pays `amount_cents` out of `user_id`'s wallet, once per `reference` (a repeat answers `repeat: true`), if the balance covers it. Only AWS_IAM-signed calls of the principals in `HONGBAO_WITHDRAWAL_PRINCIPALS`; the caller moves the money on (a bank transfer, the payment ledger).",
    request_body = WithdrawalRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "paid out (or a repeat of the same reference)", body = WithdrawalBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 402, description = "`insufficient_funds`: the balance is below `amount_cents` (`balance_cents`); nothing written", body = super::schemas::InsufficientFundsError),
        (status = 403, description = "`forbidden`: not a signed call of a withdrawal principal", body = super::schemas::ForbiddenError),
        (status = 409, description = "`idempotency_key_reused`: the reference was paid out before with another amount; nothing written", body = super::schemas::IdempotencyKeyReusedError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
    )
)]
pub(crate) async fn withdraw(
    State(state): State<AppState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<WithdrawalRequest>, ApiError>,
) -> Result<(StatusCode, Json<WithdrawalBody>), ApiError> {
    let rules = &state.store.config().wallet;
    if !arn.is_some_and(|arn| rules.withdrawal_principals.allows(&arn)) {
        return Err(ApiError::forbidden(
            "withdrawals are accepted only from AWS_IAM-signed calls of the principals in \
             HONGBAO_WITHDRAWAL_PRINCIPALS",
        ));
    }
    let JsonBody(b) = body?;
    if !is_user_id(&b.user_id) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    if !(1..=MAX_WITHDRAWAL_CENTS).contains(&b.amount_cents) {
        return Err(ApiError::invalid(format!(
            "amount_cents must be 1..={MAX_WITHDRAWAL_CENTS}"
        )));
    }
    if !is_reference(&b.reference) {
        return Err(ApiError::invalid(
            "reference must be 1 to 64 visible ASCII characters",
        ));
    }
    let (balance_cents, repeat) =
        match wallet::withdraw(&state.store, &b.user_id, b.amount_cents, &b.reference).await? {
            WithdrawalOutcome::Applied { balance_cents } => (balance_cents, false),
            WithdrawalOutcome::Repeat { balance_cents } => (balance_cents, true),
            WithdrawalOutcome::ReferenceReused => {
                return Err(ApiError::conflict(
                    "idempotency_key_reused",
                    "this reference was paid out before with a different amount",
                ))
            }
            WithdrawalOutcome::InsufficientFunds { balance_cents } => {
                return Err(ApiError::new(
                    StatusCode::PAYMENT_REQUIRED,
                    "insufficient_funds",
                    format!(
                        "balance {balance_cents} cents is below amount_cents {}",
                        b.amount_cents
                    ),
                )
                .with("balance_cents", balance_cents))
            }
        };
    Ok((
        StatusCode::CREATED,
        Json(WithdrawalBody {
            user_id: b.user_id,
            balance_cents,
            reference: b.reference,
            repeat,
        }),
    ))
}
