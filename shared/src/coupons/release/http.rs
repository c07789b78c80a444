//! `POST /coupons/release`: the merchant's checkout lets go of an order's coupon: its hold is
//! released, or its redemption reversed (the order failed or was refunded), and the coupon is
//! the user's to use again (`crate::coupons::release`, `coupon_release.lua`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{IamPrincipal, JsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::refusal::Rfc3339;
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::coupons::http::{checkout_fields, merchant, DiscountBody, ALREADY_REDEEMED, HELD};
use crate::coupons::{self, ReleaseOutcome};

/// The body of `POST /coupons/release`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"code": "0001C7K2M9QX4TZ8WD", "order_reference": "order-20261125-0042"}))]
pub struct ReleaseRequest {
    /// The code (as for `POST /coupons/redeem`).
    #[schema(min_length = 4, max_length = 64)]
    pub code: String,
    /// The order letting go of it: its hold is released or its redemption reversed.
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub order_reference: String,
}

/// What a release let go of.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ReleasedDoc {
    /// The order's hold.
    Hold,
    /// The order's redemption, reversed: the coupon is redeemable again until `redeem_by`.
    Redemption,
}

/// A coupon released by an order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReleaseBody {
    /// The code as given.
    pub code: String,
    /// The campaign it belongs to; a red packet share's coupon: its packet (24 hex digits).
    pub campaign_id: String,
    /// The order that let go of it.
    pub order_reference: String,
    /// `hold` or `redemption`.
    #[schema(value_type = ReleasedDoc)]
    pub released: &'static str,
    /// RFC 3339, by the store's clock (the first release's, on a repeat).
    #[schema(format = DateTime)]
    pub released_at: String,
    /// `true` when this order released it before (nothing changed now).
    pub repeat: bool,
    /// The campaign's discount rule (absent: it records none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount: Option<DiscountBody>,
}

crate::api::refusal::refusals! {
    /// What `POST /coupons/release` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum ReleaseRefusal {
        404 NotFoundError {
            /// no such code, or the order neither holds nor redeemed it; nothing written
            NotFound = "not_found",
        }
        /// 409: another order holds the coupon until `held_until` (its hold lapses then, or is
        /// released or redeemed before); nothing written.
        409 HeldError in CheckoutConflictError {
            /// another order holds it (`held_until`); nothing written
            Held = "held" {
                /// RFC 3339: when the other order's hold lapses.
                held_until: Rfc3339,
            },
        }
        /// 409: another order redeemed the coupon (`order_reference`, `redeemed_at`); nothing
        /// written.
        409 AlreadyRedeemedError in CheckoutConflictError {
            /// another order redeemed it (`order_reference`, `redeemed_at`); nothing written
            AlreadyRedeemed = "already_redeemed" {
                /// The order that redeemed it.
                order_reference: String,
                /// RFC 3339.
                redeemed_at: Rfc3339,
            },
        }
    }
}

/// `POST /coupons/release` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's `ReleaseCoupon` event.
pub const OPERATION: Operation = Operation {
    event: "ReleaseCoupon",
    method: Method::Post,
    path: "/coupons/release",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant(
            "the coupon's merchant (its campaign's, or a share coupon's packet's)",
        ),
    },
    refusals: ReleaseRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the `code` and the `order_reference`",
        kept: "the coupon's life (until `redeem_by` and the history retention after it)",
        changed: Changed::Nothing,
        also: "`repeat: true`",
    }),
};

/// `POST /coupons/release` (AWS_IAM): 200 [`ReleaseBody`]; or a [`ReleaseRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "coupons", operation_id = "release_coupon",
    summary = "Release an order's coupon hold or redemption (AWS_IAM)",
    description = "The order `order_reference` lets go of the coupon: its hold is released, or its redemption reversed (the order failed or was refunded; the campaign's redeemed count goes down once, and the feed gets `CouponReleased`). Either way the coupon is issued again to the same user, redeemable until `redeem_by`. A repeat answers the same (`repeat: true`), also after another order took the coupon since; the same order may hold and redeem it again afterwards. Another order's hold or redemption is 409. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    request_body = ReleaseRequest,
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "released now, or by this order before (`repeat: true`)", body = ReleaseBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn release(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<ReleaseRequest>, ApiError>,
) -> Result<(Replayed, Json<ReleaseBody>), ApiError> {
    let arn = merchant(&state, arn)?;
    let JsonBody(b) = body?;
    checkout_fields(&b.code, None, &b.order_reference)?;
    crate::coupons::http::for_code_owner(&state, &arn, &b.code).await?;
    let outcome = coupons::release(&state.store, &b.code, &b.order_reference)
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(
                "the coupon may have been released; the same order again answers the release \
                 with repeat: true, and a redemption is credited back once",
            )
        })?;
    match outcome {
        ReleaseOutcome::Released {
            campaign_id,
            released,
            released_at_ms,
            repeat,
            discount,
        } => {
            if !repeat {
                metrics::count(metrics::COUPON_RELEASED, 1);
            }
            Ok((
                Replayed(repeat),
                Json(ReleaseBody {
                    code: b.code,
                    campaign_id,
                    order_reference: b.order_reference,
                    released: released.as_str(),
                    released_at: rfc3339(released_at_ms),
                    repeat,
                    discount: discount.map(Into::into),
                }),
            ))
        }
        ReleaseOutcome::HeldByOther { held_until_ms } => Err(ReleaseRefusal::Held {
            held_until: Rfc3339(rfc3339(held_until_ms)),
        }
        .because(HELD)),
        ReleaseOutcome::AlreadyRedeemed {
            order_reference,
            redeemed_at_ms,
        } => Err(ReleaseRefusal::AlreadyRedeemed {
            order_reference,
            redeemed_at: Rfc3339(rfc3339(redeemed_at_ms)),
        }
        .because(ALREADY_REDEEMED)),
        ReleaseOutcome::NotFound => {
            Err(ReleaseRefusal::NotFound
                .because("this order neither holds nor redeemed such a coupon"))
        }
    }
}
