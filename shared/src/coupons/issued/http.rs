//! `GET /campaigns/{id}/coupons`: the handler (`crate::coupons::issued`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{page_query, shown, IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::coupons::http::{for_campaign_owner, merchant};
use crate::coupons::issued::{is_cursor, issued, IssuedCoupon};

/// One issued coupon of the campaign.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedCouponBody {
    /// The coupon code.
    pub code: String,
    /// The user it was issued to.
    pub user_id: String,
    /// `issued`, `held`, `redeemed`, `released` (issued again after an order released it) or
    /// `expired`, by the store's clock.
    #[schema(value_type = crate::coupons::issued::IssuedState)]
    pub state: &'static str,
    /// RFC 3339: when it was issued.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
    /// The order holding it (held) or having redeemed it (redeemed).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub order_reference: Option<String>,
    /// RFC 3339: the order's hold lapses then (held only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub held_until: Option<String>,
    /// RFC 3339: when an order last released it (absent: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub released_at: Option<String>,
}

impl From<IssuedCoupon> for IssuedCouponBody {
    fn from(c: IssuedCoupon) -> Self {
        IssuedCouponBody {
            code: c.code,
            user_id: c.user_id,
            state: c.state.as_str(),
            grabbed_at: rfc3339(c.grabbed_at_ms),
            order_reference: c.order_reference,
            held_until: c.held_until_ms.map(rfc3339),
            released_at: c.released_at_ms.map(rfc3339),
        }
    }
}

/// The body of `GET /campaigns/{id}/coupons`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IssuedCouponsBody {
    /// Newest first.
    pub items: Vec<IssuedCouponBody>,
    /// Pass as `cursor` for the next page; `null` only after the last page (a page before it
    /// may hold fewer than `limit` items, even none). Opaque.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

crate::api::refusal::refusals! {
    /// What `GET /campaigns/{id}/coupons` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum IssuedCouponsRefusal {

        400 InvalidRequestError {
            /// `limit` outside 1..=100, a `cursor` that no page gave, or a parameter unknown
            /// or given twice (the message says which)
            Invalid = "invalid_request",
        }

        404 NotFoundError {
            /// no such campaign
            NotFound = "not_found",
        }
    }
}

/// `GET /campaigns/{id}/coupons` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's
/// `ListIssuedCoupons` event.
pub const OPERATION: Operation = Operation {
    event: "ListIssuedCoupons",
    method: Method::Get,
    path: "/campaigns/{id}/coupons",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant("the campaign's merchant (path `id`)"),
    },
    refusals: IssuedCouponsRefusal::REFUSALS,
    replay: None,
};

/// `GET /campaigns/{id}/coupons` (AWS_IAM): 200 [`IssuedCouponsBody`], newest first; or an
/// [`IssuedCouponsRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "coupons", operation_id = "list_issued_coupons",
    summary = "List a campaign's issued coupons (AWS_IAM)",
    description = "A page of the coupons the campaign issued, newest first, each with its user and its state by the store's clock: `issued`, `held` (with the order and `held_until`), `redeemed` (with the order), `released` (issued again after an order released its hold or redemption) or `expired`. Paging is stable while coupons are issued: a cursor never repeats or skips one. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`, for their merchants' campaigns.",
    params(
        ("id" = String, Path, description = "campaign id: 21 characters (5 for a campaign created before ids had a tag)", pattern = "^[0-9A-HJKMNP-TV-Z]{5}([0-9A-HJKMNP-TV-Z]{16})?$"),
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page of the same campaign (opaque)")
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "a page of the campaign's issued coupons", body = IssuedCouponsBody),
    )
)]
pub(crate) async fn list_issued(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<IssuedCouponsBody>, ApiError> {
    let arn = merchant(&state, arn)?;
    let (limit, cursor) = parse_query(query.as_deref())?;
    for_campaign_owner(&state, &arn, &id).await?;
    let page = issued(&state.store, &id, limit, cursor.as_deref())
        .await?
        .ok_or_else(|| {
            IssuedCouponsRefusal::NotFound.because(format!("no campaign {}", shown(&id)))
        })?;
    Ok(Json(IssuedCouponsBody {
        items: page.coupons.into_iter().map(Into::into).collect(),
        next_cursor: page.next_before,
    }))
}

/// Checks the query: `limit` and `cursor` (a member of the issued index), as [`page_query`].
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
fn parse_query(query: Option<&str>) -> Result<(u32, Option<String>), ApiError> {
    page_query(query, |v| is_cursor(v).then(|| v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_no_page_gave_is_refused() {
        assert!(parse_query(Some("cursor=abc")).is_err());
    }

    #[test]
    fn no_query_is_the_first_page_of_the_default_size() {
        assert_eq!(
            parse_query(None).unwrap(),
            (crate::history::rules::DEFAULT_LIMIT, None)
        );
    }
}
