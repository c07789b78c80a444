//! A day's codes: ninety thousand then exhausted, the rollover at midnight, old day hashes
//! deleted, one secret a day.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::order_codes::{self, Outcome};
use rand::{Rng, SeedableRng};

use super::{
    ascending_pairs, day_hashes, issued, order_store, script_at, secret, suffix, take_at, taken,
    unix,
};

/// Test: 90,000 codes of one day drawn by 64 concurrent callers in batches of 1 to 100 are all
/// distinct, 11 digits, with the day's prefix; a batch that would cross the limit fails whole,
/// alone or racing others; the 90,001st code is `exhausted` with `Retry-After` until the next
/// business day.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ninety_thousand_codes_then_exhausted() {
    // 2026-11-21 12:00:00 in Shanghai (+08:00).
    let at = unix(2026, 11, 21, 4, 0, 0);
    let script = Arc::new(script_at(at, 500_000));
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        // 89,950 codes: 3,000 single calls and random batches of 2..=100, shuffled.
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let mut sizes = vec![1u32; 3000];
        let mut left = 89_950 - 3000;
        while left > 0 {
            let n = rng.random_range(2..=100).min(left);
            sizes.push(n);
            left -= n;
        }
        for i in (1..sizes.len()).rev() {
            sizes.swap(i, rng.random_range(0..=i));
        }
        let sizes = Arc::new(sizes);
        let next = Arc::new(AtomicUsize::new(0));
        let codes = Arc::new(Mutex::new(Vec::with_capacity(90_000)));
        let tasks = (0..64).map(|_| {
            let (store, script, sizes, next, codes) = (
                store.clone(),
                script.clone(),
                sizes.clone(),
                next.clone(),
                codes.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&n) = sizes.get(i) else { return };
                    let out = order_codes::next_codes_with(&store, &script, "tester", n, at).await;
                    let got = issued(out, "2026-11-21");
                    assert_eq!(got.len(), n as usize);
                    codes.lock().unwrap().extend(got);
                }
            })
        });
        for t in join_all(tasks).await {
            t.unwrap();
        }
        let mut codes = std::mem::take(&mut *codes.lock().unwrap());
        assert_eq!(codes.len(), 89_950, "{backend}");
        assert_eq!(taken(&redis, "hb", "20261121").await, 89_950);

        // 50 left: batches of 100 and 51 fail whole and take nothing.
        for n in [100, 51] {
            match order_codes::next_codes_with(&store, &script, "tester", n, at)
                .await
                .unwrap()
            {
                Outcome::Exhausted {
                    date,
                    retry_after_secs,
                } => {
                    assert_eq!(date.to_string(), "2026-11-21");
                    assert_eq!(retry_after_secs, 12 * 3600, "until 2026-11-22 00:00 +08:00");
                }
                other => panic!("{backend}: batch of {n} with 50 left: {other:?}"),
            }
            assert_eq!(taken(&redis, "hb", "20261121").await, 89_950);
        }
        // The last 50 raced for: 20 concurrent batches of 7 (7 win, 13 fail whole), then 10
        // concurrent single calls for the last one (1 wins).
        for (n, callers, winners) in [(7, 20, 7), (1, 10, 1)] {
            let racers = (0..callers).map(|_| {
                let (store, script) = (store.clone(), script.clone());
                tokio::spawn(async move {
                    order_codes::next_codes_with(&store, &script, "tester", n, at).await
                })
            });
            let mut won = 0;
            for r in join_all(racers).await {
                match r.unwrap().unwrap() {
                    Outcome::Issued { codes: got, .. } => {
                        assert_eq!(got.len(), n as usize);
                        codes.extend(got);
                        won += 1;
                    }
                    Outcome::Exhausted { .. } => {}
                    other => panic!("{backend}: unexpected {other:?}"),
                }
            }
            assert_eq!(won, winners, "{backend}: batches of {n}");
        }
        // The 90,001st.
        let out = order_codes::next_codes_with(&store, &script, "tester", 1, at)
            .await
            .unwrap();
        assert!(
            matches!(
                out,
                Outcome::Exhausted {
                    retry_after_secs: 43_200,
                    ..
                }
            ),
            "{out:?}"
        );
        assert_eq!(taken(&redis, "hb", "20261121").await, 90_000);

        assert!(codes
            .iter()
            .all(|c| c.len() == 11 && c.bytes().all(|b| b.is_ascii_digit())));
        assert!(codes
            .iter()
            .all(|c| c.starts_with("261121") && !c[6..].starts_with('0')));
        let distinct: HashSet<u64> = codes.iter().map(|c| suffix(c)).collect();
        assert_eq!(distinct.len(), 90_000, "{backend}: every code once");
        assert_eq!(
            distinct,
            (10_000..=99_999).collect(),
            "{backend}: the whole day's range"
        );
    }
}

/// Test: at 23:59:59.999999 in Shanghai a request gets the old day's date *and* sequence, one
/// microsecond later the new day's, whatever the function's own clock says; both days' codes
/// are exactly their secret permutations; the days' orders differ; consecutive codes show no
/// order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollover_at_midnight_and_secret_orders() {
    let midnight = unix(2026, 11, 21, 16, 0, 0); // 2026-11-22 00:00:00 +08:00
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        // The function's clock already past midnight, Redis's just before it.
        let old = issued(
            take_at(&store, 5, midnight - 1, 999_999, midnight + 1).await,
            "2026-11-21",
        );
        // And the other way round.
        let new = issued(
            take_at(&store, 5, midnight, 0, midnight - 1).await,
            "2026-11-22",
        );
        assert!(old.iter().all(|c| c.starts_with("261121")), "{old:?}");
        assert!(new.iter().all(|c| c.starts_with("261122")), "{new:?}");
        assert_eq!(taken(&redis, "hb", "20261121").await, 5);
        assert_eq!(taken(&redis, "hb", "20261122").await, 5);

        // The codes are the days' permutations of positions 0..5, keyed by the stored secrets.
        let k21 = secret(&redis, "hb", "20261121").await;
        let k22 = secret(&redis, "hb", "20261122").await;
        assert_eq!(k21.len(), 32);
        assert_ne!(k21, k22, "every day gets its own secret");
        let (p21, p22) = (
            order_codes::permutation(5, &k21),
            order_codes::permutation(5, &k22),
        );
        assert_eq!(
            old.iter().map(|c| suffix(c)).collect::<Vec<_>>(),
            (0..5).map(|p| p21.suffix(p)).collect::<Vec<_>>()
        );
        assert_eq!(
            new.iter().map(|c| suffix(c)).collect::<Vec<_>>(),
            (0..5).map(|p| p22.suffix(p)).collect::<Vec<_>>()
        );
        let agree = (0..90_000)
            .filter(|&p| p21.permute(p) == p22.permute(p))
            .count();
        assert!(
            agree < 20,
            "{backend}: the two days agree on {agree} of 90,000 positions"
        );

        // The old day goes on where it stopped (a late request, e.g. the Redis clock read just
        // before midnight by a request that started earlier, still gets day 21's sequence).
        let more = issued(
            take_at(&store, 3, midnight - 2, 0, midnight).await,
            "2026-11-21",
        );
        assert_eq!(
            more.iter().map(|c| suffix(c)).collect::<Vec<_>>(),
            (5..8).map(|p| p21.suffix(p)).collect::<Vec<_>>()
        );

        // No day hash has a TTL (a `volatile-*` policy could evict it and stop the day).
        let mut conn = redis.raw_conn().await;
        for day in ["20261121", "20261122"] {
            let ttl: i64 = redis::cmd("TTL")
                .arg(format!("hb:{{oc}}:day:{day}"))
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(ttl, -1, "{backend} {day}");
        }

        // No order: 1,000 consecutive single requests, then 10,000 codes in batches of 100.
        let later = midnight + 3600;
        let mut singles = Vec::new();
        for _ in 0..1000 {
            singles.extend(issued(
                take_at(&store, 1, later, 0, later).await,
                "2026-11-22",
            ));
        }
        let mut batched = Vec::new();
        for _ in 0..100 {
            batched.extend(issued(
                take_at(&store, 100, later, 0, later).await,
                "2026-11-22",
            ));
        }
        // For a random order, ascending adjacent pairs of n values: mean (n-1)/2, standard
        // deviation sqrt((n+1)/12); allow 6 of them.
        for (name, codes) in [("singles", &singles), ("batches", &batched)] {
            let xs: Vec<u64> = codes.iter().map(|c| suffix(c)).collect();
            let n = xs.len() as f64;
            let (mean, sd) = ((n - 1.0) / 2.0, ((n + 1.0) / 12.0).sqrt());
            let up = ascending_pairs(&xs) as f64;
            assert!(
                (up - mean).abs() < 6.0 * sd,
                "{backend} {name}: {up} ascending pairs of {n}"
            );
            // And no small steps: neighbours are about 30,000 apart on average, as for
            // independent uniform values (|a - b| has mean 90,000 / 3).
            let gap = xs
                .windows(2)
                .map(|w| w[0].abs_diff(w[1]) as f64)
                .sum::<f64>()
                / (n - 1.0);
            assert!(
                (gap - 30_000.0).abs() < 3_000.0,
                "{backend} {name}: mean gap {gap}"
            );
        }
    }
}

/// Test: day hashes have no TTL, and each day's start deletes the hashes older than yesterday,
/// after a gap of days too, and a hash a missed deletion left behind; yesterday's hash stays
/// and goes on where it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_day_start_deletes_hashes_before_yesterday() {
    // 12:00 in Shanghai (+08:00) of 2026-11-`d`.
    let noon = |d: i64| unix(2026, 11, d, 4, 0, 0);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        for (d, left) in [
            (21, vec!["20261121"]),
            (22, vec!["20261121", "20261122"]),
            (23, vec!["20261122", "20261123"]),
            // Two days without codes: 22 and 23 go.
            (26, vec!["20261126"]),
        ] {
            issued(
                take_at(&store, 2, noon(d), 0, noon(d)).await,
                &format!("2026-11-{d}"),
            );
            assert_eq!(day_hashes(&redis).await, left, "{backend}: day {d}");
        }
        // A later request for yesterday (a Redis clock a moment behind) goes on with
        // yesterday's sequence.
        issued(
            take_at(&store, 1, noon(27), 0, noon(27)).await,
            "2026-11-27",
        );
        let late = take_at(&store, 3, noon(27) - 86_400, 0, noon(27) - 86_400).await;
        assert_eq!(
            issued(late, "2026-11-26")
                .iter()
                .map(|c| suffix(c))
                .collect::<Vec<_>>(),
            {
                let perm = order_codes::permutation(5, &secret(&redis, "hb", "20261126").await);
                (2..5).map(|p| perm.suffix(p)).collect::<Vec<_>>()
            },
            "{backend}"
        );
        // A hash whose deletion was missed (the reply of the day's start lost) goes with the
        // start of the day after next.
        let mut conn = redis.raw_conn().await;
        let _: () = redis::cmd("HSET")
            .arg("hb:{oc}:day:20261125")
            .arg("0123456789abcdef0123456789abcdef")
            .arg(7)
            .query_async(&mut conn)
            .await
            .unwrap();
        issued(
            take_at(&store, 1, noon(28), 0, noon(28)).await,
            "2026-11-28",
        );
        assert_eq!(
            day_hashes(&redis).await,
            ["20261127", "20261128"],
            "{backend}"
        );
        for day in ["20261127", "20261128"] {
            let ttl: i64 = redis::cmd("TTL")
                .arg(format!("hb:{{oc}}:day:{day}"))
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(ttl, -1, "{backend} {day}");
        }
    }
}

/// Test: many first requests of a day race: exactly one secret is stored and every caller's
/// codes come from it (positions 0..200 of its permutation, each once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_requests_of_a_day_share_one_secret() {
    let at = unix(2026, 11, 23, 1, 0, 0); // 09:00 in Shanghai
    let script = Arc::new(script_at(at, 0));
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        let tasks = (0..200).map(|_| {
            let (store, script) = (store.clone(), script.clone());
            tokio::spawn(async move {
                order_codes::next_codes_with(&store, &script, "tester", 1, at).await
            })
        });
        let mut got = HashSet::new();
        for r in join_all(tasks).await {
            for c in issued(r.unwrap(), "2026-11-23") {
                assert!(got.insert(suffix(&c)), "{backend}: {c} twice");
            }
        }
        let perm = order_codes::permutation(5, &secret(&redis, "hb", "20261123").await);
        assert_eq!(got, (0..200).map(|p| perm.suffix(p)).collect(), "{backend}");
        let mut conn = redis.raw_conn().await;
        let newest: i64 = redis::cmd("GET")
            .arg("hb:{oc}:newest_day")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(newest, unix(2026, 11, 23, 0, 0, 0) / 86_400);
    }
}
