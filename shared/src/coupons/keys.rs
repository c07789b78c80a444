//! The keys of a coupon campaign's pools and the hash tags they sit on.
//!
//! Pool `k` of the `P` pools of campaign `<id>` (its 5-character id) has the hash tag `t_k`,
//! a 4-hex-digit tag like a wallet's, so the money journal's 65,536 journals
//! ([`crate::store::journal`]) are still every journal there is:
//!
//! | key | type | contents |
//! | --- | --- | --- |
//! | `hb:{t_k}:coupon:<id>:<k>` | hash | the campaign's rules (copied into every pool) and the pool's counts (`coupon_create_pool.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:codes` | list | the pool's un-issued uploaded codes |
//! | `hb:{t_k}:coupon:<id>:<k>` | hash | (discount) `amount_off`, `percent_off`, `max_off`, `min_order` when the campaign has a discount ([`crate::coupons::rules::Discount`]); `redeemed` counts redemptions less those reversed |
//! | `hb:{t_k}:coupon:<id>:<k>:issued` | hash | code (uploaded) or index (generated) -> `<user>\n<grabbed_at_ms>` (issued); `<user>\n<grabbed_at_ms>\n<order_reference>\n<redeemed_at_ms>` (redeemed, written before holds existed); `<user>\n<grabbed_at_ms>\n<order_reference>\n<at_ms>\n<held or redeemed>\n<discount_cents or empty>\n<call id>` (held until `at_ms`, or redeemed at `at_ms`; `lua/coupon_record.lua`, [`crate::coupons::rules::checkout`]); and `<code>\n<order_reference>` -> `<hold or redemption>\n<released_at_ms>\n<call id>`: an order's release, answering its repeats; `<code>\n` (an empty order reference, which no order has) -> `<released_at_ms>`: the coupon's last release (`coupon_release.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:issued_by_time` | sorted set | `<grabbed_at_ms>:<item>` at score 0 (the ms as 13 digits, the item `<k>/<code or index>`), one per code the pool issued: the pool's issued codes in the order they were issued, so members sort by time, then item (`coupon_grab.lua`, `coupon_take.lua`); expires with the pool (`coupon_close.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:holders` | hash | user -> the user's items in the campaign (`<pool>/<code or index>`, space-separated, `?<id>` an open reservation), for the users whose home pool is `k`; `\n<call id>` -> the grab call's one outcome, `<item> <grabbed_at_ms>` or `-` (its reservation settled with none) (`coupon_grab.lua`, `coupon_resolve.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:pending` | hash | reservation id -> `<user>\n<at_ms>`: the open reservations of users whose home pool this is (`coupon_grab.lua` when the pool is empty, closed by `coupon_resolve.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:loans` | hash | reservation id -> `<code or index>:<at_ms>` (this pool's code taken for another pool's reservation) or `-` (none taken here for it): this pool's one outcome per reservation (`coupon_take.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:batches` | hash | batch reference -> `<fingerprint>` (landed) or `<fingerprint> missed`: the pool's outcome for each batch of uploaded codes added after the creation (`coupon_add_codes.lua`, every pool records every batch); on pool 0 also `claims <reference>` -> `<fingerprint> <open / claimed / refused [codes]>`, the batch's record and its claims' outcome (`coupon_batch.lua`) |
//! | `hb:{t_k}:coupon:<id>:<k>:visits:<user>` | string | the user's counted visits in the open window (`lua/rate_limit.lua`); TTL = the rest of the window |
//! | `hb:{coupon}:refs` | hash | merchant reference -> `<campaign_no>\n<fingerprint>\n<starts_at_ms>\n<secret>` (`coupon_create.lua`) |
//! | `hb:{coupon}:seq` | string | the last campaign number given |
//! | `hb:{coupon}:merchant:<merchant_id>:campaigns` | sorted set | campaign number -> score the same number: the merchant's campaigns, newest first (`GET /campaigns`); written once, by the run of `coupon_create.lua` that records a campaign created with a `merchant_id`; no TTL (nothing in it expires: a campaign whose pools are gone is left out of the list) |
//! | `hb:{coupon}:claims` | hash | campaign id -> `claimed` or `refused <codes>`: the one outcome of a creation's directory claims (`coupon_directory_add.lua`) |
//! | `hb:{c}:coupon-codes` | hash | uploaded code -> its campaign id (a code of the creation) or `<campaign id>/<batch reference>` (of an added batch), `c` the first 4 hex digits of SHA-1 of the code: the directory a redeem finds a code's campaign in; a code belongs to one campaign at a time |
//!
//! The tags are chosen so the pools' hash slots are evenly spaced over the 16,384 slots
//! ([`pool_tag`]): a cluster whose masters own equal contiguous slot ranges (what ElastiCache
//! and `redis-cli --cluster create` set up) then holds the same number of pools on each master
//! whenever that number divides `P` (24 pools: 1, 2, 3, 4, 6, 8, 12 or 24 masters).

use std::sync::OnceLock;

use crate::store::journal::hash_slot;
use crate::store::keys::{user_key_part, user_tag};

/// Redis Cluster's hash slots.
const SLOTS: u32 = 16_384;

/// For each hash slot, the smallest 4-hex-digit tag on it (`None`: no such tag; 13,152 slots
/// have one). Built on first use: 65,536 CRC16s, about 1 ms.
fn tags_by_slot() -> &'static [Option<u16>] {
    static TABLE: OnceLock<Vec<Option<u16>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = vec![None; SLOTS as usize];
        for tag in 0..=u16::MAX {
            let slot = hash_slot(&format!("{{{tag:04x}}}")) as usize;
            if table[slot].is_none() {
                table[slot] = Some(tag);
            }
        }
        table
    })
}

/// The hash tag (4 lowercase hex digits) of pool `k` of the `pools` pools of campaign number
/// `campaign_no`: the first tag on or after hash slot
/// `(offset + floor(k * 16384 / pools)) mod 16384`, where `offset` spreads campaigns over the
/// slots (Knuth's multiplicative hash of the number). Distinct pools get distinct tags.
pub fn pool_tag(campaign_no: u64, k: u32, pools: u32) -> String {
    let offset = (campaign_no.wrapping_mul(2_654_435_761) % u64::from(SLOTS)) as u32;
    let target = (offset + (u64::from(k) * u64::from(SLOTS) / u64::from(pools)) as u32) % SLOTS;
    let table = tags_by_slot();
    let tag = (0..SLOTS)
        .find_map(|step| table[((target + step) % SLOTS) as usize])
        .expect("13,152 slots hold a 4-hex-digit tag");
    format!("{tag:04x}")
}

/// The campaigns to close, by end (sorted set, tag `{coupon}`: campaign number, score
/// `ends_at` in Unix ms).
pub fn ends(prefix: &str) -> String {
    format!("{prefix}:{{coupon}}:ends")
}

/// The creations' outcomes of their directory claims (hash, tag `{coupon}`): campaign id ->
/// `claimed`, or `refused <codes>` with the codes another campaign held
/// (`coupon_directory_add.lua`, first writer wins).
pub fn claims(prefix: &str) -> String {
    format!("{prefix}:{{coupon}}:claims")
}

/// The campaigns by merchant reference (hash, tag `{coupon}`).
pub fn refs(prefix: &str) -> String {
    format!("{prefix}:{{coupon}}:refs")
}

/// The last campaign number given (string, tag `{coupon}`).
pub fn seq(prefix: &str) -> String {
    format!("{prefix}:{{coupon}}:seq")
}

/// The campaigns of merchant `merchant_id` ([`crate::domain::is_merchant_id`],
/// whose characters never make a hash tag), newest first (`GET /campaigns`): a sorted set,
/// tag `{coupon}`, member and score the campaign number (numbers only grow, so the highest
/// score is the newest campaign).
pub fn merchant_campaigns(prefix: &str, merchant_id: &str) -> String {
    format!("{prefix}:{{coupon}}:merchant:{merchant_id}:campaigns")
}

/// The directory hash holding uploaded code `code` (code -> campaign id), on the tag of the
/// code's digest (the digest [`user_tag`] takes of a user id).
pub fn directory(prefix: &str, code: &str) -> String {
    format!("{prefix}:{{{}}}:coupon-codes", user_tag(code))
}

/// A user's coupons, newest first (`GET /coupons`): a sorted set on the user's wallet tag,
/// member `<campaign_id>/<code or generated index>`, score the grab's Redis time (ms). A view:
/// the issuing pool's records decide every grab and redemption.
pub fn user_coupons(prefix: &str, user_id: &str) -> String {
    format!(
        "{prefix}:{{{}}}:coupons:{}",
        user_tag(user_id),
        user_key_part(user_id)
    )
}

/// The keys of one pool of a campaign (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolKeys {
    /// The pool's hash: the campaign's rules and the pool's counts.
    pub pool: String,
    /// The pool's un-issued uploaded codes (list).
    pub codes: String,
    /// The pool's issued codes (hash).
    pub issued: String,
    /// The pool's issued codes by time (sorted set at score 0: `<grabbed_at_ms, 13
    /// digits>:<item>`).
    pub issued_by_time: String,
    /// The users whose home pool this is, and their items (hash).
    pub holders: String,
    /// The open reservations of users whose home pool this is (hash).
    pub pending: String,
    /// This pool's codes taken for other pools' reservations (hash).
    pub loans: String,
    /// The batches of uploaded codes added to this pool, by reference (hash).
    pub batches: String,
    /// The money journal of the pool's tag (`<prefix>:{<tag>}:journal`, shared with wallets on
    /// the same tag): the pool's `coupon_issued` and `coupon_redeemed` entries, which
    /// ledger-export publishes.
    pub journal: String,
    /// A draw campaign's entrants (sorted set, `<ticket>:<user_id>` at score 0; pool 0's
    /// only: `coupon_draw_enter.lua`).
    pub tickets: String,
}

impl PoolKeys {
    /// The keys of pool `k` of the `pools` pools of campaign number `campaign_no` under key
    /// prefix `prefix`. Keys name a campaign by its number's 5 characters
    /// ([`crate::coupons::rules::campaign_id`]), whatever `campaign_id` says: the campaign's id
    /// (either its 5 characters or its public id, which starts with them).
    pub fn new(prefix: &str, campaign_id: &str, campaign_no: u64, k: u32, pools: u32) -> Self {
        debug_assert_eq!(
            crate::coupons::rules::campaign_no(campaign_id),
            Some(campaign_no),
            "a campaign id of another number"
        );
        let tag = pool_tag(campaign_no, k, pools);
        let name = crate::coupons::rules::campaign_id(campaign_no);
        let base = format!("{prefix}:{{{tag}}}:coupon:{name}:{k}");
        PoolKeys {
            codes: format!("{base}:codes"),
            issued: format!("{base}:issued"),
            issued_by_time: format!("{base}:issued_by_time"),
            holders: format!("{base}:holders"),
            pending: format!("{base}:pending"),
            loans: format!("{base}:loans"),
            batches: format!("{base}:batches"),
            tickets: format!("{base}:tickets"),
            journal: format!("{prefix}:{{{tag}}}:journal"),
            pool: base,
        }
    }

    /// `user_id`'s visit counter in the campaign, on this pool's tag (their home pool's).
    pub fn visits(&self, user_id: &str) -> String {
        format!("{}:visits:{}", self.pool, user_key_part(user_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_sit_on_evenly_spaced_slots() {
        for (no, pools) in [(1u64, 24u32), (77, 24), (5, 200), (9, 1)] {
            let slots: Vec<u32> = (0..pools)
                .map(|k| u32::from(hash_slot(&format!("{{{}}}", pool_tag(no, k, pools)))))
                .collect();
            let distinct: std::collections::BTreeSet<_> = slots.iter().collect();
            assert_eq!(distinct.len(), pools as usize, "{no}/{pools}: {slots:?}");
            // Three masters of equal contiguous ranges hold a third each (24 pools: 8 each).
            if pools == 24 {
                let mut per_master = [0; 3];
                for s in &slots {
                    per_master[(*s as usize * 3) / SLOTS as usize] += 1;
                }
                assert!(
                    per_master.iter().all(|&n| (7..=9).contains(&n)),
                    "{per_master:?}"
                );
            }
        }
    }

    #[test]
    fn keys_share_the_pool_tag() {
        let keys = PoolKeys::new("hb", "0002D", 77, 3, 24);
        let tag = pool_tag(77, 3, 24);
        assert_eq!(keys.pool, format!("hb:{{{tag}}}:coupon:0002D:3"));
        for k in [
            &keys.codes,
            &keys.issued,
            &keys.holders,
            &keys.visits("a:b c"),
        ] {
            assert!(k.starts_with(&keys.pool), "{k}");
            assert_eq!(hash_slot(k), hash_slot(&keys.pool));
        }
        assert!(keys.visits("a:b c").ends_with(":visits:a%3Ab%20c"));
    }
}
