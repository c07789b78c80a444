//! `POST /campaigns/{id}/codes`: a merchant adds a batch of uploaded codes to a campaign that
//! has not started (`crate::coupons::add_codes`, `coupon_add_codes.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::api::error::ApiError;
use crate::api::extract::{shown, IamPrincipal, JsonBody, Path};
use crate::api::operation::{Auth, Method, Operation, Tenant};
use crate::api::replay::{Changed, Replay, Replayed};
use crate::api::state::ApiState;
use crate::coupons::http::{duplicate_codes_message, merchant, Duplicates};
use crate::coupons::rules::codes::check_batch;
use crate::coupons::rules::is_reference;
use crate::coupons::{self, AddCodesOutcome};

/// The body of `POST /campaigns/{id}/codes`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"codes": ["SUMMER-0001", "SUMMER-0002"], "reference": "batch-2"}))]
pub struct CodesRequest {
    /// 1 to 10,000 distinct codes of 4 to 64 characters of `[A-Za-z0-9_-]`, none held by this
    /// or another campaign.
    #[schema(min_items = 1, max_items = 10_000)]
    pub codes: Vec<crate::coupons::http::CouponCode>,
    /// The batch's idempotency key within the campaign: 1 to 128 bytes of printable ASCII
    /// without spaces. The same batch again answers `repeat: true`; another batch under it is
    /// 409 `reference_reused`.
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub reference: String,
}

/// The answer to a batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CampaignCodesBody {
    /// The campaign.
    pub campaign_id: String,
    /// The campaign's codes, every batch included.
    pub codes_total: u64,
    /// The batch's reference.
    pub reference: String,
    /// `true` when this reference added the same batch before (nothing added now).
    pub repeat: bool,
    /// The batch's codes in the campaign.
    pub codes_added: u64,
    /// The batch's codes that reached no pool of the campaign before it started (a batch cut
    /// short before the start and sent again after it): not in the campaign, and free for any
    /// campaign again. Usually empty.
    #[schema(max_items = 10_000)]
    pub released: Vec<String>,
}

crate::api::refusal::refusals! {
    /// What `POST /campaigns/{id}/codes` refuses, beside the answers every route shares (403 `forbidden` for a caller outside its principals).
    pub enum AddCodesRefusal {

        400 InvalidRequestError in CreateCampaignInvalidError {
            /// a rule broken (the message says which); nothing written
            Invalid = "invalid_request",
        }
        /// 400: codes repeated within the request, or already in this or another campaign
        /// (`duplicates`, at most 10); nothing written.
        400 DuplicateCodesError in CreateCampaignInvalidError {
            /// codes repeated in the request or already in a campaign (`duplicates`); nothing
            /// written
            DuplicateCodes = "duplicate_codes" {
                /// At most 10 of the duplicated codes.
                duplicates: Duplicates,
            },
        }

        404 NotFoundError {
            /// no such campaign
            NotFound = "not_found",
        }
        /// 409: the campaign generates its codes (`codes_generated`), has started
        /// (`campaign_started`), or the reference added another batch (`reference_reused`);
        /// nothing written.
        409 AddCodesConflictError {
            /// the campaign generates its codes; nothing written
            CodesGenerated = "codes_generated",
            /// the campaign has started: none of the batch's codes is in it, each is free for
            /// any campaign
            CampaignStarted = "campaign_started",
            /// the reference added another batch; nothing written
            ReferenceReused = "reference_reused",
        }
    }
}

/// `POST /campaigns/{id}/codes` (AWS_IAM, `HONGBAO_COUPON_PRINCIPALS`): the template's `AddCampaignCodes` event.
pub const OPERATION: Operation = Operation {
    event: "AddCampaignCodes",
    method: Method::Post,
    path: "/campaigns/{id}/codes",
    auth: Auth::Iam {
        principals: &crate::coupons::rules::settings::COUPON_PRINCIPALS,
        tenant: Tenant::Merchant("the campaign's merchant (path `id`)"),
    },
    refusals: AddCodesRefusal::REFUSALS,
    replay: Some(Replay {
        key: "the campaign and the batch `reference`",
        kept: "the campaign's life",
        changed: Changed::Refused("reference_reused"),
        also: "`repeat: true`; completes a batch cut short",
    }),
};

/// `POST /campaigns/{id}/codes` (AWS_IAM): 201 [`CampaignCodesBody`] (200 with `repeat: true` for
/// the same batch again); or a [`AddCodesRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "coupons", operation_id = "add_campaign_codes",
    summary = "Add codes to a campaign (AWS_IAM)",
    description = "Adds a batch of up to 10,000 uploaded codes to a campaign of uploaded codes before it starts, once per batch `reference`: the same batch sent again completes it and answers the same. A batch cut short before the start and sent again after it keeps the codes that reached the campaign and lists the others in `released` (free for any campaign); none reached it: 409 `campaign_started`. Only AWS_IAM-signed calls of the principals in `HONGBAO_COUPON_PRINCIPALS`.",
    params(("id" = String, Path, description = "campaign id: 21 characters (5 for a campaign created before ids had a tag)", pattern = "^[0-9A-HJKMNP-TV-Z]{5}([0-9A-HJKMNP-TV-Z]{16})?$")),
    request_body = CodesRequest,
    security(("sigv4" = [])),
    responses(
        (status = 201, description = "the batch added (or, with `Idempotent-Replayed: true` and `repeat: true`, added before under this reference)", body = CampaignCodesBody),
    )
)]
pub(crate) async fn add_codes(
    State(state): State<ApiState>,
    IamPrincipal(arn): IamPrincipal,
    Path(id): Path<String>,
    body: Result<JsonBody<CodesRequest>, ApiError>,
) -> Result<(StatusCode, Replayed, Json<CampaignCodesBody>), ApiError> {
    let arn = merchant(&state, arn)?;
    let JsonBody(b) = body?;
    let codes = crate::coupons::http::code_texts(b.codes);
    check_batch(&codes)?;
    if !is_reference(&b.reference) {
        return Err(ApiError::invalid(
            "reference must be 1 to 128 bytes of printable ASCII without spaces",
        ));
    }
    crate::coupons::http::for_campaign_owner(&state, &arn, &id).await?;
    let outcome = coupons::add_codes(&state.store, &id, &b.reference, &codes)
        .await
        .map_err(|e| {
            ApiError::from(e).on_unavailable(
                "the batch may have been added in part; the same batch under the same reference \
                 completes it",
            )
        })?;
    match outcome {
        AddCodesOutcome::Added {
            codes_total,
            repeat,
            added,
            released,
        } => Ok((
            StatusCode::CREATED,
            Replayed(repeat),
            Json(CampaignCodesBody {
                campaign_id: id,
                codes_total,
                reference: b.reference,
                repeat,
                codes_added: added,
                released,
            }),
        )),
        AddCodesOutcome::NotFound => {
            Err(AddCodesRefusal::NotFound.because(format!("no campaign {}", shown(&id))))
        }
        AddCodesOutcome::Generated => Err(AddCodesRefusal::CodesGenerated
            .because("this campaign generates its codes; nothing was written")),
        AddCodesOutcome::Started => Err(AddCodesRefusal::CampaignStarted.because(
            "codes are added only before the campaign starts; none of this batch's codes is in \
             the campaign, and each is free for any campaign",
        )),
        AddCodesOutcome::ReferenceReused => Err(AddCodesRefusal::ReferenceReused
            .because("this reference added another batch to the campaign; nothing was written")),
        AddCodesOutcome::DuplicateCodes(codes) => Err(AddCodesRefusal::DuplicateCodes {
            duplicates: Duplicates(codes.clone()),
        }
        .because(duplicate_codes_message(&codes))),
    }
}
