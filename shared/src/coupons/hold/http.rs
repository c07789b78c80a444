//! `POST /coupons/hold`: the merchant's checkout holds a coupon for an order while it is being
//! paid (`crate::coupons::hold`, `coupon_hold.lua`): no other order may redeem or
//! hold it until the hold lapses, is committed (`POST /coupons/redeem` by the same order) or
//! released (`POST /coupons/release`).

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
use crate::coupons::http::{
    checkout_fields, merchant, order_total, DiscountBody, ALREADY_REDEEMED, BELOW_MINIMUM, EXPIRED,
    HELD, ORDER_TOTAL_REQUIRED,
};
use crate::coupons::rules::HOLD_SECS;
use crate::coupons::{self, HoldOutcome};

/// The body of `POST /coupons/hold`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"code": "0001C7K2M9QX4TZ8WD", "user_id": "alice", "order_reference": "order-20261125-0042", "order_total_cents": 12000, "hold_secs": 600}))]
pub struct HoldRequest {
    /// The code the user gave at checkout (as for `POST /coupons/redeem`).
    #[schema(min_length = 4, max_length = 64)]
    pub code: String,
    /// The user the code was issued to: 1 to 255 printable characters.
    #[schema(min_length = 1, max_length = 255)]
    pub user_id: String,
    /// The merchant's order: the hold's key, 1 to 128 bytes of printable ASCII without
    /// spaces.
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub order_reference: String,
    /// The order's total, cents (0 to 10^13): the answer's `discount_cents` by the campaign's
    /// discount (kept with the hold for its redemption), and 422 `below_minimum` under its
    /// `min_order_cents`.
    #[schema(minimum = 0, maximum = 10_000_000_000_000_i64)]
    pub order_total_cents: Option<i64>,
    /// How long the hold lasts, seconds (30 to 3600), from the store's clock; never past the
    /// campaign's `redeem_by`.
    #[schema(minimum = 30, maximum = 3600)]
    pub hold_secs: i64,
}

/// A coupon held for an order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HoldBody {
    /// The code as given.
    pub code: String,
    /// Whose coupon.
    pub user_id: String,
    /// The campaign it belongs to; a red packet share's coupon: its packet (24 hex digits).
    pub campaign_id: String,
    /// The order holding it.
    pub order_reference: String,
    /// Always `held`.
    #[schema(pattern = "^held$")]
    pub state: &'static str,
    /// RFC 3339, by the store's clock: the hold lapses then (the coupon is free again without
    /// any call).
    #[schema(format = DateTime)]
    pub held_until: String,
    /// The campaign's discount rule (absent: it records none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount: Option<DiscountBody>,
    /// The order's discount, cents (absent: no order total was given, or the campaign
    /// records no discount).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0)]
    pub discount_cents: Option<i64>,
}

crate::api::refusal::refusals! {
    /// What `POST /coupons/hold` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum HoldRefusal {
        400 InvalidRequestError in CheckoutInvalidError {
            /// a rule broken (the message says which); nothing written
            Invalid = "invalid_request",
        }
        /// 400: the campaign has a minimum order (`min_order_cents`) and no `order_total_cents`
        /// was given; nothing written.
        400 OrderTotalRequiredError in CheckoutInvalidError {
            /// the campaign has a `min_order_cents` and the call gave no `order_total_cents`;
            /// nothing written
            OrderTotalRequired = "order_total_required" {
                /// The campaign's minimum order total, cents.
                min_order_cents: i64,
            },
        }
        404 NotFoundError {
            /// no such code issued to `user_id`
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
        /// 410: the coupon may no longer be redeemed or held (`redeem_by` has passed); nothing
        /// written.
        410 CouponExpiredError {
            /// `redeem_by` has passed; nothing written
            Expired = "expired" {
                /// RFC 3339: the coupon was redeemable before this.
                redeem_by: Rfc3339,
            },
        }
        /// 422: the order's total is below the campaign's `min_order_cents`; nothing written.
        422 BelowMinimumError {
            /// `order_total_cents` is below the campaign's `min_order_cents`; nothing written
            BelowMinimum = "below_minimum" {
                /// The campaign's minimum order total, cents.
                min_order_cents: i64,
            },
        }
    }
}

/// `POST /coupons/hold` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's `HoldCoupon` event.
pub const OPERATION: Operation = Operation {
    event: "HoldCoupon",
    method: Method::Post,
    path: "/coupons/hold",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant(
            "the coupon's merchant (its campaign's, or a share coupon's packet's)",
        ),
    },
    refusals: HoldRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the `code` and the `order_reference` (while the order's hold lasts)",
        kept: "the hold's `hold_secs`, never past `redeem_by`",
        changed: Changed::Updates(
            "the hold takes the call's `order_total_cents` (its discount) and `hold_secs`; a \
             `user_id` the code is not issued to is 404",
        ),
        also: "the hold extended to now + `hold_secs` (never shortened)",
    }),
};

/// `POST /coupons/hold` (AWS_IAM): 200 [`HoldBody`]; or a [`HoldRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "coupons", operation_id = "hold_coupon",
    summary = "Hold a coupon for an order at checkout (AWS_IAM)",
    description = "Holds the code issued to `user_id` for `order_reference` for `hold_secs` seconds (never past `redeem_by`): until then no other order may hold or redeem it (409 `held` with `held_until`). The same order again answers its hold, extended to now + `hold_secs` (never shortened). The order commits the hold with `POST /coupons/redeem` or lets go with `POST /coupons/release`; a hold that lapses frees the coupon by itself. With `order_total_cents`, the answer's `discount_cents` is the campaign's discount of that total; a total below the campaign's `min_order_cents` is 422 and holds nothing. A redeemed coupon is 409 `already_redeemed`. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    request_body = HoldRequest,
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "held for the order (now, or its hold extended)", body = HoldBody),
    )
)]
pub(crate) async fn hold(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<HoldRequest>, ApiError>,
) -> Result<(Replayed, Json<HoldBody>), ApiError> {
    let arn = merchant(&state, arn)?;
    let JsonBody(b) = body?;
    checkout_fields(&b.code, Some(&b.user_id), &b.order_reference)?;
    let total = order_total(b.order_total_cents)?;
    crate::coupons::http::for_code_owner(&state, &arn, &b.code).await?;
    let secs = u32::try_from(b.hold_secs)
        .ok()
        .filter(|s| HOLD_SECS.contains(s))
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "hold_secs must be an integer of {} to {}, not {}",
                HOLD_SECS.start(),
                HOLD_SECS.end(),
                b.hold_secs
            ))
        })?;
    let hold_ms = u64::from(secs) * 1000;
    let outcome = coupons::hold(
        &state.store,
        &b.code,
        &b.user_id,
        &b.order_reference,
        hold_ms,
        total,
    )
    .await
    .map_err(|e| {
        ApiError::from(e).on_unavailable(
            "the coupon may have been held for this order; the same order again answers its \
             hold",
        )
    })?;
    match outcome {
        HoldOutcome::Held {
            campaign_id,
            held_until_ms,
            discount,
            discount_cents,
            extended,
        } => {
            metrics::count(metrics::COUPON_HELD, 1);
            Ok((
                Replayed(extended),
                Json(HoldBody {
                    code: b.code,
                    user_id: b.user_id,
                    campaign_id,
                    order_reference: b.order_reference,
                    state: "held",
                    held_until: rfc3339(held_until_ms),
                    discount: discount.map(Into::into),
                    discount_cents,
                }),
            ))
        }
        HoldOutcome::HeldByOther { held_until_ms } => Err(HoldRefusal::Held {
            held_until: Rfc3339(rfc3339(held_until_ms)),
        }
        .because(HELD)),
        HoldOutcome::AlreadyRedeemed {
            order_reference,
            redeemed_at_ms,
        } => Err(HoldRefusal::AlreadyRedeemed {
            order_reference,
            redeemed_at: Rfc3339(rfc3339(redeemed_at_ms)),
        }
        .because(ALREADY_REDEEMED)),
        HoldOutcome::NotFound => {
            Err(HoldRefusal::NotFound.because("no such coupon was issued to this user"))
        }
        HoldOutcome::Expired { redeem_by_ms } => Err(HoldRefusal::Expired {
            redeem_by: Rfc3339(rfc3339(redeem_by_ms)),
        }
        .because(EXPIRED)),
        HoldOutcome::BelowMinimum { min_order_cents } => {
            Err(HoldRefusal::BelowMinimum { min_order_cents }.because(BELOW_MINIMUM))
        }
        HoldOutcome::OrderTotalRequired { min_order_cents } => {
            Err(HoldRefusal::OrderTotalRequired { min_order_cents }.because(ORDER_TOTAL_REQUIRED))
        }
    }
}
