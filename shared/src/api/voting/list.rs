//! `GET /articles`: a page of the site's articles by score or time
//! ([`crate::store::voting::articles`]).

use axum::extract::{RawQuery, State};
use axum::Json;

use super::{parse_page_query, ArticleBody, PageBody};
use crate::api::error::ApiError;
use crate::api::extract::Caller;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::store::voting;

/// `GET /articles` (JWT): the template's `ListArticles` event.
pub const OPERATION: Operation = Operation {
    event: "ListArticles",
    method: Method::Get,
    path: "/articles",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /articles`.
#[utoipa::path(
    get, path = OPERATION.path, tag = "voting", operation_id = "list_articles",
    summary = "List articles",
    description = "A page of at most 25 articles, highest score or newest first.",
    params(
        ("order" = Option<crate::domain::voting::Order>, Query, description = "`score` (default) or `time`"),
        ("page" = Option<u32>, Query, description = "1-based page of 25, default 1", minimum = 1, maximum = 100000)
    ),
    responses(
        (status = 200, description = "a page of articles", body = PageBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Caller(_): Caller,
    RawQuery(query): RawQuery,
) -> Result<Json<PageBody>, ApiError> {
    let (order, page) = parse_page_query(query.as_deref())?;
    let list = voting::articles(&state.store, order, page).await?;
    Ok(Json(PageBody {
        group: None,
        order: order.as_str(),
        page,
        articles: list.iter().map(ArticleBody::from).collect(),
    }))
}
