//! Idempotency: fingerprints that cannot collide, idempotent funded creates, and locks.

use harness::{Backend, TestRedis};
use hongbao::packets::{self, GrabOutcome};
use hongbao::wallet;

use crate::common::{assert_conserved, create, fund, lucky, store};

/// Idempotent creation: the same Idempotency-Key and body returns the same packet and debits
/// once; the same key with another body is refused; insufficient funds change nothing.
/// An Idempotency-Key reused with another body is 409, even when the bodies' v1
/// fingerprints (fields joined with `|`) were equal: a greeting `hi|alice` against a greeting
/// `hi` for recipient `alice`, both ways; nothing is debited twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_fingerprints_cannot_collide() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        fund(&store, "sender", 1000).await;
        let piped = hongbao::packets::NewPacket {
            greeting: Some("hi|alice".into()),
            ..lucky(100, 1, 600)
        };
        let targeted = hongbao::packets::NewPacket {
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
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_is_idempotent_and_funded() {
    for backend in Backend::all() {
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
        let fixed = hongbao::packets::NewPacket {
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
