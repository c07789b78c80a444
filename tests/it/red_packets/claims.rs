//! Claims: concurrent claims credit once, and interrupted claims are redriven once.

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome};
use hongbao::store::reclaim;
use hongbao::store::scripts::{self, Call};
use hongbao::wallet;

use crate::common::{assert_conserved, create, fund, lucky, sleep_until_redis_ms, store};

/// 20 concurrent claims of one share credit the wallet once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_claims_credit_once() {
    for backend in Backend::all() {
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

/// A crash between claim step 1 (packet slot) and step 2 (wallet slot) is repaired: by the
/// user's next claim, or by reclaim-cron after the deadline. Either way, credited once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interrupted_claims_are_redriven_once() {
    for backend in Backend::all() {
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
                coupons: &keys.coupons,
                books: &keys.meta,
                journal: &keys.meta,
                user_id: u,
                books_of: "",
                call: "",
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
