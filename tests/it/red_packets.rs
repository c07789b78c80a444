//! The red-packet lifecycle against real `redis-server` processes: every test runs on a
//! standalone server and on a 3-master cluster started by the harness.

use std::collections::HashSet;
use std::time::Instant;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::store::packets::{self, ClaimOutcome, GrabOutcome};
use hongbao::store::scripts::{self, Call};
use hongbao::store::{reclaim, wallet};

use crate::common::{self, assert_conserved, create, fund, lucky, sleep_until_redis_ms, store};

/// 2,000 concurrent grabbers on a 100-share packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_grabbers_one_hundred_shares() {
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
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
    for backend in Backend::ALL {
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

/// 20 concurrent claims of one share credit the wallet once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_claims_credit_once() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 500).await;
        let p = create(&store, "sender", &lucky(500, 5, 600)).await;
        let share = match packets::grab(&store, &p.packet_id, "bob").await.unwrap() {
            GrabOutcome::Grabbed { share, .. } => share,
            other => panic!("{other:?}"),
        };
        let tasks = (0..20).map(|_| {
            let store = store.clone();
            let id = p.packet_id.clone();
            tokio::spawn(async move { packets::claim(&store, &id, "bob").await.unwrap() })
        });
        let results: Vec<_> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let mut first = 0;
        for r in &results {
            match r {
                ClaimOutcome::Claimed {
                    share: s, repeat, ..
                } => {
                    assert_eq!(*s, share);
                    if !repeat {
                        first += 1;
                    }
                }
                other => panic!("{backend:?}: {other:?}"),
            }
        }
        assert_eq!(first, 1, "{backend:?}: exactly one claim credits");
        assert_eq!(
            wallet::balance(&store, "bob").await.unwrap(),
            share.amount_cents
        );
        let w = wallet::get(&store, "bob").await.unwrap();
        assert_eq!(w.entries.len(), 1);
        assert_eq!(w.entries[0].kind, wallet::EntryKind::ClaimCredit);
        assert_eq!(w.entries[0].reference, p.packet_id);
        // Someone who grabbed nothing has nothing to claim.
        assert_eq!(
            packets::claim(&store, &p.packet_id, "carol").await.unwrap(),
            ClaimOutcome::NoShare
        );
        assert_conserved(
            &store,
            &["sender".into(), "bob".into()],
            std::slice::from_ref(&p.packet_id),
            500,
        )
        .await;
    }
}

/// Expiry and reclaim: grabs and claims after the deadline are refused, the refund is
/// total - claimed, and two concurrent reclaim runs refund once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expiry_and_reclaim_refund_once() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1000).await;
        let p = create(&store, "sender", &lucky(1000, 10, 2)).await;
        let mut claimed = 0;
        for u in ["u1", "u2", "u3", "u4"] {
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &p.packet_id, u).await.unwrap()
            else {
                panic!("grab failed")
            };
            if u != "u4" {
                packets::claim(&store, &p.packet_id, u).await.unwrap();
                claimed += share.amount_cents;
            }
        }
        // Not due yet: a reclaim run settles nothing.
        let early = reclaim::run(&store).await.unwrap();
        assert_eq!(early.settled, 0);
        sleep_until_redis_ms(&store, p.expires_at_ms).await;
        assert_eq!(
            packets::grab(&store, &p.packet_id, "late").await.unwrap(),
            GrabOutcome::Expired
        );
        assert_eq!(
            packets::claim(&store, &p.packet_id, "u4").await.unwrap(),
            ClaimOutcome::Expired
        );
        let view = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
        assert_eq!(view.status, packets::Status::Expired);

        let (a, b) = tokio::join!(reclaim::run(&store), reclaim::run(&store));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.settled + b.settled, 1, "{a:?} {b:?}");
        assert_eq!(a.refunded_cents + b.refunded_cents, 1000 - claimed);
        // Runs after that find nothing to do.
        let again = reclaim::run(&store).await.unwrap();
        assert_eq!(
            (again.settled, again.refunded_cents, again.remaining_due),
            (0, 0, 0)
        );
        assert_eq!(
            wallet::balance(&store, "sender").await.unwrap(),
            1000 - claimed
        );
        let view = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
        assert_eq!(view.status, packets::Status::Settled);
        assert_eq!(view.packet.refunded_cents, 1000 - claimed);
        // An earlier claim still answers as a repeat after settlement.
        assert!(matches!(
            packets::claim(&store, &p.packet_id, "u1").await.unwrap(),
            ClaimOutcome::Claimed { repeat: true, .. }
        ));
        let users: Vec<String> = ["sender", "u1", "u2", "u3", "u4"]
            .map(String::from)
            .to_vec();
        assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 1000).await;
        // Settled packets keep their records for the retention period only.
        let mut conn = redis.raw_conn().await;
        let ttl: i64 = redis::cmd("TTL")
            .arg(
                hongbao::store::keys::Keys::new("hb")
                    .packet(&p.packet_id)
                    .meta,
            )
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(ttl > 604_000 && ttl <= 604_800, "ttl {ttl}");
    }
}

/// Redis `TIME`, Unix ms.
async fn redis_now_ms(store: &hongbao::Store) -> i64 {
    let mut conn = store.conn().await.unwrap();
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    s * 1000 + us / 1000
}

/// Claims racing reclaim at the deadline never pay twice: each share ends
/// either claimed (and excluded from the refund) or refunded (and the claim answers 410).
/// Both sides of the deadline are hit in the same packet: some claims land before it
/// (claimed), some are refused after it (expired), and reclaim runs hammer the packet from
/// just before the deadline on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_racing_reclaim_at_the_deadline() {
    // When user i claims, ms from the deadline (Redis TIME): three well before it, fourteen
    // straddling it 3 ms apart, three well after it (by then reclaim has settled the packet).
    let offsets: Vec<i64> = [-600, -400, -200]
        .into_iter()
        .chain((0..14).map(|i| -21 + 3 * i))
        .chain([150, 300, 450])
        .collect();
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| c.packets.grab_rate_limit = 0);
        let users: Vec<String> = (0..offsets.len()).map(|i| format!("r{i}")).collect();
        fund(&store, "sender", 2000).await;
        let p = create(&store, "sender", &lucky(2000, 20, 2)).await;
        let deadline = p.expires_at_ms;
        let mut shares = Vec::new();
        for u in &users {
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &p.packet_id, u).await.unwrap()
            else {
                panic!()
            };
            shares.push(share.amount_cents);
        }
        let start = redis_now_ms(&store).await;
        assert!(
            start < deadline + offsets[0] - 100,
            "{backend:?}: grabbing took until {} ms before the deadline",
            deadline - start
        );
        let claims = users.iter().zip(&offsets).map(|(u, off)| {
            let store = store.clone();
            let (id, u) = (p.packet_id.clone(), u.clone());
            let at = deadline + off;
            tokio::spawn(async move {
                sleep_until_redis_ms(&store, at).await;
                let out = packets::claim(&store, &id, &u).await.unwrap();
                (out, redis_now_ms(&store).await)
            })
        });
        // Reclaim runs from just before the deadline until well after the last claim.
        let reclaims = (0..4).map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                sleep_until_redis_ms(&store, deadline - 10).await;
                let (mut settled, mut refunded) = (0, 0);
                loop {
                    let s = reclaim::run(&store).await.unwrap();
                    assert_eq!(s.failed, 0, "{s:?}");
                    settled += s.settled;
                    refunded += s.refunded_cents;
                    if redis_now_ms(&store).await > deadline + 500 {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                (settled, refunded)
            })
        });
        let (claims, reclaims) = tokio::join!(join_all(claims), join_all(reclaims));
        let (mut settled, mut refunded) = (0, 0);
        for r in reclaims {
            let (s, c) = r.unwrap();
            settled += s;
            refunded += c;
        }
        let (mut claimed, mut n_claimed, mut n_expired) = (0, 0, 0);
        let mut claimed_by = HashSet::new();
        for (i, r) in claims.into_iter().enumerate() {
            let (out, answered_at) = r.unwrap();
            // A claim sent at or after the deadline (by Redis TIME) is always refused.
            assert!(
                offsets[i] < 0 || out == ClaimOutcome::Expired,
                "{backend:?}: r{i} at +{} ms: {out:?}",
                offsets[i]
            );
            match out {
                // `repeat: true` when reclaim-cron's settlement found the claim pending (step 1
                // done) and re-drove its credit before the claim's own step 2: credited once,
                // by the re-drive, so the claim request credits nothing itself.
                ClaimOutcome::Claimed {
                    share,
                    claimed_at_ms,
                    ..
                } => {
                    assert_eq!(share.amount_cents, shares[i]);
                    assert!(
                        claimed_at_ms < deadline,
                        "{backend:?}: r{i} claimed {} ms after the deadline",
                        claimed_at_ms - deadline
                    );
                    claimed += shares[i];
                    n_claimed += 1;
                    claimed_by.insert(users[i].clone());
                }
                ClaimOutcome::Expired => {
                    assert!(
                        answered_at >= deadline,
                        "{backend:?}: r{i} refused {} ms before the deadline",
                        deadline - answered_at
                    );
                    n_expired += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        eprintln!(
            "{backend:?}: {n_claimed} claims before the deadline ({claimed} cents), \
             {n_expired} refused after it; refunded {refunded} cents"
        );
        assert!(
            n_claimed >= 1 && n_expired >= 1,
            "{backend:?}: both sides of the deadline must be hit: {n_claimed} claimed, \
             {n_expired} expired"
        );
        assert_eq!(settled, 1, "{backend:?}: settled once");
        assert!(refunded > 0);
        assert_eq!(
            claimed + refunded,
            2000,
            "{backend:?}: claimed {claimed} refunded {refunded}"
        );
        let view = packets::view(&store, &p.packet_id).await.unwrap().unwrap();
        assert_eq!(view.status, packets::Status::Settled);
        assert_eq!(
            (view.packet.claimed_cents, view.packet.refunded_cents),
            (claimed, refunded)
        );
        for g in &view.grabs {
            assert_eq!(g.claimed, claimed_by.contains(&g.user_id), "{}", g.user_id);
        }
        let credited: i64 = {
            let mut s = 0;
            for u in &users {
                s += wallet::balance(&store, u).await.unwrap();
            }
            s
        };
        assert_eq!(credited, claimed);
        assert_eq!(wallet::balance(&store, "sender").await.unwrap(), refunded);
        let mut all = users.clone();
        all.push("sender".into());
        assert_conserved(&store, &all, std::slice::from_ref(&p.packet_id), 2000).await;
    }
}

/// A crash between claim step 1 (packet slot) and step 2 (wallet slot) is repaired: by the
/// user's next claim, or by reclaim-cron after the deadline. Either way, credited once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interrupted_claims_are_redriven_once() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 300).await;
        let p = create(&store, "sender", &lucky(300, 3, 2)).await;
        let keys = hongbao::store::keys::Keys::new("hb").packet(&p.packet_id);
        let mut conn = store.conn().await.unwrap();
        let mut amounts = Vec::new();
        for u in ["a", "b", "c"] {
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &p.packet_id, u).await.unwrap()
            else {
                panic!()
            };
            amounts.push(share.amount_cents);
            // Step 1 only, as if the Lambda died right after it.
            let _: redis::Value = scripts::ClaimCall {
                meta: &keys.meta,
                grabs: &keys.grabs,
                claims: &keys.claims,
                user_id: u,
            }
            .invocation()
            .invoke_async(&mut conn)
            .await
            .unwrap();
        }
        // "a" retries and gets its money (this call credits it: repeat is false).
        match packets::claim(&store, &p.packet_id, "a").await.unwrap() {
            ClaimOutcome::Claimed {
                repeat,
                balance_cents,
                ..
            } => {
                assert!(!repeat);
                assert_eq!(balance_cents, amounts[0]);
            }
            other => panic!("{other:?}"),
        }
        // Its further claims (before the deadline) are repeats.
        for _ in 0..2 {
            assert!(matches!(
                packets::claim(&store, &p.packet_id, "a").await.unwrap(),
                ClaimOutcome::Claimed { repeat: true, balance_cents, .. } if balance_cents == amounts[0]
            ));
        }
        let users: Vec<String> = ["sender", "a", "b", "c"].map(String::from).to_vec();
        assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 300).await;
        // "b" and "c" never come back: reclaim-cron re-drives them after the deadline.
        sleep_until_redis_ms(&store, p.expires_at_ms).await;
        let s = reclaim::run(&store).await.unwrap();
        assert_eq!(
            (s.settled, s.refunded_cents, s.redriven),
            (1, 0, 2),
            "{s:?}"
        );
        assert_eq!(wallet::balance(&store, "b").await.unwrap(), amounts[1]);
        assert_eq!(wallet::balance(&store, "c").await.unwrap(), amounts[2]);
        assert_eq!(wallet::balance(&store, "a").await.unwrap(), amounts[0]);
        assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 300).await;
        // Credited once, for good: more reclaim runs and repeated claims (side by side) change
        // no balance and no ledger.
        let mut before = Vec::new();
        for u in &users {
            before.push(wallet::get(&store, u).await.unwrap());
        }
        for round in 0..3 {
            let (s, ca, cb, cc) = tokio::join!(
                reclaim::run(&store),
                packets::claim(&store, &p.packet_id, "a"),
                packets::claim(&store, &p.packet_id, "b"),
                packets::claim(&store, &p.packet_id, "c"),
            );
            let s = s.unwrap();
            assert_eq!(
                (
                    s.settled,
                    s.refunded_cents,
                    s.redriven,
                    s.failed,
                    s.remaining_due
                ),
                (0, 0, 0, 0, 0),
                "{backend:?} round {round}: {s:?}"
            );
            for (c, amount) in [ca, cb, cc].into_iter().zip(&amounts) {
                match c.unwrap() {
                    ClaimOutcome::Claimed {
                        repeat: true,
                        share,
                        balance_cents,
                        ..
                    } => {
                        assert_eq!((share.amount_cents, balance_cents), (*amount, *amount));
                    }
                    other => panic!("{backend:?} round {round}: {other:?}"),
                }
            }
            let mut after = Vec::new();
            for u in &users {
                after.push(wallet::get(&store, u).await.unwrap());
            }
            assert_eq!(after, before, "{backend:?} round {round}: wallets changed");
        }
        // Exactly one claim credit per claim, of the share's amount, and nothing else.
        for (u, amount) in ["a", "b", "c"].into_iter().zip(&amounts) {
            let w = wallet::get(&store, u).await.unwrap();
            assert_eq!(w.balance_cents, *amount, "{u}");
            let entries: Vec<_> = w
                .entries
                .iter()
                .map(|e| (e.kind, e.amount_cents, e.reference.as_str()))
                .collect();
            assert_eq!(
                entries,
                vec![(
                    wallet::EntryKind::ClaimCredit,
                    *amount,
                    p.packet_id.as_str()
                )],
                "{backend:?}: {u}"
            );
        }
        // Everything was claimed: the sender got no refund.
        let sender: Vec<_> = wallet::get(&store, "sender")
            .await
            .unwrap()
            .entries
            .iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            sender,
            [wallet::EntryKind::PacketDebit, wallet::EntryKind::Deposit]
        );
        assert_conserved(&store, &users, std::slice::from_ref(&p.packet_id), 300).await;
    }
}

/// Idempotent creation: the same Idempotency-Key and body returns the same packet and debits
/// once; the same key with another body is refused; insufficient funds change nothing.
/// An Idempotency-Key reused with another body is 409, even when the bodies' v1
/// fingerprints (fields joined with `|`) were equal: a greeting `hi|alice` against a greeting
/// `hi` for recipient `alice`, both ways; nothing is debited twice. A record written before v2
/// (its v1 fingerprint) still answers a retry of an unambiguous request with its packet, and
/// 409 to any other body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_fingerprints_cannot_collide() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1000).await;
        let piped = hongbao::store::packets::NewPacket {
            greeting: Some("hi|alice".into()),
            ..lucky(100, 1, 600)
        };
        let targeted = hongbao::store::packets::NewPacket {
            greeting: Some("hi".into()),
            recipients: vec!["alice".into()],
            ..lucky(100, 1, 600)
        };
        for (key, first, second) in [("k1", &piped, &targeted), ("k2", &targeted, &piped)] {
            let packets::CreateOutcome::Created(_) =
                packets::create(&store, "sender", first, Some(key))
                    .await
                    .unwrap()
            else {
                panic!("{key}: the first create must succeed")
            };
            assert_eq!(
                packets::create(&store, "sender", second, Some(key))
                    .await
                    .unwrap(),
                packets::CreateOutcome::IdempotencyKeyReused,
                "{key}: another body under the same key"
            );
        }
        assert_eq!(wallet::balance(&store, "sender").await.unwrap(), 800);

        // A record as releases before v2 wrote it: "<v1 fingerprint>\n<packet id>".
        let plain = hongbao::store::packets::NewPacket {
            greeting: Some("hi".into()),
            ..lucky(100, 1, 600)
        };
        let packets::CreateOutcome::Created(p) =
            packets::create(&store, "sender", &plain, Some("k3"))
                .await
                .unwrap()
        else {
            panic!("k3: the first create must succeed")
        };
        let records = hongbao::store::keys::Keys::new("hb")
            .wallet("sender")
            .records;
        let mut conn = redis.raw_conn().await;
        let v1 = plain.legacy_fingerprint().expect("an unambiguous request");
        let _: () = redis::cmd("HSET")
            .arg(&records)
            .arg("create:k3")
            .arg(format!("{v1}\n{}", p.packet_id))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            packets::create(&store, "sender", &plain, Some("k3"))
                .await
                .unwrap(),
            packets::CreateOutcome::Repeat(p.clone())
        );
        let targeted_hi = hongbao::store::packets::NewPacket {
            recipients: vec!["bob".into()],
            ..plain.clone()
        };
        assert_eq!(
            packets::create(&store, "sender", &targeted_hi, Some("k3"))
                .await
                .unwrap(),
            packets::CreateOutcome::IdempotencyKeyReused
        );
        assert_eq!(wallet::balance(&store, "sender").await.unwrap(), 700);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_is_idempotent_and_funded() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1500).await;
        let req = lucky(1000, 10, 600);
        let a = packets::create(&store, "sender", &req, Some("k1"))
            .await
            .unwrap();
        let b = packets::create(&store, "sender", &req, Some("k1"))
            .await
            .unwrap();
        let (packets::CreateOutcome::Created(pa), packets::CreateOutcome::Repeat(pb)) = (a, b)
        else {
            panic!("expected created then repeat")
        };
        assert_eq!(pa, pb);
        assert_eq!(wallet::balance(&store, "sender").await.unwrap(), 500);
        let other = lucky(100, 10, 600);
        assert_eq!(
            packets::create(&store, "sender", &other, Some("k1"))
                .await
                .unwrap(),
            packets::CreateOutcome::IdempotencyKeyReused
        );
        assert_eq!(
            packets::create(&store, "sender", &req, None).await.unwrap(),
            packets::CreateOutcome::InsufficientFunds { balance_cents: 500 }
        );
        assert_eq!(wallet::balance(&store, "sender").await.unwrap(), 500);
        let w = wallet::get(&store, "sender").await.unwrap();
        assert_eq!(w.entries.len(), 2);
        assert_eq!(w.entries[0].kind, wallet::EntryKind::PacketDebit);
        assert_eq!(w.entries[0].amount_cents, -1000);
        // Fixed packets split evenly.
        let fixed = hongbao::store::packets::NewPacket {
            mode: hongbao::domain::split::Mode::Fixed,
            ..lucky(500, 5, 600)
        };
        let pf = create(&store, "sender", &fixed).await;
        for u in 0..5 {
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &pf.packet_id, &format!("f{u}"))
                    .await
                    .unwrap()
            else {
                panic!()
            };
            assert_eq!(share.amount_cents, 100);
        }
        assert_eq!(
            packets::grab(&store, &pf.packet_id, "f9").await.unwrap(),
            GrabOutcome::SoldOut
        );
        assert_conserved(
            &store,
            &["sender".into()],
            &[pa.packet_id, pf.packet_id],
            1500,
        )
        .await;
    }
}

/// The reclaim lock: only its owner can release it.
#[tokio::test]
async fn lock_cannot_release_someone_elses_lock() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let l1 = hongbao::store::lock::Lock::try_acquire(&store, "hb:{x}:lock", 100)
        .await
        .unwrap()
        .unwrap();
    assert!(
        hongbao::store::lock::Lock::try_acquire(&store, "hb:{x}:lock", 100)
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let l2 = hongbao::store::lock::Lock::try_acquire(&store, "hb:{x}:lock", 10_000)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !l1.release(&store).await.unwrap(),
        "expired holder must not delete the new lock"
    );
    assert!(
        hongbao::store::lock::Lock::try_acquire(&store, "hb:{x}:lock", 100)
            .await
            .unwrap()
            .is_none()
    );
    assert!(l2.release(&store).await.unwrap());
}

/// Reclaim index entries without a packet (a create-packet that died between writing the
/// index and creating the packet) are dropped once they are a minute overdue, and kept before
/// (moved to the end of their grace minute, so a run does not take them again meanwhile).
#[tokio::test]
async fn phantom_index_entries_are_dropped_after_the_grace_period() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        let keys = hongbao::store::keys::Keys::new("hb");
        let mut conn = store.conn().await.unwrap();
        let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        let now = secs * 1000;
        let old = hongbao::store::keys::new_packet_id("ghost");
        let recent = hongbao::store::keys::new_packet_id("ghost");
        let _: i64 = redis::cmd("ZADD")
            .arg(keys.reclaim_due())
            .arg(now - reclaim::PHANTOM_GRACE_MS - 5_000)
            .arg(&old)
            .arg(now - 1_000)
            .arg(&recent)
            .query_async(&mut conn)
            .await
            .unwrap();
        let s = reclaim::run(&store).await.unwrap();
        assert_eq!(
            (s.settled, s.refunded_cents, s.failed, s.remaining_due),
            (0, 0, 0, 0),
            "{s:?}"
        );
        let left: Vec<(String, i64)> = redis::cmd("ZRANGE")
            .arg(keys.reclaim_due())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            left,
            vec![(recent, now - 1_000 + reclaim::PHANTOM_GRACE_MS)]
        );
    }
}

/// A sandbox that saw a packet sold out answers the rest of the storm without `grab.lua`
/// (`store/packets/gone.rs`): one `HGET` per call, a winner's repeat with their own share (not
/// counted by the rate limit: the `HGET` is cheaper than the limiter), everyone else `sold_out`.
/// A sandbox that has not seen it still runs the script.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sandbox_that_saw_sold_out_answers_a_winners_repeat_with_their_share() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let tweak = |c: &mut hongbao::Config| c.packets.grab_rate_limit = 2;
        let store = store(&redis, tweak);
        fund(&store, "sender", 300).await;
        let p = create(&store, "sender", &lucky(300, 2, 600)).await;
        let mut won = Vec::new();
        for u in ["a", "b"] {
            let GrabOutcome::Grabbed { share, .. } =
                packets::grab(&store, &p.packet_id, u).await.unwrap()
            else {
                panic!("{backend:?}: {u} did not win");
            };
            won.push(share);
        }
        assert_eq!(
            packets::grab(&store, &p.packet_id, "c").await.unwrap(),
            GrabOutcome::SoldOut
        );
        common::reset_stats(&redis).await;
        for _ in 0..5 {
            for (u, share) in ["a", "b"].iter().zip(&won) {
                assert_eq!(
                    packets::grab(&store, &p.packet_id, u).await.unwrap(),
                    GrabOutcome::AlreadyGrabbed(*share),
                    "{backend:?}: {u}'s repeat"
                );
            }
            assert_eq!(
                packets::grab(&store, &p.packet_id, "c").await.unwrap(),
                GrabOutcome::SoldOut
            );
        }
        assert_eq!(
            (
                common::command_calls(&redis, "evalsha").await,
                common::command_calls(&redis, "hget").await
            ),
            (0, 15),
            "{backend:?}: 15 answers from the sandbox's memory, one HGET each"
        );
        // Another sandbox (its own Store) has seen nothing: the script answers, and limits.
        let other = common::store(&redis, tweak);
        let mut repeats = Vec::new();
        for _ in 0..3 {
            repeats.push(packets::grab(&other, &p.packet_id, "a").await.unwrap());
        }
        assert_eq!(
            repeats[..2],
            [
                GrabOutcome::AlreadyGrabbed(won[0]),
                GrabOutcome::AlreadyGrabbed(won[0])
            ]
        );
        assert!(
            matches!(repeats[2], GrabOutcome::RateLimited { .. }),
            "{backend:?}: {repeats:?}"
        );
        assert_eq!(common::command_calls(&redis, "evalsha").await, 3);
    }
}

/// A packet created after another one was seen sold out (same sender, so the same hash tag)
/// has its own id and is never answered from the old packet's entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_packet_created_anew_is_not_answered_from_an_old_entry() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 300).await;
        let old = create(&store, "sender", &lucky(100, 1, 600)).await;
        let _ = packets::grab(&store, &old.packet_id, "a").await.unwrap();
        assert_eq!(
            packets::grab(&store, &old.packet_id, "c").await.unwrap(),
            GrabOutcome::SoldOut
        );
        let new = create(&store, "sender", &lucky(200, 2, 600)).await;
        assert_ne!(new.packet_id, old.packet_id);
        assert_eq!(new.packet_id[..4], old.packet_id[..4], "one hash tag");
        for u in ["c", "a"] {
            assert!(
                matches!(
                    packets::grab(&store, &new.packet_id, u).await.unwrap(),
                    GrabOutcome::Grabbed { .. }
                ),
                "{backend:?}: {u} on the new packet"
            );
        }
        assert_eq!(
            packets::grab(&store, &old.packet_id, "c").await.unwrap(),
            GrabOutcome::SoldOut
        );
    }
}

/// After settlement, once the packet's keys have expired, a sandbox that remembers the packet
/// answers `expired`, to its winner as to everyone else: never a stale share, never a
/// not-found for a packet it saw. (During the retention the winner still gets their share,
/// as from the script.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_settlement_and_key_expiry_the_answer_is_expired() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 100).await;
        let p = create(&store, "sender", &lucky(100, 1, 1)).await;
        let GrabOutcome::Grabbed { share, .. } =
            packets::grab(&store, &p.packet_id, "w").await.unwrap()
        else {
            panic!("{backend:?}: w did not win");
        };
        assert_eq!(
            packets::grab(&store, &p.packet_id, "l").await.unwrap(),
            GrabOutcome::SoldOut
        );
        sleep_until_redis_ms(&store, p.expires_at_ms).await;
        let settled = reclaim::run(&store).await.unwrap();
        assert_eq!(settled.settled, 1, "{backend:?}");
        assert_eq!(
            packets::grab(&store, &p.packet_id, "w").await.unwrap(),
            GrabOutcome::AlreadyGrabbed(share),
            "{backend:?}: within the retention"
        );
        assert_eq!(
            packets::grab(&store, &p.packet_id, "l").await.unwrap(),
            GrabOutcome::Expired
        );
        // The retention ends: the packet's keys expire.
        let mut conn = redis.raw_conn().await;
        let keys: Vec<String> = redis
            .all_keys()
            .await
            .into_iter()
            .filter(|k| k.contains(&p.packet_id))
            .collect();
        assert!(!keys.is_empty());
        for key in &keys {
            let _: i64 = redis::cmd("PEXPIRE")
                .arg(key)
                .arg(1)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        for u in ["w", "l", "someone"] {
            assert_eq!(
                packets::grab(&store, &p.packet_id, u).await.unwrap(),
                GrabOutcome::Expired,
                "{backend:?}: {u} after the keys expired"
            );
        }
        // A sandbox that never saw the packet knows nothing of it.
        let other = common::store(&redis, |_| {});
        assert_eq!(
            packets::grab(&other, &p.packet_id, "w").await.unwrap(),
            GrabOutcome::NotFound
        );
    }
}
