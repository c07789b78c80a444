//! `GET /groups/{group}/articles`: a page of a group's articles by score or time
//! ([`crate::store::voting::group_articles`], `lua/group_page.lua`).

use axum::extract::{RawQuery, State};
use axum::Json;

use super::{parse_page_query, ArticleBody, PageBody};
use crate::api::error::ApiError;
use crate::api::extract::{Caller, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::domain::voting::{is_group_name, MAX_GROUP_NAME_CHARS};
use crate::store::voting;

/// `GET /groups/{group}/articles` (JWT): the template's `GroupArticles` event.
pub const OPERATION: Operation = Operation {
    event: "GroupArticles",
    method: Method::Get,
    path: "/groups/{group}/articles",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /groups/{group}/articles`.
#[utoipa::path(
    get, path = OPERATION.path, tag = "voting", operation_id = "list_group_articles",
    summary = "List a group's articles",
    description = "A page of at most 25 of the group's articles, highest score or newest first (every vote and group change shows at once).",
    params(
        ("group" = String, Path, description = "group name, 1 to 32 of [a-z0-9-]", pattern = "^[a-z0-9-]{1,32}$"),
        ("order" = Option<crate::domain::voting::Order>, Query, description = "`score` (default) or `time`"),
        ("page" = Option<u32>, Query, description = "1-based page of 25, default 1", minimum = 1, maximum = 100000)
    ),
    responses(
        (status = 200, description = "a page of the group's articles", body = PageBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn group_articles(
    State(state): State<ApiState>,
    Caller(_): Caller,
    Path(group): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<PageBody>, ApiError> {
    if !is_group_name(&group) {
        return Err(ApiError::invalid(format!(
            "a group name is 1 to {MAX_GROUP_NAME_CHARS} characters of [a-z0-9-]"
        )));
    }
    let (order, page) = parse_page_query(query.as_deref())?;
    let list = voting::group_articles(&state.store, &group, order, page).await?;
    Ok(Json(PageBody {
        group: Some(group),
        order: order.as_str(),
        page,
        articles: list.iter().map(ArticleBody::from).collect(),
    }))
}
