//! `POST /articles`: post an article with the poster's own up-vote
//! ([`super::store::post()`], `article_post.lua`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{Caller, JsonBody};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::voting::pages::http::ArticleBody;
use crate::voting::rules::{NewArticle, PostOutcome};

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

crate::api::refusal::refusals! {
    /// What `POST /articles` refuses, beside the answers every route shares.
    pub enum PostRefusal {
        429 RateLimitedError retry_after "seconds to wait before retrying" {
            /// `HONGBAO_VOTE_ARTICLES_PER_DAY` is used up; retry after `Retry-After` seconds;
            /// nothing written
            RateLimited = "rate_limited",
        }
    }
}

/// `POST /articles` (JWT): the template's `PostArticle` event.
pub const OPERATION: Operation = Operation {
    event: "PostArticle",
    method: Method::Post,
    path: "/articles",
    auth: Auth::Jwt,
    refusals: PostRefusal::REFUSALS,
    replay: None,
};

/// `POST /articles`: its answer, or a [`PostRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "voting", operation_id = "post_article",
    summary = "Post an article",
    description = "Posts an article with the poster's own up-vote: `votes` 1 and `score` = posted_at (Unix seconds) + 432.",
    request_body = PostRequest,
    responses(
        (status = 201, description = "posted with the poster's own up-vote", body = ArticleBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn post_article(
    State(state): State<ApiState>,
    Caller(user): Caller,
    JsonBody(b): JsonBody<PostRequest>,
) -> Result<(StatusCode, Json<ArticleBody>), ApiError> {
    let new = NewArticle::new(b.title, b.link)?;
    let posted = store::post(&state.store, &user, &new).await.map_err(|e| {
        ApiError::from(e).on_unavailable(
            "the article may have been posted: a retry may post it a second time (look at GET /articles?order=time first)",
        )
    })?;
    match posted {
        PostOutcome::Posted(article) => {
            metrics::count(metrics::ARTICLE_POSTED, 1);
            Ok((StatusCode::CREATED, Json(ArticleBody::from(&article))))
        }
        PostOutcome::RateLimited { retry_after_ms } => Err(PostRefusal::RateLimited
            .because(format!(
                "at most {} articles per user per 24 h (HONGBAO_VOTE_ARTICLES_PER_DAY)",
                state.store.config().voting.articles_per_day
            ))
            .retry_after_ms(retry_after_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_new_article(body: &[u8]) -> Result<NewArticle, ApiError> {
        let b: PostRequest = crate::api::extract::parse_json(body)?;
        Ok(NewArticle::new(b.title, b.link)?)
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
    }
}
