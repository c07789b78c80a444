//! Unclean failover of a primary + replica pair under a draw packet: an entry and the draw
//! itself answered while the replica is cut off, then the primary dies.

use std::sync::Arc;
use std::time::Duration;

use hongbao::domain::journal::Kind;
use hongbao::draws::rules as draws;
use hongbao::packets::draw::{self, DrawState};
use hongbao::packets::{self, GrabOutcome};
use hongbao::store::keys::Keys;
use hongbao::store::Error;
use hongbao::{Config, Store};

use super::{caught_up, conn_to, freeze_and_cut, pair_config, start_pair};
use crate::common;

/// Redis `TIME` of `store`, Unix ms.
async fn redis_ms(store: &Store) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
    s * 1000 + us / 1000
}

/// A draw packet across an unclean failover: three entries are replicated; then, with the
/// replica cut off, dave enters and at `draw_at` the draw runs, and the primary dies. With
/// `REDIS_WAIT_REPLICAS=1` dave's entry and the draw are refused 503; on the promoted replica
/// the draw runs once, among the three acknowledged entrants, journaled once. Without it, both
/// are answered and lost: dave was told he entered, the promoted replica has never heard of
/// him, and the draw answered is gone (the test sees the loss).
async fn draw_primary_replica(wait: bool) {
    let (mut primary, replica) = start_pair().await;
    let healthy = Arc::new(Store::new(Config {
        wait_timeout_ms: 5_000,
        ..pair_config(&primary.url(), wait)
    }));
    let store = Arc::new(Store::new(pair_config(&primary.url(), wait)));
    common::fund(&healthy, "sam", 200).await;
    // A 2 s window (below the API's 10 s: the faulty phase must fit in the replica's freeze).
    let p = common::create(&healthy, "sam", &crate::draws::draw_packet(2, 2)).await;
    let id = p.packet_id.clone();
    for u in ["ann", "bo", "cy"] {
        let out = packets::grab(&healthy, &id, u).await.unwrap();
        assert!(matches!(out, GrabOutcome::Entered { .. }), "{out:?}");
    }
    let pk = Keys::new(&healthy.config().key_prefix).packet(&id);
    let draw_at: i64 = redis::cmd("HGET")
        .arg(&pk.meta)
        .arg("draw_at")
        .query_async(&mut healthy.conn().await.unwrap())
        .await
        .unwrap();

    // The replica stops receiving: dave enters, then the draw is run at draw_at.
    caught_up(&primary.url(), &replica.url()).await;
    let sleeping = freeze_and_cut(&replica.url(), &primary.url()).await;
    let entry = packets::grab(&store, &id, "dave").await;
    let wait_ms = draw_at - redis_ms(&store).await;
    assert!(
        wait_ms > 0,
        "machine too slow: draw_at passed before the faulty phase"
    );
    tokio::time::sleep(Duration::from_millis(wait_ms as u64 + 50)).await;
    let drawn = draw::run(&store, &id).await;

    // Crash: the primary dies, the replica wakes up and is promoted.
    primary.stop();
    sleeping.assert_still_frozen();
    sleeping.wake().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut conn_to(&replica.url()).await)
        .await
        .unwrap();
    let after = Arc::new(Store::new(pair_config(&replica.url(), false)));
    let entrants: Vec<String> = redis::cmd("ZRANGE")
        .arg(&pk.tickets)
        .arg(0)
        .arg(-1)
        .query_async(&mut after.conn().await.unwrap())
        .await
        .unwrap();
    let drawn_at: Option<String> = redis::cmd("HGET")
        .arg(&pk.meta)
        .arg("drawn_at")
        .query_async(&mut after.conn().await.unwrap())
        .await
        .unwrap();
    if !wait {
        assert!(
            matches!(entry, Ok(GrabOutcome::Entered { .. })),
            "{entry:?}"
        );
        assert!(matches!(drawn, Ok(DrawState::Drawn { .. })), "{drawn:?}");
        assert_eq!(
            (entrants.len(), drawn_at),
            (3, None),
            "without WAIT the unclean failover must lose the acknowledged entry and draw"
        );
        return;
    }
    for refused in [entry.map(|_| ()), drawn.map(|_| ())] {
        assert!(
            matches!(&refused, Err(Error::Unavailable(why)) if why.contains("replicas")),
            "every unreplicated step must be refused: {refused:?}"
        );
    }
    assert_eq!(entrants.len(), 3, "{entrants:?}");

    // Any request after the failover runs the draw, once, among the acknowledged entrants.
    let again = draw::run(&after, &id).await.unwrap();
    assert_eq!(
        again,
        DrawState::Drawn {
            winners: 2,
            entrants: 3
        }
    );
    let seed: String = redis::cmd("HGET")
        .arg(&pk.meta)
        .arg("draw_seed")
        .query_async(&mut after.conn().await.unwrap())
        .await
        .unwrap();
    let won = draws::winners(&seed, &["ann", "bo", "cy"], 2).unwrap();
    for u in ["ann", "bo", "cy", "dave"] {
        let out = packets::grab(&after, &id, u).await.unwrap();
        let winner = won.iter().any(|(_, w)| w == u);
        assert_eq!(
            matches!(out, GrabOutcome::Grabbed { .. }),
            winner,
            "{u}: {out:?}"
        );
    }
    let journal = Keys::new(&after.config().key_prefix).journal_of_tag(&id[..4]);
    let runs = hongbao::store::journal::read(&after, &journal, 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == Kind::DrawRun)
        .count();
    assert_eq!(runs, 1, "the draw is journaled once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draw_across_an_unclean_failover_with_wait() {
    draw_primary_replica(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draw_across_an_unclean_failover_without_wait_is_lost() {
    draw_primary_replica(false).await;
}
