//! Daily order codes (`POST /order-codes`, `hongbao::store::order_codes`, `lua/order_code.lua`)
//! against real `redis-server` processes: every test runs on a standalone server and on a
//! 3-master cluster started by the harness.
//!
//! Day rollovers and DST changes are driven through the script's own text: [`script_at`] is a
//! copy of `lua/order_code.lua` whose single `redis.call('TIME')` is replaced by a literal
//! instant. Everything else (the zone window, the keys, the day decision, the counter, the
//! secret, the permutation) is the production code path, `order_codes::next_codes_with`; the
//! production script itself has no clock input and is exercised through the handler tests.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use harness::{Backend, RedisServer, TestRedis};
use hongbao::store::order_codes::{self, Outcome};
use hongbao::{Error, Store};
use rand::{Rng, SeedableRng};
use redis::Script;
use serde_json::{json, Value};

use crate::common::{self, event, snapshot, with_body, with_sub};

/// The production script's text (`lua/quota.lua` + `lua/order_code.lua`).
fn source() -> &'static str {
    hongbao::store::scripts::ORDER_CODE.source()
}

/// `lua/order_code.lua` with Redis `TIME` replaced by `unix_s` seconds and `micros`
/// microseconds.
fn script_at(unix_s: i64, micros: u32) -> Script {
    assert_eq!(
        source().matches("redis.call('TIME')").count(),
        1,
        "one clock read in the script"
    );
    Script::new(&source().replacen(
        "redis.call('TIME')",
        &format!("{{'{unix_s}', '{micros}'}}"),
        1,
    ))
}

/// Unix seconds of the UTC civil time `y-m-d hh:mm:ss` (days_from_civil, H. Hinnant), written
/// here independently of the code under test.
fn unix(y: i64, m: i64, d: i64, hh: i64, mm: i64, ss: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468) * 86_400 + hh * 3600 + mm * 60 + ss
}

/// A store on `redis` for order codes in zone `tz` under key prefix `prefix`. Replies may take
/// up to 5 s (production: 1 s): the suites race 200 first requests, each a `NOSCRIPT` answered
/// by an `EVAL` of the test copy of the script, while the other tests of the binary start
/// clusters on the same 2 cores; a timeout there (seen once on Valkey 8) says nothing about codes.
fn order_store(redis: &TestRedis, prefix: &str, tz: &str) -> Arc<Store> {
    common::store(redis, |c| {
        c.response_timeout = std::time::Duration::from_secs(5);
        c.key_prefix = prefix.to_string();
        c.order_codes.tz = tz.parse().expect("IANA zone");
    })
}

/// Takes `count` codes with Redis `TIME` = `at` (`micros` µs into the second) and the
/// function's clock at `around`.
async fn take_at(
    store: &Store,
    count: u32,
    at: i64,
    micros: u32,
    around: i64,
) -> Result<Outcome, Error> {
    order_codes::next_codes_with(store, &script_at(at, micros), "tester", count, around).await
}

/// The codes of an outcome that must be `Issued` for `date`.
fn issued(outcome: Result<Outcome, Error>, date: &str) -> Vec<String> {
    match outcome {
        Ok(Outcome::Issued { date: d, codes }) if d.to_string() == date => codes,
        other => panic!("expected codes of {date}, got {other:?}"),
    }
}

/// The day hash of `yyyymmdd` as (secret, positions taken); `None` when it does not exist.
async fn day_state(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> Option<(String, u64)> {
    let mut conn = redis.raw_conn().await;
    let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(format!("{prefix}:{{oc}}:day:{yyyymmdd}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(fields.len() <= 1, "a day hash has one field: {fields:?}");
    fields.into_iter().next()
}

/// The secret of day `yyyymmdd`.
async fn secret(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> String {
    day_state(redis, prefix, yyyymmdd)
        .await
        .expect("day hash")
        .0
}

/// Positions taken so far on day `yyyymmdd`.
async fn taken(redis: &TestRedis, prefix: &str, yyyymmdd: &str) -> u64 {
    day_state(redis, prefix, yyyymmdd)
        .await
        .map_or(0, |(_, n)| n)
}

/// Sets the positions taken on day `yyyymmdd` (the day hash must exist).
async fn set_taken(redis: &TestRedis, prefix: &str, yyyymmdd: &str, n: u64) {
    let s = secret(redis, prefix, yyyymmdd).await;
    let mut conn = redis.raw_conn().await;
    let key = format!("{prefix}:{{oc}}:day:{yyyymmdd}");
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg(s)
        .arg(n)
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// The suffix (last 5 digits) of an 11-digit code as a number.
fn suffix(code: &str) -> u64 {
    code[6..].parse().unwrap()
}

/// Adjacent pairs `(a, b)` of `xs` with `a < b`.
fn ascending_pairs(xs: &[u64]) -> usize {
    xs.windows(2).filter(|w| w[0] < w[1]).count()
}

/// Test: 90,000 codes of one day drawn by 64 concurrent callers in batches of 1 to 100 are all
/// distinct, 11 digits, with the day's prefix; a batch that would cross the limit fails whole,
/// alone or racing others; the 90,001st code is `exhausted` with `Retry-After` until the next
/// business day.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ninety_thousand_codes_then_exhausted() {
    // 2026-11-21 12:00:00 in Shanghai (+08:00).
    let at = unix(2026, 11, 21, 4, 0, 0);
    let script = Arc::new(script_at(at, 500_000));
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
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

/// The business days (`yyyymmdd`) that have a day hash under prefix `hb`, ascending.
async fn day_hashes(redis: &TestRedis) -> Vec<String> {
    let mut days: Vec<String> = redis
        .all_keys()
        .await
        .into_iter()
        .filter_map(|k| k.strip_prefix("hb:{oc}:day:").map(str::to_string))
        .collect();
    days.sort();
    days
}

/// Test: day hashes have no TTL, and each day's start deletes the hashes older than yesterday,
/// after a gap of days too, and a hash a missed deletion left behind; yesterday's hash stays
/// and goes on where it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_day_start_deletes_hashes_before_yesterday() {
    // 12:00 in Shanghai (+08:00) of 2026-11-`d`.
    let noon = |d: i64| unix(2026, 11, d, 4, 0, 0);
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
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

/// Test: a zone with DST (Santiago, where the changes happen at local midnight): the offset
/// comes from Redis `TIME`, not from the function's clock. 2026-04-04 ends at 24:00 -03 =
/// 03:00Z, but the clocks go back to 23:00 -04, so the business day lasts until 04:00Z.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dst_zone_business_day_follows_redis_time() {
    let transition = unix(2026, 4, 5, 3, 0, 0);
    let before = transition - 60; // the function's clock: still -03
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "dst", "America/Santiago");
        // 03:30Z is 23:30 -04 on 2026-04-04 (a fixed -03 would say 00:30 on the 5th).
        let codes = issued(
            take_at(&store, 2, transition + 1800, 0, before).await,
            "2026-04-04",
        );
        assert!(codes.iter().all(|c| c.starts_with("260404")), "{codes:?}");
        issued(
            take_at(&store, 1, transition - 1, 999_999, before).await,
            "2026-04-04",
        );
        issued(
            take_at(&store, 1, transition + 3599, 999_999, before).await,
            "2026-04-04",
        );
        issued(
            take_at(&store, 1, transition + 3600, 0, before).await,
            "2026-04-05",
        );
        assert_eq!(taken(&redis, "dst", "20260404").await, 4);
        assert_eq!(taken(&redis, "dst", "20260405").await, 1);

        // Exhausted at 03:30Z: the next business day starts at 04:00Z, in 1,800 s.
        set_taken(&redis, "dst", "20260404", 90_000).await;
        match take_at(&store, 1, transition + 1800, 0, before)
            .await
            .unwrap()
        {
            Outcome::Exhausted {
                date,
                retry_after_secs,
            } => {
                assert_eq!(
                    (date.to_string().as_str(), retry_after_secs),
                    ("2026-04-04", 1800)
                );
            }
            other => panic!("{backend}: {other:?}"),
        }
        // New York, autumn: the local day 2026-11-01 has 25 hours and ends at 05:00Z.
        let store = order_store(&redis, "ny", "America/New_York");
        let end = unix(2026, 11, 2, 5, 0, 0);
        issued(
            take_at(&store, 1, end - 1, 0, end - 5 * 3600).await,
            "2026-11-01",
        );
        issued(
            take_at(&store, 1, end, 0, end - 5 * 3600).await,
            "2026-11-02",
        );
    }
}

/// Test: the script refuses rather than guesses or repeats: a Redis clock far from the
/// function's, a day whose hash vanished, and a Redis clock that went back by days write
/// nothing and hand out no code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_clock_skew_and_lost_days() {
    let at = unix(2026, 11, 21, 4, 0, 0);
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        let out = take_at(&store, 1, at, 0, at - 7 * 3600).await;
        assert!(matches!(out, Err(Error::Unavailable(_))), "{out:?}");
        assert!(
            redis.all_keys().await.is_empty(),
            "{backend}: nothing written"
        );

        issued(take_at(&store, 10, at, 0, at).await, "2026-11-21");
        // The Redis clock three days back: that day has no hash, and re-creating one for a day
        // before the newest could restart a sequence.
        let back = at - 3 * 86_400;
        let out = take_at(&store, 1, back, 0, back).await;
        assert!(matches!(out, Err(Error::Internal(_))), "{out:?}");
        // The current day's hash vanishes (eviction, a careless DEL): refused, not restarted.
        let mut conn = redis.raw_conn().await;
        let _: () = redis::cmd("DEL")
            .arg("hb:{oc}:day:20261121")
            .query_async(&mut conn)
            .await
            .unwrap();
        let out = take_at(&store, 1, at + 60, 0, at + 60).await;
        assert!(matches!(out, Err(Error::Internal(_))), "{out:?}");
        assert_eq!(
            redis.all_keys().await,
            vec!["hb:{oc}:newest_day".to_string()],
            "{backend}"
        );
        // The next day starts normally.
        issued(
            take_at(&store, 1, at + 86_400, 0, at + 86_400).await,
            "2026-11-22",
        );
        // Out-of-range counts are refused before Redis is asked.
        for n in [0, 101] {
            assert!(matches!(
                take_at(&store, n, at, 0, at).await,
                Err(Error::Internal(_))
            ));
        }
    }
}

/// Test: the secret a process remembers is only a guess. After the database is flushed, or
/// when the day hash holds another secret (another server behind the same URL), the script
/// undoes the guess's increment and answers with the real secret; codes follow the stored
/// secret, the hash keeps one field, and a day used up stays used up on either path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_secret_guesses_are_corrected() {
    let at = unix(2026, 11, 24, 4, 0, 0);
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        let first = issued(take_at(&store, 3, at, 0, at).await, "2026-11-24");
        let old = secret(&redis, "hb", "20261124").await;
        assert_eq!(
            suffix(&first[0]),
            order_codes::permutation(5, &old).suffix(0)
        );

        // Flushed: the remembered secret is stale; the day starts afresh with a new one.
        redis.flushall().await;
        let again = issued(take_at(&store, 2, at, 0, at).await, "2026-11-24");
        let new = secret(&redis, "hb", "20261124").await;
        assert_ne!(new, old);
        let perm = order_codes::permutation(5, &new);
        assert_eq!(
            again.iter().map(|c| suffix(c)).collect::<Vec<_>>(),
            vec![perm.suffix(0), perm.suffix(1)]
        );
        assert_eq!(
            day_state(&redis, "hb", "20261124").await,
            Some((new.clone(), 2))
        );

        // Another secret in the hash (10 positions taken): the guess is undone, the stored
        // secret is used and remembered.
        let other = order_codes::new_day_secret();
        let key = "hb:{oc}:day:20261124";
        let mut conn = redis.raw_conn().await;
        let _: () = redis::cmd("DEL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("HSET")
            .arg(key)
            .arg(&other)
            .arg(10)
            .query_async(&mut conn)
            .await
            .unwrap();
        let codes = issued(take_at(&store, 2, at, 0, at).await, "2026-11-24");
        let perm = order_codes::permutation(5, &other);
        assert_eq!(
            codes.iter().map(|c| suffix(c)).collect::<Vec<_>>(),
            vec![perm.suffix(10), perm.suffix(11)]
        );
        assert_eq!(
            day_state(&redis, "hb", "20261124").await,
            Some((other.clone(), 12))
        );

        // Used up, reached with a wrong guess (slow path) and with the right one (fast path):
        // exhausted, nothing taken, still one field.
        for guess_right in [false, true] {
            let fresh = order_codes::new_day_secret();
            let _: () = redis::cmd("DEL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            let _: () = redis::cmd("HSET")
                .arg(key)
                .arg(&fresh)
                .arg(89_999)
                .query_async(&mut conn)
                .await
                .unwrap();
            if guess_right {
                issued(take_at(&store, 1, at, 0, at).await, "2026-11-24");
            } else {
                let _: () = redis::cmd("HSET")
                    .arg(key)
                    .arg(&fresh)
                    .arg(90_000)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
            let out = take_at(&store, 1, at, 0, at).await.unwrap();
            assert!(
                matches!(out, Outcome::Exhausted { .. }),
                "{backend} guess right {guess_right}: {out:?}"
            );
            assert_eq!(
                day_state(&redis, "hb", "20261124").await,
                Some((fresh, 90_000))
            );
        }
    }
}

/// Sends `v` through the next-order-code function's router; returns (status, JSON body,
/// Retry-After).
async fn call(store: &Arc<Store>, v: &Value) -> (u16, Value, Option<String>) {
    common::call(store, common::Function::NextOrderCode, v).await
}

/// Redis `TIME` in Unix seconds.
async fn redis_now(redis: &TestRedis) -> i64 {
    let mut conn = redis.raw_conn().await;
    let (s, _us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s
}

/// Test: the HTTP contract through the event fixtures and the production script (real Redis
/// `TIME`): 201 with the date and codes, 400 for every bad input with nothing taken, 401, 405,
/// 503 `exhausted` with `Retry-After` until the next business day, 503 `unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_contract_and_bad_inputs() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        // Stay clear of midnight in Shanghai (16:00Z), where the expected date is ambiguous.
        while (redis_now(&redis).await + 8 * 3600).rem_euclid(86_400) >= 86_400 - 60 {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let local_day = (redis_now(&redis).await + 8 * 3600).div_euclid(86_400);
        let date = order_codes::date_of_day(local_day).unwrap();
        let (yymmdd, yyyymmdd) = (
            date.format("%y%m%d").to_string(),
            date.format("%Y%m%d").to_string(),
        );

        let (s, b, _) = call(&store, &event("next-order-code-single")).await;
        assert_eq!(s, 201, "{b}");
        assert_eq!(b["date"], date.to_string());
        let codes = b["codes"].as_array().unwrap();
        assert_eq!(codes.len(), 1);
        let code = codes[0].as_str().unwrap();
        assert!(
            code.len() == 11 && code.starts_with(&yymmdd) && !code[6..].starts_with('0'),
            "{code}"
        );

        let (s, b, _) = call(&store, &event("next-order-code-batch")).await;
        assert_eq!(
            (s, b["date"].clone()),
            (201, json!(date.to_string())),
            "{b}"
        );
        let batch: HashSet<&str> = b["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(batch.len(), 100);
        assert!(!batch.contains(code));
        let (s, b, _) = call(
            &store,
            &with_body(event("next-order-code-single"), r#"{"count": 7}"#),
        )
        .await;
        assert_eq!((s, b["codes"].as_array().map(Vec::len)), (201, Some(7)));
        let (s, b, _) = call(&store, &with_body(event("next-order-code-single"), "{}")).await;
        assert_eq!((s, b["codes"].as_array().map(Vec::len)), (201, Some(1)));
        assert_eq!(taken(&redis, "hb", &yyyymmdd).await, 109);

        let ev = |body: &str| with_body(event("next-order-code-single"), body);
        let mut no_auth = event("next-order-code-single");
        no_auth["requestContext"]
            .as_object_mut()
            .unwrap()
            .remove("authorizer");
        let mut get = event("next-order-code-single");
        get["requestContext"]["http"]["method"] = json!("GET");
        let cases: Vec<(&str, Value, u16, &str)> = vec![
            (
                "fixture: count 101",
                event("next-order-code-bad-count"),
                400,
                "invalid_request",
            ),
            ("count 0", ev(r#"{"count": 0}"#), 400, "invalid_request"),
            ("count -1", ev(r#"{"count": -1}"#), 400, "invalid_request"),
            (
                "count huge",
                ev(r#"{"count": 18446744073709551616}"#),
                400,
                "invalid_request",
            ),
            (
                "count fractional",
                ev(r#"{"count": 1.5}"#),
                400,
                "invalid_request",
            ),
            (
                "count float",
                ev(r#"{"count": 2.0}"#),
                400,
                "invalid_request",
            ),
            (
                "count as string",
                ev(r#"{"count": "5"}"#),
                400,
                "invalid_request",
            ),
            (
                "count null",
                ev(r#"{"count": null}"#),
                400,
                "invalid_request",
            ),
            (
                "unknown field",
                ev(r#"{"count": 1, "prefix": "99"}"#),
                400,
                "invalid_request",
            ),
            ("JSON array", ev("[1]"), 400, "invalid_request"),
            ("bare number", ev("5"), 400, "invalid_request"),
            (
                "malformed JSON",
                ev(r#"{"count": "#),
                400,
                "invalid_request",
            ),
            ("no JWT", no_auth, 401, "unauthorized"),
            (
                "bad user id",
                with_sub(ev("{}"), "a\u{202E}b"),
                401,
                "unauthorized",
            ),
            ("GET", get, 405, "method_not_allowed"),
            (
                "route of another function",
                event("create-packet-lucky"),
                404,
                "not_found",
            ),
        ];
        let before = snapshot(&redis).await;
        for (name, ev, status, code) in cases {
            let (s, body, _) = call(&store, &ev).await;
            assert_eq!(
                (s, body["error"].as_str()),
                (status, Some(code)),
                "{backend} {name}: {body}"
            );
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}"
            );
            assert_eq!(
                snapshot(&redis).await,
                before,
                "{backend} {name} changed the data"
            );
        }

        // Exhausted: 5 codes left today; a batch of 6 fails whole, 5 singles succeed, then 503.
        set_taken(&redis, "hb", &yyyymmdd, 89_995).await;
        let (s, b, retry) = call(&store, &ev(r#"{"count": 6}"#)).await;
        assert_eq!(
            (s, b["error"].as_str(), b["date"].as_str()),
            (503, Some("exhausted"), Some(date.to_string().as_str())),
            "{b}"
        );
        let retry: i64 = retry.expect("Retry-After").parse().unwrap();
        let until_midnight = 86_400 - (redis_now(&redis).await + 8 * 3600).rem_euclid(86_400);
        assert!(
            (retry - until_midnight).abs() <= 2,
            "Retry-After {retry}, midnight in {until_midnight} s"
        );
        assert_eq!(taken(&redis, "hb", &yyyymmdd).await, 89_995);
        for _ in 0..5 {
            assert_eq!(call(&store, &event("next-order-code-single")).await.0, 201);
        }
        let (s, b, retry) = call(&store, &event("next-order-code-single")).await;
        assert_eq!((s, b["error"].as_str()), (503, Some("exhausted")), "{b}");
        assert!(retry.is_some());
    }

    // Redis down: 503 unavailable with Retry-After: 1, never a code.
    let mut server = RedisServer::start();
    let cfg = hongbao::Config {
        redis_url: server.url(),
        connect_timeout: std::time::Duration::from_millis(300),
        response_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    server.stop();
    let store = Arc::new(Store::new(cfg));
    let (s, b, retry) = call(&store, &event("next-order-code-batch")).await;
    assert_eq!(
        (s, b["error"].as_str(), retry.as_deref()),
        (503, Some("unavailable"), Some("1")),
        "{b}"
    );
}

/// 6- and 7-digit suffixes (`HONGBAO_ORDER_CODE_DIGITS`) against Redis: 12- and 13-digit
/// codes, the suffix's first digit never 0, every code once, and exactly 9 × 10^(digits − 1)
/// codes a day: the last ones are handed out, the next call is `exhausted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_and_seven_digit_codes() {
    let at = unix(2026, 11, 21, 4, 0, 0);
    let script = script_at(at, 0);
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        for digits in [6u32, 7] {
            let prefix = format!("d{digits}");
            let store = common::store(&redis, |c| {
                c.key_prefix = prefix.clone();
                c.order_codes.digits = digits;
            });
            let per_day = 9 * 10u64.pow(digits - 1);
            let mut codes: Vec<String> = Vec::new();
            for _ in 0..20 {
                let out = order_codes::next_codes_with(&store, &script, "tester", 100, at).await;
                codes.extend(issued(out, "2026-11-21"));
            }
            // Jump to the end of the day's range: the last 10 positions.
            set_taken(&redis, &prefix, "20261121", per_day - 10).await;
            let out = order_codes::next_codes_with(&store, &script, "tester", 10, at).await;
            codes.extend(issued(out, "2026-11-21"));
            let out = order_codes::next_codes_with(&store, &script, "tester", 1, at)
                .await
                .unwrap();
            assert!(
                matches!(out, Outcome::Exhausted { .. }),
                "{backend} {digits}: {out:?}"
            );
            assert_eq!(taken(&redis, &prefix, "20261121").await, per_day);
            let len = 6 + digits as usize;
            let low = 10u64.pow(digits - 1);
            assert!(codes.iter().all(|c| c.len() == len
                && c.starts_with("261121")
                && c.bytes().all(|b| b.is_ascii_digit())
                && !c[6..].starts_with('0')));
            let suffixes: HashSet<u64> = codes.iter().map(|c| c[6..].parse().unwrap()).collect();
            assert_eq!(suffixes.len(), 2_010, "{backend} {digits}: every code once");
            assert!(suffixes.iter().all(|s| (low..10 * low).contains(s)));
        }
    }
}
