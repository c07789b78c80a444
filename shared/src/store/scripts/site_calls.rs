//! The calls of the voting-site and order-code scripts (see [`super::Call`]).

use super::{ARTICLE_GROUPS, ARTICLE_POST, GROUP_PAGE, ORDER_CODE, VOTE};

script_call! {
    /// `lua/article_post.lua`: post an article. Every key is on the site's hash tag
    /// (`SiteKeys`).
    pub struct ArticlePostCall<'a> for ARTICLE_POST {
        KEYS {
            /// The article hash.
            article: &'a str,
            /// The article's vote record.
            voters: &'a str,
            /// The score ranking.
            score: &'a str,
            /// The time ranking.
            time: &'a str,
            /// The poster's quota counter of the open window.
            post_quota: &'a str,
        }
        ARGV {
            /// The article member (its id, zero-padded to 12 digits).
            member: &'a str,
            /// The poster's user id.
            poster: &'a str,
            /// The title.
            title: &'a str,
            /// The link.
            link: &'a str,
            /// How long voting stays open, seconds.
            voting_window_secs: i64,
            /// Score per vote.
            vote_score: i64,
            /// Seconds added to Redis `TIME` (0 except in tests).
            clock_offset_secs: i64,
            /// Articles a poster may post per window (0: no quota).
            quota: u32,
            /// The quota window, ms.
            quota_window_ms: u64,
        }
    }
}

script_call! {
    /// `lua/vote.lua`: rate limit, then one up- or down-vote per user and article.
    pub struct VoteCall<'a> for VOTE {
        KEYS {
            /// The article hash.
            article: &'a str,
            /// The article's vote record.
            voters: &'a str,
            /// The score ranking.
            score: &'a str,
            /// The voter's rate-limit counter (`SiteKeys::vote_rate`).
            rate: &'a str,
        }
        ARGV {
            /// The voter.
            user_id: &'a str,
            /// 1 (up) or -1 (down).
            direction: i64,
            /// The article member.
            member: &'a str,
            /// Vote attempts allowed per user per window (0 = unlimited).
            rate_limit: u32,
            /// The rate-limit window, ms.
            rate_window_ms: u64,
            /// How long voting stays open, seconds.
            voting_window_secs: i64,
            /// Score per vote.
            vote_score: i64,
            /// Seconds added to Redis `TIME` (0 except in tests).
            clock_offset_secs: i64,
            /// The article's poster as this sandbox remembers it, or "" (the script then reads
            /// the article and names the poster in its reply).
            poster: &'a str,
        }
    }
}

script_call! {
    /// `lua/article_groups.lua`: the poster adds an article to groups or removes it.
    pub struct ArticleGroupsCall<'a> for ARTICLE_GROUPS {
        KEYS {
            /// The article hash.
            article: &'a str,
            /// The article's set of group names.
            article_groups: &'a str,
            /// The group sets: first those to add the article to, then those to remove it from.
            group_sets: &'a [String],
        }
        ARGV {
            /// The caller.
            user_id: &'a str,
            /// The article member.
            member: &'a str,
            /// How many of `group_sets` (the first ones) are additions.
            adds: usize,
            /// The group names of `group_sets`, in the same order.
            group_names: &'a [&'a str],
            /// The most groups an article may be in.
            max_groups: u32,
        }
    }
}

script_call! {
    /// `lua/group_page.lua`: one page of a group's articles through the cached intersection.
    pub struct GroupPageCall<'a> for GROUP_PAGE {
        KEYS {
            /// The group set.
            group: &'a str,
            /// The score or time ranking.
            ranking: &'a str,
            /// The cached intersection.
            cache: &'a str,
            /// When the cache was built (Unix ms).
            stamp: &'a str,
        }
        ARGV {
            /// First rank, 0-based, highest score first.
            first_rank: u64,
            /// Last rank, inclusive.
            last_rank: u64,
            /// Cache lifetime, seconds.
            cache_secs: u64,
            /// Seconds added to Redis `TIME` (0 except in tests).
            clock_offset_secs: i64,
        }
    }
}

script_call! {
    /// `lua/order_code.lua`: take positions of the business day's order-code sequence. Every
    /// key has the tag `{oc}`; `m` (1 to 3) is the number of candidate business days.
    pub struct OrderCodeCall<'a> for ORDER_CODE {
        KEYS {
            /// The day hashes of the `m` candidate business days.
            day_hashes: &'a [String],
            /// The high-water mark (`newest_day_key`).
            newest_day: &'a str,
            /// The caller's quota counters of the same `m` days, in the same order.
            quotas: &'a [String],
        }
        ARGV {
            /// Codes to take (1 to 100).
            count: u32,
            /// Positions per day, `9 * 10^(digits - 1)`.
            positions_per_day: u64,
            /// A fresh 128-bit secret (32 hex digits), stored if the day has none yet.
            new_secret: &'a str,
            /// The lifetime of a quota counter from the caller's first code of the day,
            /// seconds.
            quota_ttl_secs: u64,
            /// Codes one caller may take per business day (0: no quota).
            per_user_per_day: u32,
            /// The start of the zone window, Unix seconds.
            window_start: i64,
            /// The end of the zone window (exclusive), Unix seconds.
            window_end: i64,
            /// Per candidate day, in the order of `day_hashes`: the business day (local days
            /// since 1970-01-01) and the caller's guess of its secret (empty: none).
            days: &'a [(i64, &'a str)],
            /// The UTC offset in force at the window start, seconds.
            base_offset: i32,
            /// The offset changes in the window, ascending: (instant, Unix seconds; UTC offset
            /// from then on, seconds).
            transitions: &'a [(i64, i32)],
        }
    }
}
