//! `GET /articles` and `GET /groups/{group}/articles`: the site's pages, by score or time, and a
//! group's from the group's own ranking (`group_page.lua`; reads only, apart from a
//! ranking's one-time build for a group made before groups kept rankings).

use crate::store::scripts::GroupPageCall;
use redis::Value;

use crate::store::scripts::{texts, Call};
use crate::store::{Error, Store};
use crate::voting::keys::SiteKeys;
use crate::voting::rules::{is_group_name, page_range, Article, ArticleId, Order};

impl GroupPageCall<'_> {
    /// Parses the script's reply: the page's article members, highest first.
    ///
    /// # Errors
    /// [`Error::Internal`] when the reply is not a flat array of members.
    fn members(reply: Value) -> Result<Vec<String>, Error> {
        texts("group_page", reply)
    }
}

/// Loads the articles of `members` (ranking members, in order) with one pipeline of `HMGET`s.
async fn load_articles(
    conn: &mut crate::store::Conn,
    keys: &SiteKeys,
    members: &[String],
) -> Result<Vec<Article>, Error> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let ids = members
        .iter()
        .map(|m| ArticleId::from_member(m))
        .collect::<Result<Vec<_>, _>>()?;
    let mut pipe = redis::pipe();
    for id in &ids {
        pipe.cmd("HMGET").arg(keys.article(*id)).arg(&[
            "title",
            "link",
            "poster",
            "posted_at",
            "votes",
        ]);
    }
    let rows: Vec<Vec<Option<String>>> = pipe.query_async(conn).await?;
    if rows.len() != ids.len() {
        return Err(Error::bad_reply(
            "HMGET pipeline",
            format!("{} rows for {} ids", rows.len(), ids.len()),
        ));
    }
    ids.into_iter()
        .zip(rows)
        .map(|(id, row)| {
            let missing =
                || Error::Internal(format!("article {id} is ranked but its hash is incomplete"));
            let mut it = row.into_iter();
            let mut next = || it.next().flatten().ok_or_else(missing);
            let (title, link, poster) = (next()?, next()?, next()?);
            let posted_at = next()?.parse().map_err(|_| missing())?;
            let votes = next()?.parse().map_err(|_| missing())?;
            Ok(Article {
                id,
                title,
                link,
                poster,
                posted_at,
                votes,
            })
        })
        .collect()
}

/// Page `page` (1-based; [`ARTICLES_PER_PAGE`](crate::voting::rules::ARTICLES_PER_PAGE) per page) of the
/// site's articles by `order`, highest first; equal scores: the higher id (the later post)
/// first. A page past the end is empty. Two round trips (`ZRANGE ... REV`, then the articles'
/// fields); reads only.
///
/// Source: the book's `get_articles`, with `ZRANGE ... REV` instead of the deprecated
/// `ZREVRANGE`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn articles(store: &Store, order: Order, page: u32) -> Result<Vec<Article>, Error> {
    let keys = SiteKeys::of(store.config());
    let (start, stop) = page_range(page);
    let mut conn = store.conn().await?;
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.ranking(order))
        .arg(start)
        .arg(stop)
        .arg("REV")
        .query_async(&mut conn)
        .await?;
    load_articles(&mut conn, &keys, &members).await
}

/// Page `page` of group `group`'s articles by `order`, as [`articles`], from the group's own
/// ranking (kept by the group change and the vote: a vote or a group change shows at once).
/// Two round trips whatever the group's size (`group_page.lua`, then the articles' fields).
/// An unknown group, or a name that is not a group name ([`is_group_name`]), is an empty page
/// and writes nothing.
///
/// Source: the book's `get_group_articles` (see `group_page.lua` for the differences).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn group_articles(
    store: &Store,
    group: &str,
    order: Order,
    page: u32,
) -> Result<Vec<Article>, Error> {
    if !is_group_name(group) {
        return Ok(Vec::new());
    }
    let keys = SiteKeys::of(store.config());
    let (start, stop) = page_range(page);
    let mut conn = store.conn().await?;
    let reply: Value = GroupPageCall {
        group: &keys.group(group),
        site_ranking: &keys.ranking(order),
        group_ranking: &keys.group_ranking(order, group),
        first_rank: start,
        last_rank: stop,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    let members = GroupPageCall::members(reply)?;
    load_articles(&mut conn, &keys, &members).await
}
