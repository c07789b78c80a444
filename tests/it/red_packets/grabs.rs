//! Grabs: concurrent grabbers, best luck, and the grab rate limit.

use std::collections::HashSet;
use std::time::Instant;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::packets::{self, GrabOutcome};

use crate::common::{self, create, fund, lucky, sleep_until_redis_ms, store};

/// 2,000 concurrent grabbers on a 100-share packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_grabbers_one_hundred_shares() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 10_000).await;
        let p = create(&store, "sender", &lucky(10_000, 100, 600)).await;
        let tasks = (0..2000).map(|i| {
            let store = store.clone();
            let id = p.packet_id.clone();
            tokio::spawn(async move {
                (
                    i,
                    packets::grab(&store, &id, &format!("user{i}"))
                        .await
                        .unwrap(),
                )
            })
        });
        let results: Vec<_> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let mut winners = HashSet::new();
        let mut share_ids = HashSet::new();
        let (mut sum, mut sold_out) = (0, 0);
        for (i, r) in &results {
            match r {
                GrabOutcome::Grabbed { share, .. } => {
                    assert!(winners.insert(*i));
                    assert!(share_ids.insert(share.share_id));
                    assert!(share.amount_cents >= 1);
                    sum += share.amount_cents;
                }
                GrabOutcome::SoldOut => sold_out += 1,
                other => panic!("{backend:?}: unexpected {other:?}"),
            }
        }
        assert_eq!(winners.len(), 100, "{backend:?}");
        assert_eq!(sum, 10_000, "{backend:?}");
        assert_eq!(sold_out, 1900, "{backend:?}");
        assert_eq!(share_ids, (1..=100).collect(), "{backend:?}");
        let view = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
        assert_eq!(view.status, packets::Status::SoldOut);
        assert_eq!(view.grabs.len(), 100);
        assert_eq!(view.packet.grabbed_cents, 10_000);
        // Best luck, from the grab answers (not the view): the largest amount any grabber was
        // handed, going to the first grab (lowest share id: share ids count grabs from 1) that
        // was handed it.
        let (mut best_i, mut best_share) = (usize::MAX, None::<packets::Share>);
        for (i, r) in &results {
            if let GrabOutcome::Grabbed { share, .. } = r {
                let better = best_share.is_none_or(|b| {
                    share.amount_cents > b.amount_cents
                        || (share.amount_cents == b.amount_cents && share.share_id < b.share_id)
                });
                if better {
                    (best_i, best_share) = (*i, Some(*share));
                }
            }
        }
        let best = best_share.unwrap();
        eprintln!(
            "{backend:?}: best luck user{best_i} (share {} of {} cents; {} shares of that amount)",
            best.share_id,
            best.amount_cents,
            results
                .iter()
                .filter(|(_, r)| matches!(r, GrabOutcome::Grabbed { share, .. }
                    if share.amount_cents == best.amount_cents))
                .count()
        );
        assert_eq!(
            view.best_luck,
            Some((format!("user{best_i}"), best.amount_cents)),
            "{backend:?}"
        );
    }
}

/// Best luck with a known tie: every share of a fixed packet (and of a lucky packet whose total
/// equals its count, so every share is 1 cent) is equal, so best luck is the FIRST grabber, and
/// the test controls who that is by grabbing one at a time. The first grabber is neither the
/// smallest nor the largest user id, nor the last grabber, so no other tie rule passes. Best
/// luck is only shown once every share is grabbed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_luck_ties_go_to_the_first_grabber() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 504).await;
        let fixed = packets::NewPacket {
            mode: hongbao::domain::split::Mode::Fixed,
            ..lucky(500, 5, 600)
        };
        let cases = [
            (fixed, ["mia", "zoe", "amy", "bob", "kai"].as_slice(), 100),
            (lucky(4, 4, 600), ["nia", "yan", "abe", "tom"].as_slice(), 1),
        ];
        for (req, order, amount) in cases {
            let p = create(&store, "sender", &req).await;
            for (n, u) in order.iter().enumerate() {
                let before = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
                assert_eq!(before.best_luck, None, "{backend:?}: {n} of {order:?}");
                let GrabOutcome::Grabbed { share, .. } =
                    packets::grab(&store, &p.packet_id, u).await.unwrap()
                else {
                    panic!("{backend:?}: {u} could not grab")
                };
                assert_eq!(share.amount_cents, amount);
            }
            let view = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
            assert_eq!(view.status, packets::Status::SoldOut);
            assert_eq!(
                view.best_luck,
                Some((order[0].to_string(), amount)),
                "{backend:?}: a tie goes to the first grabber"
            );
        }
    }
}

/// The grab rate limit is a fixed window (`lua/rate_limit.lua`): `limit` accepted repeats per
/// window opened by the first (a win is not counted: a user wins once); `Retry-After` is the
/// rest of the window; a refused attempt writes nothing; 40 concurrent repeats pass exactly
/// `limit` times; a sold-out packet's answer does not count, and once it has expired the
/// answer is `expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grab_rate_limit_counts_repeats_per_window() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        // 4 per 4 s.
        let store = store(&redis, |c| {
            c.packets.grab_rate_limit = 4;
            c.packets.grab_rate_window_ms = 4000;
        });
        fund(&store, "sender", 1000).await;
        let p = create(&store, "sender", &lucky(300, 3, 600)).await;
        let mut outcomes = Vec::new();
        outcomes.push(packets::grab(&store, &p.packet_id, "u").await.unwrap());
        let started = Instant::now();
        for _ in 0..5 {
            outcomes.push(packets::grab(&store, &p.packet_id, "u").await.unwrap());
        }
        assert!(
            matches!(outcomes[0], GrabOutcome::Grabbed { .. }),
            "{outcomes:?}"
        );
        assert!(outcomes[1..5]
            .iter()
            .all(|o| matches!(o, GrabOutcome::AlreadyGrabbed(_))));
        // Four repeats used the window: the fifth waits for its end.
        let GrabOutcome::RateLimited { retry_after_ms } = outcomes[5] else {
            panic!("5th repeat in a window of 4: {:?}", outcomes[5]);
        };
        let elapsed = started.elapsed().as_millis() as i64;
        assert!(
            (4000 - elapsed - 50..=4000).contains(&retry_after_ms),
            "{retry_after_ms} ms after {elapsed} ms"
        );
        let before = common::snapshot(&redis).await;
        assert!(matches!(
            packets::grab(&store, &p.packet_id, "u").await.unwrap(),
            GrabOutcome::RateLimited { .. }
        ));
        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "a refused attempt writes nothing"
        );
        tokio::time::sleep(std::time::Duration::from_millis(retry_after_ms as u64 + 20)).await;
        assert!(matches!(
            packets::grab(&store, &p.packet_id, "u").await.unwrap(),
            GrabOutcome::AlreadyGrabbed(_)
        ));
        // A fresh user's win, then 40 concurrent repeats: four fit in the window.
        let _ = packets::grab(&store, &p.packet_id, "v").await.unwrap();
        let started = Instant::now();
        let tasks = (0..40).map(|_| {
            let store = store.clone();
            let id = p.packet_id.clone();
            tokio::spawn(async move { packets::grab(&store, &id, "v").await.unwrap() })
        });
        let passed = join_all(tasks)
            .await
            .into_iter()
            .filter(|r| matches!(r.as_ref().unwrap(), GrabOutcome::AlreadyGrabbed(_)))
            .count();
        if started.elapsed().as_millis() < 4000 {
            assert_eq!(passed, 4, "{backend:?}: {passed} of 40 passed");
        }
        // Sold out: answered without the limiter, however often.
        let _ = packets::grab(&store, &p.packet_id, "w").await.unwrap();
        for _ in 0..10 {
            assert_eq!(
                packets::grab(&store, &p.packet_id, "late").await.unwrap(),
                GrabOutcome::SoldOut
            );
        }
        // Expired beats sold out (Redis TIME), as the contract says.
        let short = create(&store, "sender", &lucky(100, 1, 1)).await;
        let _ = packets::grab(&store, &short.packet_id, "first")
            .await
            .unwrap();
        assert_eq!(
            packets::grab(&store, &short.packet_id, "second")
                .await
                .unwrap(),
            GrabOutcome::SoldOut
        );
        sleep_until_redis_ms(&store, short.expires_at_ms).await;
        assert_eq!(
            packets::grab(&store, &short.packet_id, "second")
                .await
                .unwrap(),
            GrabOutcome::Expired
        );
    }
}

/// One user grabbing 50 times concurrently gets one share; 49 see the same share.
/// With the default limit (10 repeats per second) the 11th repeat within a second is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_user_many_grabs_and_the_rate_limit() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let relaxed = store(&redis, |c| c.packets.grab_rate_limit = 1000);
        fund(&relaxed, "sender", 1100).await;
        let p = create(&relaxed, "sender", &lucky(1000, 10, 600)).await;
        let tasks = (0..50).map(|_| {
            let store = relaxed.clone();
            let id = p.packet_id.clone();
            tokio::spawn(async move { packets::grab(&store, &id, "greedy").await.unwrap() })
        });
        let results: Vec<_> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let grabbed: Vec<_> = results
            .iter()
            .filter_map(|r| match r {
                GrabOutcome::Grabbed { share, .. } => Some(*share),
                _ => None,
            })
            .collect();
        assert_eq!(grabbed.len(), 1, "{backend:?}: {results:?}");
        let again: Vec<_> = results
            .iter()
            .filter_map(|r| match r {
                GrabOutcome::AlreadyGrabbed(s) => Some(*s),
                _ => None,
            })
            .collect();
        assert_eq!(again.len(), 49);
        assert!(again.iter().all(|s| *s == grabbed[0]));

        let strict = store(&redis, |_| {});
        let p = create(&strict, "sender", &lucky(100, 10, 600)).await;
        let mut outcomes = Vec::new();
        for _ in 0..12 {
            outcomes.push(
                packets::grab(&strict, &p.packet_id, "spammer")
                    .await
                    .unwrap(),
            );
        }
        assert!(
            matches!(outcomes[0], GrabOutcome::Grabbed { .. }),
            "{outcomes:?}"
        );
        assert!(outcomes[1..11]
            .iter()
            .all(|o| matches!(o, GrabOutcome::AlreadyGrabbed(_))));
        match outcomes[11] {
            GrabOutcome::RateLimited { retry_after_ms } => {
                assert!((1..=1000).contains(&retry_after_ms))
            }
            ref other => panic!("11th repeat: {other:?}"),
        }
        // Another user on the same packet is not affected.
        assert!(matches!(
            packets::grab(&strict, &p.packet_id, "someone-else")
                .await
                .unwrap(),
            GrabOutcome::Grabbed { .. }
        ));
    }
}
