//! Article voting over HTTP: the vote function's router, the article-voting site of "Redis in
//! Action" chapter 1 (see [`crate::store::voting`]; source: josiahcarlson/redis-in-action
//! `python/ch01_listing_source.py`, with the down-vote that the source blog post on Redis key
//! design adds). Every route needs the caller's identity (401 without it).
//!
//! | route | success | errors |
//! | --- | --- | --- |
//! | `POST /articles` `{"title", "link"}` | 201 [`ArticleBody`] with `votes` 1 and `score` = posted + 432 | 400 |
//! | `POST /articles/{id}/vote` `{"direction": "up" \| "down"}` | 200 [`VoteBody`](vote::VoteBody) | 400, 404 `not_found`, 410 `voting_closed` (+`votes`, `score`), 429 `rate_limited` + `Retry-After` (s) |
//! | `GET /articles?order=score\|time&page=N` | 200 [`PageBody`], at most 25 articles | 400 |
//! | `PUT /articles/{id}/groups` `{"add": [...], "remove": [...]}` | 200 [`GroupsBody`](groups::GroupsBody) (sorted) | 400, 403 `forbidden` (not the poster), 404 |
//! | `GET /groups/{group}/articles?order=score\|time&page=N` | 200 [`PageBody`] with `group` | 400 |
//!
//! One handler per file, named as the store's operations ([`crate::store::voting`]): [`post`](mod@post),
//! [`list`], [`vote`](mod@vote), [`groups`], [`group_articles`].

pub mod group_articles;
pub mod groups;
pub mod list;
pub mod post;
pub mod vote;

use serde::Serialize;

use super::error::{rfc3339, ApiError};
use super::extract::query_params;
use super::operation::Routes;
use crate::domain::voting::{Article, Order, MAX_PAGE};
use utoipa_axum::routes;

/// The routes of the vote function.
pub fn routes() -> Routes {
    Routes::new()
        .route(&list::OPERATION, routes!(list::list))
        .route(&post::OPERATION, routes!(post::post_article))
        .route(&vote::OPERATION, routes!(vote::vote))
        .route(&groups::OPERATION, routes!(groups::set_groups))
        .route(
            &group_articles::OPERATION,
            routes!(group_articles::group_articles),
        )
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
    #[schema(value_type = crate::domain::voting::Order)]
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
