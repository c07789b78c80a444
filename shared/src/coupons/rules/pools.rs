//! How a campaign's codes spread over pools: a campaign larger than one hash slot should carry
//! is cut into pools, each on its own hash tag, so a large drop uses every master of a cluster.
//!
//! A user's grabs are recorded in their *home pool* (a hash of the campaign and the user), so
//! the per-user limit is one atomic check. A generated campaign's pool `k` of `P` holds the
//! indices `[k * n / P, (k + 1) * n / P)`; an uploaded code lives in the pool its hash names,
//! so a code uploaded twice meets itself in one pool. An uploaded campaign's pools are made for
//! its `codes_planned` (batches join the pools made at creation).

use sha1::{Digest, Sha1};

/// Codes up to which a campaign keeps one pool (one hash tag, one master). Decided from
/// `make bench` (`tests/benches/coupon_drop/pools.rs`, part 5): a pool of 50,000 codes is 0.7 MB
/// fresh and 12.4 MB sold out, and moving its hash slot blocks its master for about 0.2 s (the
/// `MIGRATE` of its biggest key, a 3.8 MB `DUMP`); at 200,000 codes 49.5 MB and 1.0 s. Above
/// it a campaign is spread, so no slot move pauses a master for much longer than 0.2 s.
pub const CODES_PER_POOL: u64 = 50_000;

/// Pools of a campaign above [`CODES_PER_POOL`] codes, at least: 24 divides evenly over 1, 2,
/// 3, 4, 6, 8, 12 or 24 shards whose slots are spread evenly, so every master gets the same
/// share of a storm (the store places the pools' hash tags on evenly spaced hash slots).
pub const MIN_SPREAD_POOLS: u32 = 24;

/// The most pools of a campaign: 10,000,000 codes / 50,000.
pub const MAX_POOLS: u32 = 200;

/// The number of pools for a campaign of `codes` codes: 1 up to [`CODES_PER_POOL`], otherwise
/// enough pools of at most [`CODES_PER_POOL`] codes and at least [`MIN_SPREAD_POOLS`].
pub fn pool_count(codes: u64) -> u32 {
    if codes <= CODES_PER_POOL {
        1
    } else {
        (codes.div_ceil(CODES_PER_POOL) as u32).clamp(MIN_SPREAD_POOLS, MAX_POOLS)
    }
}

/// An integer in `[0, n)` from the first 8 bytes of SHA-1(`text`) (bias below n / 2^64).
fn hash_mod(text: &str, n: u32) -> u32 {
    let d = Sha1::digest(text.as_bytes());
    let x = u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
    (x % u64::from(n)) as u32
}

/// The home pool (`0..pools`) of `user_id` in campaign number `campaign_no`: where the user's
/// grabs are recorded and where they take codes first.
pub fn home_pool(campaign_no: u64, user_id: &str, pools: u32) -> u32 {
    hash_mod(&format!("{campaign_no}:{user_id}"), pools)
}

/// The pool (`0..pools`) of uploaded code `code` in campaign number `campaign_no`.
pub fn pool_of_code(campaign_no: u64, code: &str, pools: u32) -> u32 {
    hash_mod(&format!("{campaign_no}:code:{code}"), pools)
}

/// The first index of pool `k` of a generated campaign of `n` codes in `pools` pools:
/// `floor(k * n / pools)`; `k = pools` gives `n`.
pub fn pool_start(k: u32, n: u64, pools: u32) -> u64 {
    (u128::from(k) * u128::from(n) / u128::from(pools)) as u64
}

/// The pool of index `index` (below `n`) of a generated campaign of `n` codes in `pools`
/// pools: the `k` with `pool_start(k) <= index < pool_start(k + 1)`.
pub fn pool_of_index(index: u64, n: u64, pools: u32) -> u32 {
    let mut k = (u128::from(index) * u128::from(pools) / u128::from(n.max(1))) as u32;
    k = k.min(pools - 1);
    while k + 1 < pools && pool_start(k + 1, n, pools) <= index {
        k += 1;
    }
    while k > 0 && pool_start(k, n, pools) > index {
        k -= 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_counts() {
        assert_eq!(pool_count(1), 1);
        assert_eq!(pool_count(50_000), 1);
        assert_eq!(pool_count(50_001), 24);
        assert_eq!(pool_count(1_200_000), 24);
        assert_eq!(pool_count(1_250_001), 26);
        assert_eq!(pool_count(10_000_000), 200);
    }

    #[test]
    fn index_ranges_cover_every_index_once() {
        for (n, pools) in [
            (1u64, 1u32),
            (7, 3),
            (200_000, 24),
            (10_000_000, 200),
            (50_001, 24),
        ] {
            assert_eq!(pool_start(0, n, pools), 0);
            assert_eq!(pool_start(pools, n, pools), n);
            for k in 0..pools {
                let (lo, hi) = (pool_start(k, n, pools), pool_start(k + 1, n, pools));
                assert!(hi - lo <= n.div_ceil(u64::from(pools)));
                for i in [lo, hi.saturating_sub(1)] {
                    if i < hi {
                        assert_eq!(pool_of_index(i, n, pools), k, "{n} {pools} {i}");
                    }
                }
            }
        }
        for i in 0..7 {
            let k = pool_of_index(i, 7, 3);
            assert!(pool_start(k, 7, 3) <= i && i < pool_start(k + 1, 7, 3));
        }
    }

    #[test]
    fn homes_spread_evenly() {
        let pools = 24;
        let mut counts = vec![0u32; pools as usize];
        for u in 0..24_000 {
            counts[home_pool(9, &format!("user-{u}"), pools) as usize] += 1;
        }
        // 1,000 expected per pool, standard deviation about 31.
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(home_pool(9, "alice", 1), 0);
        assert_ne!(
            (0..50)
                .map(|c| home_pool(c, "alice", 24))
                .collect::<Vec<_>>(),
            vec![home_pool(0, "alice", 24); 50],
            "campaigns place a user differently"
        );
        assert_eq!(
            pool_of_code(9, "SAVE-20", 24),
            pool_of_code(9, "SAVE-20", 24)
        );
    }
}
