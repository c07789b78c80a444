//! Clocks: a DST zone's business day, clock skew and lost days refused, stale secret guesses
//! corrected.

use harness::{Backend, TestRedis};
use hongbao::order_codes::{self, Outcome};
use hongbao::Error;

use super::{
    day_state, issued, order_store, replace_day, secret, set_taken, suffix, take_at, taken, unix,
};

/// Test: a zone with DST (Santiago, where the changes happen at local midnight): the offset
/// comes from Redis `TIME`, not from the function's clock. 2026-04-04 ends at 24:00 -03 =
/// 03:00Z, but the clocks go back to 23:00 -04, so the business day lasts until 04:00Z.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dst_zone_business_day_follows_redis_time() {
    let transition = unix(2026, 4, 5, 3, 0, 0);
    let before = transition - 60; // the function's clock: still -03
    for backend in Backend::all() {
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

/// 2026-11-21 04:00Z, noon in Shanghai.
const AT: i64 = unix(2026, 11, 21, 4, 0, 0);

/// Test: a Redis clock 7 hours from the function's is refused as unavailable and nothing is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_clock_far_from_the_functions_is_refused() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");

        let out = take_at(&store, 1, AT, 0, AT - 7 * 3600).await;

        assert!(matches!(out, Err(Error::Unavailable(_))), "{out:?}");
        assert!(
            redis.all_keys().await.is_empty(),
            "{backend}: nothing written"
        );
    }
}

/// Test: a Redis clock three days back is refused: that day has no hash, and re-creating one
/// for a day before the newest could restart a sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_clock_gone_back_by_days_is_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = order_store(&redis, "hb", "Asia/Shanghai");
    issued(take_at(&store, 10, AT, 0, AT).await, "2026-11-21");
    let back = AT - 3 * 86_400;

    let out = take_at(&store, 1, back, 0, back).await;

    assert!(matches!(out, Err(Error::Internal(_))), "{out:?}");
}

/// Test: the current day's hash vanished (eviction, a careless `DEL`): refused, not restarted,
/// and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_whose_hash_vanished_is_refused_not_restarted() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = order_store(&redis, "hb", "Asia/Shanghai");
        issued(take_at(&store, 10, AT, 0, AT).await, "2026-11-21");
        let _: () = redis::cmd("DEL")
            .arg("hb:{oc}:day:20261121")
            .query_async(&mut redis.raw_conn().await)
            .await
            .unwrap();

        let out = take_at(&store, 1, AT + 60, 0, AT + 60).await;

        assert!(matches!(out, Err(Error::Internal(_))), "{out:?}");
        let keys = redis.all_keys().await;
        assert_eq!(keys, vec!["hb:{oc}:newest_day".to_string()], "{backend}");
    }
}

/// Test: after a day whose hash vanished, the next day starts normally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_day_after_a_lost_day_starts_normally() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = order_store(&redis, "hb", "Asia/Shanghai");
    issued(take_at(&store, 10, AT, 0, AT).await, "2026-11-21");
    let _: () = redis::cmd("DEL")
        .arg("hb:{oc}:day:20261121")
        .query_async(&mut redis.raw_conn().await)
        .await
        .unwrap();

    let out = take_at(&store, 1, AT + 86_400, 0, AT + 86_400).await;

    assert_eq!(issued(out, "2026-11-22").len(), 1);
}

/// Test: a count of 0 or 101 codes is refused before Redis is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_counts_are_refused() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = order_store(&redis, "hb", "Asia/Shanghai");

    let zero = take_at(&store, 0, AT, 0, AT).await;
    let over = take_at(&store, 101, AT, 0, AT).await;

    assert!(matches!(
        (zero, over),
        (Err(Error::Internal(_)), Err(Error::Internal(_)))
    ));
    assert!(redis.all_keys().await.is_empty());
}

/// Test: the secret a process remembers is only a guess. After the database is flushed, or
/// when the day hash holds another secret (another server behind the same URL), the script
/// undoes the guess's increment and answers with the real secret; codes follow the stored
/// secret, the hash keeps one field, and a day used up stays used up on either path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_secret_guesses_are_corrected() {
    let at = unix(2026, 11, 24, 4, 0, 0);
    for backend in Backend::all() {
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
        replace_day(&redis, key, &other, 10).await;
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
            replace_day(&redis, key, &fresh, 89_999).await;
            if guess_right {
                issued(take_at(&store, 1, at, 0, at).await, "2026-11-24");
            } else {
                replace_day(&redis, key, &fresh, 90_000).await;
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
