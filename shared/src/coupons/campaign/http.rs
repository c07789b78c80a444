//! `GET /campaigns/{id}`: a campaign as a user sees it, with their coupons in it
//! (`crate::coupons::campaign`).

use axum::extract::State;
use axum::Json;

use crate::api::error::ApiError;
use crate::api::extract::{shown, Caller, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::coupons;
use crate::coupons::http::CampaignBody;

crate::api::refusal::refusals! {
    /// What `GET /campaigns/{id}` refuses, beside the answers every route shares.
    pub enum CampaignRefusal {

        404 NotFoundError {
            /// no such campaign
            NotFound = "not_found",
        }
    }
}

/// `GET /campaigns/{id}` (JWT): the template's `ViewCampaign` event.
pub const OPERATION: Operation = Operation {
    event: "ViewCampaign",
    method: Method::Get,
    path: "/campaigns/{id}",
    auth: Auth::Jwt,
    refusals: CampaignRefusal::REFUSALS,
    replay: None,
};

/// `GET /campaigns/{id}`: 200 [`CampaignBody`] with the caller's `coupons`; or a
/// [`CampaignRefusal`].
#[utoipa::path(
    get, path = OPERATION.path, tag = "coupons", operation_id = "get_campaign",
    summary = "A coupon campaign and the caller's coupons in it",
    description = "The campaign's status (`scheduled`, `entering`, `open`, `sold_out`, `ended`, by the store's clock), its exact `codes_left` of `codes_total`, its times, and the codes the caller grabbed from it. A draw campaign shows its `draw`: the commitment from creation, then once drawn (a view from `draw_at` on runs a draw not run yet) the seed, the figures and the caller's `ticket`, to check the result with.",
    params(("id" = String, Path, description = "campaign id: 21 characters (5 for a campaign created before ids had a tag)", pattern = "^[0-9A-HJKMNP-TV-Z]{5}([0-9A-HJKMNP-TV-Z]{16})?$")),
    responses(
        (status = 200, description = "the campaign", body = CampaignBody),
    )
)]
pub(crate) async fn campaign(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<CampaignBody>, ApiError> {
    match coupons::campaign(&state.store, &id, Some(&user)).await? {
        Some(view) => Ok(Json(CampaignBody::new(view, true))),
        None => Err(CampaignRefusal::NotFound.because(format!("no campaign {}", shown(&id)))),
    }
}
