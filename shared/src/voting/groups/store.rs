//! `PUT /articles/{id}/groups`: the poster adds an article to groups or removes it
//! (`article_groups.lua`).

use crate::store::scripts::ArticleGroupsCall;
use redis::Value;

use crate::store::keys::Keys;
use crate::store::scripts::{call_id, int, texts, Call};
use crate::store::{Error, Store};
use crate::voting::keys::SiteKeys;
use crate::voting::rules::{ArticleId, GroupChange, GroupsOutcome, Order};

impl ArticleGroupsCall<'_> {
    /// Parses the script's reply: `["ok", <group>...]` (the groups sorted here),
    /// `["not_found"]`, `["forbidden"]` or `["too_many_groups", <current>]`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<GroupsOutcome, Error> {
        const NAME: &str = "article_groups";
        let mut reply = texts(NAME, reply)?;
        match reply.first().map(String::as_str) {
            Some("ok") => {
                let mut groups = reply.split_off(1);
                groups.sort();
                Ok(GroupsOutcome::Updated(groups))
            }
            Some("not_found") => Ok(GroupsOutcome::NotFound),
            Some("forbidden") => Ok(GroupsOutcome::Forbidden),
            Some("too_many_groups") => Ok(GroupsOutcome::TooManyGroups {
                current: int(NAME, reply.get(1))?.max(0) as u64,
            }),
            _ => Err(Error::bad_reply(NAME, format!("{reply:?}"))),
        }
    }
}

/// Adds article `article_id` (API form) to the groups of `change.add` and removes it from those
/// of `change.remove`, if `user_id` posted it; one script.
///
/// Source: the book's `add_remove_groups`, restricted to the poster, plus the article's own set
/// of groups for the answer and each group's own rankings (see the [module docs](super)).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (retrying is safe: the change is
/// idempotent).
pub async fn set_groups(
    store: &Store,
    article_id: &str,
    user_id: &str,
    change: &GroupChange,
) -> Result<GroupsOutcome, Error> {
    let Some(id) = ArticleId::parse(article_id) else {
        return Ok(GroupsOutcome::NotFound);
    };
    let keys = SiteKeys::of(store.config());
    let group_names: Vec<&str> = change
        .add
        .iter()
        .chain(&change.remove)
        .map(String::as_str)
        .collect();
    let each = |key: &dyn Fn(&str) -> String| -> Vec<String> {
        group_names.iter().map(|name| key(name)).collect()
    };
    let call_answer = Keys::call_answer(&keys.article_groups(id), &call_id());
    let call = ArticleGroupsCall {
        article: &keys.article(id),
        article_groups: &keys.article_groups(id),
        score: &keys.ranking(Order::Score),
        time: &keys.ranking(Order::Time),
        call_answer: &call_answer,
        group_sets: &each(&|name| keys.group(name)),
        group_scores: &each(&|name| keys.group_ranking(Order::Score, name)),
        group_times: &each(&|name| keys.group_ranking(Order::Time, name)),
        user_id,
        member: &id.member(),
        call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
        adds: change.add.len(),
        group_names: &group_names,
        max_groups: store.config().voting.max_groups_per_article,
    };
    let mut conn = store.conn().await?;
    ArticleGroupsCall::outcome(call.invocation().invoke_async(&mut conn).await?)
}
