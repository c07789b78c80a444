//! `POST /articles/{id}/vote`: the caller's up- or down-vote
//! ([`super::store::vote()`], `vote.lua`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{shown, Caller, JsonBody, Path};
use crate::api::metrics;
use crate::api::operation::{Auth, Method, Operation};
use crate::api::state::ApiState;
use crate::voting::rules::{Direction, VoteOutcome};

/// The body of `POST /articles/{id}/vote`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteRequest {
    /// `up` or `down`.
    #[schema(value_type = crate::voting::rules::Direction)]
    pub direction: Direction,
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
    #[schema(value_type = crate::voting::rules::Direction)]
    pub direction: &'static str,
    /// Whether this call changed the vote.
    pub changed: bool,
}

crate::api::refusal::refusals! {
    /// What `POST /articles/{id}/vote` refuses, beside the answers every route shares.
    pub enum VoteRefusal {

        404 NotFoundError {
            /// no such article
            NotFound = "not_found",
        }
        /// 410: voting on the article closed one week after it was posted.
        410 VotingClosedError {
            /// voting closed one week after the article was posted: its final `votes` and
            /// `score`
            VotingClosed = "voting_closed" {
                /// The article's final votes.
                votes: i64,
                /// The article's final score.
                score: i64,
            },
        }
        429 RateLimitedError retry_after "seconds to wait before retrying" {
            /// too many votes; retry after `Retry-After` seconds; nothing written
            RateLimited = "rate_limited",
        }
    }
}

/// `POST /articles/{id}/vote` (JWT): the template's `VoteArticle` event.
pub const OPERATION: Operation = Operation {
    event: "VoteArticle",
    method: Method::Post,
    path: "/articles/{id}/vote",
    auth: Auth::Jwt,
    refusals: VoteRefusal::REFUSALS,
    replay: None,
};

/// `POST /articles/{id}/vote`: its answer, or a [`VoteRefusal`].
#[utoipa::path(
    post, path = OPERATION.path, tag = "voting", operation_id = "vote_article",
    summary = "Vote on an article",
    description = "Records the caller's up or down vote (one per user, changeable) for one week after the article was posted.",
    params(("id" = String, Path, description = "article id, decimal", pattern = "^[1-9][0-9]{0,11}$")),
    request_body = VoteRequest,
    responses(
        (status = 200, description = "the vote recorded (or unchanged)", body = VoteBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn vote(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<VoteRequest>,
) -> Result<Json<VoteBody>, ApiError> {
    let direction = b.direction;
    match store::vote(&state.store, &id, &user, direction).await? {
        VoteOutcome::Voted {
            votes,
            score,
            changed,
        } => {
            if changed {
                metrics::count(metrics::VOTED, 1);
            }
            Ok(Json(VoteBody {
                article_id: id,
                votes,
                score,
                direction: direction.as_str(),
                changed,
            }))
        }
        VoteOutcome::NotFound => {
            Err(VoteRefusal::NotFound.because(format!("no article {}", shown(&id))))
        }
        VoteOutcome::Closed { votes, score } => Err(VoteRefusal::VotingClosed { votes, score }
            .because("voting on this article closed one week after it was posted")),
        VoteOutcome::RateLimited { retry_after_ms } => Err(VoteRefusal::RateLimited
            .because("too many votes; slow down")
            .retry_after_ms(retry_after_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_vote(body: &[u8]) -> Result<Direction, ApiError> {
        crate::api::extract::parse_json::<VoteRequest>(body).map(|b| b.direction)
    }

    #[test]
    fn bodies() {
        assert_eq!(
            parse_vote(br#"{"direction":"down"}"#).unwrap(),
            Direction::Down
        );
        assert!(parse_vote(br#"{"direction":"Up"}"#).is_err());
        assert!(parse_vote(br#"{}"#).is_err());
    }
}
