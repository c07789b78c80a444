//! One pool: codes shared out to many users, a grab sent again, generated codes, the
//! campaign's times and visit limit, and one redemption of a code.

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_id, parse, CodeKey};
use hongbao::coupons::PoolKeys;
use hongbao::Store;

use super::{coupon_store, create, dump_all, grab, grab_call, redeem, redis_ms, Pool, SECRET};

/// Test: 100 uploaded codes, 300 users racing, 60 of them pressing twice at once: exactly 100
/// distinct codes issued, all from the upload, one per user; a repeat answers the user's own
/// code; everyone else finds the pool empty; the pool's counts add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_codes_for_three_hundred_users() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let upload: Vec<String> = (0..100).map(|i| format!("SAVE20-{i:03}")).collect();
        let refs: Vec<&str> = upload.iter().map(String::as_str).collect();
        let pool = Pool {
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            per_user: 1,
            generated: None,
            codes: &refs,
            fingerprint: "v1:a",
        };
        assert_eq!(create(&store, 1, &pool).await, "created");
        // Sent again (a lost reply): the same answer as a repeat, nothing added.
        assert_eq!(create(&store, 1, &pool).await, "repeat");
        let before = dump_all(&redis, &store).await;
        let other = Pool {
            fingerprint: "v1:b",
            ..pool
        };
        assert_eq!(create(&store, 1, &other).await, "conflict");
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: conflict wrote"
        );

        let users: Vec<String> = (0..300).map(|u| format!("user-{u}")).collect();
        let presses = users.iter().chain(users.iter().take(60));
        let tasks = presses.map(|u| {
            let (store, u) = (store.clone(), u.clone());
            tokio::spawn(async move { (u.clone(), grab(&store, 1, &u, 0).await) })
        });
        let mut won: BTreeMap<String, String> = BTreeMap::new();
        let mut empty = 0;
        let mut repeats = Vec::new();
        for r in join_all(tasks).await {
            let (user, reply) = r.unwrap();
            let mut parts = reply.split(':');
            match parts.next() {
                Some("grabbed") => {
                    let item = parts.next().unwrap().to_string();
                    assert!(
                        won.insert(user, item).is_none(),
                        "{backend}: a user won twice"
                    );
                }
                Some("already_grabbed") => repeats.push((user, parts.next().unwrap().to_string())),
                Some("empty") => empty += 1,
                other => panic!("{backend}: {other:?} {reply}"),
            }
        }
        assert_eq!(won.len(), 100, "{backend}");
        let codes: HashSet<&str> = won
            .values()
            .map(|i| i.strip_prefix("0/").unwrap())
            .collect();
        assert_eq!(codes.len(), 100, "{backend}: a code issued twice");
        assert!(codes.iter().all(|c| upload.iter().any(|u| u == c)));
        for (user, item) in &repeats {
            assert_eq!(won.get(user), Some(item), "{backend}: {user}'s repeat");
        }
        assert_eq!(won.len() + repeats.len() + empty, 360);
        // Counts: 100 issued of 100, the list empty, every issued record naming its holder.
        let keys = PoolKeys::new("hb", &campaign_id(1), 1, 0, 1);
        let mut conn = store.conn().await.unwrap();
        let (total, issued): (u64, u64) = redis::cmd("HMGET")
            .arg(&keys.pool)
            .arg("total")
            .arg("issued")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!((total, issued), (100, 100), "{backend}");
        let left: u64 = redis::cmd("LLEN")
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(left, 0);
        let records: BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(&keys.issued)
            .query_async(&mut conn)
            .await
            .unwrap();
        for (user, item) in &won {
            let code = item.strip_prefix("0/").unwrap();
            assert!(records[code].starts_with(&format!("{user}\n")), "{backend}");
        }
    }
}

/// Test: a grab call sent twice (the cluster client re-sends a command whose reply was lost)
/// answers its win again and takes no second code, also when the user may hold three; a new
/// call takes the next code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_sent_again_answers_the_same_win() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool = Pool::generated(now, 3, 10, "v1:r");
        assert_eq!(create(&store, 5, &pool).await, "created");
        let first = grab_call(&store, 5, "alice", 0, "00000000000000c1").await;
        assert!(first.starts_with("grabbed:0/"), "{first}");
        let again = grab_call(&store, 5, "alice", 0, "00000000000000c1").await;
        assert_eq!(again, first, "{backend}: the re-run took another code");
        let keys = PoolKeys::new("hb", &campaign_id(5), 5, 0, 1);
        let mut conn = store.conn().await.unwrap();
        let issued: u64 = redis::cmd("HGET")
            .arg(&keys.pool)
            .arg("issued")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(issued, 1, "{backend}");
        let second = grab_call(&store, 5, "alice", 0, "00000000000000c2").await;
        assert!(
            second.starts_with("grabbed:0/") && second != first,
            "{second}"
        );
    }
}

/// Test: generated codes: 2,000 indices, 3 per user, 400 users pressing 4 times each, all at
/// once: every user gets exactly 3 (the limit binds before the pool runs out), no index is
/// issued twice, and the codes made from the indices are distinct, parse back to the campaign
/// and invert to their index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_codes_three_per_user() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool = Pool::generated(now, 3, 2_000, "v1:g");
        assert_eq!(create(&store, 77, &pool).await, "created");
        let tasks = (0..1_600).map(|i| {
            let store = store.clone();
            let user = format!("user-{}", i % 400);
            tokio::spawn(async move { (user.clone(), grab(&store, 77, &user, 0).await) })
        });
        let mut per_user: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for r in join_all(tasks).await {
            let (user, reply) = r.unwrap();
            if let Some(rest) = reply.strip_prefix("grabbed:0/") {
                let index: u64 = rest.split(':').next().unwrap().parse().unwrap();
                per_user.entry(user).or_default().push(index);
            } else {
                assert!(
                    reply.starts_with("already_grabbed:") || reply.starts_with("empty:"),
                    "{backend}: {reply}"
                );
            }
        }
        let all: Vec<u64> = per_user.values().flatten().copied().collect();
        assert_eq!(all.len(), 1_200, "{backend}");
        assert_eq!(all.iter().collect::<HashSet<_>>().len(), 1_200, "{backend}");
        assert!(per_user.values().all(|v| v.len() == 3), "{backend}");
        let key = CodeKey::new(SECRET).unwrap();
        let codes: HashSet<String> = all.iter().map(|&i| key.code(77, i)).collect();
        assert_eq!(codes.len(), 1_200);
        for &i in &all[..50] {
            let p = parse(&key.code(77, i)).unwrap();
            assert_eq!((p.campaign_no, key.unpermute(p.value)), (77, i));
        }
    }
}

/// A one-code pool of campaign `no` open from `starts_at_ms` to `ends_at_ms`, one code a user.
fn one_code(code: &'static [&'static str], starts_at_ms: i64, ends_at_ms: i64) -> Pool<'static> {
    Pool {
        starts_at_ms,
        ends_at_ms,
        per_user: 1,
        generated: None,
        codes: code,
        fingerprint: "v1:s",
    }
}

/// Campaign 4, open now with `ONE-OFF` and `TWO-OFF`, grabbed by carol and dave.
async fn carol_and_dave_hold_the_codes(store: &Store, now: i64) {
    let open = Pool {
        codes: &["ONE-OFF", "TWO-OFF"],
        ..one_code(&[], now - 1_000, now + 600_000)
    };
    assert_eq!(create(store, 4, &open).await, "created");
    assert!(grab(store, 4, "carol", 0)
        .await
        .starts_with("grabbed:0/ONE-OFF:"));
    assert!(grab(store, 4, "dave", 0)
        .await
        .starts_with("grabbed:0/TWO-OFF:"));
}

/// Test: before the start a grab answers not_started and counts toward the visit limit; the
/// visit over the limit is refused and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visits_before_the_start_count_and_the_visit_over_the_limit_writes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let later = one_code(&["EARLY-1"], now + 600_000, now + 1_200_000);
        assert_eq!(create(&store, 2, &later).await, "created");
        for _ in 0..3 {
            assert!(grab(&store, 2, "eager", 3)
                .await
                .starts_with("not_started:"));
        }
        let before = dump_all(&redis, &store).await;

        let fourth = grab(&store, 2, "eager", 3).await;

        assert!(fourth.starts_with("rate_limited:"), "{backend}: {fourth}");
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refused visit wrote"
        );
    }
}

/// Test: after the end a grab answers ended with the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_after_the_end_answers_ended() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let ended = one_code(&["LATE-1"], now - 2_000, now - 1_000);
    assert_eq!(create(&store, 3, &ended).await, "created");

    let answer = grab(&store, 3, "late", 3).await;

    assert_eq!(answer, format!("ended:{}", now - 1_000));
}

/// Test: once each code is issued, the next user finds the pool empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_after_the_last_code_finds_the_pool_empty() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    carol_and_dave_hold_the_codes(&store, redis_ms(&store).await).await;

    let answer = grab(&store, 4, "erin", 0).await;

    assert_eq!(answer, "empty:");
}

/// Test: a redeem of a code by a user it was not issued to, or of a code of no pool, is
/// not_found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_holder_redeems_a_code_that_exists() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    carol_and_dave_hold_the_codes(&store, redis_ms(&store).await).await;

    let by_mallory = redeem(&store, 4, "ONE-OFF", "mallory", "o-1").await;
    let no_such = redeem(&store, 4, "NO-SUCH", "carol", "o-1").await;

    assert_eq!(
        (by_mallory.as_str(), no_such.as_str()),
        ("not_found", "not_found")
    );
}

/// Test: 32 concurrent redeems of one coupon (16 by its order, 16 by 16 other orders) redeem
/// it once: every other redeem by its order repeats the redemption, every other order is told
/// which order redeemed it, and the pool counts one redemption.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_redeems_redeem_a_coupon_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        carol_and_dave_hold_the_codes(&store, redis_ms(&store).await).await;

        let tasks = (0..32).map(|i| {
            let store = store.clone();
            let order = if i % 2 == 0 {
                "o-1".to_string()
            } else {
                format!("x-{i}")
            };
            tokio::spawn(async move {
                let reply = redeem(&store, 4, "ONE-OFF", "carol", &order).await;
                (order, reply)
            })
        });
        let answers: Vec<(String, String)> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        // redeemed:<at>:<repeat>:<discount> (no total given: no discount).
        let firsts = answers
            .iter()
            .filter(|(_, r)| r.starts_with("redeemed:") && r.ends_with(":0:"));
        let first: Vec<&str> = firsts.map(|(order, _)| order.as_str()).collect();
        assert_eq!(first.len(), 1, "{backend}: {answers:?}");
        let winner = first[0];
        for (order, reply) in &answers {
            match reply.split(':').collect::<Vec<_>>()[..] {
                ["redeemed", _, "0" | "1", ""] => assert_eq!(order, winner, "{backend}"),
                ["already_redeemed", _, by] => {
                    assert_eq!((by, order != winner), (winner, true), "{backend}: {order}")
                }
                _ => panic!("{backend}: {order}: {reply}"),
            }
        }
        assert_eq!(pool_field(&store, "redeemed").await, "1", "{backend}");
    }
}

/// Field `field` of campaign 4's pool hash.
async fn pool_field(store: &Store, field: &str) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(4), 4, 0, 1);
    redis::cmd("HGET")
        .arg(&keys.pool)
        .arg(field)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
}

/// Campaign 4 of [`carol_and_dave_hold_the_codes`], carol's coupon redeemed by order `o-1`,
/// and its `redeem_by` moved to a millisecond before `now`.
async fn past_redeem_by(store: &Store, now: i64) {
    carol_and_dave_hold_the_codes(store, now).await;
    assert!(redeem(store, 4, "ONE-OFF", "carol", "o-1")
        .await
        .ends_with(":0:"));
    let keys = PoolKeys::new("hb", &campaign_id(4), 4, 0, 1);
    let _: () = redis::cmd("HSET")
        .arg(&keys.pool)
        .arg("redeem_by")
        .arg(now - 1)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
}

/// Test: after redeem_by a redeem answers expired and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redeem_by_a_redeem_is_expired_and_writes_nothing() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    past_redeem_by(&store, now).await;
    let before = dump_all(&redis, &store).await;

    let late = redeem(&store, 4, "TWO-OFF", "dave", "o-9").await;

    assert_eq!(late, format!("expired:{}", now - 1));
    assert_eq!(
        dump_all(&redis, &store).await,
        before,
        "an expired redeem wrote"
    );
}

/// Test: after redeem_by the order that redeemed the coupon before still repeats its
/// redemption.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redeem_by_a_redemption_still_repeats() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    past_redeem_by(&store, redis_ms(&store).await).await;

    let repeat = redeem(&store, 4, "ONE-OFF", "carol", "o-1").await;

    assert!(repeat.ends_with(":1:"), "{repeat}");
}
