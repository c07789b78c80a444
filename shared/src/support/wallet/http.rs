//! `GET /support/wallets/{user_id}` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): a wallet's
//! balance, its ledger a page at a time, the claim credits in flight and the unexported journal
//! entries (its store step: [`crate::support::wallet()`]).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{query_params, IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::domain::{is_user_id, MAX_USER_ID_CHARS};
use crate::support::{self, PendingTransfer, WalletLookup};
use crate::support::{check_caller, JournalEntryBody};
use crate::wallet::get::http::EntryBody;
use crate::wallet::rules::LEDGER_CAP;

/// The body of `GET /support/wallets/{user_id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportWalletBody {
    /// Whose wallet.
    pub user_id: String,
    /// Balance, cents.
    pub balance_cents: i64,
    /// One page of the ledger (at most 50 entries), newest first, starting `offset` entries
    /// from the newest.
    pub ledger: Vec<EntryBody>,
    /// Ledger entries kept in all (the newest 1,000 at most).
    pub ledger_entries: u64,
    /// The `offset` of the next, older page; `null` on the last page.
    #[schema(required = true)]
    pub next_offset: Option<u64>,
    /// Claim credits in flight: the share is in this wallet, the claim not yet marked done
    /// (or its record not yet released). A claim accepted but not yet credited shows only in
    /// its packet's look-up (`GET /support/packets/{id}`, claim `pending`, `credited: false`).
    pub pending_transfers: Vec<PendingTransferBody>,
    /// The wallet's unexported money-journal entries, oldest first (exported ones are on the
    /// event bus and in its archive).
    pub journal: Vec<JournalEntryBody>,
    /// `false` when the wallet's journal held more entries than one look-up reads (500).
    pub journal_complete: bool,
}

/// One claim credit in flight (`pending_transfers` of `SupportWalletBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PendingTransferBody {
    /// The transfer id, `claim:<packet id>`.
    pub transfer_id: String,
    /// The packet claimed.
    pub packet_id: String,
    /// The share's amount, cents; `null` once the packet's records expired.
    #[schema(required = true)]
    pub amount_cents: Option<i64>,
    /// The claim as the packet records it: `pending` until its `done` mark, then `done` or
    /// `redriven` (the record is released next).
    pub claim: crate::support::ClaimStateBody,
    /// RFC 3339: when the claim was accepted; `null` when the packet no longer records it.
    #[schema(format = DateTime, required = true)]
    pub claimed_at: Option<String>,
}

impl From<PendingTransfer> for PendingTransferBody {
    fn from(t: PendingTransfer) -> Self {
        PendingTransferBody {
            transfer_id: t.transfer_id,
            packet_id: t.packet_id,
            amount_cents: t.share.map(|s| s.amount_cents),
            claim: t.claim.into(),
            claimed_at: t.claim.claimed_at_ms().map(rfc3339),
        }
    }
}

impl SupportWalletBody {
    fn new(user_id: String, w: WalletLookup) -> Self {
        SupportWalletBody {
            user_id,
            balance_cents: w.balance_cents,
            ledger: w.ledger.into_iter().map(EntryBody::from).collect(),
            ledger_entries: w.ledger_len,
            next_offset: w.next_offset,
            pending_transfers: w
                .pending_transfers
                .into_iter()
                .map(PendingTransferBody::from)
                .collect(),
            journal: w.journal.into_iter().map(JournalEntryBody::from).collect(),
            journal_complete: w.journal_complete,
        }
    }
}

/// `GET /support/wallets/{user_id}` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): the template's `SupportWallet` event.
pub const OPERATION: Operation = Operation {
    event: "SupportWallet",
    method: Method::Get,
    path: "/support/wallets/{user_id}",
    auth: Auth::Iam {
        principals: &crate::wallet::rules::SUPPORT_PRINCIPALS,
        tenant: Tenant::Users,
    },
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /support/wallets/{user_id}` (AWS_IAM): 200 [`SupportWalletBody`]; 400, 403.
#[utoipa::path(
    get, path = OPERATION.path, tag = "support", operation_id = "support_wallet",
    summary = "Look up a wallet for support (AWS_IAM)",
    description = "The wallet's balance, one page of its ledger (`offset` entries from the newest; `next_offset` gives the next page), the claim credits in flight with their packets' claim states, and its money-journal entries not exported yet. A wallet never used answers a zero balance. Read-only; no idempotency fingerprint is ever shown. Only AWS_IAM-signed calls of the principals in `HONGBAO_SUPPORT_PRINCIPALS`.",
    params(
        ("user_id" = String, Path, description = "the user id (1 to 255 printable characters), percent-encoded"),
        ("offset" = Option<u64>, Query, description = "ledger entries to skip from the newest, 0 to 999 (default 0)", minimum = 0, maximum = 999),
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "the wallet, a ledger page, claims in flight and journal entries", body = SupportWalletBody),
        (status = 400, description = "`invalid_request`: a bad user id or `offset`", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn support_wallet(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(user_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<SupportWalletBody>, ApiError> {
    check_caller(&state, arn.as_deref())?;
    if !is_user_id(&user_id) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    let offset = parse_offset(query.as_deref())?;
    let lookup = support::wallet(&state.store, &user_id, offset).await?;
    Ok(Json(SupportWalletBody::new(user_id, lookup)))
}

/// Checks the query of a ledger look-up (`GET /support/wallets/{user_id}`, `GET
/// /merchants/{merchant_id}`): `offset` at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_offset(query: Option<&str>) -> Result<u64, ApiError> {
    let mut offset = 0;
    query_params(query, &["offset"], "offset", |_, value| {
        offset = value
            .parse::<u64>()
            .ok()
            .filter(|o| *o < u64::from(LEDGER_CAP))
            .ok_or_else(|| ApiError::invalid(format!("offset must be 0..={}", LEDGER_CAP - 1)))?;
        Ok(())
    })?;
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset(None).unwrap(), 0);
        assert_eq!(parse_offset(Some("offset=50")).unwrap(), 50);
        assert_eq!(parse_offset(Some("offset=999")).unwrap(), 999);
        for bad in [
            "offset=1000",
            "offset=-1",
            "offset=x",
            "offset=",
            "offset=1&offset=2",
            "page=1",
        ] {
            assert!(parse_offset(Some(bad)).is_err(), "{bad}");
        }
    }
}
