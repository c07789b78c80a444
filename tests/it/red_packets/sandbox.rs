//! A sandbox's remembered answers: sold-out, and a packet created anew.

use harness::{Backend, TestRedis};
use hongbao::packets::{self, GrabOutcome};

use crate::common::{self, create, fund, lucky, store};

/// A sandbox that saw a packet sold out answers the rest of the storm without `grab.lua`
/// (`store/packets/gone.rs`): one `HGET` per call, a winner's repeat with their own share (not
/// counted by the rate limit: the `HGET` is cheaper than the limiter), everyone else `sold_out`.
/// A sandbox that has not seen it still runs the script.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sandbox_that_saw_sold_out_answers_a_winners_repeat_with_their_share() {
    for backend in Backend::all() {
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
    for backend in Backend::all() {
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
