//! `GET /merchants/{merchant_id}` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): a merchant's books
//! and its ledger a page at a time (`merchants::get`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::merchants::http::check_caller;
use crate::merchants::rules::Merchant;
use crate::support::wallet::http::parse_offset;
use crate::wallet::get::http::EntryBody;

/// The body of `GET /merchants/{merchant_id}`: the books, where every cent the merchant
/// deposited is now. They close at every moment: `deposited_cents − withdrawn_cents =
/// balance_cents + reserved_cents + outstanding_coupon_cents + paid_cash_cents +
/// paid_coupon_cents`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MerchantBody {
    /// The merchant.
    pub merchant_id: String,
    /// What the merchant may spend on packets or withdraw, cents.
    pub balance_cents: i64,
    /// Cents in open packets: paid for, not yet claimed, refunded or turned into coupons.
    pub reserved_cents: i64,
    /// Cents of coupons issued from shares and neither redeemed nor expired.
    pub outstanding_coupon_cents: i64,
    /// Cents claimed into grabbers' wallets.
    pub paid_cash_cents: i64,
    /// Cents of coupons redeemed at checkout.
    pub paid_coupon_cents: i64,
    /// Every deposit's cents, added up.
    pub deposited_cents: i64,
    /// Every withdrawal's cents, added up.
    pub withdrawn_cents: i64,
    /// One page of the ledger (at most 50 entries), newest first, starting `offset` entries
    /// from the newest.
    pub ledger: Vec<EntryBody>,
    /// Ledger entries kept in all (the newest 1,000 at most).
    pub ledger_entries: u64,
    /// The `offset` of the next, older page; `null` on the last page.
    #[schema(required = true)]
    pub next_offset: Option<u64>,
}

impl MerchantBody {
    fn new(merchant_id: String, m: Merchant) -> Self {
        let b = m.books;
        MerchantBody {
            merchant_id,
            balance_cents: b.balance_cents,
            reserved_cents: b.reserved_cents,
            outstanding_coupon_cents: b.outstanding_coupon_cents,
            paid_cash_cents: b.paid_cash_cents,
            paid_coupon_cents: b.paid_coupon_cents,
            deposited_cents: b.deposited_cents,
            withdrawn_cents: b.withdrawn_cents,
            ledger: m.ledger.into_iter().map(EntryBody::from).collect(),
            ledger_entries: m.ledger_len,
            next_offset: m.next_offset,
        }
    }
}

/// `GET /merchants/{merchant_id}` (AWS_IAM, `HONGBAO_MERCHANT_PRINCIPALS`): the template's `GetMerchant` event.
pub const OPERATION: Operation = Operation {
    event: "GetMerchant",
    method: Method::Get,
    path: "/merchants/{merchant_id}",
    auth: Auth::Iam {
        principals: &crate::merchants::rules::MERCHANT_PRINCIPALS,
        tenant: Tenant::Merchant("the path's `merchant_id`"),
    },
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /merchants/{merchant_id}` (AWS_IAM): 200 [`MerchantBody`]; 400, 403.
#[utoipa::path(
    get, path = OPERATION.path, tag = "merchants", operation_id = "get_merchant",
    summary = "A merchant's books (AWS_IAM)",
    description = "The merchant's balance, what is reserved in open packets, outstanding as coupons and paid out (cash claimed, coupons redeemed), its deposits and withdrawals in all, and one page of its ledger (`offset` entries from the newest; `next_offset` gives the next page). A merchant never used answers zeros. Read-only. Only AWS_IAM-signed calls of the principals in `HONGBAO_MERCHANT_PRINCIPALS`.",
    params(
        ("merchant_id" = String, Path, description = "the merchant: 1 to 64 of `A-Z a-z 0-9 _ . : -`", pattern = "^[A-Za-z0-9_.:-]{1,64}$"),
        ("offset" = Option<u64>, Query, description = "ledger entries to skip from the newest, 0 to 999 (default 0)", minimum = 0, maximum = 999),
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "the books and a ledger page", body = MerchantBody),
        (status = 400, description = "`invalid_request`: a bad merchant id or `offset`", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn get_merchant(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(merchant_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<MerchantBody>, ApiError> {
    check_caller(&state, arn.as_deref(), &merchant_id)?;
    let offset = parse_offset(query.as_deref())?;
    let merchant = store::get(&state.store, &merchant_id, offset).await?;
    Ok(Json(MerchantBody::new(merchant_id, merchant)))
}
