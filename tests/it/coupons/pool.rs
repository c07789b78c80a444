//! One pool: codes shared out to many users, a grab sent again, generated codes, and the
//! times, visits and one redemption of a code.

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_id, parse, CodeKey};
use hongbao::coupons::PoolKeys;

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

/// Test: before the start a grab answers not_started and counts toward the visit limit
/// (refused visits change nothing); after the end it answers ended; a coupon is redeemed once
/// under 32 concurrent redeems (16 by its order, 16 by others), its holder only, and not after
/// redeem_by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_visits_and_one_redemption() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let later = Pool {
            starts_at_ms: now + 600_000,
            ends_at_ms: now + 1_200_000,
            per_user: 1,
            generated: None,
            codes: &["EARLY-1"],
            fingerprint: "v1:s",
        };
        assert_eq!(create(&store, 2, &later).await, "created");
        for _ in 0..3 {
            assert!(grab(&store, 2, "eager", 3)
                .await
                .starts_with("not_started:"));
        }
        let before = dump_all(&redis, &store).await;
        assert!(grab(&store, 2, "eager", 3)
            .await
            .starts_with("rate_limited:"));
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refused visit wrote"
        );

        let ended = Pool {
            starts_at_ms: now - 2_000,
            ends_at_ms: now - 1_000,
            codes: &["LATE-1"],
            fingerprint: "v1:e",
            ..later
        };
        assert_eq!(create(&store, 3, &ended).await, "created");
        assert_eq!(
            grab(&store, 3, "late", 3).await,
            format!("ended:{}", now - 1_000)
        );

        // Redeem: the holder's code, 32 redeems at once.
        let open = Pool {
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            codes: &["ONE-OFF", "TWO-OFF"],
            fingerprint: "v1:o",
            ..later
        };
        assert_eq!(create(&store, 4, &open).await, "created");
        assert!(grab(&store, 4, "carol", 0)
            .await
            .starts_with("grabbed:0/ONE-OFF:"));
        assert!(grab(&store, 4, "dave", 0)
            .await
            .starts_with("grabbed:0/TWO-OFF:"));
        assert_eq!(grab(&store, 4, "erin", 0).await, "empty:");
        assert_eq!(
            redeem(&store, 4, "ONE-OFF", "mallory", "o-1").await,
            "not_found"
        );
        assert_eq!(
            redeem(&store, 4, "NO-SUCH", "carol", "o-1").await,
            "not_found"
        );
        let tasks = (0..32).map(|i| {
            let store = store.clone();
            // Half the redeems by order o-1, the rest by 16 other orders.
            let order = if i % 2 == 0 {
                "o-1".to_string()
            } else {
                format!("x-{i}")
            };
            tokio::spawn(async move {
                (
                    order.clone(),
                    redeem(&store, 4, "ONE-OFF", "carol", &order).await,
                )
            })
        });
        let answers: Vec<(String, String)> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        // Exactly one redemption; every other redeem by its order repeats it, every other order
        // is told which order redeemed it.
        let winners: Vec<&String> = answers
            .iter()
            .filter(|(_, reply)| reply.starts_with("redeemed:") && reply.ends_with(":0:"))
            .map(|(order, _)| order)
            .collect();
        assert_eq!(winners.len(), 1, "{backend}: {answers:?}");
        let winner = winners[0];
        for (order, reply) in &answers {
            let parts: Vec<&str> = reply.split(':').collect();
            match parts[..] {
                // redeemed:<at>:<repeat>:<discount> (no total given: no discount).
                ["redeemed", _, "0", ""] => {}
                ["redeemed", _, "1", ""] => assert_eq!(order, winner, "{backend}"),
                ["already_redeemed", _, by] => {
                    assert_eq!(by, winner.as_str(), "{backend}");
                    assert_ne!(order, winner, "{backend}");
                }
                _ => panic!("{backend}: {reply}"),
            }
        }
        let keys = PoolKeys::new("hb", &campaign_id(4), 4, 0, 1);
        let mut conn = store.conn().await.unwrap();
        let redeemed: u64 = redis::cmd("HGET")
            .arg(&keys.pool)
            .arg("redeemed")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(redeemed, 1);

        // After redeem_by: refused, nothing written; the order that redeemed it still repeats.
        let winner = winner.clone();
        let _: () = redis::cmd("HSET")
            .arg(&keys.pool)
            .arg("redeem_by")
            .arg(now - 1)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(redeem(&store, 4, "ONE-OFF", "carol", &winner)
            .await
            .ends_with(":1:"));
        let before = dump_all(&redis, &store).await;
        assert_eq!(
            redeem(&store, 4, "TWO-OFF", "dave", "o-9").await,
            format!("expired:{}", now - 1)
        );
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: an expired redeem wrote"
        );
    }
}
