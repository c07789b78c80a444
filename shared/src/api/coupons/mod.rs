//! Coupon drops over HTTP: the coupon function's router, one handler per operation, named as
//! the store's operations (`crate::store::coupons`) and the scripts (`lua/coupon_*.lua`).
//!
//! | route | auth | handler |
//! | --- | --- | --- |
//! | `POST /campaigns` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`create`] |
//! | `POST /campaigns/{id}/codes` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`add_codes`] |
//! | `GET /campaigns/{id}` | JWT | [`campaign`] |
//! | `POST /campaigns/{id}/grab` | JWT | [`grab`] |
//! | `GET /coupons` | JWT | [`list`] |
//! | `POST /coupons/redeem` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`redeem`] |

pub mod add_codes;
pub mod campaign;
pub mod create;
pub mod grab;
pub mod list;
pub mod redeem;

use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;

use super::error::{rfc3339, ApiError};
use super::state::ApiState;
use crate::store::coupons::CampaignView;

/// The routes of the coupon function.
pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/campaigns", post(create::create))
        .route("/campaigns/{id}", get(campaign::campaign))
        .route("/campaigns/{id}/codes", post(add_codes::add_codes))
        .route("/campaigns/{id}/grab", post(grab::grab))
        .route("/coupons", get(list::list))
        .route("/coupons/redeem", post(redeem::redeem))
}

/// The coupon function's router.
pub fn router(state: ApiState) -> Router {
    super::contract(routes().with_state(state))
}

/// Refuses a call that is not AWS_IAM-signed by one of `HONGBAO_COUPON_PRINCIPALS`.
///
/// # Errors
/// 403 `forbidden` naming the setting.
fn merchant(state: &ApiState, arn: Option<String>) -> Result<(), ApiError> {
    let principals = &state.store.config().coupons.principals;
    if arn.is_some_and(|arn| principals.allows(&arn)) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "campaigns, their codes and redemptions are accepted only from AWS_IAM-signed calls \
             of the principals in HONGBAO_COUPON_PRINCIPALS",
        ))
    }
}

/// A campaign as the API shows it (`POST /campaigns`, `GET /campaigns/{id}`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignBody {
    /// 5 characters of Crockford base 32 (`0-9A-Z` without `I L O U`).
    #[schema(pattern = "^[0-9A-HJKMNP-TV-Z]{5}$")]
    pub campaign_id: String,
    /// The merchant's title.
    pub title: String,
    /// `scheduled`, `open`, `sold_out` or `ended`, by Redis `TIME`.
    #[schema(value_type = super::schemas::CampaignStatusDoc)]
    pub status: &'static str,
    /// The campaign's codes, every batch included.
    pub codes_total: u64,
    /// Codes not issued yet (exact: `codes_total` − issued).
    pub codes_left: u64,
    /// Codes one user may grab.
    #[schema(minimum = 1, maximum = 10)]
    pub per_user: u32,
    /// RFC 3339: grabbing opens.
    #[schema(format = DateTime)]
    pub starts_at: String,
    /// RFC 3339: grabbing ends (exclusive).
    #[schema(format = DateTime)]
    pub ends_at: String,
    /// RFC 3339: an issued coupon may be redeemed before this.
    #[schema(format = DateTime)]
    pub redeem_by: String,
    /// The caller's codes in this campaign (`GET /campaigns/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupons: Option<Vec<String>>,
}

impl CampaignBody {
    fn new(view: CampaignView, with_coupons: bool) -> Self {
        CampaignBody {
            campaign_id: view.campaign_id,
            title: view.title,
            status: view.status.as_str(),
            codes_total: view.codes_total,
            codes_left: view.codes_left,
            per_user: view.per_user,
            starts_at: rfc3339(view.starts_at_ms),
            ends_at: rfc3339(view.ends_at_ms),
            redeem_by: rfc3339(view.redeem_by_ms),
            coupons: with_coupons.then_some(view.mine),
        }
    }
}

/// Unix ms of an RFC 3339 time given in field `field`.
///
/// # Errors
/// 400 `invalid_request` naming the field.
fn instant(field: &str, text: &str) -> Result<i64, ApiError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            ApiError::invalid(format!(
                "{field} must be an RFC 3339 time such as 2026-11-25T20:00:00Z"
            ))
        })
}

super::schemas::error_doc! {
    /// 400: codes repeated within the request, or already in this or another campaign
    /// (`duplicates`, at most 10); nothing written.
    DuplicateCodesError, DuplicateCodesCode [DuplicateCodes],
    /// At most 10 of the duplicated codes.
    #[schema(max_items = 10)]
    duplicates: Vec<String>,
}

/// 400 `duplicate_codes` listing `codes`.
fn duplicate_codes(codes: Vec<String>) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "duplicate_codes",
        format!(
            "these codes are repeated in the request or already belong to a campaign: {}; \
             nothing was written",
            codes.join(", ")
        ),
    )
    .with("duplicates", codes)
}
