//! `PUT /articles/{id}/groups`: the poster adds the article to groups or removes it
//! ([`super::store::set_groups`], `article_groups.lua`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::store;
use crate::api::error::ApiError;
use crate::api::extract::{shown, Caller, JsonBody, Path};
use crate::api::operation::{Auth, Method, Operation};
use crate::api::refusal::Limit;
use crate::api::state::ApiState;
use crate::voting::rules::{GroupChange, GroupsOutcome};

/// A group name: 1 to 32 characters of `[a-z0-9-]`.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(pattern = "^[a-z0-9-]{1,32}$")]
pub struct GroupName(pub String);

/// The names of `groups`.
fn names(groups: Vec<GroupName>) -> Vec<String> {
    groups.into_iter().map(|g| g.0).collect()
}

/// The body of `PUT /articles/{id}/groups`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupsRequest {
    /// Groups to add the article to (at most 16).
    #[serde(default)]
    #[schema(max_items = 16)]
    pub add: Vec<GroupName>,
    /// Groups to remove it from (at most 16, none of them in `add`).
    #[serde(default)]
    #[schema(max_items = 16)]
    pub remove: Vec<GroupName>,
}

/// The answer to a group change.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GroupsBody {
    /// The article.
    pub article_id: String,
    /// Its groups afterwards, sorted.
    pub groups: Vec<String>,
}

crate::api::refusal::refusals! {
    /// What `PUT /articles/{id}/groups` refuses, beside the answers every route shares.
    pub enum GroupsRefusal {

        403 ForbiddenError {
            /// only the poster may change its groups
            Forbidden = "forbidden",
        }
        404 NotFoundError {
            /// no such article
            NotFound = "not_found",
        }
        /// 409: the change would put the article in more groups than allowed.
        409 TooManyGroupsError {
            /// the article would pass `limit` groups
            TooManyGroups = "too_many_groups" {
                /// The most groups an article may be in (`HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`).
                limit: Limit,
            },
        }
    }
}

/// `PUT /articles/{id}/groups` (JWT): the template's `SetArticleGroups` event.
pub const OPERATION: Operation = Operation {
    event: "SetArticleGroups",
    method: Method::Put,
    path: "/articles/{id}/groups",
    auth: Auth::Jwt,
    refusals: GroupsRefusal::REFUSALS,
    replay: None,
};

/// `PUT /articles/{id}/groups`: its answer, or a [`GroupsRefusal`].
#[utoipa::path(
    put, path = OPERATION.path, tag = "voting", operation_id = "set_article_groups",
    summary = "Change an article's groups",
    description = "Adds the article to and removes it from groups; only its poster may.",
    params(("id" = String, Path, description = "article id, decimal", pattern = "^[1-9][0-9]{0,11}$")),
    request_body = GroupsRequest,
    responses(
        (status = 200, description = "the article's groups afterwards", body = GroupsBody),
        (status = 400, description = "`invalid_request`: nothing written", body = crate::api::schemas::InvalidRequestError),
    )
)]
pub(crate) async fn set_groups(
    State(state): State<ApiState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<GroupsRequest>,
) -> Result<Json<GroupsBody>, ApiError> {
    let change = GroupChange::new(names(b.add), names(b.remove)).map_err(ApiError::invalid)?;
    match store::set_groups(&state.store, &id, &user, &change).await? {
        GroupsOutcome::Updated(groups) => Ok(Json(GroupsBody {
            article_id: id,
            groups,
        })),
        GroupsOutcome::NotFound => {
            Err(GroupsRefusal::NotFound.because(format!("no article {}", shown(&id))))
        }
        GroupsOutcome::Forbidden => {
            Err(GroupsRefusal::Forbidden
                .because("only the poster of an article may change its groups"))
        }
        GroupsOutcome::TooManyGroups { current } => {
            let max = state.store.config().voting.max_groups_per_article;
            Err(
                GroupsRefusal::TooManyGroups { limit: Limit(max) }.because(format!(
                "an article may be in at most {max} groups (HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE); \
                 it is in {current}"
            )),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_group_change(body: &[u8]) -> Result<GroupChange, ApiError> {
        let b: GroupsRequest = crate::api::extract::parse_json(body)?;
        GroupChange::new(names(b.add), names(b.remove)).map_err(ApiError::invalid)
    }

    #[test]
    fn bodies() {
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
}
