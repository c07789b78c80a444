//! `GET /articles` and `GET /groups/{group}/articles`: a page of the site's or a group's
//! articles by score or time ([`super::store::articles`], [`super::store::group_articles`],
//! `group_page.lua`), and the page's answer.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;

use super::store::{articles, group_articles as load_group_articles};
use crate::api::error::{rfc3339, ApiError};
use crate::api::extract::{query_params, Caller, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::voting::rules::{is_group_name, Article, Order, MAX_GROUP_NAME_CHARS, MAX_PAGE};

/// `GET /articles` (JWT): the template's `ListArticles` event.
pub const LIST_OPERATION: Operation = Operation {
    event: "ListArticles",
    method: Method::Get,
    path: "/articles",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /articles`.
#[utoipa::path(
    get, path = LIST_OPERATION.path, tag = "voting", operation_id = "list_articles",
    summary = "List articles",
    description = "A page of at most 25 articles, highest score or newest first.",
    params(
        ("order" = Option<crate::voting::rules::Order>, Query, description = "`score` (default) or `time`"),
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
    let list = articles(&state.store, order, page).await?;
    Ok(Json(PageBody {
        group: None,
        order: order.as_str(),
        page,
        articles: list.iter().map(ArticleBody::from).collect(),
    }))
}

/// `GET /groups/{group}/articles` (JWT): the template's `GroupArticles` event.
pub const GROUP_OPERATION: Operation = Operation {
    event: "GroupArticles",
    method: Method::Get,
    path: "/groups/{group}/articles",
    auth: Auth::Jwt,
    refusals: crate::api::refusal::Refusals::NONE,
    replay: None,
};

/// `GET /groups/{group}/articles`.
#[utoipa::path(
    get, path = GROUP_OPERATION.path, tag = "voting", operation_id = "list_group_articles",
    summary = "List a group's articles",
    description = "A page of at most 25 of the group's articles, highest score or newest first (every vote and group change shows at once).",
    params(
        ("group" = String, Path, description = "group name, 1 to 32 of [a-z0-9-]", pattern = "^[a-z0-9-]{1,32}$"),
        ("order" = Option<crate::voting::rules::Order>, Query, description = "`score` (default) or `time`"),
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
    let list = load_group_articles(&state.store, &group, order, page).await?;
    Ok(Json(PageBody {
        group: Some(group),
        order: order.as_str(),
        page,
        articles: list.iter().map(ArticleBody::from).collect(),
    }))
}

/// An article: `score` = posted_at in Unix seconds + 432 × votes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ArticleBody {
    /// Decimal text, e.g. `"42"`.
    pub article_id: String,
    /// Title.
    pub title: String,
    /// Link.
    pub link: String,
    /// Who posted it.
    pub poster: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub posted_at: String,
    /// Up-votes minus down-votes.
    pub votes: i64,
    /// Ranking score.
    pub score: i64,
}

impl From<&Article> for ArticleBody {
    fn from(a: &Article) -> Self {
        ArticleBody {
            article_id: a.id.to_string(),
            title: a.title.clone(),
            link: a.link.clone(),
            poster: a.poster.clone(),
            posted_at: rfc3339(a.posted_at * 1000),
            votes: a.votes,
            score: a.score(),
        }
    }
}

/// A page of articles; `group` only for a group's page.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PageBody {
    /// The group, for `GET /groups/{group}/articles`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub group: Option<String>,
    /// `score` or `time`.
    #[schema(value_type = crate::voting::rules::Order)]
    pub order: &'static str,
    /// 1-based page number.
    pub page: u32,
    /// At most 25, highest first.
    pub articles: Vec<ArticleBody>,
}

/// Checks the query of a list route: `order` (`score`, the default, or `time`) and `page`
/// (1..=[`MAX_PAGE`], default 1, decimal digits), each at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_page_query(query: Option<&str>) -> Result<(Order, u32), ApiError> {
    let (mut order, mut page) = (None, None);
    query_params(
        query,
        &["order", "page"],
        "order and page",
        |name, value| {
            if name == "order" {
                order = Some(
                    Order::parse(value)
                        .ok_or_else(|| ApiError::invalid("order must be `score` or `time`"))?,
                );
            } else {
                let n = (!value.is_empty()
                    && value.len() <= 6
                    && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u32>().ok())
                .flatten()
                .filter(|n| (1..=MAX_PAGE).contains(n));
                page =
                    Some(n.ok_or_else(|| {
                        ApiError::invalid(format!("page must be 1..={MAX_PAGE}"))
                    })?);
            }
            Ok(())
        },
    )?;
    Ok((order.unwrap_or(Order::Score), page.unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_queries() {
        let q = |s: &str| s.to_string();
        assert_eq!(parse_page_query(None).unwrap(), (Order::Score, 1));
        assert_eq!(
            parse_page_query(Some(&*q("order=time&page=2"))).unwrap(),
            (Order::Time, 2)
        );
        assert_eq!(
            parse_page_query(Some(&*q("page=100000"))).unwrap(),
            (Order::Score, MAX_PAGE)
        );
        for bad in [
            "order=hot",
            "page=0",
            "page=-1",
            "page=1.5",
            "page=",
            "page=100001",
            "page=+1",
            "x=1",
            "page=1&page=2",
        ] {
            assert!(parse_page_query(Some(&*q(bad))).is_err(), "{bad}");
        }
    }
}
