//! `POST /articles`: post an article (`article_post.lua`, after an `INCR` of the site's id
//! counter).

use crate::store::scripts::ArticlePostCall;
use redis::Value;

use crate::store::scripts::{int, texts, Call};
use crate::store::{Error, Store};
use crate::voting::keys::SiteKeys;
use crate::voting::rules::{
    Article, ArticleId, NewArticle, Order, PostOutcome, ARTICLES_WINDOW_MS, ONE_WEEK_IN_SECONDS,
    VOTE_SCORE,
};

/// What `article_post.lua` answers.
#[derive(Debug, PartialEq, Eq)]
enum PostReply {
    /// Posted at this Redis `TIME` (Unix seconds, test offset included).
    Posted { posted_at: i64 },
    /// The poster's quota is used up for this many ms; nothing written.
    RateLimited { retry_after_ms: i64 },
    /// The drawn id already names an article; nothing written.
    IdTaken,
}

impl ArticlePostCall<'_> {
    /// Parses the script's reply: `["posted", <posted_at>]`, `["rate_limited",
    /// <retry_after_ms>]` or `["id_taken"]`.
    ///
    /// # Errors
    /// [`Error::Internal`] for any other reply.
    fn outcome(reply: Value) -> Result<PostReply, Error> {
        const NAME: &str = "article_post";
        let reply = texts(NAME, reply)?;
        match reply.first().map(String::as_str) {
            Some("posted") => Ok(PostReply::Posted {
                posted_at: int(NAME, reply.get(1))?,
            }),
            Some("rate_limited") => Ok(PostReply::RateLimited {
                retry_after_ms: int(NAME, reply.get(1))?,
            }),
            Some("id_taken") => Ok(PostReply::IdTaken),
            _ => Err(Error::bad_reply(NAME, format!("{reply:?}"))),
        }
    }
}

/// Posts an article by `poster`: the article hash, its vote record holding the poster's up-vote
/// (expiring when voting closes), and its score (`posted_at + 432`) and time entries — one
/// script after an `INCR` of the site's id counter (a crash between the two only skips an id).
///
/// Source: the book's `post_article` (see the [module docs](super)).
///
/// [`PostOutcome::RateLimited`] when the poster's `HONGBAO_VOTE_ARTICLES_PER_DAY` is used up
/// (checked and counted in the script; nothing written).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the article may or may not exist; a
/// client's retry posts another one; a re-send of the same script call by the cluster client is
/// answered with the article the first run posted). [`Error::Internal`] when the ids are exhausted or the counter keeps
/// pointing at existing articles.
pub async fn post(store: &Store, poster: &str, new: &NewArticle) -> Result<PostOutcome, Error> {
    let cfg = store.config();
    let keys = SiteKeys::of(cfg);
    let quota = cfg.voting.articles_per_day;
    let mut conn = store.conn().await?;
    // The quota is decided in the script; this read first spares the id counter when it is
    // already used up (only posts racing at the limit can skip an id).
    if quota > 0 {
        let (used, left): (Option<u64>, i64) = redis::pipe()
            .get(keys.post_quota(poster))
            .pttl(keys.post_quota(poster))
            .query_async(&mut conn)
            .await?;
        if used.is_some_and(|u| u >= u64::from(quota)) && left > 0 {
            return Ok(PostOutcome::RateLimited {
                retry_after_ms: left,
            });
        }
    }
    for _ in 0..3 {
        let n: u64 = redis::cmd("INCR")
            .arg(keys.article_seq())
            .query_async(&mut conn)
            .await?;
        let id = ArticleId::new(n)
            .ok_or_else(|| Error::Internal(format!("article ids exhausted (counter at {n})")))?;
        let reply: Value = ArticlePostCall {
            article: &keys.article(id),
            voters: &keys.voters(id),
            score: &keys.ranking(Order::Score),
            time: &keys.ranking(Order::Time),
            post_quota: &keys.post_quota(poster),
            member: &id.member(),
            poster,
            title: &new.title,
            link: &new.link,
            voting_window_secs: ONE_WEEK_IN_SECONDS,
            vote_score: VOTE_SCORE,
            clock_offset_secs: cfg.voting.clock_offset_secs,
            quota,
            quota_window_ms: ARTICLES_WINDOW_MS,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        match ArticlePostCall::outcome(reply)? {
            PostReply::Posted { posted_at } => {
                return Ok(PostOutcome::Posted(Article {
                    id,
                    title: new.title.clone(),
                    link: new.link.clone(),
                    poster: poster.to_string(),
                    posted_at,
                    votes: 1,
                }))
            }
            PostReply::RateLimited { retry_after_ms } => {
                return Ok(PostOutcome::RateLimited { retry_after_ms })
            }
            PostReply::IdTaken => {
                tracing::warn!(article_id = %id, "article id counter points at an existing article");
            }
        }
    }
    Err(Error::Internal(
        "could not draw an unused article id".into(),
    ))
}
