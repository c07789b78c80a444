//! The voting settings (`HONGBAO_VOTE_*`) and [`VotingRules`], read from them by the vote
//! function.

use super::is_group_name;
use crate::domain::settings::{self, Setting};
use crate::domain::{ConfigError, Lookup};

/// `HONGBAO_VOTE_SITE`.
pub const VOTE_SITE: Setting = Setting {
    name: "HONGBAO_VOTE_SITE",
    default: "news",
    meaning: "voting site name, 1–32 of `[a-z0-9-]`; hash tag `{vote:<site>}`",
};
/// `HONGBAO_VOTE_RATE_LIMIT`.
pub const VOTE_RATE_LIMIT: Setting = Setting {
    name: "HONGBAO_VOTE_RATE_LIMIT",
    default: "30",
    meaning: "vote attempts per user (whole site) per window; `0` disables",
};
/// `HONGBAO_VOTE_RATE_WINDOW_MS`.
pub const VOTE_RATE_WINDOW_MS: Setting = Setting {
    name: "HONGBAO_VOTE_RATE_WINDOW_MS",
    default: "60000",
    meaning: "vote rate-limit window, ms (≥ 1)",
};

/// `HONGBAO_VOTE_ARTICLES_PER_DAY`.
pub const VOTE_ARTICLES_PER_DAY: Setting = Setting {
    name: "HONGBAO_VOTE_ARTICLES_PER_DAY",
    default: "20",
    meaning: "articles one user may post per 24 h (a fixed window opened by the first post; 429 + `Retry-After` beyond it, nothing written); `0` disables",
};
/// The window of [`VOTE_ARTICLES_PER_DAY`], milliseconds.
pub const ARTICLES_WINDOW_MS: u64 = 86_400_000;
/// `HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`.
pub const VOTE_MAX_GROUPS_PER_ARTICLE: Setting = Setting {
    name: "HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE",
    default: "16",
    meaning: "groups one article may be in (a change that would pass it is 409 `too_many_groups`, nothing written), 1..=1000",
};

/// The voting settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[
    VOTE_SITE,
    VOTE_RATE_LIMIT,
    VOTE_RATE_WINDOW_MS,
    VOTE_ARTICLES_PER_DAY,
    VOTE_MAX_GROUPS_PER_ARTICLE,
];

/// The configured voting site (the vote function reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VotingRules {
    /// The site's name (`[a-z0-9-]`, 1 to 32 characters); every key of the site carries the
    /// hash tag `{vote:<site>}`.
    pub site: String,
    /// Vote attempts per user on the whole site per window; 0 disables the limit.
    pub rate_limit: u32,
    /// Vote rate-limit window, milliseconds (≥ 1).
    pub rate_window_ms: u64,
    /// Articles one user may post per [`ARTICLES_WINDOW_MS`]; 0 disables the quota.
    pub articles_per_day: u32,
    /// Groups one article may be in (`1..=1000`).
    pub max_groups_per_article: u32,
    /// Test clock: seconds added to Redis `TIME` by the voting scripts. Never read from the
    /// environment ([`VotingRules::from_lookup`] always sets 0), so only code that builds the
    /// rules itself (the integration tests) can move the voting clock; no request can.
    pub clock_offset_secs: i64,
}

impl Default for VotingRules {
    fn default() -> Self {
        Self::from_lookup(&settings::defaults()).expect("the defaults are valid")
    }
}

impl VotingRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable that does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let site: String = lookup.get(&VOTE_SITE)?;
        if !is_site_name(&site) {
            return Err(ConfigError::new(
                &VOTE_SITE,
                site,
                "must be 1 to 32 characters of [a-z0-9-]",
            ));
        }
        Ok(VotingRules {
            site,
            rate_limit: lookup.get(&VOTE_RATE_LIMIT)?,
            rate_window_ms: lookup.at_least(&VOTE_RATE_WINDOW_MS, 1)?,
            articles_per_day: lookup.get(&VOTE_ARTICLES_PER_DAY)?,
            max_groups_per_article: {
                let n: u32 = lookup.at_least(&VOTE_MAX_GROUPS_PER_ARTICLE, 1)?;
                if n > 1000 {
                    return Err(ConfigError::new(
                        &VOTE_MAX_GROUPS_PER_ARTICLE,
                        n,
                        "must be 1..=1000",
                    ));
                }
                n
            },
            clock_offset_secs: 0,
        })
    }
}

/// Whether `site` is a valid site name: 1 to 32 characters of `[a-z0-9-]`.
pub fn is_site_name(site: &str) -> bool {
    is_group_name(site)
}
