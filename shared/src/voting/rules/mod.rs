//! Article voting: the rules of "Redis in Action" chapter 1 (josiahcarlson/redis-in-action,
//! `python/ch01_listing_source.py`, and the source blog post on Redis key design, which adds the
//! down-vote) as pure code: the constants, the score, article ids, rankings, votes and the
//! outcome of each operation. The settings are `settings`'s job ([`VotingRules`]), group names
//! and changes `groups`'s, the links an article may carry `link`'s. The atomic steps live in
//! `article_post.lua`, `vote.lua`, `article_groups.lua` and `group_page.lua`,
//! called by [`crate::voting`].

use std::fmt;

use serde::Deserialize;

use crate::domain::{check_shown_text, BadRecord, Invalid};

mod groups;
mod link;
mod settings;

pub use groups::{is_group_name, GroupChange};
pub use link::is_link;
pub use settings::{
    is_site_name, VotingRules, ARTICLES_WINDOW_MS, SETTINGS, VOTE_ARTICLES_PER_DAY,
    VOTE_MAX_GROUPS_PER_ARTICLE, VOTE_RATE_LIMIT, VOTE_RATE_WINDOW_MS, VOTE_SITE,
};

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
pub const MAX_GROUPS_PER_REQUEST: usize = 16;

/// Highest article id: ids are stored zero-padded to 12 digits.
pub const MAX_ARTICLE_ID: u64 = 999_999_999_999;

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
    /// [`BadRecord`] for anything that is not a 12-digit member.
    pub fn from_member(member: &str) -> Result<Self, BadRecord> {
        (member.len() == 12 && member.bytes().all(|b| b.is_ascii_digit()))
            .then(|| member.parse().ok())
            .flatten()
            .and_then(Self::new)
            .ok_or_else(|| BadRecord(format!("bad article member {member:?}")))
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[schema(description = "An article list's order.")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(description = "A vote's direction.")]
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

impl NewArticle {
    /// Checks a new article: the title 1 to [`MAX_TITLE_CHARS`] characters, not only white
    /// space, without control or invisible format characters ([`check_shown_text`]); the link an [`is_link`].
    ///
    /// # Errors
    /// [`Invalid`] naming the field.
    pub fn new(title: String, link: String) -> Result<Self, Invalid> {
        let chars = title.chars().count();
        if !(1..=MAX_TITLE_CHARS).contains(&chars) || title.trim().is_empty() {
            return Err(Invalid(format!(
                "title must be 1 to {MAX_TITLE_CHARS} characters and not blank"
            )));
        }
        check_shown_text("title", &title)?;
        if !is_link(&link) {
            return Err(Invalid(format!(
                "link must be an http or https URL of at most {MAX_LINK_CHARS} visible ASCII characters"
            )));
        }
        Ok(NewArticle { title, link })
    }
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

/// The outcome of [`crate::voting::vote()`].
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

/// The outcome of [`crate::voting::set_groups`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupsOutcome {
    /// Done: the article's groups afterwards, sorted.
    Updated(Vec<String>),
    /// No such article; nothing was written.
    NotFound,
    /// The caller is not the poster; nothing was written.
    Forbidden,
    /// The change would put the article in more than `HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`
    /// groups; nothing was written.
    TooManyGroups {
        /// The article's groups now.
        current: u64,
    },
}

/// What posting an article did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostOutcome {
    /// Posted, with the poster's own up-vote.
    Posted(Article),
    /// The poster's `HONGBAO_VOTE_ARTICLES_PER_DAY` is used up; nothing was written.
    RateLimited {
        /// Milliseconds until the poster's window closes (≥ 1).
        retry_after_ms: i64,
    },
}

/// The 0-based, inclusive rank range of page `page` (1-based).
pub fn page_range(page: u32) -> (u64, u64) {
    let start = u64::from(page.max(1) - 1) * u64::from(ARTICLES_PER_PAGE);
    (start, start + u64::from(ARTICLES_PER_PAGE) - 1)
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
    }
}
