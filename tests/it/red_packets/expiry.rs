//! Expiry and reclaim: refunds once, claims racing the deadline, phantom index entries, and
//! the answer after settlement.

use std::collections::HashSet;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome};
use hongbao::store::reclaim;
use hongbao::wallet;

use crate::common::{self, assert_conserved, create, fund, lucky, sleep_until_redis_ms, store};

/// Expiry and reclaim: grabs and claims after the deadline are refused, the refund is
/// total - claimed, and two concurrent reclaim runs refund once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expiry_and_reclaim_refund_once() {
    for backend in Backend::all() {
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
    for backend in Backend::all() {
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

/// Reclaim index entries without a packet (a create-packet that died between writing the
/// index and creating the packet) are dropped once they are a minute overdue, and kept before
/// (moved to the end of their grace minute, so a run does not take them again meanwhile).
#[tokio::test]
async fn phantom_index_entries_are_dropped_after_the_grace_period() {
    for backend in Backend::all() {
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
        let left: Vec<(String, i64)> =
            crate::common::zset_with_scores(&store, &keys.reclaim_due()).await;
        assert_eq!(
            left,
            vec![(recent, now - 1_000 + reclaim::PHANTOM_GRACE_MS)]
        );
    }
}

/// After settlement, once the packet's keys have expired, a sandbox that remembers the packet
/// answers `expired`, to its winner as to everyone else: never a stale share, never a
/// not-found for a packet it saw. (During the retention the winner still gets their share,
/// as from the script.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_settlement_and_key_expiry_the_answer_is_expired() {
    for backend in Backend::all() {
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
