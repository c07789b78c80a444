//! Article voting over HTTP: the vote function's router, the article-voting site of "Redis in
//! Action" chapter 1 (see [`crate::store::voting`]; source: josiahcarlson/redis-in-action
//! `python/ch01_listing_source.py`, with the down-vote that the source blog post on Redis key
//! design adds). Every route needs the caller's identity (401 without it).
//!
//! | route | success | errors |
//! | --- | --- | --- |
//! | `POST /articles` `{"title", "link"}` | 201 [`ArticleBody`] with `votes` 1 and `score` = posted + 432 | 400 |
//! | `POST /articles/{id}/vote` `{"direction": "up" \| "down"}` | 200 [`VoteBody`] | 400, 404 `not_found`, 410 `voting_closed` (+`votes`, `score`), 429 `rate_limited` + `Retry-After` (s) |
//! | `GET /articles?order=score\|time&page=N` | 200 [`PageBody`], at most 25 articles | 400 |
//! | `PUT /articles/{id}/groups` `{"add": [...], "remove": [...]}` | 200 [`GroupsBody`] (sorted) | 400, 403 `forbidden` (not the poster), 404 |
//! | `GET /groups/{group}/articles?order=score\|time&page=N` | 200 [`PageBody`] with `group` (cached up to 60 s) | 400 |

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::config::AppState;
use super::error::{rfc3339, ApiError};
use super::extract::{shown, Caller, JsonBody, Path};
use crate::domain::voting::{
    is_group_name, Article, Direction, GroupChange, GroupsOutcome, NewArticle, Order, PostOutcome,
    VoteOutcome, MAX_GROUP_NAME_CHARS, MAX_PAGE,
};
use crate::store::voting;

/// The routes of the vote function.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/articles", get(list).post(post_article))
        .route("/articles/{id}/vote", post(vote))
        .route("/articles/{id}/groups", put(set_groups))
        .route("/groups/{group}/articles", get(group_articles))
}

/// The vote function's router.
pub fn router(state: AppState) -> Router {
    super::contract(routes().with_state(state))
}

/// The body of `POST /articles`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostRequest {
    /// 1 to 200 characters, not blank, no control or invisible format characters.
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    /// An `http` or `https` URL of at most 2048 visible ASCII characters.
    #[schema(max_length = 2048, pattern = "^https?://[!-~]+$")]
    pub link: String,
}

/// The body of `POST /articles/{id}/vote`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteRequest {
    /// `up` or `down`.
    #[schema(value_type = super::schemas::DirectionDoc)]
    pub direction: Direction,
}

/// The body of `PUT /articles/{id}/groups`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupsRequest {
    /// Groups to add the article to (at most 16).
    #[serde(default)]
    #[schema(value_type = Vec<super::schemas::GroupNameDoc>, max_items = 16)]
    pub add: Vec<String>,
    /// Groups to remove it from (at most 16, none of them in `add`).
    #[serde(default)]
    #[schema(value_type = Vec<super::schemas::GroupNameDoc>, max_items = 16)]
    pub remove: Vec<String>,
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
    #[schema(value_type = super::schemas::OrderDoc)]
    pub order: &'static str,
    /// 1-based page number.
    pub page: u32,
    /// At most 25, highest first.
    pub articles: Vec<ArticleBody>,
}

/// The answer to a vote.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VoteBody {
    /// The article.
    pub article_id: String,
    /// Votes after the call.
    pub votes: i64,
    /// Score after the call.
    pub score: i64,
    /// `up` or `down`.
    #[schema(value_type = super::schemas::DirectionDoc)]
    pub direction: &'static str,
    /// Whether this call changed the vote.
    pub changed: bool,
}

/// The answer to a group change.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GroupsBody {
    /// The article.
    pub article_id: String,
    /// Its groups afterwards, sorted.
    pub groups: Vec<String>,
}

/// `POST /articles`.
#[utoipa::path(
    post, path = "/articles", tag = "voting", operation_id = "post_article",
    summary = "Post an article",
    description = "Posts an article with the poster's own up-vote: `votes` 1 and `score` = posted_at (Unix seconds) + 432.",
    request_body = PostRequest,
    responses(
        (status = 201, description = "posted with the poster's own up-vote", body = ArticleBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
        (status = 429, description = "`rate_limited`: `HONGBAO_VOTE_ARTICLES_PER_DAY` is used up; retry after `Retry-After` seconds; nothing written", body = super::schemas::RateLimitedError, headers(("Retry-After" = u32, description = "seconds to wait before retrying"))),
    )
)]
pub(crate) async fn post_article(
    State(state): State<AppState>,
    Caller(user): Caller,
    JsonBody(b): JsonBody<PostRequest>,
) -> Result<(StatusCode, Json<ArticleBody>), ApiError> {
    let new = NewArticle::new(b.title, b.link)?;
    let posted = voting::post(&state.store, &user, &new).await.map_err(|e| {
        ApiError::from(e).on_unavailable(
            "the article may have been posted: a retry may post it a second time (look at GET /articles?order=time first)",
        )
    })?;
    match posted {
        PostOutcome::Posted(article) => {
            Ok((StatusCode::CREATED, Json(ArticleBody::from(&article))))
        }
        PostOutcome::RateLimited { retry_after_ms } => Err(ApiError::rate_limited(
            format!(
                "at most {} articles per user per 24 h (HONGBAO_VOTE_ARTICLES_PER_DAY)",
                state.store.config().voting.articles_per_day
            ),
            retry_after_ms,
        )),
    }
}

/// `GET /articles`.
#[utoipa::path(
    get, path = "/articles", tag = "voting", operation_id = "list_articles",
    summary = "List articles",
    description = "A page of at most 25 articles, highest score or newest first.",
    params(
        ("order" = Option<super::schemas::OrderDoc>, Query, description = "`score` (default) or `time`"),
        ("page" = Option<u32>, Query, description = "1-based page of 25, default 1", minimum = 1, maximum = 100000)
    ),
    responses(
        (status = 200, description = "a page of articles", body = PageBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn list(
    State(state): State<AppState>,
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

/// `POST /articles/{id}/vote`.
#[utoipa::path(
    post, path = "/articles/{id}/vote", tag = "voting", operation_id = "vote_article",
    summary = "Vote on an article",
    description = "Records the caller's up or down vote (one per user, changeable) for one week after the article was posted.",
    params(("id" = String, Path, description = "article id, decimal", pattern = "^[1-9][0-9]{0,11}$")),
    request_body = VoteRequest,
    responses(
        (status = 200, description = "the vote recorded (or unchanged)", body = VoteBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 404, description = "`not_found`: no such article", body = super::schemas::NotFoundError),
        (status = 410, description = "`voting_closed`, with the final `votes` and `score`", body = super::schemas::VotingClosedError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
        (status = 429, description = "`rate_limited`: too many votes; retry after `Retry-After` seconds; nothing written", body = super::schemas::RateLimitedError, headers(("Retry-After" = u32, description = "seconds to wait before retrying"))),
    )
)]
pub(crate) async fn vote(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<VoteRequest>,
) -> Result<Json<VoteBody>, ApiError> {
    let direction = b.direction;
    match voting::vote(&state.store, &id, &user, direction).await? {
        VoteOutcome::Voted {
            votes,
            score,
            changed,
        } => Ok(Json(VoteBody {
            article_id: id,
            votes,
            score,
            direction: direction.as_str(),
            changed,
        })),
        VoteOutcome::NotFound => Err(ApiError::not_found(format!("no article {}", shown(&id)))),
        VoteOutcome::Closed { votes, score } => Err(ApiError::gone(
            "voting_closed",
            "voting on this article closed one week after it was posted",
        )
        .with("votes", votes)
        .with("score", score)),
        VoteOutcome::RateLimited { retry_after_ms } => Err(ApiError::rate_limited(
            "too many votes; slow down",
            retry_after_ms,
        )),
    }
}

/// `PUT /articles/{id}/groups`.
#[utoipa::path(
    put, path = "/articles/{id}/groups", tag = "voting", operation_id = "set_article_groups",
    summary = "Change an article's groups",
    description = "Adds the article to and removes it from groups; only its poster may.",
    params(("id" = String, Path, description = "article id, decimal", pattern = "^[1-9][0-9]{0,11}$")),
    request_body = GroupsRequest,
    responses(
        (status = 200, description = "the article's groups afterwards", body = GroupsBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
        (status = 403, description = "`forbidden`: only the poster may change its groups", body = super::schemas::ForbiddenError),
        (status = 404, description = "`not_found`: no such article", body = super::schemas::NotFoundError),
        (status = 409, description = "`too_many_groups`: the article would pass `limit` groups", body = super::schemas::TooManyGroupsError),
        (status = 413, description = "`payload_too_large`: the body is over 2 MiB; nothing written", body = super::schemas::PayloadTooLargeError),
        (status = 415, description = "`unsupported_media_type`: the body is not declared `application/json`; nothing written", body = super::schemas::UnsupportedMediaTypeError),
    )
)]
pub(crate) async fn set_groups(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<GroupsRequest>,
) -> Result<Json<GroupsBody>, ApiError> {
    let change = GroupChange::new(b.add, b.remove).map_err(ApiError::invalid)?;
    match voting::set_groups(&state.store, &id, &user, &change).await? {
        GroupsOutcome::Updated(groups) => Ok(Json(GroupsBody {
            article_id: id,
            groups,
        })),
        GroupsOutcome::NotFound => Err(ApiError::not_found(format!("no article {}", shown(&id)))),
        GroupsOutcome::Forbidden => Err(ApiError::forbidden(
            "only the poster of an article may change its groups",
        )),
        GroupsOutcome::TooManyGroups { current } => {
            let max = state.store.config().voting.max_groups_per_article;
            Err(ApiError::conflict(
                "too_many_groups",
                format!(
                    "an article may be in at most {max} groups (HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE); \
                     it is in {current}"
                ),
            )
            .with("limit", max))
        }
    }
}

/// `GET /groups/{group}/articles`.
#[utoipa::path(
    get, path = "/groups/{group}/articles", tag = "voting", operation_id = "list_group_articles",
    summary = "List a group's articles",
    description = "A page of at most 25 of the group's articles, highest score or newest first (cached up to 60 s).",
    params(
        ("group" = String, Path, description = "group name, 1 to 32 of [a-z0-9-]", pattern = "^[a-z0-9-]{1,32}$"),
        ("order" = Option<super::schemas::OrderDoc>, Query, description = "`score` (default) or `time`"),
        ("page" = Option<u32>, Query, description = "1-based page of 25, default 1", minimum = 1, maximum = 100000)
    ),
    responses(
        (status = 200, description = "a page of the group's articles", body = PageBody),
        (status = 400, description = "`invalid_request`: nothing written", body = super::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn group_articles(
    State(state): State<AppState>,
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

/// Checks the query of a list route: `order` (`score`, the default, or `time`) and `page`
/// (1..=[`MAX_PAGE`], default 1, decimal digits), each at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub(crate) fn parse_page_query(query: Option<&str>) -> Result<(Order, u32), ApiError> {
    let (mut order, mut page) = (None, None);
    let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes());
    for (name, value) in pairs {
        match name.as_ref() {
            "order" if order.is_none() => {
                order = Some(
                    Order::parse(&value)
                        .ok_or_else(|| ApiError::invalid("order must be `score` or `time`"))?,
                );
            }
            "page" if page.is_none() => {
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
            "order" | "page" => return Err(ApiError::invalid(format!("{name} is given twice"))),
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown query parameter {other:?} (only order and page)"
                )))
            }
        }
    }
    Ok((order.unwrap_or(Order::Score), page.unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
        super::super::extract::parse_json(body)
    }

    fn parse_new_article(body: &[u8]) -> Result<NewArticle, ApiError> {
        let b: PostRequest = parse(body)?;
        Ok(NewArticle::new(b.title, b.link)?)
    }

    fn parse_vote(body: &[u8]) -> Result<Direction, ApiError> {
        parse::<VoteRequest>(body).map(|b| b.direction)
    }

    fn parse_group_change(body: &[u8]) -> Result<GroupChange, ApiError> {
        let b: GroupsRequest = parse(body)?;
        GroupChange::new(b.add, b.remove).map_err(ApiError::invalid)
    }

    #[test]
    fn bodies() {
        let a =
            parse_new_article(br#"{"title":"A title","link":"http://www.google.com"}"#).unwrap();
        assert_eq!(a.title, "A title");
        assert!(parse_new_article(
            format!(r#"{{"title":"{}","link":"http://x.y"}}"#, "é".repeat(200)).as_bytes()
        )
        .is_ok());
        for bad in [
            &br#"{"title":"","link":"http://x.y"}"#[..],
            br#"{"title":"   ","link":"http://x.y"}"#,
            br#"{"title":"a\u0007b","link":"http://x.y"}"#,
            br#"{"title":"t","link":"http://x.y","extra":1}"#,
            br#"{"title":"t"}"#,
            br#"{"title":1,"link":"http://x.y"}"#,
            b"",
        ] {
            assert!(
                parse_new_article(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(parse_new_article(
            format!(r#"{{"title":"{}","link":"http://x.y"}}"#, "é".repeat(201)).as_bytes()
        )
        .is_err());
        assert_eq!(
            parse_vote(br#"{"direction":"down"}"#).unwrap(),
            Direction::Down
        );
        assert!(parse_vote(br#"{"direction":"Up"}"#).is_err());
        assert!(parse_vote(br#"{}"#).is_err());
        let c = parse_group_change(br#"{"add":["b","a","b"]}"#).unwrap();
        assert_eq!(
            (c.add, c.remove),
            (vec!["a".to_string(), "b".into()], vec![])
        );
        assert!(parse_group_change(br#"{"add":["a"],"remove":["a"]}"#).is_err());
        assert!(parse_group_change(br#"{"add":["A"]}"#).is_err());
        assert!(parse_group_change(br#"{"add":[""]}"#).is_err());
        assert!(
            parse_group_change(format!(r#"{{"add":["{}"]}}"#, "a".repeat(33)).as_bytes()).is_err()
        );
        assert!(parse_group_change(br#"{"add":"a"}"#).is_err());
        assert_eq!(parse_group_change(b"{}").unwrap(), GroupChange::default());
    }

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
