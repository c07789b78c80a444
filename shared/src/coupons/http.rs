//! What the coupon routes share: who may call the merchant routes (AWS_IAM,
//! `HONGBAO_COUPON_PRINCIPALS`, acting for the campaign's or the code's merchant), the campaign
//! and discount bodies, the checkout's field checks and messages.

use serde::{Deserialize, Serialize};

use crate::api::error::{rfc3339, ApiError};
use crate::api::state::ApiState;
use crate::coupons::campaign::store::{CampaignView, MyCoupon};
use crate::coupons::owner;
use crate::coupons::rules::codes::is_code;
use crate::coupons::rules::discount::{is_order_total, MAX_CENTS};
use crate::coupons::rules::settings::COUPON_PRINCIPALS;
use crate::coupons::rules::{is_reference, parse, Discount, Off};
use crate::domain::{is_user_id, MAX_USER_ID_CHARS};
use crate::merchants::rules::parse_share_code;

/// An uploaded coupon code: 4 to 64 characters of `[A-Za-z0-9_-]` (case matters).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(pattern = "^[A-Za-z0-9_-]{4,64}$")]
pub struct CouponCode(pub String);

/// The texts of `codes`, as the rules and the store take them.
pub(crate) fn code_texts(codes: Vec<CouponCode>) -> Vec<String> {
    codes.into_iter().map(|c| c.0).collect()
}

/// Refuses a call that is not AWS_IAM-signed by one of `HONGBAO_COUPON_PRINCIPALS`; answers
/// the caller's principal.
///
/// # Errors
/// 403 `forbidden` naming the setting.
pub(crate) fn merchant(state: &ApiState, arn: Option<String>) -> Result<String, ApiError> {
    let principals = &state.store.config().coupons.principals;
    match arn {
        Some(arn) if principals.allows(&arn) => Ok(arn),
        _ => Err(ApiError::forbidden(
            "campaigns, their codes and the checkout (hold, redeem, release) are accepted only \
             from AWS_IAM-signed calls of the principals in HONGBAO_COUPON_PRINCIPALS",
        )),
    }
}

/// Checks that `arn` acts for `merchant_id` (`None`: a campaign created without a merchant):
/// a principal bound to merchants in `HONGBAO_COUPON_PRINCIPALS` acts only for those.
///
/// # Errors
/// 403 `forbidden` naming the merchant and the setting.
pub(crate) fn for_merchant(
    state: &ApiState,
    arn: &str,
    merchant_id: Option<&str>,
) -> Result<(), ApiError> {
    crate::api::operation::act_for(
        &state.store.config().coupons.principals,
        &COUPON_PRINCIPALS,
        Some(arn),
        merchant_id,
    )
}

/// Checks that `arn` acts for the merchant that owns `code` (its campaign's, or its share
/// packet's; [`owner::code_of`]), reading the owner only for a principal bound to
/// merchants. A code nothing issued passes: the operation answers it as for anyone.
///
/// # Errors
/// 403 `forbidden`; 503 when Redis cannot be reached.
pub(crate) async fn for_code_owner(
    state: &ApiState,
    arn: &str,
    code: &str,
) -> Result<(), ApiError> {
    let Some(mine) = state.store.config().coupons.principals.merchants_of(arn) else {
        return Ok(());
    };
    match owner::code_of(&state.store, code, &mine).await? {
        Some(false) => Err(ApiError::forbidden(format!(
            "this principal acts only for the merchants {} binds it to, and this coupon is \
             another merchant's",
            COUPON_PRINCIPALS.name
        ))),
        _ => Ok(()),
    }
}

/// Checks that `arn` acts for the merchant campaign `id` was created for, reading it only for
/// a principal bound to merchants.
///
/// # Errors
/// 403 `forbidden`; 503 when Redis cannot be reached.
pub(crate) async fn for_campaign_owner(
    state: &ApiState,
    arn: &str,
    id: &str,
) -> Result<(), ApiError> {
    let Some(mine) = state.store.config().coupons.principals.merchants_of(arn) else {
        return Ok(());
    };
    if owner::campaign_of(&state.store, id, &mine).await? {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "this principal acts only for the merchants {} binds it to, and campaign {id} is \
             not one of theirs",
            COUPON_PRINCIPALS.name
        )))
    }
}

/// A campaign as the API shows it (`POST /campaigns`, `GET /campaigns/{id}`, the items of
/// `GET /campaigns`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignBody {
    /// 21 characters of Crockford base 32 (`0-9A-Z` without `I L O U`): the campaign's number
    /// (5), then 80 bits no one can guess from another campaign's id (16). A campaign created
    /// before ids had a tag keeps its 5-character id.
    #[schema(pattern = "^[0-9A-HJKMNP-TV-Z]{5}([0-9A-HJKMNP-TV-Z]{16})?$")]
    pub campaign_id: String,
    /// The merchant's title.
    pub title: String,
    /// `scheduled`, `entering` (a draw campaign before its draw), `open`, `sold_out` or
    /// `ended`, by Redis `TIME`.
    #[schema(value_type = crate::coupons::rules::Status)]
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
    /// What each coupon takes off an order (absent: the campaign records no value).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount: Option<DiscountBody>,
    /// The caller's codes in this campaign (`GET /campaigns/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupons: Option<Vec<String>>,
    /// The caller's coupons in this campaign with their states, in the order of `coupons`
    /// (`GET /campaigns/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub coupon_states: Option<Vec<MyCouponBody>>,
    /// A draw campaign's draw (docs/design.md, "Draws"): its commitment from creation, its
    /// seed and figures once drawn; absent for a first-come campaign.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub draw: Option<crate::draws::http::DrawBody>,
    /// The caller's ticket in the draw, 64 lowercase hex digits (`GET /campaigns/{id}` of a
    /// draw campaign once drawn): they won exactly when they entered and it is at most
    /// `draw.threshold`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9a-f]{64}$")]
    pub ticket: Option<String>,
}

/// One of the caller's coupons in a campaign, with its state.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MyCouponBody {
    /// The code.
    pub code: String,
    /// `issued`, `held`, `redeemed` or `expired`, by the store's clock.
    #[schema(value_type = crate::coupons::rules::CouponState)]
    pub state: &'static str,
    /// RFC 3339: the order's hold lapses then (`held` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = DateTime)]
    pub held_until: Option<String>,
}

impl From<MyCoupon> for MyCouponBody {
    fn from(c: MyCoupon) -> Self {
        MyCouponBody {
            code: c.code,
            state: c.state.as_str(),
            held_until: c.held_until_ms.map(rfc3339),
        }
    }
}

/// A campaign's discount, what each coupon takes off an order: `amount_off_cents`, or
/// `percent_off` (rounded down to the cent, at most `max_off_cents` when given); never more
/// than the order's total. `min_order_cents`: orders below it get no coupon (422
/// `below_minimum` at checkout). Integers only; unknown fields are refused.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"percent_off": 15, "max_off_cents": 2000, "min_order_cents": 10000}))]
pub struct DiscountBody {
    /// A fixed amount off, cents (1 to 10^13); not with `percent_off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1, maximum = 10_000_000_000_000_i64)]
    pub amount_off_cents: Option<i64>,
    /// A percentage off the order's total, 1 to 100, rounded down to the cent; not with
    /// `amount_off_cents`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1, maximum = 100)]
    pub percent_off: Option<i64>,
    /// With `percent_off`: the most it takes off, cents (1 to 10^13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1, maximum = 10_000_000_000_000_i64)]
    pub max_off_cents: Option<i64>,
    /// The smallest order total a coupon applies to, cents (1 to 10^13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1, maximum = 10_000_000_000_000_i64)]
    pub min_order_cents: Option<i64>,
}

impl From<Discount> for DiscountBody {
    fn from(d: Discount) -> Self {
        let (amount, percent, max) = match d.off {
            Off::Amount(a) => (Some(a), None, None),
            Off::Percent { percent, max_cents } => (None, Some(percent), max_cents),
        };
        DiscountBody {
            amount_off_cents: amount,
            percent_off: percent,
            max_off_cents: max,
            min_order_cents: d.min_order_cents,
        }
    }
}

impl DiscountBody {
    /// The rule the body names.
    ///
    /// # Errors
    /// 400 `invalid_request`: neither or both of `amount_off_cents` and `percent_off`,
    /// `max_off_cents` without `percent_off`, or a figure outside its bounds.
    pub(crate) fn rule(&self) -> Result<Discount, ApiError> {
        let off = match (self.amount_off_cents, self.percent_off, self.max_off_cents) {
            (Some(a), None, None) => Off::Amount(a),
            (None, Some(percent), max_cents) => Off::Percent { percent, max_cents },
            (Some(_), None, Some(_)) => {
                return Err(ApiError::invalid(
                    "discount.max_off_cents caps a percent_off; an amount_off_cents needs none",
                ))
            }
            _ => {
                return Err(ApiError::invalid(
                    "discount must give either amount_off_cents or percent_off (not both)",
                ))
            }
        };
        let rule = Discount {
            off,
            min_order_cents: self.min_order_cents,
        };
        rule.check()?;
        Ok(rule)
    }
}

/// Checks the fields every checkout call shares: the code, the user (when the route names
/// one) and the order.
///
/// # Errors
/// 400 `invalid_request` naming the field.
pub(crate) fn checkout_fields(
    code: &str,
    user_id: Option<&str>,
    order: &str,
) -> Result<(), ApiError> {
    if !is_code(code) && parse(code).is_none() && parse_share_code(code).is_none() {
        return Err(ApiError::invalid(
            "code must be 4 to 64 characters of [A-Za-z0-9_-], a generated code, or a red packet share's code (<packet_id>.<share_id>)",
        ));
    }
    if user_id.is_some_and(|u| !is_user_id(u)) {
        return Err(ApiError::invalid(format!(
            "user_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
        )));
    }
    if !is_reference(order) {
        return Err(ApiError::invalid(
            "order_reference must be 1 to 128 bytes of printable ASCII without spaces",
        ));
    }
    Ok(())
}

/// Checks an order total given at checkout: 0 to 10^13 cents.
///
/// # Errors
/// 400 `invalid_request`.
pub(crate) fn order_total(total: Option<i64>) -> Result<Option<i64>, ApiError> {
    match total {
        Some(t) if !is_order_total(t) => Err(ApiError::invalid(format!(
            "order_total_cents must be an integer of 0 to {MAX_CENTS}, not {t}"
        ))),
        _ => Ok(total),
    }
}

/// The message of a 409 `held`.
pub(crate) const HELD: &str = "another order holds this coupon; nothing was written";

/// The message of a 409 `already_redeemed`.
pub(crate) const ALREADY_REDEEMED: &str = "an order redeemed this coupon; nothing was written";

/// The message of a 422 `below_minimum`.
pub(crate) const BELOW_MINIMUM: &str =
    "the order's total is below the campaign's minimum order; nothing was written";

/// The message of a 400 `order_total_required`.
pub(crate) const ORDER_TOTAL_REQUIRED: &str =
    "the campaign has a minimum order: order_total_cents is \
     required to hold or redeem its coupons; nothing was written";

/// The message of a 410 `expired`.
pub(crate) const EXPIRED: &str = "this coupon may no longer be redeemed";

impl CampaignBody {
    pub(crate) fn new(view: CampaignView, with_coupons: bool) -> Self {
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
            discount: view.discount.map(Into::into),
            coupons: with_coupons.then_some(view.mine),
            coupon_states: with_coupons
                .then(|| view.mine_states.into_iter().map(Into::into).collect()),
            draw: view.draw.as_ref().map(crate::draws::http::DrawBody::from),
            ticket: view.ticket,
        }
    }
}

/// Unix ms of an RFC 3339 time given in field `field`.
///
/// # Errors
/// 400 `invalid_request` naming the field.
pub(crate) fn instant(field: &str, text: &str) -> Result<i64, ApiError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            ApiError::invalid(format!(
                "{field} must be an RFC 3339 time such as 2026-11-25T20:00:00Z"
            ))
        })
}

/// The message of a 400 `duplicate_codes` listing `codes`.
pub(crate) fn duplicate_codes_message(codes: &[String]) -> String {
    format!(
        "these codes are repeated in the request or already belong to a campaign: {}; \
         nothing was written",
        codes.join(", ")
    )
}

/// At most 10 duplicated codes, as a refusal's field.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Duplicates(pub Vec<String>);

impl crate::api::refusal::RefusalField for Duplicates {
    fn schema(
        description: &str,
        _: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>,
    ) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, Object, Schema, Type};
        let mut array = ArrayBuilder::new()
            .items(Object::with_type(Type::String))
            .max_items(Some(10));
        if !description.is_empty() {
            array = array.description(Some(description));
        }
        utoipa::openapi::RefOr::T(Schema::Array(array.build()))
    }
}
