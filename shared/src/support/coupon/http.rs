//! `GET /support/coupons/{code}` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): a coupon code's
//! campaign, whom it was issued to, its checkout (held or redeemed by which order), the holds
//! and redemptions released, and its unexported journal entries (its store step: [`crate::support::coupon()`]).

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{shown, IamPrincipal, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::state::ApiState;
use crate::coupons::rules::checkout::Checkout;
use crate::support::{self, CouponLookup, ReleaseLookup};
use crate::support::{check_caller, JournalEntryBody};

/// The body of `GET /support/coupons/{code}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportCouponBody {
    /// The code as asked.
    pub code: String,
    /// The campaign it belongs to.
    pub campaign_id: String,
    /// The campaign's title.
    pub title: String,
    /// `unissued` (still in its pool, or never issued by a closed campaign), else the
    /// coupon's state by Redis `TIME`: `issued`, `held`, `redeemed` or `expired`.
    #[schema(example = "held")]
    pub state: &'static str,
    /// The user it was issued to; `null` while unissued.
    #[schema(required = true)]
    pub user_id: Option<String>,
    /// RFC 3339: when it was issued; `null` while unissued.
    #[schema(format = DateTime, required = true)]
    pub grabbed_at: Option<String>,
    /// The order holding or having redeemed it; `null` when neither.
    #[schema(required = true)]
    pub order_reference: Option<String>,
    /// RFC 3339: until when the order holds it (`held` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub held_until: Option<String>,
    /// RFC 3339: when the order redeemed it (`redeemed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub redeemed_at: Option<String>,
    /// The order's discount, cents, when its total was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub discount_cents: Option<i64>,
    /// RFC 3339: the coupon may be redeemed before this.
    #[schema(format = DateTime)]
    pub redeem_by: String,
    /// The holds and redemptions released (`POST /coupons/release`), oldest first.
    pub releases: Vec<SupportReleaseBody>,
    /// The unexported journal entries of the coupon (`coupon_issued`, `coupon_redeemed`,
    /// `coupon_released`), oldest first. Exported entries are on the event bus.
    pub journal: Vec<JournalEntryBody>,
    /// `false` when the pool's journal held more entries than one look-up reads (500).
    pub journal_complete: bool,
}

/// One release (`releases` of `SupportCouponBody`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SupportReleaseBody {
    /// The order whose hold or redemption was released.
    pub order_reference: String,
    /// `hold` or `redemption`.
    #[schema(example = "redemption")]
    pub released: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub released_at: String,
}

impl From<ReleaseLookup> for SupportReleaseBody {
    fn from(r: ReleaseLookup) -> Self {
        SupportReleaseBody {
            order_reference: r.order_reference,
            released: r.released,
            released_at: rfc3339(r.released_at_ms),
        }
    }
}

impl SupportCouponBody {
    fn new(code: String, l: CouponLookup) -> Self {
        let (mut state, mut user_id, mut grabbed_at) = ("unissued", None, None);
        let (mut order, mut held_until, mut redeemed_at, mut discount) = (None, None, None, None);
        if let Some(r) = &l.issued {
            state = r.state(l.now_ms, l.redeem_by_ms).as_str();
            user_id = Some(r.user_id.clone());
            grabbed_at = Some(rfc3339(r.grabbed_at_ms));
            match &r.checkout {
                Checkout::Held {
                    order: o,
                    until_ms,
                    discount_cents,
                } if *until_ms > l.now_ms => {
                    order = Some(o.clone());
                    held_until = Some(rfc3339(*until_ms));
                    discount = *discount_cents;
                }
                Checkout::Redeemed {
                    order: o,
                    at_ms,
                    discount_cents,
                } => {
                    order = Some(o.clone());
                    redeemed_at = Some(rfc3339(*at_ms));
                    discount = *discount_cents;
                }
                _ => {}
            }
        }
        SupportCouponBody {
            code,
            campaign_id: l.campaign_id,
            title: l.title,
            state,
            user_id,
            grabbed_at,
            order_reference: order,
            held_until,
            redeemed_at,
            discount_cents: discount,
            redeem_by: rfc3339(l.redeem_by_ms),
            releases: l.releases.into_iter().map(Into::into).collect(),
            journal: l.journal.into_iter().map(JournalEntryBody::from).collect(),
            journal_complete: l.journal_complete,
        }
    }
}

crate::api::refusal::refusals! {
    /// What `GET /support/coupons/{code}` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum SupportCouponRefusal {

        404 NotFoundError {
            /// no campaign has this code
            NotFound = "not_found",
        }
    }
}

/// `GET /support/coupons/{code}` (AWS_IAM, `HONGBAO_SUPPORT_PRINCIPALS`): the template's `SupportCoupon` event.
pub const OPERATION: Operation = Operation {
    event: "SupportCoupon",
    method: Method::Get,
    path: "/support/coupons/{code}",
    auth: Auth::Iam {
        principals: &crate::wallet::rules::SUPPORT_PRINCIPALS,
        tenant: Tenant::Users,
    },
    refusals: SupportCouponRefusal::REFUSALS,
    replay: None,
};

/// `GET /support/coupons/{code}` (AWS_IAM): 200 [`SupportCouponBody`]; or a
/// [`SupportCouponRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "support", operation_id = "support_coupon",
    summary = "Look up a coupon code for support (AWS_IAM)",
    description = "The code's campaign, whom it was issued to, its checkout (held or redeemed by which order, with the discount), the holds and redemptions released, and its journal entries not exported yet. Read-only. Only AWS_IAM-signed calls of the principals in `HONGBAO_SUPPORT_PRINCIPALS`.",
    params(("code" = String, Path, description = "the coupon code: an uploaded code as issued, or a generated one (case, hyphens and spaces ignored)", min_length = 4, max_length = 64)),
    security(("sigv4" = [])),
    responses(
        (status = 200, description = "the coupon, its checkout and releases, its journal entries", body = SupportCouponBody),
    )
)]
pub(crate) async fn support_coupon(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(code): Path<String>,
) -> Result<Json<SupportCouponBody>, ApiError> {
    check_caller(&state, arn.as_deref())?;
    match support::coupon(&state.store, &code).await? {
        Some(lookup) => Ok(Json(SupportCouponBody::new(code, lookup))),
        None => Err(SupportCouponRefusal::NotFound
            .because(format!("no campaign has the code {}", shown(&code)))),
    }
}
