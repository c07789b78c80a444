//! Speed gives no edge: the stored draw (`draw_enter.lua`, `draw_run.lua`) over many draws,
//! entrants arriving in a known order.

use std::collections::HashMap;

use harness::{Backend, TestRedis};
use hongbao::draws::rules as draws;
use hongbao::packets::draw::{self as draw_run, DrawState};
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{Call, DrawEnterCall, DRAW_ENTER};

use super::{draw_packet, meta};
use crate::common;

/// Draws played, shares each, entrants each.
const DRAWS: usize = 200;
const SHARES: u32 = 100;
const ENTRANTS: usize = 1_000;

/// Test: 200 draws of 100 shares among the same 1,000 entrants, who enter each draw in the
/// same order (`entrant-0000` first). Under the rule each group of 100 entrants wins
/// Binomial(20,000, 0.1) shares (mean 2,000, sd 42.4), so the first 100 to arrive and the last
/// 100 differ by more than 300 (5 sd of the difference, about 60) with probability below
/// 10⁻⁶; first come, first served would give the first 100 all 20,000. Each draw's winners are
/// also those `draws::rules::winners` gives for its revealed seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn arriving_first_wins_no_more_often_than_arriving_last() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", i64::from(SHARES) * 100 * DRAWS as i64).await;
        let users: Vec<String> = (0..ENTRANTS).map(|i| format!("entrant-{i:04}")).collect();
        let keys = Keys::new(&store.config().key_prefix);
        let mut conn = store.conn().await.unwrap();

        // Act: each draw created, then every entrant enters it, in arrival order, in one
        // pipeline of EVALSHA (the first entry sent alone loads the script on the packet's
        // node); its 10 s window covers its own entries however loaded the machine is.
        let mut packets = Vec::new();
        for _ in 0..DRAWS {
            let id = common::create(&store, "sam", &draw_packet(SHARES, 10))
                .await
                .packet_id;
            packets.push(id.clone());
            let id = &id;
            let seed = meta(&store, id, "draw_seed").await.unwrap();
            let pk = keys.packet(id);
            let mut pipe = redis::pipe();
            for (n, u) in users.iter().enumerate() {
                let ticket = draws::ticket(&seed, u).unwrap();
                let rate = keys.grab_rate(id, u);
                let call = DrawEnterCall {
                    meta: &pk.meta,
                    tickets: &pk.tickets,
                    rate: &rate,
                    user_id: u,
                    ticket: &ticket,
                    rate_limit: 0,
                    rate_window_ms: 1_000,
                };
                if n == 0 {
                    let first: String = call.invocation().invoke_async(&mut conn).await.unwrap();
                    assert!(first.starts_with("entered:"), "{backend}: {first}");
                    continue;
                }
                pipe.cmd("EVALSHA")
                    .arg(DRAW_ENTER.get_hash())
                    .arg(3)
                    .arg(call.texts().0)
                    .arg(call.texts().1);
            }
            let answers: Vec<String> = pipe.query_async(&mut conn).await.unwrap();
            assert!(
                answers.iter().all(|a| a.starts_with("entered:")),
                "{backend}: {:?}",
                answers.iter().find(|a| !a.starts_with("entered:"))
            );
        }
        let draw_at: i64 = meta(&store, packets.last().unwrap(), "draw_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;
        let (mut first, mut last) = (0i64, 0i64);
        for id in &packets {
            let state = draw_run::run(&store, id).await.unwrap();
            assert_eq!(
                state,
                DrawState::Drawn {
                    winners: u64::from(SHARES),
                    entrants: ENTRANTS as u64
                }
            );
            let won: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(keys.packet(id).grabs)
                .query_async(&mut conn)
                .await
                .unwrap();
            let seed = meta(&store, id, "draw_seed").await.unwrap();
            let refs: Vec<&str> = users.iter().map(String::as_str).collect();
            let expected = draws::winners(&seed, &refs, SHARES as usize).unwrap();
            assert!(
                expected.iter().all(|(_, u)| won.contains_key(u)),
                "{backend}: {id}"
            );
            for u in won.keys() {
                let i: usize = u["entrant-".len()..].parse().unwrap();
                first += i64::from(i < 100);
                last += i64::from(i >= ENTRANTS - 100);
            }
        }

        // Assert
        assert!(
            (first - last).abs() <= 300,
            "{backend}: the first 100 won {first}, the last 100 {last}"
        );
        println!("{backend}: the first 100 entrants won {first} shares, the last 100 {last}");
    }
}
