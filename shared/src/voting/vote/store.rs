//! `POST /articles/{id}/vote`: one up- or down-vote per user and article while voting is open
//! (`vote.lua`).

use crate::store::scripts::VoteCall;
use redis::Value;

use crate::store::keys::Keys;
use crate::store::scripts::{call_id, int, text, Call};
use crate::store::{Error, Store};
use crate::voting::keys::SiteKeys;
use crate::voting::rules::{
    ArticleId, Direction, Order, VoteOutcome, ONE_WEEK_IN_SECONDS, VOTE_SCORE,
};

/// The reply of `vote.lua`.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// The vote's outcome, and the article's poster when the script names it.
    Done(VoteOutcome, Option<String>),
    /// The groups sent were not the article's: nothing written; these are its groups.
    Regroup(Vec<String>),
}

/// How many times a vote is sent when each reply names other groups (a group change between
/// two sends): the second send carries the groups the first reply named.
const SENDS: usize = 3;

impl VoteCall<'_> {
    /// Parses the script's reply, `<outcome>:<votes>:<score>[:<poster>]` (a poster id may
    /// itself hold ':') or `regroup:<group>,...`: the outcome, and the article's poster when the
    /// script names it (a recorded vote whose script read the article).
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<Reply, Error> {
        const NAME: &str = "vote";
        let reply = text(NAME, reply)?;
        if let Some(groups) = reply.strip_prefix("regroup:") {
            let groups = groups.split(',').filter(|g| !g.is_empty());
            return Ok(Reply::Regroup(groups.map(str::to_string).collect()));
        }
        let mut parts = reply.splitn(4, ':');
        let outcome = parts.next().unwrap_or("");
        let rest: Vec<String> = parts.map(str::to_string).collect();
        let counts = || -> Result<(i64, i64), Error> {
            Ok((int(NAME, rest.first())?, parse_score(NAME, rest.get(1))?))
        };
        let voted = |changed| -> Result<VoteOutcome, Error> {
            let (votes, score) = counts()?;
            Ok(VoteOutcome::Voted {
                votes,
                score,
                changed,
            })
        };
        let outcome = match outcome {
            "changed" => voted(true)?,
            "unchanged" => voted(false)?,
            "not_found" => VoteOutcome::NotFound,
            "closed" => {
                let (votes, score) = counts()?;
                VoteOutcome::Closed { votes, score }
            }
            "rate_limited" => VoteOutcome::RateLimited {
                retry_after_ms: int(NAME, rest.first())?,
            },
            _ => return Err(Error::bad_reply(NAME, &reply)),
        };
        let poster = match outcome {
            VoteOutcome::Voted { .. } => rest.get(2).cloned(),
            _ => None,
        };
        Ok(Reply::Done(outcome, poster))
    }
}

/// A score as the scripts return it: an integer, or a double with an integral value (Redis
/// formats sorted-set scores as doubles).
fn parse_score(script: &str, item: Option<&String>) -> Result<i64, Error> {
    let bad = || Error::bad_reply(script, format!("expected an integral score, got {item:?}"));
    let text = item.ok_or_else(bad)?;
    if let Ok(n) = text.parse::<i64>() {
        return Ok(n);
    }
    let x: f64 = text.parse().map_err(|_| bad())?;
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Ok(x as i64)
    } else {
        Err(bad())
    }
}

/// Records `user_id`'s vote in `direction` on article `article_id` (API form, e.g. `"42"`), in
/// one round trip (one EVALSHA of `vote.lua`): not found → closed → rate limit → repeat
/// (nothing changes) / new vote (±1 vote, ±432) / switch (±2 votes, ±864), the score moved in
/// the site's ranking and in each of the article's groups' rankings. A second round trip when
/// this sandbox does not know the article's groups yet (or they changed): the script then
/// writes nothing and names them, and the vote is sent again with them.
///
/// Source: the book's `article_vote`, with the down-vote of the source blog post on Redis key
/// design, made atomic and one-vote-per-user (see the [module docs](super)).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached: the vote may have been recorded; a
/// retry is safe (a repeat changes nothing). [`Error::Internal`] if the vote record of an open
/// article is missing (deleted or evicted: the script refuses rather than let users vote twice),
/// or when the article's groups changed between each of its three sends.
pub async fn vote(
    store: &Store,
    article_id: &str,
    user_id: &str,
    direction: Direction,
) -> Result<VoteOutcome, Error> {
    let Some(id) = ArticleId::parse(article_id) else {
        return Ok(VoteOutcome::NotFound);
    };
    let cfg = store.config();
    let keys = SiteKeys::of(cfg);
    let mut conn = store.conn().await?;
    // The remembered poster lets the script check the vote record alone (vote.lua); never
    // with the test clock, whose deadline the record's expiry does not follow.
    let memory = store.article_memory();
    // One call, one id, across its sends: a send answered `regroup` wrote nothing.
    let call = call_id();
    let call_answer = Keys::call_answer(&keys.voters(id), &call);
    for _ in 0..SENDS {
        let remembered = memory.get(id.get());
        let poster = match cfg.voting.clock_offset_secs {
            0 => remembered.poster,
            _ => None,
        };
        let group_scores: Vec<String> = remembered
            .groups
            .iter()
            .map(|group| keys.group_ranking(Order::Score, group))
            .collect();
        let reply: Value = VoteCall {
            article: &keys.article(id),
            voters: &keys.voters(id),
            score: &keys.ranking(Order::Score),
            rate: &keys.vote_rate(user_id),
            article_groups: &keys.article_groups(id),
            call_answer: &call_answer,
            group_scores: &group_scores,
            user_id,
            direction: direction.value(),
            member: &id.member(),
            rate_limit: cfg.voting.rate_limit,
            rate_window_ms: cfg.voting.rate_window_ms,
            voting_window_secs: ONE_WEEK_IN_SECONDS,
            vote_score: VOTE_SCORE,
            clock_offset_secs: cfg.voting.clock_offset_secs,
            poster: poster.as_deref().unwrap_or(""),
            call_keep_ms: crate::domain::resend::CALL_KEEP_MS,
            group_names: &remembered.groups,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        match VoteCall::outcome(reply)? {
            Reply::Done(outcome, named) => {
                if let Some(poster) = named {
                    memory.remember_poster(id.get(), &poster);
                }
                return Ok(outcome);
            }
            Reply::Regroup(groups) => memory.remember_groups(id.get(), groups),
        }
    }
    Err(Error::Internal(format!(
        "vote: the groups of article {article_id} changed between each of {SENDS} sends"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(
            parse_score("t", Some(&"1767226296".into())).unwrap(),
            1_767_226_296
        );
        assert_eq!(
            parse_score("t", Some(&"1767226296.0".into())).unwrap(),
            1_767_226_296
        );
        assert!(parse_score("t", Some(&"1.5".into())).is_err());
    }

    #[test]
    fn replies() {
        let reply = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(
            VoteCall::outcome(reply("changed:3:1767227592.0:a:b")).unwrap(),
            Reply::Done(
                VoteOutcome::Voted {
                    votes: 3,
                    score: 1_767_227_592,
                    changed: true
                },
                Some("a:b".to_string())
            )
        );
        assert_eq!(
            VoteCall::outcome(reply("unchanged:1:1767226728")).unwrap(),
            Reply::Done(
                VoteOutcome::Voted {
                    votes: 1,
                    score: 1_767_226_728,
                    changed: false
                },
                None
            )
        );
        assert_eq!(
            VoteCall::outcome(reply("closed:2:7")).unwrap(),
            Reply::Done(VoteOutcome::Closed { votes: 2, score: 7 }, None)
        );
        assert_eq!(
            VoteCall::outcome(reply("rate_limited:1500")).unwrap(),
            Reply::Done(
                VoteOutcome::RateLimited {
                    retry_after_ms: 1500
                },
                None
            )
        );
        assert_eq!(
            VoteCall::outcome(reply("not_found")).unwrap(),
            Reply::Done(VoteOutcome::NotFound, None)
        );
        assert_eq!(
            VoteCall::outcome(reply("regroup:rust,go")).unwrap(),
            Reply::Regroup(vec!["rust".into(), "go".into()])
        );
        assert_eq!(
            VoteCall::outcome(reply("regroup:")).unwrap(),
            Reply::Regroup(vec![])
        );
        assert!(VoteCall::outcome(reply("voted:1:2")).is_err());
    }
}
