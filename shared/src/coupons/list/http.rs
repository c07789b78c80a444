//! `GET /coupons`: the caller's coupons, newest first, a page at a time
//! (`crate::coupons::list`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{page_query, Caller};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::coupons::http::DiscountBody;
use crate::coupons::rules::ListCursor;
use crate::coupons::{self, ListedCoupon};

/// One of the caller's coupons.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CouponItemBody {
    /// The coupon code.
    pub code: String,
    /// The campaign; a red packet share's coupon: its packet (24 hex digits).
    pub campaign_id: String,
    /// The campaign's title.
    pub title: String,
    /// `issued`, `held`, `redeemed` or `expired`, by the store's clock.
    #[schema(value_type = crate::coupons::rules::CouponState)]
    pub state: &'static str,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
    /// RFC 3339: redeemable before this.
    #[schema(format = DateTime)]
    pub redeem_by: String,
    /// RFC 3339 (redeemed coupons only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub redeemed_at: Option<String>,
    /// RFC 3339: an order's hold lapses then (held coupons only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub held_until: Option<String>,
    /// What the coupon takes off an order (absent: the campaign records no value).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount: Option<DiscountBody>,
    /// The discount the redeeming order got, cents (redeemed coupons whose order total was
    /// given only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0)]
    pub discount_cents: Option<i64>,
}

impl From<ListedCoupon> for CouponItemBody {
    fn from(c: ListedCoupon) -> Self {
        CouponItemBody {
            code: c.code,
            campaign_id: c.campaign_id,
            title: c.title,
            state: c.state.as_str(),
            grabbed_at: rfc3339(c.grabbed_at_ms),
            redeem_by: rfc3339(c.redeem_by_ms),
            redeemed_at: c.redeemed_at_ms.map(rfc3339),
            held_until: c.held_until_ms.map(rfc3339),
            discount: c.discount.map(Into::into),
            discount_cents: c.discount_cents,
        }
    }
}

/// The body of `GET /coupons`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CouponsBody {
    /// Newest first.
    pub items: Vec<CouponItemBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// `GET /coupons` (JWT): the template's `ListCoupons` event.
pub const OPERATION: Operation = Operation {
    event: "ListCoupons",
    method: Method::Get,
    path: "/coupons",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /coupons`: 200 [`CouponsBody`]; 400 (bad `limit` or `cursor`, unknown parameter), 401.
#[utoipa::path(
    get, path = OPERATION.path, tag = "coupons", operation_id = "list_coupons",
    summary = "List the caller's coupons",
    description = "A page of the coupons the caller grabbed, newest first, each with its campaign's title and its state. Paging is stable while new coupons arrive: a cursor never repeats or skips one. A coupon is listed until 30 days after its `redeem_by`.",
    params(
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page (opaque)")
    ),
    responses(
        (status = 200, description = "a page of the caller's coupons", body = CouponsBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Caller(user): Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<CouponsBody>, ApiError> {
    let (limit, cursor) = parse_query(query.as_deref())?;
    let page = coupons::page(&state.store, &user, limit, cursor.as_ref()).await?;
    Ok(Json(CouponsBody {
        items: page.coupons.into_iter().map(Into::into).collect(),
        next_cursor: page.next_cursor.as_ref().map(ListCursor::encode),
    }))
}

/// Checks the query: `limit` and `cursor`, as [`page_query`].
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
fn parse_query(query: Option<&str>) -> Result<(u32, Option<ListCursor>), ApiError> {
    page_query(query, |v| ListCursor::parse(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_a_time_and_a_coupon() {
        let (_, cursor) = parse_query(Some("limit=5&cursor=12-0001C%2FSAVE-1")).unwrap();
        assert_eq!(cursor.unwrap().member, "0001C/SAVE-1");
    }

    #[test]
    fn a_cursor_that_is_no_coupon_is_refused() {
        assert!(parse_query(Some("cursor=x")).is_err());
    }
}
