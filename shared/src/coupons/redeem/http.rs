//! `POST /coupons/redeem`: the merchant's checkout redeems a coupon code for an order, once,
//! committing the order's hold if it has one (`crate::coupons::redeem`,
//! `coupon_redeem.lua`).

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
use crate::coupons::{self, RedeemOutcome};

/// The body of `POST /coupons/redeem`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"code": "0001C7K2M9QX4TZ8WD", "user_id": "alice", "order_reference": "order-20261125-0042", "order_total_cents": 12000}))]
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
    /// The order's total, cents (0 to 10^13): the answer's `discount_cents` by the campaign's
    /// discount, and 422 `below_minimum` under its `min_order_cents`. Absent: the discount of
    /// the order's hold, if the hold was given a total.
    #[schema(minimum = 0, maximum = 10_000_000_000_000_i64)]
    pub order_total_cents: Option<i64>,
}

/// A coupon redeemed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RedeemBody {
    /// The code as given.
    pub code: String,
    /// Whose coupon.
    pub user_id: String,
    /// The campaign it belongs to; a red packet share's coupon: its packet (24 hex digits).
    pub campaign_id: String,
    /// The order that redeemed it.
    pub order_reference: String,
    /// RFC 3339, by the store's clock (the first redemption's, on a repeat).
    #[schema(format = DateTime)]
    pub redeemed_at: String,
    /// `true` when this order redeemed it before (nothing changed now).
    pub repeat: bool,
    /// The campaign's discount rule (absent: it records none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount: Option<DiscountBody>,
    /// The order's discount, cents, recorded with the redemption (absent: no order total was
    /// given, to this call or the order's hold, or the campaign records no discount).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0)]
    pub discount_cents: Option<i64>,
}

crate::api::refusal::refusals! {
    /// What `POST /coupons/redeem` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum RedeemRefusal {
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
        /// 409: this order redeemed the coupon with another discount than this call's
        /// `order_total_cents` gives (another total, or a total where the first call gave
        /// none): another call under the order's key; nothing written.
        409 RedemptionReusedError in CheckoutConflictError {
            /// this order redeemed it with another total (`redeemed_at`); nothing written
            OrderReferenceReused = "order_reference_reused" {
                /// RFC 3339: when this order redeemed it.
                redeemed_at: Rfc3339,
            },
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

/// `POST /coupons/redeem` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's `RedeemCoupon` event.
pub const OPERATION: Operation = Operation {
    event: "RedeemCoupon",
    method: Method::Post,
    path: "/coupons/redeem",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant(
            "the coupon's merchant (its campaign's, or a share coupon's packet's)",
        ),
    },
    refusals: RedeemRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the `code` and the `order_reference`",
        kept: "the coupon's life (until `redeem_by` and the history retention after it)",
        changed: Changed::Refused("order_reference_reused"),
        also: "`repeat: true`",
    }),
};

/// `POST /coupons/redeem` (AWS_IAM): 200 [`RedeemBody`]; or a [`RedeemRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "coupons", operation_id = "redeem_coupon",
    summary = "Redeem a coupon at checkout (AWS_IAM)",
    description = "Redeems the code issued to `user_id` for `order_reference`, at most once, committing the order's hold (`POST /coupons/hold`) if it has one: the same order again answers `repeat: true`, another order 409 `already_redeemed` naming the order that redeemed it, and a coupon another order holds 409 `held` until its hold lapses. With `order_total_cents`, the answer's `discount_cents` is the campaign's discount of that total (recorded with the redemption and on the feed); a total below the campaign's `min_order_cents` is 422. An unknown code and a code issued to someone else both answer 404; a typo in a generated code is caught by its check character. `POST /coupons/release` reverses a redemption. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    request_body = RedeemRequest,
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "redeemed now, or by this order before (`repeat: true`)", body = RedeemBody),
    )
)]
pub(crate) async fn redeem(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    body: Result<JsonBody<RedeemRequest>, ApiError>,
) -> Result<(Replayed, Json<RedeemBody>), ApiError> {
    let arn = merchant(&state, arn)?;
    let JsonBody(b) = body?;
    checkout_fields(&b.code, Some(&b.user_id), &b.order_reference)?;
    let total = order_total(b.order_total_cents)?;
    crate::coupons::http::for_code_owner(&state, &arn, &b.code).await?;
    let outcome = coupons::redeem(&state.store, &b.code, &b.user_id, &b.order_reference, total)
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
            discount,
            discount_cents,
        } => {
            if !repeat {
                metrics::count(metrics::COUPON_REDEEMED, 1);
            }
            Ok((
                Replayed(repeat),
                Json(RedeemBody {
                    code: b.code,
                    user_id: b.user_id,
                    campaign_id,
                    order_reference: b.order_reference,
                    redeemed_at: rfc3339(redeemed_at_ms),
                    repeat,
                    discount: discount.map(Into::into),
                    discount_cents,
                }),
            ))
        }
        RedeemOutcome::OrderReferenceReused {
            redeemed_at_ms,
            discount_cents,
        } => Err(RedeemRefusal::OrderReferenceReused {
            redeemed_at: Rfc3339(rfc3339(redeemed_at_ms)),
        }
        .because(format!(
            "this order redeemed the coupon with a discount of {}; this call's \
             order_total_cents gives another: send the first call's total (or none) to get its \
             answer; nothing was written",
            match discount_cents {
                Some(cents) => format!("{cents} cents"),
                None => "none (no total was given)".to_string(),
            }
        ))),
        RedeemOutcome::AlreadyRedeemed {
            order_reference,
            redeemed_at_ms,
        } => Err(RedeemRefusal::AlreadyRedeemed {
            order_reference,
            redeemed_at: Rfc3339(rfc3339(redeemed_at_ms)),
        }
        .because(ALREADY_REDEEMED)),
        RedeemOutcome::Held { held_until_ms } => Err(RedeemRefusal::Held {
            held_until: Rfc3339(rfc3339(held_until_ms)),
        }
        .because(HELD)),
        RedeemOutcome::NotFound => {
            Err(RedeemRefusal::NotFound.because("no such coupon was issued to this user"))
        }
        RedeemOutcome::Expired { redeem_by_ms } => Err(RedeemRefusal::Expired {
            redeem_by: Rfc3339(rfc3339(redeem_by_ms)),
        }
        .because(EXPIRED)),
        RedeemOutcome::BelowMinimum { min_order_cents } => {
            Err(RedeemRefusal::BelowMinimum { min_order_cents }.because(BELOW_MINIMUM))
        }
        RedeemOutcome::OrderTotalRequired { min_order_cents } => {
            Err(RedeemRefusal::OrderTotalRequired { min_order_cents }.because(ORDER_TOTAL_REQUIRED))
        }
    }
}
