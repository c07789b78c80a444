//! The article-voting site of "Redis in Action" chapter 1, atomic, with down-votes and groups.
//!
//! Source of the rules: josiahcarlson/redis-in-action, `python/ch01_listing_source.py`
//! (`post_article`, `article_vote`, `get_articles`, `add_remove_groups`, `get_group_articles`) and
//! seed 002, the source blog post on Redis key design (which adds the down-vote). A posted
//! article gets a hash, an entry in the **score** sorted set (posted time + 432, the poster's
//! own vote) and one in the **time** sorted set; a vote within one week
//! ([`ONE_WEEK_IN_SECONDS`]) adds [`VOTE_SCORE`] = 432 = 86,400 s / 200 votes (an article with
//! 200 votes a day keeps its place for a day); pages hold [`ARTICLES_PER_PAGE`] = 25 articles,
//! highest first; a group is a set intersected with the score or time set and cached for 60 s
//! (here each group keeps its own rankings instead, below).
//!
//! What this module changes, and why:
//!
//! * **Atomic.** Each step is one Lua script (`post/article_post.lua`, `vote/vote.lua`,
//!   `groups/article_groups.lua`, `pages/group_page.lua`): the book's separate calls let a crash
//!   leave a `voted:` set without expiry (the race its chapter 3 exercise names), a vote counted
//!   in the score but not in the hash.
//! * **A group's page costs a page, not the group.** The book rebuilds a group's ranking (a
//!   `ZINTERSTORE` of the group set with the site's ranking) once a minute, so a page of a
//!   10,000-article group costs milliseconds of the site's one shard and shows votes a minute
//!   late. Here each group keeps its own rankings by score and by time: an article joining a
//!   group is copied in with its entries in the site's rankings, one leaving is removed, and a
//!   vote moves the score in each of the article's groups (at most
//!   `HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`). The vote names the article's groups as its sandbox
//!   remembers them (`vote/memory.rs`); the script checks them before it writes and, when they
//!   differ, writes nothing and names the article's groups, and the vote is sent again with
//!   them. A group made before it kept rankings has them built on its first page (once).
//! * **One vote per user and article.** The book keeps separate up- and down-vote sets, so one
//!   user could hold both. Here the vote record is one hash `user -> 1 | -1`: a repeat in the
//!   same direction changes nothing; a switch moves the vote (votes ±2, score ±864). The poster
//!   holds an up-vote from the start: voting up again is a repeat, voting down is a switch like
//!   anyone's (votes 1 → -1).
//! * **Every vote record expires** when voting closes: `PEXPIREAT (posted_at + 604800) × 1000
//!   − 1`, written in the same script as the record, so it lives exactly while Redis `TIME` <
//!   the deadline. The article hash, the rankings and the group sets are the site's content
//!   and do not expire.
//! * **Redis clock.** Posting time and the one-week deadline use Redis `TIME` (seconds), never a
//!   Lambda's clock. Voting is open while `now < posted_at + 604800`.
//! * **"Open" from the record alone.** A sandbox remembers the poster of each article it has
//!   voted on (`vote/memory.rs`; a poster never changes) and sends it with its next votes: the
//!   script's one HMGET of the record (caller, poster) then says "open" (the record lives
//!   exactly that long and always holds the poster's vote) and gives the caller's earlier
//!   vote, without the article hash or `TIME`. Without the poster (a sandbox's first vote on
//!   the article, or the test clock below), or when the record holds no vote of it, the script
//!   reads the article and `TIME` as the book's check does, and names the poster in its reply.
//! * **One hash tag per site**: every key is `<prefix>:{vote:<site>}:...` ([`SiteKeys`]), so
//!   every script and the `ZINTERSTORE` run on a cluster. The price: one site lives in one hash
//!   slot, so on one shard.
//! * **Rate limit**: `HONGBAO_VOTE_RATE_LIMIT` vote attempts per user on the whole site per
//!   `HONGBAO_VOTE_RATE_WINDOW_MS` (`lua/rate_limit.lua`, a fixed window opened by the user's
//!   first attempt; one counter per user on the site's slot, expiring with the window);
//!   refused attempts and votes on unknown or closed articles are not counted.
//! * **Ties.** Members of the rankings are the article ids zero-padded to 12 digits
//!   ([`ArticleId::member`]), so among equal scores (or equal posting seconds) `ZRANGE ... REV`
//!   lists the **higher id first**: ids come from an `INCR`, so that is the later post.
//! * **Declared keys only.** Every key a script touches is passed in `KEYS` (ElastiCache
//!   refuses scripts that touch others), so posting runs the `INCR` of the id counter as its
//!   own command before the script, a page is two round trips: the ranking range (a
//!   `ZRANGE` or `group_page.lua`), then one pipeline of `HMGET`s of the articles, and a
//!   vote names the article's group rankings it moves.
//! * **A lost vote record is an error, not a second vote.** Inside its window a record can only
//!   be missing if something deleted or evicted it (`volatile-*` eviction policies pick keys
//!   with a TTL); the vote script then answers an error (HTTP 500) instead of recreating the
//!   record and letting earlier voters vote again. Run the cache with `noeviction`, or with
//!   enough memory that it never evicts.
//!
//! **The test clock.** Every script adds `VotingRules::clock_offset_secs` (seconds) to Redis
//! `TIME` before any decision: the one-week deadline, the posting time and the rate-limit
//! window. The offset is not an environment variable and no request can set
//! it: [`VotingRules::from_lookup`] always sets 0; only code that builds the rules by hand (the
//! integration tests, to act "604,801 s later") moves it. With 0 the scripts see
//! the Redis clock unchanged. Key expiry (`PEXPIREAT`, `EXPIRE`) always runs on the real
//! clock, so with a positive offset a record only lives longer than the logical clock
//! says, and the scripts' own checks still decide: with an offset, [`vote()`](vote::store::vote) never sends the
//! poster, so the script always reads the article and `TIME`.
//!
//! | key (prefix `hb`, tag `{vote:<site>}`) | type | contents | TTL |
//! | --- | --- | --- | --- |
//! | `hb:{vote:S}:article-seq` | string | last article id (`INCR`) | none |
//! | `hb:{vote:S}:article:<m>` | hash | `title`, `link`, `poster`, `posted_at` (Unix s), `votes` | none |
//! | `hb:{vote:S}:article:<m>:voters` | hash | user → `1` / `-1` (the poster's `1` included) | its last ms is the one before `posted_at + 604800` |
//! | `hb:{vote:S}:article:<m>:groups` | set | the article's group names | none |
//! | `hb:{vote:S}:score` | sorted set | `<m>` → `posted_at + 432 × votes` | none |
//! | `hb:{vote:S}:time` | sorted set | `<m>` → `posted_at` | none |
//! | `hb:{vote:S}:group:<g>` | set | `<m>` of the group's articles | none |
//! | `hb:{vote:S}:<order>:<g>` | sorted set | the group's `<m>` → their entries in the site's ranking by `<order>` | none |
//! | `hb:{vote:S}:attempts:<user>` | string | the user's accepted vote attempts in their open rate-limit window | the rest of the window |
//! | `hb:{vote:S}:posts:<user>` | string | articles the user posted in the open quota window (`HONGBAO_VOTE_ARTICLES_PER_DAY`) | the rest of the 24 h window |
//!
//! `<m>` is the article member (id zero-padded to 12 digits), `<order>` is `score` or `time`.
//!
//! # Routes
//!
//! | route | success | errors |
//! | --- | --- | --- |
//! | `POST /articles` `{"title", "link"}` | 201 [`ArticleBody`](pages::http::ArticleBody) with `votes` 1 and `score` = posted + 432 | 400 |
//! | `POST /articles/{id}/vote` `{"direction": "up" \| "down"}` | 200 [`VoteBody`](vote::http::VoteBody) | 400, 404 `not_found`, 410 `voting_closed` (+`votes`, `score`), 429 `rate_limited` + `Retry-After` (s) |
//! | `GET /articles?order=score\|time&page=N` | 200 [`PageBody`](pages::http::PageBody), at most 25 articles | 400 |
//! | `PUT /articles/{id}/groups` `{"add": [...], "remove": [...]}` | 200 [`GroupsBody`](groups::http::GroupsBody) (sorted) | 400, 403 `forbidden` (not the poster), 404 |
//! | `GET /groups/{group}/articles?order=score\|time&page=N` | 200 [`PageBody`](pages::http::PageBody) with `group` | 400 |
//!
//! # Files
//!
//! One folder per operation, its handler (`http.rs`), its store step (`store.rs`: the script's
//! call and the parsing of its reply) and its script side by side: [`post`](mod@post)
//! (`article_post.lua`), [`vote`](mod@vote) (`vote.lua`; `memory.rs`, what a sandbox remembers
//! of the articles it voted on), [`groups`] (`article_groups.lua`), [`pages`] (`ZRANGE`,
//! `group_page.lua`); the keys in [`keys`], the pure rules in [`rules`].

pub mod groups;
pub mod keys;
pub mod pages;
pub mod post;
pub mod rules;
pub mod vote;

pub use groups::store::set_groups;
pub use keys::SiteKeys;
pub use pages::store::{articles, group_articles};
pub use post::store::post;
pub use rules::{
    is_group_name, page_range, Article, ArticleId, Direction, GroupChange, GroupsOutcome,
    NewArticle, Order, PostOutcome, VoteOutcome, VotingRules, ARTICLES_PER_PAGE,
    ARTICLES_WINDOW_MS, ONE_WEEK_IN_SECONDS, VOTE_SCORE,
};
pub use vote::store::vote;

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the vote function.
pub fn routes() -> Routes {
    Routes::new()
        .route(&pages::http::LIST_OPERATION, routes!(pages::http::list))
        .route(&post::http::OPERATION, routes!(post::http::post_article))
        .route(&vote::http::OPERATION, routes!(vote::http::vote))
        .route(&groups::http::OPERATION, routes!(groups::http::set_groups))
        .route(
            &pages::http::GROUP_OPERATION,
            routes!(pages::http::group_articles),
        )
}
