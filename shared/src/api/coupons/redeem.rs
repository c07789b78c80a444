//! `POST /coupons/redeem`: the merchant's checkout redeems a coupon code for an order, once
//! (`crate::store::coupons::redeem`, `lua/coupon_redeem.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::merchant;
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{IamPrincipal, JsonBody};
use crate::api::metrics;
use crate::api::state::ApiState;
use crate::domain::coupons::codes::is_code;
use crate::domain::coupons::{is_reference, parse};
use crate::domain::{is_user_id, MAX_USER_ID_CHARS};
use crate::store::coupons::{self, RedeemOutcome};

/// The body of `POST /coupons/redeem`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"code": "0001C7K2M9QX4TZ8WD", "user_id": "alice", "order_reference": "order-20261125-0042"}))]
pub struct RedeemRequest {
    /// The code the user gave at checkout: an uploaded code as issued (case matters), or a
    /// generated one (case, hyphens and spaces are ignored; `I`/`L` read as `1`, `O` as `0`).
    #[schema(min_length = 4, max_length = 64)]
    pub code: String,
    /// The user the code was issued to: 1 to 255 printable characters.
    #[schema(min_length = 1, max_length = 255)]
    pub user_id: String,
    /// The merchant's order: the redemption's idempotency key, 1 to 128 bytes of printable
    /// ASCII without spaces.
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub order_reference: String,
}

/// A coupon redeemed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RedeemBody {
    /// The code as given.
    pub code: String,
    /// Whose coupon.
    pub user_id: String,
    /// The campaign it belongs to.
    pub campaign_id: String,
    /// The order that redeemed it.
    pub order_reference: String,
    /// RFC 3339, by the store's clock (the first redemption's, on a repeat).
    #[schema(format = DateTime)]
    pub redeemed_at: String,
    /// `true` when this order redeemed it before (nothing changed now).
    pub repeat: bool,
}

crate::api::schemas::error_doc! {
    /// 409: another order redeemed the coupon (`order_reference`, `redeemed_at`); nothing
    /// written.
    AlreadyRedeemedError, AlreadyRedeemedCode [AlreadyRedeemed],
    /// The order that redeemed it.
    order_reference: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    redeemed_at: String,
}

crate::api::schemas::error_doc! {
    /// 410: the coupon may no longer be redeemed (`redeem_by` has passed); nothing written.
    CouponExpiredError, CouponExpiredCode [Expired],
    /// RFC 3339: the coupon was redeemable before this.
    #[schema(format = DateTime)]
    redeem_by: String,
}

/// `POST /coupons/redeem` (AWS_IAM): 200 [`RedeemBody`]; 400, 403 `forbidden`, 404
/// `not_found` (unknown, or not issued to `user_id`: not told apart), 409 `already_redeemed`,
/// 410 `expired`.
#[utoipa::path(
    post, path = "/coupons/redeem", tag = "coupons", operation_id = "redeem_coupon",
    summary = "Redeem a coupon at checkout (AWS_IAM)",
    description = "Redeems the code issued to `user_id` for `order_reference`, at most once: the same order again answers `repeat: true`, another order 409 `already_redeemed` naming the order that redeemed it. An unknown code and a code issued to someone else both answer 404; a typo in a generated code is caught by its check character. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    request_body = RedeemRequest,
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "redeemed now, or by this order before (`repeat: true`)", body = RedeemBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
        (status = 403, description = "`forbidden`: not a signed call of a coupon principal", body = crate::api::schemas::ForbiddenError),
        (status = 404, description = "`not_found`: no such code issued to `user_id`", body = crate::api::schemas::NotFoundError),
        (status = 409, description = "`already_redeemed`: another order redeemed it", body = AlreadyRedeemedError),
        (status = 410, description = "`expired`: `redeem_by` has passed", body = CouponExpiredError),
    )
)]
pub(crate) async fn redeem(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<RedeemRequest>, ApiError>,
) -> Result<Json<RedeemBody>, ApiError> {
    merchant(&state, arn)?;
    let JsonBody(b) = body?;
    if !is_code(&b.code) && parse(&b.code).is_none() {
        return Err(ApiError::invalid(
            "code must be 4 to 64 characters of [A-Za-z0-9_-], or a generated code",
        ));
    }
    if !is_user_id(&b.user_id) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    if !is_reference(&b.order_reference) {
        return Err(ApiError::invalid(
            "order_reference must be 1 to 128 bytes of printable ASCII without spaces",
        ));
    }
    let outcome = coupons::redeem(&state.store, &b.code, &b.user_id, &b.order_reference)
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(
                "the coupon may have been redeemed; the same order again answers it with \
                 repeat: true",
            )
        })?;
    match outcome {
        RedeemOutcome::Redeemed {
            campaign_id,
            redeemed_at_ms,
            repeat,
        } => {
            if !repeat {
                metrics::count(metrics::COUPON_REDEEMED, 1);
            }
            Ok(Json(RedeemBody {
                code: b.code,
                user_id: b.user_id,
                campaign_id,
                order_reference: b.order_reference,
                redeemed_at: rfc3339(redeemed_at_ms),
                repeat,
            }))
        }
        RedeemOutcome::AlreadyRedeemed {
            order_reference,
            redeemed_at_ms,
        } => Err(ApiError::conflict(
            "already_redeemed",
            "another order redeemed this coupon; nothing was written",
        )
        .with("order_reference", order_reference)
        .with("redeemed_at", rfc3339(redeemed_at_ms))),
        RedeemOutcome::NotFound => Err(ApiError::not_found(
            "no such coupon was issued to this user",
        )),
        RedeemOutcome::Expired { redeem_by_ms } => Err(ApiError::new(
            StatusCode::GONE,
            "expired",
            "this coupon may no longer be redeemed",
        )
        .with("redeem_by", rfc3339(redeem_by_ms))),
    }
}
