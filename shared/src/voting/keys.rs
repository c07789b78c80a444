//! The keys of a voting site: every key is `<prefix>:{vote:<site>}:...`, one hash tag (the
//! table in the [feature docs](super)).

use crate::store::config::Config;
use crate::voting::rules::{ArticleId, Order};

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
        Self::new(&config.key_prefix, &config.voting.site)
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

    /// Group `group`'s ranking by `order`: sorted set member → score or posting time, the
    /// members of [`SiteKeys::group`] with their entries in [`SiteKeys::ranking`].
    pub fn group_ranking(&self, order: Order, group: &str) -> String {
        format!("{}:{}:{group}", self.base, order.as_str())
    }

    /// The vote rate-limit counter of `user_id` (`lua/rate_limit.lua`: accepted attempts in
    /// the user's open window, TTL = the rest of the window). Named `attempts` so that the
    /// state of earlier limiters (`:rl:`, `:gcra:`, both expiring within a window) is never
    /// read as a counter.
    pub fn vote_rate(&self, user_id: &str) -> String {
        format!(
            "{}:attempts:{}",
            self.base,
            crate::store::keys::user_key_part(user_id)
        )
    }

    /// The article quota counter of `user_id` (`lua/quota.lua`: articles posted in the
    /// open window, TTL = the rest of the window; `HONGBAO_VOTE_ARTICLES_PER_DAY`).
    pub fn post_quota(&self, user_id: &str) -> String {
        format!(
            "{}:posts:{}",
            self.base,
            crate::store::keys::user_key_part(user_id)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            k.group_ranking(Order::Time, "rust"),
            k.group_ranking(Order::Score, "rust"),
            k.vote_rate("a{b}"),
        ] {
            assert!(key.starts_with("hb:{vote:news}:"), "{key}");
        }
        assert_eq!(k.voters(id), "hb:{vote:news}:article:000000000007:voters");
    }

    #[test]
    fn config() {
        let c = Config::default().voting;
        assert_eq!(
            (c.site.as_str(), c.rate_limit, c.rate_window_ms),
            ("news", 30, 60_000)
        );
        assert_eq!(c.clock_offset_secs, 0);
    }
}
