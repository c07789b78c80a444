//! `GET /campaigns`: a merchant's campaigns, newest first, a page at a time
//! (`crate::coupons::list_campaigns`).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use crate::api::error::ApiError;
use crate::api::extract::{query_params, IamPrincipal};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::coupons;
use crate::coupons::http::{merchant, CampaignBody};
use crate::coupons::rules::{campaign_id, campaign_no};
use crate::domain::{is_merchant_id, MAX_MERCHANT_ID_CHARS};
use crate::history::rules::{parse_limit, DEFAULT_LIMIT};

/// The body of `GET /campaigns`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignsBody {
    /// The merchant's campaigns, newest first, each as `GET /campaigns/{id}` shows it without
    /// the caller's coupons. A campaign whose creation has not written its pools yet is left
    /// out, so a page may hold fewer than `limit` items.
    pub items: Vec<CampaignBody>,
    /// Pass as `cursor` for the next page; `null` only after the last page (a page before it
    /// may hold fewer than `limit` items, even none). Opaque.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

crate::api::refusal::refusals! {
    /// What `GET /campaigns` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum ListCampaignsRefusal {

        400 InvalidRequestError {
            /// `merchant_id` missing or invalid, `limit` outside 1..=100, a `cursor` that no
            /// page gave, or a parameter unknown or given twice (the message says which)
            Invalid = "invalid_request",
        }
    }
}

/// `GET /campaigns` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's `ListCampaigns`
/// event.
pub const OPERATION: Operation = Operation {
    event: "ListCampaigns",
    method: Method::Get,
    path: "/campaigns",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant("the query's `merchant_id` (none: only an unbound principal)"),
    },
    refusals: ListCampaignsRefusal::REFUSALS,
    replay: None,
};

/// `GET /campaigns` (AWS_IAM): 200 [`CampaignsBody`], newest first; or a
/// [`ListCampaignsRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "coupons", operation_id = "list_campaigns",
    summary = "List a merchant's coupon campaigns (AWS_IAM)",
    description = "A page of the campaigns created with this `merchant_id`, newest first, each as `GET /campaigns/{id}` shows it (without the caller's coupons). Paging is stable while new campaigns are created: a cursor never repeats or skips one. A campaign whose creation has not written its pools yet is left out, so a page may hold fewer than `limit` items; `next_cursor` is `null` only after the last page. Campaigns created without a `merchant_id` are listed under none. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    params(
        ("merchant_id" = String, Query, description = "the `merchant_id` the campaigns were created with: 1 to 64 characters of `[A-Za-z0-9_.:-]`", min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9_.:-]{1,64}$"),
        ("limit" = Option<u32>, Query, description = "items per page, 1..=100, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page for the same `merchant_id` (opaque)")
    ),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "a page of the merchant's campaigns", body = CampaignsBody),
    )
)]
pub(crate) async fn list_campaigns(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    RawQuery(query): RawQuery,
) -> Result<Json<CampaignsBody>, ApiError> {
    let arn = merchant(&state, arn)?;
    let q = parse_query(query.as_deref())?;
    crate::coupons::http::for_merchant(&state, &arn, Some(&q.merchant_id))?;
    let page = coupons::list_campaigns(&state.store, &q.merchant_id, q.limit, q.before).await?;
    Ok(Json(CampaignsBody {
        items: page
            .campaigns
            .into_iter()
            .map(|view| CampaignBody::new(view, false))
            .collect(),
        next_cursor: page.next_before.map(campaign_id),
    }))
}

/// The checked query of `GET /campaigns`.
#[derive(Debug, PartialEq, Eq)]
struct ListQuery {
    merchant_id: String,
    limit: u32,
    /// The cursor's campaign number: the page holds the numbers below it.
    before: Option<u64>,
}

/// Checks the query of `GET /campaigns`: `merchant_id` (required), `limit` and `cursor` (the
/// id of the previous page's last campaign, as `next_cursor` gives it), each at most once,
/// nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
fn parse_query(query: Option<&str>) -> Result<ListQuery, ApiError> {
    let (mut merchant_id, mut limit, mut before) = (None, None, None);
    query_params(
        query,
        &["merchant_id", "limit", "cursor"],
        "merchant_id, limit and cursor",
        |name, value| {
            match name {
                "merchant_id" if is_merchant_id(value) => merchant_id = Some(value.to_string()),
                "merchant_id" => {
                    return Err(ListCampaignsRefusal::Invalid.because(format!(
                        "merchant_id must be 1 to {MAX_MERCHANT_ID_CHARS} characters of \
                         [A-Za-z0-9_.:-]"
                    )))
                }
                "limit" => limit = Some(parse_limit(value)?),
                _ => {
                    before = Some(campaign_no(value).ok_or_else(|| {
                        ListCampaignsRefusal::Invalid
                            .because("cursor must be the next_cursor of a previous page")
                    })?)
                }
            }
            Ok(())
        },
    )?;
    Ok(ListQuery {
        merchant_id: merchant_id
            .ok_or_else(|| ListCampaignsRefusal::Invalid.because("merchant_id is required"))?,
        limit: limit.unwrap_or(DEFAULT_LIMIT),
        before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries() {
        let q = parse_query(Some("merchant_id=shop-42")).unwrap();
        assert_eq!(
            (q.merchant_id.as_str(), q.limit, q.before),
            ("shop-42", 20, None)
        );
        let q = parse_query(Some("limit=7&cursor=000Z8&merchant_id=acme.eu%3A7")).unwrap();
        assert_eq!(
            (q.merchant_id.as_str(), q.limit, q.before),
            ("acme.eu:7", 7, Some(1_000))
        );
        for bad in [
            None,
            Some(""),
            Some("limit=5"),
            Some("merchant_id="),
            Some("merchant_id=shop%201"),
            Some("merchant_id=a&merchant_id=a"),
            Some("merchant_id=a&limit=0"),
            Some("merchant_id=a&limit=101"),
            Some("merchant_id=a&limit=x"),
            Some("merchant_id=a&cursor="),
            Some("merchant_id=a&cursor=000z8"),
            Some("merchant_id=a&cursor=00001&cursor=00001"),
            Some("merchant_id=a&page=2"),
        ] {
            let err = parse_query(bad).unwrap_err();
            assert_eq!(err.code, "invalid_request", "{bad:?}");
        }
    }
}
