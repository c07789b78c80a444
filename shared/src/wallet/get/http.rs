//! `GET /wallet`: the caller's balance and newest ledger entries ([`super::store::get`]).

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::Caller;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::wallet::rules::Entry;

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
    #[schema(value_type = crate::wallet::rules::EntryKind)]
    pub kind: &'static str,
    /// Signed amount, cents (debits are negative).
    pub amount_cents: i64,
    /// The deposit or withdrawal reference, or the packet id.
    pub reference: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub at: String,
}

/// `GET /wallet` (JWT): the template's `GetWallet` event.
pub const OPERATION: Operation = Operation {
    event: "GetWallet",
    method: Method::Get,
    path: "/wallet",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /wallet`: 200 [`WalletBody`]; 401.
#[utoipa::path(
    get, path = OPERATION.path, tag = "wallet", operation_id = "get_wallet",
    summary = "The caller's wallet",
    description = "The caller's balance and their newest ledger entries (at most 50), newest first.",
    responses(
        (status = 200, description = "balance and the newest ledger entries", body = WalletBody),
    )
)]
pub(crate) async fn get_wallet(
    State(state): State<ApiState>,
    Caller(user): Caller,
) -> Result<Json<WalletBody>, ApiError> {
    let w = store::get(&state.store, &user).await?;
    Ok(Json(WalletBody {
        user_id: user,
        balance_cents: w.balance_cents,
        entries: w.entries.into_iter().map(EntryBody::from).collect(),
    }))
}

impl From<Entry> for EntryBody {
    fn from(e: Entry) -> Self {
        EntryBody {
            kind: e.kind.as_str(),
            amount_cents: e.amount_cents,
            reference: e.reference,
            at: rfc3339(e.at_ms),
        }
    }
}
