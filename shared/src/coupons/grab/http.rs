//! `POST /campaigns/{id}/grab`: a user grabs a coupon code, first come first served, at most
//! the campaign's `per_user` (`crate::coupons::grab`, `coupon_grab.lua`); of a draw
//! campaign, an entry until its draw, then a winner's code (`coupon_draw_enter.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{shown, Caller, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::coupons::{self, CouponGrabOutcome};

/// A coupon won.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "campaign_id": "0001C",
    "code": "0001C7K2M9QX4TZ8WD",
    "redeem_by": "2026-12-31T16:00:00.000Z",
    "grabbed_at": "2026-11-25T20:00:00.123Z"
}))]
pub struct CouponBody {
    /// The campaign.
    pub campaign_id: String,
    /// The coupon code, shown to the user and given at checkout.
    pub code: String,
    /// RFC 3339: redeem before this.
    #[schema(format = DateTime)]
    pub redeem_by: String,
    /// RFC 3339, by the store's clock.
    #[schema(format = DateTime)]
    pub grabbed_at: String,
}

/// A draw campaign's grab before its draw: the caller is an entrant.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "campaign_id": "0001C",
    "entered": true,
    "draw_at": "2026-11-25T20:01:00.000Z"
}))]
pub struct CampaignEnteredBody {
    /// The campaign.
    pub campaign_id: String,
    /// Always `true`: the caller is an entrant.
    pub entered: bool,
    /// RFC 3339: when the draw happens (Redis `TIME`); grab again from then on.
    #[schema(format = DateTime)]
    pub draw_at: String,
}

crate::api::refusal::refusals! {
    /// What `POST /campaigns/{id}/grab` refuses, beside the answers every route shares.
    pub enum CouponGrabRefusal {

        404 NotFoundError {
            /// no such campaign
            NotFound = "not_found",
        }
        /// 409: the caller holds the campaign's `per_user` codes (`coupons` are theirs).
        409 AlreadyGrabbedCouponError {
            /// the caller holds `per_user` codes (`coupons`)
            AlreadyGrabbed = "already_grabbed" {
                /// The caller's codes in this campaign.
                coupons: Vec<String>,
            },
        }
        /// 410: every code of the campaign is issued (`sold_out`), the campaign ended
        /// (`ended`), or a draw campaign's draw has run and the caller did not win
        /// (`not_drawn`). Nothing written.
        410 CampaignGoneError {
            /// every code of the campaign is issued
            SoldOut = "sold_out",
            /// the campaign ended
            Ended = "ended",
            /// a draw campaign's draw has run and the caller did not win (or did not enter)
            NotDrawn = "not_drawn",
        }
        /// 425: the campaign opens at `starts_at`; retry after `Retry-After` seconds.
        425 NotStartedError retry_after "seconds until the campaign opens" {
            /// retry after `Retry-After` seconds (until `starts_at`; 1 while a campaign that
            /// opens at once is still being created)
            NotStarted = "not_started",
        }
        429 RateLimitedError retry_after "seconds to wait before retrying" {
            /// the visit limit is used up; retry after `Retry-After` seconds; nothing written
            RateLimited = "rate_limited",
        }
    }
}

/// `POST /campaigns/{id}/grab` (JWT): the template's `GrabCoupon` event.
pub const OPERATION: Operation = Operation {
    event: "GrabCoupon",
    method: Method::Post,
    path: "/campaigns/{id}/grab",
    auth: Auth::Jwt,
    refusals: CouponGrabRefusal::REFUSALS,
    replay: None,
};

/// `POST /campaigns/{id}/grab`: 200 [`CouponBody`], 202 [`CampaignEnteredBody`] (a draw
/// campaign's entry); or a [`CouponGrabRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "coupons", operation_id = "grab_coupon",
    summary = "Grab a coupon of a campaign",
    description = "Issues the caller one of the campaign's codes, first come first served, at most the campaign's `per_user` codes per user (a retry or a second press answers 409 with the codes held). `sold_out` is answered only when no code is left anywhere in the campaign. The visit limit: answers `not_started` and `already_grabbed` count (a win does not), and past `HONGBAO_COUPON_VISIT_LIMIT` per window the answer is 429. A draw campaign is not first come, first served: until `draw_at` a grab enters the caller in its draw (202; a repeat counts as a visit); from then on a winner's grab answers their code (200) and anyone else's 410 `not_drawn`.",
    params(("id" = String, Path, description = "campaign id: 21 characters (5 for a campaign created before ids had a tag)", pattern = "^[0-9A-HJKMNP-TV-Z]{5}([0-9A-HJKMNP-TV-Z]{16})?$")),
    responses(
        (status = 200, description = "a coupon won (a draw campaign's: the caller won the draw)", body = CouponBody),
        (status = 202, description = "a draw campaign before its draw: the caller is an entrant", body = CampaignEnteredBody),
    )
)]
pub(crate) async fn grab(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let visits = state.store.config().coupons.visits;
    let outcome = coupons::grab(&state.store, &id, &user, visits).await?;
    let (counted, answer) = match outcome {
        CouponGrabOutcome::Grabbed {
            code,
            grabbed_at_ms,
            redeem_by_ms,
        } => (
            Some(metrics::GRAB_WON),
            Ok(Json(CouponBody {
                campaign_id: id,
                code,
                redeem_by: rfc3339(redeem_by_ms),
                grabbed_at: rfc3339(grabbed_at_ms),
            })
            .into_response()),
        ),
        CouponGrabOutcome::Entered { draw_at_ms } => (
            Some(metrics::DRAW_ENTERED),
            Ok((
                StatusCode::ACCEPTED,
                Json(CampaignEnteredBody {
                    campaign_id: id,
                    entered: true,
                    draw_at: rfc3339(draw_at_ms),
                }),
            )
                .into_response()),
        ),
        CouponGrabOutcome::NotDrawn => (
            None,
            Err(CouponGrabRefusal::NotDrawn
                .because("the draw has run and you did not win a code; nothing was written")),
        ),
        CouponGrabOutcome::AlreadyGrabbed { codes } => (
            Some(metrics::GRAB_ALREADY_GRABBED),
            Err(CouponGrabRefusal::AlreadyGrabbed { coupons: codes }
                .because("you hold as many coupons of this campaign as one user may")),
        ),
        CouponGrabOutcome::SoldOut => (
            Some(metrics::GRAB_SOLD_OUT),
            Err(CouponGrabRefusal::SoldOut.because("every code of this campaign has been issued")),
        ),
        CouponGrabOutcome::Ended => (
            None,
            Err(CouponGrabRefusal::Ended.because("this campaign has ended")),
        ),
        CouponGrabOutcome::NotStarted { retry_after_ms } => (
            None,
            Err(CouponGrabRefusal::NotStarted
                .because("this campaign has not started; retry after Retry-After seconds")
                .retry_after(retry_after_ms.max(1).div_ceil(1000))),
        ),
        CouponGrabOutcome::RateLimited { retry_after_ms } => (
            Some(metrics::GRAB_RATE_LIMITED),
            Err(CouponGrabRefusal::RateLimited
                .because("too many grab attempts; slow down")
                .retry_after_ms(retry_after_ms as i64)),
        ),
        CouponGrabOutcome::NotFound => (
            None,
            Err(CouponGrabRefusal::NotFound.because(format!("no campaign {}", shown(&id)))),
        ),
    };
    if let Some(name) = counted {
        metrics::count(name, 1);
    }
    answer
}
