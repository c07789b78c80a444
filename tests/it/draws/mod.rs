//! Draw packets (`draws::rules`; `grab.lua`'s draw branch, `lua/draw_run.lua`) through
//! the grab router, on standalone and on the 3-master cluster: grabs in the entry window enter
//! the draw (202, the same answer again), at `draw_at` the entrants with the smallest tickets
//! win the shares in ticket order, once, whoever runs the draw and however many race it; a
//! winner's grab answers the share and anyone else's 410 `not_drawn`; an entry after
//! `draw_at` writes nothing.

mod campaigns;
mod fairness;

use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value;

use crate::common::{self, call, event, with_placeholder, with_sub, Function};
use harness::{Backend, TestRedis};
use hongbao::domain::journal::Kind;
use hongbao::draws::rules::{self as draws, DrawTerms, Reveal};
use hongbao::packets::draw::{self as draw_run, DrawState};
use hongbao::packets::NewPacket;
use hongbao::store::keys::Keys;
use hongbao::store::scripts::{Call, DrawEnterCall, DrawRunCall};
use hongbao::Store;

/// A fixed draw packet of `count` shares of 100 cents, entries for `entry_secs` after it
/// opens, expiring 60 s after.
pub(super) fn draw_packet(count: u32, entry_secs: u64) -> NewPacket {
    draw_packet_for(count, entry_secs, 60)
}

/// [`draw_packet`] expiring `expires_in_secs` after it opens.
fn draw_packet_for(count: u32, entry_secs: u64, expires_in_secs: u64) -> NewPacket {
    NewPacket {
        mode: hongbao::domain::split::Mode::Fixed,
        draw: Some(DrawTerms { entry_secs }),
        ..common::lucky(i64::from(count) * 100, count, expires_in_secs)
    }
}

/// `user`'s grab of `packet_id` through the grab router: (status, body).
async fn grab(store: &Arc<Store>, packet_id: &str, user: &str) -> (u16, Value) {
    let ev = with_sub(
        with_placeholder(event("grab-grab"), "PACKET_ID", packet_id),
        user,
    );
    let (s, b, _) = call(store, Function::Grab, &ev).await;
    (s, b)
}

/// The packet's meta `field`.
pub(super) async fn meta(store: &Store, packet_id: &str, field: &str) -> Option<String> {
    let pk = Keys::new(&store.config().key_prefix).packet(packet_id);
    redis::cmd("HGET")
        .arg(&pk.meta)
        .arg(field)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
}

/// Test: 40 users enter a draw of 5 shares (each twice: the same 202), then at `draw_at` all
/// grab again: the 5 with the smallest tickets win shares 1..5 in ticket order (200, the same
/// share on every grab), the others get 410 `not_drawn`; the revealed draw checks out for
/// every entrant, and the winners' list in share order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_smallest_tickets_win_in_ticket_order() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 500).await;
        let p = common::create(&store, "sam", &draw_packet(5, 8)).await;
        let id = p.packet_id.clone();
        let users: Vec<String> = (0..40).map(|i| format!("entrant-{i:02}")).collect();

        // Act: every user enters twice, before draw_at.
        for u in users.iter().chain(&users) {
            let (s, b) = grab(&store, &id, u).await;
            assert_eq!(
                (s, b["entered"].as_bool()),
                (202, Some(true)),
                "{backend}: {b}"
            );
        }
        let draw_at: i64 = meta(&store, &id, "draw_at").await.unwrap().parse().unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;
        let mut answers = Vec::new();
        for u in &users {
            answers.push(grab(&store, &id, u).await);
        }

        // Assert
        let seed = meta(&store, &id, "draw_seed").await.unwrap();
        let refs: Vec<&str> = users.iter().map(String::as_str).collect();
        let expected = draws::winners(&seed, &refs, 5).unwrap();
        let mut won: Vec<(u64, String)> = Vec::new();
        for (u, (s, b)) in users.iter().zip(&answers) {
            match s {
                200 => won.push((b["share_id"].as_u64().unwrap(), u.clone())),
                410 => assert_eq!(b["error"], "not_drawn", "{backend}: {b}"),
                _ => panic!("{backend}: {u}: {s} {b}"),
            }
        }
        won.sort();
        let in_order: Vec<&str> = won.iter().map(|(_, u)| u.as_str()).collect();
        let drawn: Vec<&str> = expected.iter().map(|(_, u)| u.as_str()).collect();
        assert_eq!(
            in_order, drawn,
            "{backend}: the smallest tickets, share 1 the smallest"
        );
        assert_eq!(won.iter().map(|w| w.0).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        let (s, again) = grab(&store, &id, drawn[0]).await;
        assert_eq!((s, &again["share_id"]), (200, &Value::from(1)), "{backend}");
        let reveal = Reveal {
            commitment: meta(&store, &id, "draw_commitment").await.unwrap(),
            seed: seed.clone(),
            entrants: 40,
            winners: 5,
            threshold: meta(&store, &id, "draw_threshold").await,
        };
        assert_eq!(reveal.check_winners(&drawn), Ok(()), "{backend}");
        for u in &users {
            let ticket = draws::ticket(&seed, u).unwrap();
            let result = reveal.check_entrant(u, &ticket, drawn.contains(&u.as_str()));
            assert_eq!(result, Ok(()), "{backend}: {u}");
        }
    }
}

/// Test: a draw runs once. After `draw_at`, 50 grabs of entrants and 10 runs of the draw in
/// chunks of 2 winners race, and one chunk of `draw_run.lua` is sent again after the draw (a
/// lost reply): 8 winners of
/// 30 entrants, each with one share, the share list down by 8, `grabbed_count` 8; a packet
/// with more shares than entrants gives every entrant one and keeps the rest for the refund.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_draw_runs_once_however_many_race_it() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 2_000).await;
        let p = common::create(&store, "sam", &draw_packet(8, 5)).await;
        let few = common::create(&store, "sam", &draw_packet(10, 5)).await;
        let users: Vec<String> = (0..30).map(|i| format!("racer-{i:02}")).collect();
        for u in &users {
            assert_eq!(grab(&store, &p.packet_id, u).await.0, 202);
        }
        for u in &users[..3] {
            assert_eq!(grab(&store, &few.packet_id, u).await.0, 202);
        }
        let draw_at: i64 = meta(&store, &few.packet_id, "draw_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;

        // Act
        let runs: Vec<_> = (0..10)
            .map(|_| {
                let (store, id) = (store.clone(), p.packet_id.clone());
                tokio::spawn(async move { draw_run::run_in_chunks(&store, &id, 2).await.unwrap() })
            })
            .collect();
        let grabs: Vec<_> = users
            .iter()
            .cycle()
            .take(50)
            .map(|u| {
                let (store, id, u) = (store.clone(), p.packet_id.clone(), u.clone());
                tokio::spawn(async move { grab(&store, &id, &u).await })
            })
            .collect();
        let (grabs, runs) = tokio::join!(join_all(grabs), join_all(runs));
        let pk = Keys::new(&store.config().key_prefix).packet(&p.packet_id);
        let journal = Keys::new(&store.config().key_prefix).journal_of_tag(&p.packet_id[..4]);
        let resent: redis::Value = DrawRunCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            tickets: &pk.tickets,
            journal: &journal,
            order: &pk.order,
            chunk: 1,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        let few_state = draw_run::run(&store, &few.packet_id).await.unwrap();

        // Assert
        let drawn = DrawState::Drawn {
            winners: 8,
            entrants: 30,
        };
        assert!(runs.into_iter().all(|r| r.unwrap() == drawn), "{backend}");
        assert_eq!(
            hongbao::store::scripts::text("draw_run", resent).unwrap(),
            "drawn:8:30"
        );
        let winners: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&pk.grabs)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        assert_eq!(winners.len(), 8, "{backend}");
        // Each grab of a winner answered 200, each of anyone else 410.
        for (u, g) in users.iter().cycle().zip(grabs) {
            let (s, b) = g.unwrap();
            let expected = if winners.contains_key(u) { 200 } else { 410 };
            assert_eq!(s, expected, "{backend}: {u}: {b}");
        }
        let left = common::list_items(&store, &pk.shares).await;
        assert_eq!(left.len(), 0, "{backend}");
        assert_eq!(
            meta(&store, &p.packet_id, "grabbed_count").await.as_deref(),
            Some("8")
        );
        // The draw journaled once, with its reveal.
        let entries = hongbao::store::journal::read(&store, &journal, 10_000)
            .await
            .unwrap();
        let runs: Vec<_> = entries
            .iter()
            .filter(|e| e.kind == Kind::DrawRun && e.reference == p.packet_id)
            .collect();
        assert_eq!(runs.len(), 1, "{backend}: {runs:?}");
        let figures = runs[0].draw.as_ref().unwrap();
        assert_eq!(
            (figures.entrants, figures.winners, runs[0].amount_cents),
            (30, 8, 0)
        );
        assert_eq!(
            Some(figures.seed.clone()),
            meta(&store, &p.packet_id, "draw_seed").await
        );
        assert_eq!(
            figures.threshold,
            meta(&store, &p.packet_id, "draw_threshold").await
        );
        assert_eq!(
            few_state,
            DrawState::Drawn {
                winners: 3,
                entrants: 3
            }
        );
        let few_left = common::list_items(
            &store,
            &Keys::new(&store.config().key_prefix)
                .packet(&few.packet_id)
                .shares,
        )
        .await;
        assert_eq!(
            few_left.len(),
            7,
            "{backend}: the shares nobody won stay to be refunded"
        );
    }
}

/// Test: an entry after `draw_at` (the draw not run yet, or run) is refused with nothing
/// written: the entrants' set is unchanged, and the late user gets 410 `not_drawn`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_after_draw_at_writes_nothing() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 500).await;
        let p = common::create(&store, "sam", &draw_packet(2, 4)).await;
        for u in ["ann", "ben", "cid"] {
            assert_eq!(grab(&store, &p.packet_id, u).await.0, 202);
        }
        let draw_at: i64 = meta(&store, &p.packet_id, "draw_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;
        let pk = Keys::new(&store.config().key_prefix).packet(&p.packet_id);
        let tickets = |store: Arc<Store>, key: String| async move {
            let t: Vec<String> = redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .query_async(&mut store.conn().await.unwrap())
                .await
                .unwrap();
            t
        };
        let before = tickets(store.clone(), pk.tickets.clone()).await;

        // Act
        let (s, b) = grab(&store, &p.packet_id, "late").await;

        // Assert
        assert_eq!(
            (s, &b["error"]),
            (410, &Value::from("not_drawn")),
            "{backend}: {b}"
        );
        assert_eq!(
            tickets(store.clone(), pk.tickets.clone()).await,
            before,
            "{backend}"
        );
        assert_eq!(before.len(), 3);
    }
}

/// Test: nobody grabs after `draw_at`, and reclaim-cron runs the draw then (the index entry's
/// first due time), moving the entry to the expiry; a winner claims; at expiry reclaim-cron
/// refunds the rest to the sender: 3 winners of 4 entrants, one claim, 200 refunded, money
/// conserved, and the entrants' set expires with the packet's keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_cron_runs_a_draw_nobody_asked_for() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 300).await;
        let p = common::create(&store, "sam", &draw_packet_for(3, 4, 8)).await;
        let id = p.packet_id.clone();
        let users = ["ann", "ben", "cid", "dee"].map(String::from);
        for u in &users {
            assert_eq!(grab(&store, &id, u).await.0, 202);
        }
        let draw_at: i64 = meta(&store, &id, "draw_at").await.unwrap().parse().unwrap();
        let keys = Keys::new(&store.config().key_prefix);
        let due = |store: Arc<Store>, id: String| async move {
            let at: Option<i64> = redis::cmd("ZSCORE")
                .arg(Keys::new(&store.config().key_prefix).reclaim_due())
                .arg(&id)
                .query_async(&mut store.conn().await.unwrap())
                .await
                .unwrap();
            at
        };
        assert!(due(store.clone(), id.clone()).await.unwrap() <= draw_at + 1_000);

        // Act: draw_at, reclaim-cron; a winner claims; expiry, reclaim-cron.
        common::sleep_until_redis_ms(&store, draw_at).await;
        let at_draw = hongbao::store::reclaim::run(&store).await.unwrap();
        let drawn = meta(&store, &id, "drawn_at").await;
        let moved_to = due(store.clone(), id.clone()).await;
        let winners: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(keys.packet(&id).grabs)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        let winner = winners.keys().next().unwrap().clone();
        let ev = with_sub(
            with_placeholder(event("claim-claim"), "PACKET_ID", &id),
            &winner,
        );
        let (claimed, _, _) = call(&store, Function::Claim, &ev).await;
        let expires_at: i64 = meta(&store, &id, "expires_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, expires_at).await;
        let at_expiry = hongbao::store::reclaim::run(&store).await.unwrap();
        let ttl: i64 = redis::cmd("PTTL")
            .arg(keys.packet(&id).tickets)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();

        // Assert
        assert_eq!(
            (at_draw.settled, at_draw.failed),
            (0, 0),
            "{backend}: {at_draw:?}"
        );
        assert!(drawn.is_some(), "{backend}: the draw ran at draw_at");
        assert_eq!(moved_to, Some(expires_at), "{backend}");
        assert_eq!(winners.len(), 3, "{backend}");
        assert_eq!(claimed, 200, "{backend}");
        assert!(
            ttl > 0,
            "{backend}: the entrants expire with the settled packet ({ttl})"
        );
        assert_eq!(
            (at_expiry.settled, at_expiry.refunded_cents),
            (1, 200),
            "{backend}: {at_expiry:?}"
        );
        let everyone: Vec<String> = users.iter().cloned().chain(["sam".to_string()]).collect();
        common::assert_conserved(&store, &everyone, std::slice::from_ref(&id), 300).await;
    }
}

/// `POST /packets` with `body` as `sender` (the create-packet function): (status, answer).
async fn create_route(store: &Arc<Store>, sender: &str, body: &Value) -> (u16, Value) {
    let ev = with_sub(
        crate::common::with_body(event("create-packet-lucky"), &body.to_string()),
        sender,
    );
    let (s, b, _) = call(store, Function::CreatePacket, &ev).await;
    (s, b)
}

/// `GET /packets/{id}` as `viewer`: the answer (200 asserted).
async fn view(store: &Arc<Store>, packet_id: &str, viewer: &str) -> Value {
    let ev = with_sub(
        with_placeholder(event("grab-view"), "PACKET_ID", packet_id),
        viewer,
    );
    let (s, b, _) = call(store, Function::Grab, &ev).await;
    assert_eq!(s, 200, "{b}");
    b
}

/// Test: a draw packet through the routes. `POST /packets` with `draw` refuses an entry
/// window outside 10..=86400 s or not shorter than the packet's life (400, nothing written);
/// the packet's view shows `entering` and the commitment, never the seed; three users enter;
/// at `draw_at` the view runs the draw and shows `drawn` with the seed and figures, and each
/// entrant's own `ticket` checks out against them; support's look-up shows the draw, its
/// winners and its one `draw_run` journal entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draw_packet_through_the_routes() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 1_000).await;
        let body = |entry: i64, expires: i64| {
            serde_json::json!({"total_cents": 200, "count": 2, "mode": "fixed",
                               "expires_in_secs": expires, "draw": {"entry_secs": entry}})
        };

        // Act: refusals, then the packet.
        let short = create_route(&store, "sam", &body(5, 60)).await;
        let late = create_route(&store, "sam", &body(60, 60)).await;
        let (s, made) = create_route(&store, "sam", &body(10, 60)).await;

        // Assert
        assert_eq!(
            (short.0, late.0),
            (400, 400),
            "{backend}: {short:?} {late:?}"
        );
        assert_eq!(s, 201, "{backend}: {made}");
        let id = made["packet_id"].as_str().unwrap().to_string();
        let before = view(&store, &id, "sam").await;
        assert_eq!(before["status"], "entering", "{backend}: {before}");
        assert!(
            before["draw"]["seed"].is_null() && before["ticket"].is_null(),
            "{before}"
        );
        let commitment = before["draw"]["commitment"].as_str().unwrap().to_string();

        // Act: three entrants, then draw_at.
        let users = ["ann", "ben", "cid"];
        for u in users {
            assert_eq!(grab(&store, &id, u).await.0, 202, "{backend}");
        }
        let draw_at: i64 = meta(&store, &id, "draw_at").await.unwrap().parse().unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;
        let after = view(&store, &id, "ann").await;

        // Assert
        assert_eq!(after["status"], "drawn", "{backend}: {after}");
        let d = &after["draw"];
        let reveal = Reveal {
            commitment,
            seed: d["seed"].as_str().unwrap().to_string(),
            entrants: d["entrants"].as_u64().unwrap(),
            winners: d["winners"].as_u64().unwrap(),
            threshold: d["threshold"].as_str().map(str::to_string),
        };
        assert_eq!((reveal.entrants, reveal.winners), (3, 2), "{backend}");
        for u in users {
            let mine = view(&store, &id, u).await;
            let won = mine["grabs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["user_id"] == u);
            let ticket = mine["ticket"].as_str().unwrap();
            assert_eq!(
                reveal.check_entrant(u, ticket, won),
                Ok(()),
                "{backend}: {u}"
            );
        }
        // Support sees the draw: its reveal, its winners' grabs and its one draw_run entry.
        let (s, looked) = crate::support::look_up_packet(&store, &id, None).await;
        let journaled = looked["journal"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "draw_run")
            .count();
        assert_eq!(
            (
                s,
                &looked["packet"]["draw"],
                looked["grabs"].as_array().map(Vec::len),
                journaled
            ),
            (200, d, Some(2), 1),
            "{backend}: {looked}"
        );
    }
}

/// Test: the sender cancels a draw packet after `draw_at`, before anyone ran the draw: the
/// cancel runs the draw first, so the 2 entrants keep the 2 shares they won, and only the
/// share nobody won (100) goes back; the winners still grab (200) and claim their shares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_after_draw_at_draws_first() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 300).await;
        let p = common::create(&store, "sam", &draw_packet(3, 4)).await;
        let id = p.packet_id.clone();
        for u in ["ann", "ben"] {
            assert_eq!(grab(&store, &id, u).await.0, 202);
        }
        let draw_at: i64 = meta(&store, &id, "draw_at").await.unwrap().parse().unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;

        // Act
        let cancelled = hongbao::packets::cancel(&store, &id, "sam").await.unwrap();
        let grabs = [
            grab(&store, &id, "ann").await,
            grab(&store, &id, "ben").await,
        ];
        let ev = with_sub(
            with_placeholder(event("claim-claim"), "PACKET_ID", &id),
            "ann",
        );
        let (claimed, _, _) = call(&store, Function::Claim, &ev).await;

        // Assert
        assert!(
            matches!(
                cancelled,
                hongbao::packets::CancelOutcome::Cancelled {
                    refunded_cents: 100,
                    ..
                }
            ),
            "{backend}: {cancelled:?}"
        );
        assert!(grabs.iter().all(|(s, _)| *s == 200), "{backend}: {grabs:?}");
        assert_eq!(claimed, 200, "{backend}");
        let everyone = ["sam", "ann", "ben"].map(String::from);
        common::assert_conserved(&store, &everyone, std::slice::from_ref(&id), 300).await;
    }
}

/// Test: a draw packet cancelled before its draw and settled at expiry never draws: a stalled
/// entrant's grab is 410 `cancelled`, a draw run answers `Cancelled`, and nothing is written
/// (no winner, no `draw_run` entry, every key as it was after the settlement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_draw_settled_since_never_draws() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 300).await;
        let p = common::create(&store, "sam", &draw_packet_for(3, 2, 3)).await;
        let id = p.packet_id.clone();
        for u in ["ann", "ben", "cid", "dee"] {
            assert_eq!(grab(&store, &id, u).await.0, 202);
        }
        hongbao::packets::cancel(&store, &id, "sam").await.unwrap();
        let expires_at: i64 = meta(&store, &id, "expires_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, expires_at).await;
        hongbao::store::reclaim::run(&store).await.unwrap();
        assert_eq!(
            meta(&store, &id, "status").await.as_deref(),
            Some("settled")
        );
        let before = crate::coupons::dump_all(&redis, &store).await;

        // Act: a grab; a stalled entry (its seed answered before the cancel); a draw run.
        let (s, b) = grab(&store, &id, "ann").await;
        let pk = Keys::new(&store.config().key_prefix).packet(&id);
        let stalled: String = DrawEnterCall {
            meta: &pk.meta,
            tickets: &pk.tickets,
            rate: &Keys::new(&store.config().key_prefix).grab_rate(&id, "eve"),
            user_id: "eve",
            ticket: &"e".repeat(64),
            rate_limit: 0,
            rate_window_ms: 1_000,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        let run = draw_run::run(&store, &id).await.unwrap();

        // Assert
        assert_eq!(
            (s, &b["error"]),
            (410, &Value::from("cancelled")),
            "{backend}: {b}"
        );
        assert_eq!(stalled, "cancelled", "{backend}");
        assert_eq!(run, DrawState::Cancelled, "{backend}");
        assert_eq!(
            crate::coupons::dump_all(&redis, &store).await,
            before,
            "{backend}"
        );
        assert_eq!(meta(&store, &id, "draw_winners").await, None, "{backend}");
    }
}

/// Test: an entrant's entry sent again after `draw_at` (its reply lost, re-sent late) answers
/// `entered` as its first run did, and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_re_sent_after_draw_at_answers_entered() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "sam", 200).await;
        let p = common::create(&store, "sam", &draw_packet(2, 2)).await;
        let keys = Keys::new(&store.config().key_prefix);
        let (pk, rate) = (
            keys.packet(&p.packet_id),
            keys.grab_rate(&p.packet_id, "eve"),
        );
        let ticket = "e".repeat(64);
        let entry = DrawEnterCall {
            meta: &pk.meta,
            tickets: &pk.tickets,
            rate: &rate,
            user_id: "eve",
            ticket: &ticket,
            rate_limit: 0,
            rate_window_ms: 1_000,
        };
        let mut conn = store.conn().await.unwrap();
        let first: String = entry.invocation().invoke_async(&mut conn).await.unwrap();
        let draw_at: i64 = meta(&store, &p.packet_id, "draw_at")
            .await
            .unwrap()
            .parse()
            .unwrap();
        common::sleep_until_redis_ms(&store, draw_at).await;
        let before = crate::coupons::dump_all(&redis, &store).await;

        // Act
        let again: String = entry.invocation().invoke_async(&mut conn).await.unwrap();

        // Assert
        assert_eq!(first, format!("entered:{draw_at}"), "{backend}");
        assert_eq!(again, first, "{backend}");
        assert_eq!(
            crate::coupons::dump_all(&redis, &store).await,
            before,
            "{backend}"
        );
    }
}
