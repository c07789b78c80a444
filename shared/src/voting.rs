//! The article-voting site of "Redis in Action" chapter 1, atomic, with down-votes and groups.
//!
//! Source of the rules: josiahcarlson/redis-in-action, `python/ch01_listing_source.py`
//! (`post_article`, `article_vote`, `get_articles`, `add_remove_groups`,
//! `get_group_articles`) and seed 002 (which adds the down-vote). A posted article gets a hash,
//! an entry in the **score** sorted set (posted time + 432, the poster's own vote) and one in the
//! **time** sorted set; a vote within one week ([`ONE_WEEK_IN_SECONDS`]) adds [`VOTE_SCORE`] =
//! 432 = 86,400 s / 200 votes (an article with 200 votes a day keeps its place for a day); pages
//! hold [`ARTICLES_PER_PAGE`] = 25 articles, highest first; a group is a set intersected with
//! the score or time set and cached for 60 s.
//!
//! What this module changes, and why:
//!
//! * **Atomic.** Each step is one Lua script (`lua/article_post.lua`, `lua/vote.lua`,
//!   `lua/article_groups.lua`, `lua/group_page.lua`): the book's separate calls let a crash
//!   leave a `voted:` set without expiry (the race its chapter 3 exercise names), a vote counted
//!   in the score but not in the hash, or a group cache without TTL.
//! * **One vote per user and article.** The book keeps separate up- and down-vote sets, so one
//!   user could hold both. Here the vote record is one hash `user -> 1 | -1`: a repeat in the
//!   same direction changes nothing; a switch moves the vote (votes ±2, score ±864). The poster
//!   holds an up-vote from the start: voting up again is a repeat, voting down is a switch like
//!   anyone's (votes 1 → -1).
//! * **Every vote record expires** at `posted_at + 604800` (`EXPIREAT`, written in the same
//!   script as the record), exactly when voting closes. The article hash, the rankings and the
//!   group sets are the site's content and do not expire.
//! * **Redis clock.** Posting time and the one-week deadline use Redis `TIME` (seconds), never a
//!   Lambda's clock. Voting is open while `now < posted_at + 604800`.
//! * **One hash tag per site**: every key is `<prefix>:{vote:<site>}:...` ([`SiteKeys`]), so
//!   every script and the `ZINTERSTORE` run on a cluster. The price: one site lives in one hash
//!   slot, so on one shard.
//! * **Rate limit**: at most `HONGBAO_VOTE_RATE_LIMIT` vote attempts per user on the whole site in
//!   any `HONGBAO_VOTE_RATE_WINDOW_MS` (sliding-window log in the vote script, on the site's
//!   slot); refused attempts and votes on unknown or closed articles are not counted.
//! * **Ties.** Members of the rankings are the article ids zero-padded to 12 digits
//!   ([`ArticleId::member`]), so among equal scores (or equal posting seconds) `ZRANGE ... REV`
//!   lists the **higher id first**: ids come from an `INCR`, so that is the later post.
//! * **Declared keys only.** Every key a script touches is passed in `KEYS` (ElastiCache
//!   refuses scripts that touch others), so posting runs the `INCR` of the id counter as its
//!   own command before the script, and a page is two round trips: the ranking range (a
//!   `ZRANGE` or `lua/group_page.lua`), then one pipeline of `HMGET`s of the articles.
//! * **A lost vote record is an error, not a second vote.** Inside its window a record can only
//!   be missing if something deleted or evicted it (`volatile-*` eviction policies pick keys
//!   with a TTL); the vote script then answers an error (HTTP 500) instead of recreating the
//!   record and letting earlier voters vote again. Run the cache with `noeviction`, or with
//!   enough memory that it never evicts.
//!
//! **The test clock.** Every script adds `Config::vote_clock_offset_secs` (seconds) to Redis
//! `TIME` before any decision: the one-week deadline, the posting time, the rate-limit window
//! and the group cache's age. The offset is not an environment variable and no request can set
//! it: [`crate::Config::from_env`] always sets 0; only code that builds a `Config` by hand (the
//! integration tests, to act "604,801 s later" or "61 s later") moves it. With 0 the scripts see
//! the Redis clock unchanged. Key expiry (`EXPIREAT`, `EXPIRE`) always runs on the real clock,
//! so with a positive offset a record or cache only lives longer than the logical clock says,
//! and the scripts' own checks still decide.
//!
//! | key (prefix `hb`, tag `{vote:<site>}`) | type | contents | TTL |
//! | --- | --- | --- | --- |
//! | `hb:{vote:S}:article-seq` | string | last article id (`INCR`) | none |
//! | `hb:{vote:S}:article:<m>` | hash | `title`, `link`, `poster`, `posted_at` (Unix s), `votes` | none |
//! | `hb:{vote:S}:article:<m>:voters` | hash | user → `1` / `-1` (the poster's `1` included) | until `posted_at + 604800` |
//! | `hb:{vote:S}:article:<m>:groups` | set | the article's group names | none |
//! | `hb:{vote:S}:score` | sorted set | `<m>` → `posted_at + 432 × votes` | none |
//! | `hb:{vote:S}:time` | sorted set | `<m>` → `posted_at` | none |
//! | `hb:{vote:S}:group:<g>` | set | `<m>` of the group's articles | none |
//! | `hb:{vote:S}:cache:<order>:<g>` | sorted set | the group ∩ ranking (`ZINTERSTORE`) | 60 s |
//! | `hb:{vote:S}:cache:<order>:<g>:at` | string | when that cache was built (Unix ms) | 60 s |
//! | `hb:{vote:S}:rl:<user>` | sorted set | the user's vote attempts (Unix ms) in the window | the window |
//!
//! `<m>` is the article member (id zero-padded to 12 digits), `<order>` is `score` or `time`.

use std::fmt;

use aws_lambda_events::query_map::QueryMap;
use redis::Value;
use serde::Deserialize;

use crate::config::Config;
use crate::error::Error;
use crate::http::ApiError;
use crate::scripts::{self, int, texts};
use crate::store::Store;

/// How long an article can be voted on after it is posted, seconds: one week (the book's
/// `ONE_WEEK_IN_SECONDS`). Also the lifetime of its vote record.
pub const ONE_WEEK_IN_SECONDS: i64 = 7 * 86_400;

/// Score of one vote: 86,400 s / 200 votes = 432 (the book's `VOTE_SCORE`), so 200 votes a day
/// hold an article's place against newer ones.
pub const VOTE_SCORE: i64 = 432;

/// Articles per page (the book's `ARTICLES_PER_PAGE`).
pub const ARTICLES_PER_PAGE: u32 = 25;

/// Highest page number accepted (`page` beyond it is 400): 2,500,000 articles deep.
pub const MAX_PAGE: u32 = 100_000;

/// Longest title, characters (Unicode scalar values).
pub const MAX_TITLE_CHARS: usize = 200;

/// Longest link, characters (a link is ASCII).
pub const MAX_LINK_CHARS: usize = 2048;

/// Longest group name, characters.
pub const MAX_GROUP_NAME_CHARS: usize = 32;

/// Most group names in each of `add` and `remove` of one request.
pub const MAX_GROUPS_PER_REQUEST: usize = 32;

/// Highest article id: ids are stored zero-padded to 12 digits.
pub const MAX_ARTICLE_ID: u64 = 999_999_999_999;

/// Whether `site` is a valid site name: 1 to 32 characters of `[a-z0-9-]`.
pub fn is_site_name(site: &str) -> bool {
    is_group_name(site)
}

/// Whether `name` is a valid group name: 1 to 32 characters of `[a-z0-9-]`.
pub fn is_group_name(name: &str) -> bool {
    (1..=MAX_GROUP_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// An article id: a positive integer from the site's counter, at most [`MAX_ARTICLE_ID`]. The
/// API shows it as decimal text without leading zeros (`"42"`); the rankings and group sets hold
/// it zero-padded to 12 digits ([`ArticleId::member`]) so that byte order is numeric order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArticleId(u64);

impl ArticleId {
    /// The id `n`, if `1 <= n <= MAX_ARTICLE_ID`.
    pub fn new(n: u64) -> Option<Self> {
        (1..=MAX_ARTICLE_ID).contains(&n).then_some(ArticleId(n))
    }

    /// Parses the API form: decimal digits, no sign, no leading zero, at most 12 digits.
    /// Anything else is `None` (the handler answers 404: no such article).
    pub fn parse(text: &str) -> Option<Self> {
        let canonical = !text.is_empty()
            && text.len() <= 12
            && text.bytes().all(|b| b.is_ascii_digit())
            && !text.starts_with('0');
        canonical
            .then(|| text.parse().ok())
            .flatten()
            .and_then(Self::new)
    }

    /// The member in the rankings and group sets: 12 digits, zero-padded (`000000000042`).
    pub fn member(self) -> String {
        format!("{:012}", self.0)
    }

    /// Parses a member ([`ArticleId::member`]) back.
    ///
    /// # Errors
    /// [`Error::Internal`] for anything that is not a 12-digit member.
    pub fn from_member(member: &str) -> Result<Self, Error> {
        (member.len() == 12 && member.bytes().all(|b| b.is_ascii_digit()))
            .then(|| member.parse().ok())
            .flatten()
            .and_then(Self::new)
            .ok_or_else(|| Error::Internal(format!("bad article member {member:?}")))
    }

    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ArticleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The two rankings of the site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By score (`posted_at + 432 × votes`), highest first. The default.
    Score,
    /// By posting time, newest first.
    Time,
}

impl Order {
    /// The API and key name: `score` or `time`.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Score => "score",
            Order::Time => "time",
        }
    }

    /// Parses `score` or `time`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "score" => Some(Order::Score),
            "time" => Some(Order::Time),
            _ => None,
        }
    }
}

/// The direction of a vote (JSON `"up"` / `"down"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// An up-vote: +1 vote, +432 score.
    Up,
    /// A down-vote: -1 vote, -432 score.
    Down,
}

impl Direction {
    /// The stored value: `1` or `-1`.
    pub fn value(self) -> i64 {
        match self {
            Direction::Up => 1,
            Direction::Down => -1,
        }
    }

    /// The API name: `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

/// The key names of one voting site: every key is `<prefix>:{vote:<site>}:...`, one hash tag.
#[derive(Debug, Clone)]
pub struct SiteKeys {
    base: String,
}

impl SiteKeys {
    /// The keys of site `site` under `prefix` (e.g. `hb`, `news`).
    pub fn new(prefix: &str, site: &str) -> Self {
        SiteKeys {
            base: format!("{prefix}:{{vote:{site}}}"),
        }
    }

    /// The keys of the configured site (`HONGBAO_KEY_PREFIX`, `HONGBAO_VOTE_SITE`).
    pub fn of(config: &Config) -> Self {
        Self::new(&config.key_prefix, &config.vote_site)
    }

    /// The article id counter (string, `INCR`).
    pub fn article_seq(&self) -> String {
        format!("{}:article-seq", self.base)
    }

    /// The article hash: `title`, `link`, `poster`, `posted_at` (Unix s), `votes`.
    pub fn article(&self, id: ArticleId) -> String {
        format!("{}:article:{}", self.base, id.member())
    }

    /// The article's vote record: hash user → `1` / `-1`, expiring when voting closes.
    pub fn voters(&self, id: ArticleId) -> String {
        format!("{}:article:{}:voters", self.base, id.member())
    }

    /// The article's groups (set of names).
    pub fn article_groups(&self, id: ArticleId) -> String {
        format!("{}:article:{}:groups", self.base, id.member())
    }

    /// The ranking by `order`: sorted set member → score or posting time.
    pub fn ranking(&self, order: Order) -> String {
        format!("{}:{}", self.base, order.as_str())
    }

    /// The set of the members of group `group`.
    pub fn group(&self, group: &str) -> String {
        format!("{}:group:{group}", self.base)
    }

    /// The cached intersection of group `group` with the ranking by `order`.
    pub fn group_cache(&self, order: Order, group: &str) -> String {
        format!("{}:cache:{}:{group}", self.base, order.as_str())
    }

    /// When [`SiteKeys::group_cache`] was built (Unix ms, on the scripts' clock).
    pub fn group_cache_stamp(&self, order: Order, group: &str) -> String {
        format!("{}:cache:{}:{group}:at", self.base, order.as_str())
    }

    /// The vote rate-limit log of `user_id` (sorted set of attempt times, ms).
    pub fn vote_rate(&self, user_id: &str) -> String {
        format!("{}:rl:{user_id}", self.base)
    }
}

/// A validated `POST /articles` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewArticle {
    /// 1 to 200 characters, not blank, no control characters.
    pub title: String,
    /// An `http` or `https` URL ([`is_link`]), at most 2,048 characters.
    pub link: String,
}

/// A stored article.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// Its id.
    pub id: ArticleId,
    /// Title.
    pub title: String,
    /// Link.
    pub link: String,
    /// The user who posted it.
    pub poster: String,
    /// Posting time, Unix seconds (Redis `TIME`).
    pub posted_at: i64,
    /// Up-votes minus down-votes, the poster's automatic up-vote included.
    pub votes: i64,
}

impl Article {
    /// `posted_at + 432 × votes`: the article's entry in the score ranking.
    pub fn score(&self) -> i64 {
        self.posted_at + VOTE_SCORE * self.votes
    }

    /// When voting closes, Unix seconds: `posted_at + 604800`.
    pub fn voting_closes_at(&self) -> i64 {
        self.posted_at + ONE_WEEK_IN_SECONDS
    }
}

/// The outcome of [`vote`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteOutcome {
    /// The vote is recorded: `changed` is false for a repeat (nothing changed).
    Voted {
        /// Votes after the call.
        votes: i64,
        /// Score after the call.
        score: i64,
        /// Whether this call changed the vote (a new vote or a switch).
        changed: bool,
    },
    /// No such article (including ids of the wrong shape); nothing was written.
    NotFound,
    /// Voting closed (604,800 s after posting, Redis `TIME`); nothing was written.
    Closed {
        /// Final votes.
        votes: i64,
        /// Final score.
        score: i64,
    },
    /// The user made too many vote attempts in the window; nothing was written.
    RateLimited {
        /// Milliseconds until an attempt is allowed again.
        retry_after_ms: i64,
    },
}

/// The outcome of [`set_groups`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupsOutcome {
    /// Done: the article's groups afterwards, sorted.
    Updated(Vec<String>),
    /// No such article; nothing was written.
    NotFound,
    /// The caller is not the poster; nothing was written.
    Forbidden,
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

/// Posts an article by `poster`: the article hash, its vote record holding the poster's up-vote
/// (expiring when voting closes), and its score (`posted_at + 432`) and time entries — one
/// script after an `INCR` of the site's id counter (a crash between the two only skips an id).
///
/// Source: the book's `post_article` (see the [module docs](self)).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the article may or may not exist; a
/// retry posts another one). [`Error::Internal`] when the ids are exhausted or the counter keeps
/// pointing at existing articles.
pub async fn post(store: &Store, poster: &str, new: &NewArticle) -> Result<Article, Error> {
    let cfg = store.config();
    let keys = SiteKeys::of(cfg);
    let mut conn = store.conn().await?;
    for _ in 0..3 {
        let n: u64 = redis::cmd("INCR")
            .arg(keys.article_seq())
            .query_async(&mut conn)
            .await?;
        let id = ArticleId::new(n)
            .ok_or_else(|| Error::Internal(format!("article ids exhausted (counter at {n})")))?;
        let reply: Value = scripts::ARTICLE_POST
            .key(keys.article(id))
            .key(keys.voters(id))
            .key(keys.ranking(Order::Score))
            .key(keys.ranking(Order::Time))
            .arg(id.member())
            .arg(poster)
            .arg(&new.title)
            .arg(&new.link)
            .arg(ONE_WEEK_IN_SECONDS)
            .arg(VOTE_SCORE)
            .arg(cfg.vote_clock_offset_secs)
            .invoke_async(&mut conn)
            .await?;
        let reply = texts("article_post", reply)?;
        match reply.first().map(String::as_str) {
            Some("posted") => {
                return Ok(Article {
                    id,
                    title: new.title.clone(),
                    link: new.link.clone(),
                    poster: poster.to_string(),
                    posted_at: int("article_post", reply.get(1))?,
                    votes: 1,
                })
            }
            Some("id_taken") => {
                tracing::warn!(article_id = %id, "article id counter points at an existing article");
                continue;
            }
            _ => return Err(Error::bad_reply("article_post", format!("{reply:?}"))),
        }
    }
    Err(Error::Internal(
        "could not draw an unused article id".into(),
    ))
}

/// Records `user_id`'s vote in `direction` on article `article_id` (API form, e.g. `"42"`), in
/// one round trip (one EVALSHA of `lua/vote.lua`): not found → closed → rate limit → repeat
/// (nothing changes) / new vote (±1 vote, ±432) / switch (±2 votes, ±864).
///
/// Source: the book's `article_vote`, with seed 002's down-vote, made atomic and
/// one-vote-per-user (see the [module docs](self)).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached: the vote may have been recorded; a
/// retry is safe (a repeat changes nothing). [`Error::Internal`] if the vote record of an open
/// article is missing (deleted or evicted: the script refuses rather than let users vote twice).
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
    let reply: Value = scripts::VOTE
        .key(keys.article(id))
        .key(keys.voters(id))
        .key(keys.ranking(Order::Score))
        .key(keys.vote_rate(user_id))
        .arg(user_id)
        .arg(direction.value())
        .arg(id.member())
        .arg(cfg.vote_rate_limit)
        .arg(cfg.vote_rate_window_ms)
        .arg(ONE_WEEK_IN_SECONDS)
        .arg(VOTE_SCORE)
        .arg(cfg.vote_clock_offset_secs)
        .invoke_async(&mut conn)
        .await?;
    let reply = texts("vote", reply)?;
    let counts = || -> Result<(i64, i64), Error> {
        Ok((
            int("vote", reply.get(1))?,
            parse_score("vote", reply.get(2))?,
        ))
    };
    Ok(match reply.first().map(String::as_str) {
        Some("changed") => {
            let (votes, score) = counts()?;
            VoteOutcome::Voted {
                votes,
                score,
                changed: true,
            }
        }
        Some("unchanged") => {
            let (votes, score) = counts()?;
            VoteOutcome::Voted {
                votes,
                score,
                changed: false,
            }
        }
        Some("not_found") => VoteOutcome::NotFound,
        Some("closed") => {
            let (votes, score) = counts()?;
            VoteOutcome::Closed { votes, score }
        }
        Some("rate_limited") => VoteOutcome::RateLimited {
            retry_after_ms: int("vote", reply.get(1))?,
        },
        _ => return Err(Error::bad_reply("vote", format!("{reply:?}"))),
    })
}

/// The 0-based, inclusive rank range of page `page` (1-based).
fn page_range(page: u32) -> (u64, u64) {
    let start = u64::from(page.max(1) - 1) * u64::from(ARTICLES_PER_PAGE);
    (start, start + u64::from(ARTICLES_PER_PAGE) - 1)
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

/// Page `page` (1-based; [`ARTICLES_PER_PAGE`] per page) of the site's articles by `order`,
/// highest first; equal scores: the higher id (the later post) first. A page past the end is
/// empty. Two round trips (`ZRANGE ... REV`, then the articles' fields); reads only.
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

/// Page `page` of group `group`'s articles by `order`, as [`articles`], through the group's
/// cached intersection with the ranking (rebuilt when older than `HONGBAO_VOTE_GROUP_CACHE_SECS`,
/// 60 s by default: a vote or a group change shows within that time). An unknown group, or a
/// name that is not a group name ([`is_group_name`]), is an empty page and writes nothing.
///
/// Source: the book's `get_group_articles` (see `lua/group_page.lua` for the differences).
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
    let cfg = store.config();
    let keys = SiteKeys::of(cfg);
    let (start, stop) = page_range(page);
    let mut conn = store.conn().await?;
    let reply: Value = scripts::GROUP_PAGE
        .key(keys.group(group))
        .key(keys.ranking(order))
        .key(keys.group_cache(order, group))
        .key(keys.group_cache_stamp(order, group))
        .arg(start)
        .arg(stop)
        .arg(cfg.vote_group_cache_secs)
        .arg(cfg.vote_clock_offset_secs)
        .invoke_async(&mut conn)
        .await?;
    let members = texts("group_page", reply)?;
    load_articles(&mut conn, &keys, &members).await
}

/// A validated group change: names to add the article to and to remove it from (disjoint, each
/// a [`is_group_name`], at most [`MAX_GROUPS_PER_REQUEST`] each, duplicates dropped).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupChange {
    /// Groups to add the article to.
    pub add: Vec<String>,
    /// Groups to remove it from.
    pub remove: Vec<String>,
}

impl GroupChange {
    /// Checks and normalizes (sorts, de-duplicates) a change.
    ///
    /// # Errors
    /// A message naming the problem: a bad name, too many names, a name in both lists.
    pub fn new(add: Vec<String>, remove: Vec<String>) -> Result<Self, String> {
        let clean = |mut names: Vec<String>, field: &str| -> Result<Vec<String>, String> {
            if names.len() > MAX_GROUPS_PER_REQUEST {
                return Err(format!(
                    "{field} holds at most {MAX_GROUPS_PER_REQUEST} group names"
                ));
            }
            if let Some(bad) = names.iter().find(|n| !is_group_name(n)) {
                return Err(format!(
                    "group name {bad:?} in {field} must be 1 to {MAX_GROUP_NAME_CHARS} characters of [a-z0-9-]"
                ));
            }
            names.sort();
            names.dedup();
            Ok(names)
        };
        let (add, remove) = (clean(add, "add")?, clean(remove, "remove")?);
        if let Some(both) = add.iter().find(|n| remove.binary_search(n).is_ok()) {
            return Err(format!("group {both:?} is in both add and remove"));
        }
        Ok(GroupChange { add, remove })
    }
}

/// Adds article `article_id` (API form) to the groups of `change.add` and removes it from those
/// of `change.remove`, if `user_id` posted it; one script.
///
/// Source: the book's `add_remove_groups`, restricted to the poster, plus the article's own set
/// of groups for the answer.
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
    let mut inv = scripts::ARTICLE_GROUPS.key(keys.article(id));
    inv.key(keys.article_groups(id))
        .arg(user_id)
        .arg(id.member())
        .arg(change.add.len());
    for name in change.add.iter().chain(&change.remove) {
        inv.key(keys.group(name)).arg(name);
    }
    let mut conn = store.conn().await?;
    let mut reply = texts("article_groups", inv.invoke_async(&mut conn).await?)?;
    match reply.first().map(String::as_str) {
        Some("ok") => {
            let mut groups = reply.split_off(1);
            groups.sort();
            Ok(GroupsOutcome::Updated(groups))
        }
        Some("not_found") => Ok(GroupsOutcome::NotFound),
        Some("forbidden") => Ok(GroupsOutcome::Forbidden),
        _ => Err(Error::bad_reply("article_groups", format!("{reply:?}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Request validation for the HTTP handler (`crate::handlers::vote`): bad input is 400
// `invalid_request` and nothing is written.

/// Whether `link` is an `http` or `https` URL this site accepts: at most [`MAX_LINK_CHARS`]
/// visible ASCII characters (no spaces; internationalized names in punycode, other characters
/// percent-encoded), scheme `http://` or `https://` (any case), then a host of dot-separated
/// labels of `[A-Za-z0-9-]` (or a bracketed IPv6 address) with an optional port 1..=65535, then
/// optionally a path, query or fragment. User info (`user@host`) is refused: it disguises the
/// real host.
pub fn is_link(link: &str) -> bool {
    if link.len() > MAX_LINK_CHARS || !link.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    let lower = link.get(..8).unwrap_or(link).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &link[8..]
    } else if lower.starts_with("http://") {
        &link[7..]
    } else {
        return false;
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (host_ok, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((addr, after)) = v6.split_once(']') else {
            return false;
        };
        let addr_ok = !addr.is_empty()
            && addr
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        match after {
            "" => (addr_ok, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (addr_ok, Some(port)),
                None => return false,
            },
        }
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        (
            !host.is_empty() && host.len() <= 253 && host.split('.').all(label_ok),
            port,
        )
    };
    let port_ok = port.is_none_or(|p| {
        (1..=5).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65_535).contains(&n))
    });
    host_ok && port_ok
}

/// The body of `POST /articles`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostBody {
    title: String,
    link: String,
}

/// The body of `POST /articles/{id}/vote`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VoteBody {
    direction: Direction,
}

/// The body of `PUT /articles/{id}/groups`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupsBody {
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("a JSON body is required"));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))
}

/// Checks a `POST /articles` body `{"title", "link"}`: the title 1 to [`MAX_TITLE_CHARS`]
/// characters, not only white space, without control characters; the link an [`is_link`].
///
/// # Errors
/// 400 `invalid_request` naming the problem (unknown fields and wrong types included).
pub fn parse_new_article(body: &[u8]) -> Result<NewArticle, ApiError> {
    let b: PostBody = json(body)?;
    let chars = b.title.chars().count();
    if !(1..=MAX_TITLE_CHARS).contains(&chars) || b.title.trim().is_empty() {
        return Err(ApiError::invalid(format!(
            "title must be 1 to {MAX_TITLE_CHARS} characters and not blank"
        )));
    }
    if b.title.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "title must not contain control characters",
        ));
    }
    if !is_link(&b.link) {
        return Err(ApiError::invalid(format!(
            "link must be an http or https URL of at most {MAX_LINK_CHARS} visible ASCII characters"
        )));
    }
    Ok(NewArticle {
        title: b.title,
        link: b.link,
    })
}

/// Checks a `POST /articles/{id}/vote` body `{"direction": "up" | "down"}`.
///
/// # Errors
/// 400 `invalid_request`.
pub fn parse_vote(body: &[u8]) -> Result<Direction, ApiError> {
    json::<VoteBody>(body).map(|b| b.direction)
}

/// Checks a `PUT /articles/{id}/groups` body `{"add": [...], "remove": [...]}` (each optional).
///
/// # Errors
/// 400 `invalid_request` ([`GroupChange::new`]'s rules, unknown fields, wrong types).
pub fn parse_group_change(body: &[u8]) -> Result<GroupChange, ApiError> {
    let b: GroupsBody = json(body)?;
    GroupChange::new(b.add, b.remove).map_err(ApiError::invalid)
}

/// Checks the query of a list route: `order` (`score`, the default, or `time`) and `page`
/// (1..=[`MAX_PAGE`], default 1, decimal digits), each at most once, nothing else.
///
/// # Errors
/// 400 `invalid_request` naming the parameter.
pub fn parse_page_query(query: Option<&QueryMap>) -> Result<(Order, u32), ApiError> {
    let (mut order, mut page) = (None, None);
    for (name, value) in query.into_iter().flat_map(QueryMap::iter) {
        match name {
            "order" if order.is_none() => {
                order = Some(
                    Order::parse(value)
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

    #[test]
    fn article_ids() {
        let id = ArticleId::parse("42").unwrap();
        assert_eq!(
            (id.get(), id.member(), id.to_string()),
            (42, "000000000042".into(), "42".into())
        );
        assert_eq!(ArticleId::from_member("000000000042").unwrap(), id);
        for bad in [
            "",
            "0",
            "042",
            "-1",
            "+1",
            "1.0",
            "abc",
            "1000000000000",
            " 1",
        ] {
            assert_eq!(ArticleId::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            ArticleId::parse("999999999999").map(ArticleId::get),
            Some(MAX_ARTICLE_ID)
        );
        assert!(ArticleId::from_member("42").is_err());
        assert!(ArticleId::from_member("000000000000").is_err());
        // Byte order of members is numeric order.
        assert!(ArticleId::parse("9").unwrap().member() < ArticleId::parse("10").unwrap().member());
    }

    #[test]
    fn links() {
        for ok in [
            "http://example.com",
            "https://example.com/",
            "HTTPS://Example.COM:8443/a/b?c=d&e=%20#frag",
            "http://[::1]:8080/x",
            "http://127.0.0.1/",
            "https://xn--bcher-kva.example/",
            "http://example.com.",
        ] {
            assert!(is_link(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "javascript:alert(1)",
            "http://",
            "https:///path",
            "http://exa mple.com",
            "http://user@example.com/",
            "http://example.com:0/",
            "http://example.com:65536/",
            "http://example.com:/",
            "http://-bad-.com/",
            "http://a..b/",
            "http://[zz]/",
            "https://bücher.example/",
            "http://example.com/\n",
        ] {
            assert!(!is_link(bad), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_LINK_CHARS - 20));
        assert_eq!(long.len(), MAX_LINK_CHARS);
        assert!(is_link(&long));
        assert!(!is_link(&format!("{long}a")));
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
        let q = |s: &str| s.parse::<QueryMap>().unwrap();
        assert_eq!(parse_page_query(None).unwrap(), (Order::Score, 1));
        assert_eq!(
            parse_page_query(Some(&q("order=time&page=2"))).unwrap(),
            (Order::Time, 2)
        );
        assert_eq!(
            parse_page_query(Some(&q("page=100000"))).unwrap(),
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
            assert!(parse_page_query(Some(&q(bad))).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_share_the_site_tag() {
        let k = SiteKeys::new("hb", "news");
        let id = ArticleId::new(7).unwrap();
        for key in [
            k.article_seq(),
            k.article(id),
            k.voters(id),
            k.article_groups(id),
            k.ranking(Order::Score),
            k.ranking(Order::Time),
            k.group("rust"),
            k.group_cache(Order::Time, "rust"),
            k.group_cache_stamp(Order::Score, "rust"),
            k.vote_rate("a{b}"),
        ] {
            assert!(key.starts_with("hb:{vote:news}:"), "{key}");
        }
        assert_eq!(k.voters(id), "hb:{vote:news}:article:000000000007:voters");
    }

    #[test]
    fn config() {
        let c = Config::default();
        assert_eq!(
            (
                c.vote_site.as_str(),
                c.vote_rate_limit,
                c.vote_rate_window_ms
            ),
            ("news", 30, 60_000)
        );
        assert_eq!((c.vote_group_cache_secs, c.vote_clock_offset_secs), (60, 0));
        assert!(
            Config::from_lookup(|n| (n == "HONGBAO_VOTE_SITE").then(|| "News".into())).is_err()
        );
        assert!(
            Config::from_lookup(|n| (n == "HONGBAO_VOTE_SITE").then(|| "a{b}".into())).is_err()
        );
        assert!(
            Config::from_lookup(|n| (n == "HONGBAO_VOTE_GROUP_CACHE_SECS").then(|| "0".into()))
                .is_err()
        );
        let c = Config::from_lookup(|n| (n == "HONGBAO_VOTE_SITE").then(|| "my-site-2".into()))
            .unwrap();
        assert_eq!(c.vote_site, "my-site-2");
    }

    #[test]
    fn scores_and_pages() {
        let a = Article {
            id: ArticleId::new(1).unwrap(),
            title: "t".into(),
            link: "http://x.y".into(),
            poster: "p".into(),
            posted_at: 1_331_382_699,
            votes: 528,
        };
        assert_eq!(a.score(), 1_331_382_699 + 528 * 432);
        assert_eq!(a.voting_closes_at(), 1_331_382_699 + 604_800);
        assert_eq!(page_range(1), (0, 24));
        assert_eq!(page_range(2), (25, 49));
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
}
