//! Coupon drops' scripts (`lua/coupon_create_pool.lua`, `lua/coupon_grab.lua`,
//! `lua/coupon_redeem.lua`) through their typed calls, against real `redis-server` processes:
//! every test runs on a standalone server and on a 3-master cluster started by the harness.
//! One pool here; campaigns of many pools build on these steps.

mod api;

use std::collections::{BTreeMap, HashSet};

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::domain::coupons::{
    campaign_id, home_pool, parse, CodeKey, CodeSource, NewCampaign, Status, VisitLimit,
};
use hongbao::store::coupons::{
    self, AddCodesOutcome, CreateOutcome, Created, GrabOutcome, PoolKeys, RedeemOutcome,
};
use hongbao::store::scripts::{text, Call, CouponCreatePoolCall, CouponGrabCall, CouponRedeemCall};
use hongbao::Store;

use crate::common::{self, sleep_until_redis_ms};

/// A store on `redis` for the coupon suites. Replies may take up to 10 s (production: 1 s): a
/// storm here puts 1,600 scripts on one multiplexed connection at once, each reply queued
/// behind the others, while the binary's other tests start clusters on the same 2 cores; a
/// timeout there (seen once in CI) says nothing about coupons.
pub(crate) fn coupon_store(
    redis: &TestRedis,
    tweak: impl FnOnce(&mut hongbao::store::Config),
) -> std::sync::Arc<Store> {
    common::store(redis, |c| {
        c.response_timeout = std::time::Duration::from_secs(10);
        tweak(c);
    })
}

const SECRET: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// Redis `TIME` in Unix ms.
async fn redis_ms(store: &Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// A pool's shape for [`create`].
struct Pool<'a> {
    starts_at_ms: i64,
    ends_at_ms: i64,
    per_user: u32,
    generated: Option<(u64, u64)>,
    codes: &'a [&'a str],
    fingerprint: &'a str,
}

/// Writes pool 0 of campaign number `no` (one pool); the script's answer.
async fn create(store: &Store, no: u64, p: &Pool<'_>) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let (first, end) = p.generated.unwrap_or((0, 0));
    let reply = CouponCreatePoolCall {
        pool: &keys.pool,
        codes: &keys.codes,
        fingerprint: p.fingerprint,
        title: "20 off 100",
        starts_at_ms: p.starts_at_ms,
        ends_at_ms: p.ends_at_ms,
        redeem_by_ms: p.ends_at_ms + 60_000,
        per_user: p.per_user,
        pools: 1,
        kind: if p.generated.is_some() {
            "generated"
        } else {
            "uploaded"
        },
        first_index: first,
        end_index: end,
        secret: if p.generated.is_some() { SECRET } else { "" },
        campaign_total: p.generated.map_or(p.codes.len() as u64, |(a, b)| b - a),
        batch: p.codes,
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_create_pool", reply).unwrap()
}

/// One grab of pool 0 of campaign `no` by `user` (visit limit `limit` per minute).
async fn grab(store: &Store, no: u64, user: &str, limit: u32) -> String {
    grab_call(
        store,
        no,
        user,
        limit,
        &format!("{:016x}", rand::random::<u64>()),
    )
    .await
}

/// One grab call of `user` in pool 0 of campaign `no` with call id `call` (a resend of the
/// same call carries the same id).
async fn grab_call(store: &Store, no: u64, user: &str, limit: u32, call: &str) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let reply = CouponGrabCall {
        pool: &keys.pool,
        codes: &keys.codes,
        issued: &keys.issued,
        holders: &keys.holders,
        rate: &keys.visits(user),
        pending: &keys.pending,
        journal: &keys.journal,
        user_id: user,
        home: 0,
        rate_limit: limit,
        rate_window_ms: 60_000,
        reservation: call,
        campaign_id: &campaign_id(no),
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_grab", reply).unwrap()
}

/// One redeem of `code` (as the pool keys it) of campaign `no`.
async fn redeem(store: &Store, no: u64, code: &str, user: &str, order: &str) -> String {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, 0, 1);
    let reply = CouponRedeemCall {
        pool: &keys.pool,
        issued: &keys.issued,
        journal: &keys.journal,
        code,
        user_id: user,
        order_reference: order,
        campaign_id: &campaign_id(no),
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    text("coupon_redeem", reply).unwrap()
}

/// Every key with its type, contents (a hash's fields sorted) and whether it has a TTL, to
/// show that a refused step wrote nothing. Not `DUMP`: a hash with a field value over 64 bytes
/// (a fingerprint) is a hashtable, whose serialized order moves with incremental rehashing,
/// which a read (`HGET`) can advance.
async fn dump_all(
    redis: &TestRedis,
    store: &Store,
) -> BTreeMap<String, (String, Vec<String>, bool)> {
    let mut conn = store.conn().await.unwrap();
    let mut out = BTreeMap::new();
    for key in redis.all_keys().await {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut items: Vec<String> = match kind.as_str() {
            "string" => vec![redis::cmd("GET")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap()],
            "hash" => {
                let fields: BTreeMap<String, String> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                fields
                    .into_iter()
                    .map(|(f, v)| format!("{f}={v}"))
                    .collect()
            }
            "list" => redis::cmd("LRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "set" => redis::cmd("SMEMBERS")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap(),
            "zset" => {
                let members: Vec<(String, i64)> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                members
                    .into_iter()
                    .map(|(m, score)| format!("{m}={score}"))
                    .collect()
            }
            "stream" => {
                let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                entries
                    .into_iter()
                    .map(|(id, fields)| format!("{id} {fields:?}"))
                    .collect()
            }
            other => panic!("{key}: unexpected type {other}"),
        };
        if kind == "set" {
            items.sort();
        }
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.insert(key, (kind, items, ttl > 0));
    }
    out
}

/// Test: 100 uploaded codes, 300 users racing, 60 of them pressing twice at once: exactly 100
/// distinct codes issued, all from the upload, one per user; a repeat answers the user's own
/// code; everyone else finds the pool empty; the pool's counts add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_codes_for_three_hundred_users() {
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool = Pool {
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            per_user: 3,
            generated: Some((0, 10)),
            codes: &[],
            fingerprint: "v1:r",
        };
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
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool = Pool {
            starts_at_ms: now - 1_000,
            ends_at_ms: now + 600_000,
            per_user: 3,
            generated: Some((0, 2_000)),
            codes: &[],
            fingerprint: "v1:g",
        };
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
    for backend in Backend::ALL {
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
            .filter(|(_, reply)| reply.starts_with("redeemed:") && reply.ends_with(":0"))
            .map(|(order, _)| order)
            .collect();
        assert_eq!(winners.len(), 1, "{backend}: {answers:?}");
        let winner = winners[0];
        for (order, reply) in &answers {
            let parts: Vec<&str> = reply.split(':').collect();
            match parts[..] {
                ["redeemed", _, "0"] => {}
                ["redeemed", _, "1"] => assert_eq!(order, winner, "{backend}"),
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
            .ends_with(":1"));
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

/// A campaign request: `source` codes, open from one second ago for ten minutes.
fn campaign(now: i64, reference: &str, source: CodeSource) -> NewCampaign {
    NewCampaign {
        title: "20 off 100".into(),
        source,
        starts_at_ms: Some(now - 1_000),
        ends_at_ms: now + 600_000,
        per_user: 1,
        redeem_by_ms: now + 1_200_000,
        reference: reference.into(),
        codes_planned: None,
    }
}

/// Test: creating a campaign: the same request under the same reference finds the same
/// campaign (also when the first attempt stopped after recording it), another request under it
/// is refused, and duplicate codes (within the request, or another campaign's) and an end in
/// the past are refused; every refusal writes nothing (`DUMP` of every key before and after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_a_campaign_once() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes = |from: usize, n: usize| -> Vec<String> {
            (from..from + n).map(|i| format!("DROP-{i:04}")).collect()
        };
        let first = campaign(now, "drop-1", CodeSource::Uploaded(codes(0, 100)));
        let Ok(CreateOutcome::Created(c)) = coupons::create(&store, &first).await else {
            panic!("{backend}: not created")
        };
        assert_eq!(
            (c.campaign_id.as_str(), c.pools, c.codes_total, c.repeat),
            ("00001", 1, 100, false)
        );
        let again = coupons::create(&store, &first).await.unwrap();
        assert_eq!(
            again,
            CreateOutcome::Created(Created {
                repeat: true,
                ..c.clone()
            }),
            "{backend}"
        );

        let before = dump_all(&redis, &store).await;
        let refusals = [
            (
                campaign(now, "drop-1", CodeSource::Uploaded(codes(0, 99))),
                CreateOutcome::ReferenceReused,
            ),
            (
                campaign(now, "drop-2", CodeSource::Uploaded(codes(90, 20))),
                CreateOutcome::DuplicateCodes(codes(90, 10)),
            ),
            (
                campaign(
                    now,
                    "drop-3",
                    CodeSource::Uploaded(vec!["A-1111".into(), "B-2222".into(), "A-1111".into()]),
                ),
                CreateOutcome::DuplicateCodes(vec!["A-1111".into()]),
            ),
            (
                NewCampaign {
                    starts_at_ms: None,
                    ends_at_ms: now - 1,
                    redeem_by_ms: now + 1_000,
                    ..campaign(now, "drop-4", CodeSource::Generated(10))
                },
                CreateOutcome::EndsInPast,
            ),
        ];
        for (req, expected) in refusals {
            assert_eq!(
                coupons::create(&store, &req).await.unwrap(),
                expected,
                "{backend}"
            );
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );

        // A creation cut short after its record: the same request completes it.
        let second = campaign(now, "drop-5", CodeSource::Uploaded(codes(100, 50)));
        let keys = PoolKeys::new("hb", "00002", 2, 0, 1);
        let Ok(CreateOutcome::Created(c2)) = coupons::create(&store, &second).await else {
            panic!("{backend}: not created")
        };
        let mut conn = store.conn().await.unwrap();
        let _: () = redis::cmd("DEL")
            .arg(&keys.pool)
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await
            .unwrap();
        let again = coupons::create(&store, &second).await.unwrap();
        assert_eq!(
            again,
            CreateOutcome::Created(Created { repeat: true, ..c2 }),
            "{backend}"
        );
        let left: u64 = redis::cmd("LLEN")
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(left, 50, "{backend}");
    }
}

/// Test: a 200,000-code generated campaign on the 3-master cluster has 24 pools, 8 on each
/// master, every pool holding its share of the indices and the campaign's one secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_campaign_spreads_over_every_master() {
    let redis = TestRedis::start(Backend::Cluster);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let req = campaign(now, "big-drop", CodeSource::Generated(200_000));
    let Ok(CreateOutcome::Created(c)) = coupons::create(&store, &req).await else {
        panic!("not created")
    };
    assert_eq!((c.pools, c.codes_total), (24, 200_000));
    let per_master: Vec<usize> = redis
        .on_every_node(redis::cmd("KEYS").arg("*:coupon:*").clone())
        .await
        .into_iter()
        .map(|v| match v {
            redis::Value::Array(keys) => keys.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(per_master, vec![8, 8, 8], "pools per master");
    let mut conn = store.conn().await.unwrap();
    let (mut total, mut secrets) = (0u64, HashSet::new());
    for k in 0..24 {
        let keys = PoolKeys::new("hb", &c.campaign_id, c.campaign_no, k, 24);
        let (t, next, end, secret): (u64, u64, u64, String) = redis::cmd("HMGET")
            .arg(&keys.pool)
            .arg("total")
            .arg("next")
            .arg("end")
            .arg("secret")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(end - next, t);
        total += t;
        secrets.insert(secret);
    }
    assert_eq!((total, secrets.len()), (200_000, 1));
    let view = coupons::campaign(&store, &c.campaign_id, Some("nobody"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            view.codes_total,
            view.codes_left,
            view.codes_issued,
            view.status,
            view.mine.len()
        ),
        (200_000, 200_000, 0, Status::Open, 0)
    );
}

/// Writes pool `k` of a 3-pool uploaded campaign number `no` with `codes`.
async fn create_pool_of_three(store: &Store, no: u64, k: u32, codes: &[&str], now: i64) {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, k, 3);
    let reply = CouponCreatePoolCall {
        pool: &keys.pool,
        codes: &keys.codes,
        fingerprint: "v1:three",
        title: "three pools",
        starts_at_ms: now - 1_000,
        ends_at_ms: now + 600_000,
        redeem_by_ms: now + 1_200_000,
        per_user: 1,
        pools: 3,
        kind: "uploaded",
        first_index: 0,
        end_index: 0,
        secret: "",
        campaign_total: 15,
        batch: codes,
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    assert_eq!(text("coupon_create_pool", reply).unwrap(), "created");
}

/// Test: three pools holding 5, 0 and 10 codes, 40 users grabbing at once through the store:
/// users whose home pool is empty take codes from the others, so exactly the 15 codes are
/// issued, each once, and `sold_out` is answered only once every pool is empty. A reservation
/// left open (a sandbox that stopped after step 1) is completed by the user's next grab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_home_pools_borrow_from_the_others() {
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1_000,
    };
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool0: Vec<String> = (0..5).map(|i| format!("P0-{i:03}")).collect();
        let pool2: Vec<String> = (0..10).map(|i| format!("P2-{i:03}")).collect();
        let (refs0, refs2): (Vec<&str>, Vec<&str>) = (
            pool0.iter().map(String::as_str).collect(),
            pool2.iter().map(String::as_str).collect(),
        );
        create_pool_of_three(&store, 9, 0, &refs0, now).await;
        create_pool_of_three(&store, 9, 1, &[], now).await;
        create_pool_of_three(&store, 9, 2, &refs2, now).await;
        let id = campaign_id(9);

        // A reservation left open: step 1 only, for a user of the empty pool 1.
        let stranded = (0..)
            .map(|u| format!("stranded-{u}"))
            .find(|u| home_pool(9, u, 3) == 1)
            .unwrap();
        let keys1 = PoolKeys::new("hb", &id, 9, 1, 3);
        let reply = CouponGrabCall {
            pool: &keys1.pool,
            codes: &keys1.codes,
            issued: &keys1.issued,
            holders: &keys1.holders,
            rate: &keys1.visits(&stranded),
            pending: &keys1.pending,
            journal: &keys1.journal,
            user_id: &stranded,
            home: 1,
            rate_limit: 0,
            rate_window_ms: 1_000,
            reservation: "00000000000000r1",
            campaign_id: &id,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        assert_eq!(
            text("coupon_grab", reply).unwrap(),
            "reserved:00000000000000r1"
        );

        let users: Vec<String> = (0..40).map(|u| format!("user-{u}")).collect();
        let tasks = users.iter().map(|u| {
            let (store, u, id) = (store.clone(), u.clone(), id.clone());
            tokio::spawn(async move { coupons::grab(&store, &id, &u, visits).await.unwrap() })
        });
        let mut codes = Vec::new();
        let mut sold_out = 0;
        for outcome in join_all(tasks).await {
            match outcome.unwrap() {
                GrabOutcome::Grabbed { code, .. } => codes.push(code),
                GrabOutcome::SoldOut => sold_out += 1,
                other => panic!("{backend}: {other:?}"),
            }
        }
        // The stranded reservation holds one code (taken by its re-drive below) or none left.
        let again = coupons::grab(&store, &id, &stranded, visits).await.unwrap();
        match &again {
            GrabOutcome::AlreadyGrabbed { codes: mine } => codes.extend(mine.iter().cloned()),
            GrabOutcome::SoldOut => {}
            other => panic!("{backend}: {other:?}"),
        }
        assert_eq!(codes.len(), 15, "{backend}: {sold_out} sold out, {again:?}");
        let distinct: HashSet<&String> = codes.iter().collect();
        assert_eq!(distinct.len(), 15, "{backend}: a code issued twice");
        let mut conn = store.conn().await.unwrap();
        for k in 0..3 {
            let keys = PoolKeys::new("hb", &id, 9, k, 3);
            let left: u64 = redis::cmd("LLEN")
                .arg(&keys.codes)
                .query_async(&mut conn)
                .await
                .unwrap();
            let open: u64 = redis::cmd("HLEN")
                .arg(&keys.pending)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!((left, open), (0, 0), "{backend}: pool {k}");
        }
        // The user whose reservation was completed holds its code on a repeat.
        assert_eq!(
            coupons::grab(&store, &id, &stranded, visits).await.unwrap(),
            again
        );
        let view = coupons::campaign(&store, &id, Some("user-0"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                view.codes_total,
                view.codes_left,
                view.codes_issued,
                view.status
            ),
            (15, 0, 15, Status::SoldOut),
            "{backend}"
        );
    }
}

/// Test: through the store, a coupon grabbed from an uploaded and from a generated campaign is
/// redeemed by its code alone (a generated code also in lower case with dashes); a typo, an
/// unknown code and another user's code are `NotFound` alike; the same order repeats, another
/// is refused with the order that redeemed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeem_by_code_alone() {
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1_000,
    };
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let mut grabbed = Vec::new();
        for (reference, source) in [
            (
                "up",
                CodeSource::Uploaded(vec!["WELCOME-1".into(), "WELCOME-2".into()]),
            ),
            ("gen", CodeSource::Generated(2)),
        ] {
            let Ok(CreateOutcome::Created(c)) =
                coupons::create(&store, &campaign(now, reference, source)).await
            else {
                panic!("{backend}: not created")
            };
            let Ok(GrabOutcome::Grabbed { code, .. }) =
                coupons::grab(&store, &c.campaign_id, "alice", visits).await
            else {
                panic!("{backend}: no code")
            };
            grabbed.push((c.campaign_id, code));
        }
        for (id, code) in &grabbed {
            let spelled = if code.len() == 18 {
                format!("{}-{}", &code[..9], &code[9..]).to_lowercase()
            } else {
                code.clone()
            };
            assert_eq!(
                coupons::redeem(&store, code, "bob", "o-1").await.unwrap(),
                RedeemOutcome::NotFound,
                "{backend}: someone else's code"
            );
            let RedeemOutcome::Redeemed {
                campaign_id,
                repeat: false,
                redeemed_at_ms,
            } = coupons::redeem(&store, &spelled, "alice", "o-1")
                .await
                .unwrap()
            else {
                panic!("{backend}: {code} not redeemed")
            };
            assert_eq!(&campaign_id, id);
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-1").await.unwrap(),
                RedeemOutcome::Redeemed {
                    campaign_id: id.clone(),
                    redeemed_at_ms,
                    repeat: true
                }
            );
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-2").await.unwrap(),
                RedeemOutcome::AlreadyRedeemed {
                    order_reference: "o-1".into(),
                    redeemed_at_ms
                }
            );
        }
        let generated = &grabbed[1].1;
        let mut typo = generated.clone().into_bytes();
        typo[7] = if typo[7] == b'A' { b'B' } else { b'A' };
        let typo = String::from_utf8(typo).unwrap();
        let never_issued = CodeKey::new(SECRET).unwrap().code(2, 1);
        for code in [typo.as_str(), "NO-SUCH-CODE", never_issued.as_str()] {
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-3").await.unwrap(),
                RedeemOutcome::NotFound,
                "{backend}: {code}"
            );
        }
    }
}

/// Test: batches of uploaded codes join a campaign before its start, once per reference: a
/// repeat adds nothing, another batch under the reference, a code of another campaign, a
/// repeated code, a generated campaign and a started one are refused, writing nothing; after
/// the start the codes of every batch are grabbed, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_join_before_the_start() {
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1_000,
    };
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes = |from: usize, n: usize| -> Vec<String> {
            (from..from + n).map(|i| format!("BATCH-{i:04}")).collect()
        };
        let later = NewCampaign {
            starts_at_ms: Some(now + 2_000),
            ..campaign(now, "later", CodeSource::Uploaded(codes(0, 10)))
        };
        let Ok(CreateOutcome::Created(c)) = coupons::create(&store, &later).await else {
            panic!("{backend}: not created")
        };
        let Ok(CreateOutcome::Created(other)) = coupons::create(
            &store,
            &campaign(now, "open", CodeSource::Uploaded(vec!["TAKEN-1".into()])),
        )
        .await
        else {
            panic!("{backend}: not created")
        };
        let Ok(CreateOutcome::Created(generated)) =
            coupons::create(&store, &campaign(now, "gen", CodeSource::Generated(5))).await
        else {
            panic!("{backend}: not created")
        };
        let id = &c.campaign_id;
        assert_eq!(
            coupons::add_codes(&store, id, "b1", &codes(10, 20))
                .await
                .unwrap(),
            AddCodesOutcome::Added {
                codes_total: 30,
                repeat: false
            }
        );
        assert_eq!(
            coupons::add_codes(&store, id, "b1", &codes(10, 20))
                .await
                .unwrap(),
            AddCodesOutcome::Added {
                codes_total: 30,
                repeat: true
            }
        );
        let before = dump_all(&redis, &store).await;
        let mut with_taken = codes(40, 3);
        with_taken.push("TAKEN-1".into());
        let repeated = vec!["X-0001".to_string(), "X-0001".to_string()];
        for (campaign_id, reference, batch, expected) in [
            (id, "b1", codes(10, 21), AddCodesOutcome::ReferenceReused),
            (
                id,
                "b2",
                with_taken,
                AddCodesOutcome::DuplicateCodes(vec!["TAKEN-1".into()]),
            ),
            (
                id,
                "b3",
                codes(5, 1),
                AddCodesOutcome::DuplicateCodes(codes(5, 1)),
            ),
            (
                id,
                "b4",
                repeated,
                AddCodesOutcome::DuplicateCodes(vec!["X-0001".into()]),
            ),
            (
                &generated.campaign_id,
                "b5",
                codes(60, 1),
                AddCodesOutcome::Generated,
            ),
            (
                &other.campaign_id,
                "b6",
                codes(70, 1),
                AddCodesOutcome::Started,
            ),
            (
                &"ZZZZZ".to_string(),
                "b7",
                codes(80, 1),
                AddCodesOutcome::NotFound,
            ),
        ] {
            assert_eq!(
                coupons::add_codes(&store, campaign_id, reference, &batch)
                    .await
                    .unwrap(),
                expected,
                "{backend}: {reference}"
            );
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );

        sleep_until_redis_ms(&store, now + 2_000).await;
        assert_eq!(
            coupons::add_codes(&store, id, "b8", &codes(90, 1))
                .await
                .unwrap(),
            AddCodesOutcome::Started
        );
        let mut got = HashSet::new();
        let mut holders = Vec::new();
        for u in 0..31 {
            let user = format!("user-{u}");
            match coupons::grab(&store, id, &user, visits).await.unwrap() {
                GrabOutcome::Grabbed { code, .. } => {
                    assert!(got.insert(code.clone()), "{backend}");
                    holders.push((user, code));
                }
                GrabOutcome::SoldOut => assert_eq!(u, 30, "{backend}"),
                other => panic!("{backend}: {other:?}"),
            }
        }
        assert_eq!(got, codes(0, 30).into_iter().collect(), "{backend}");
        // A code of an added batch is redeemed by its code alone, like one of the creation.
        let (user, code) = holders
            .iter()
            .find(|(_, c)| c.as_str() >= "BATCH-0010")
            .unwrap();
        assert!(matches!(
            coupons::redeem(&store, code, user, "o-1").await.unwrap(),
            RedeemOutcome::Redeemed { repeat: false, .. }
        ));
    }
}
