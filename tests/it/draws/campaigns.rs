//! Draw campaigns (`coupon_draw_enter.lua`, `coupon_draw_run.lua`) through the coupon
//! router, on standalone and on the 3-master cluster at once: grabs before `draw_at` enter
//! the draw on pool 0 (202), the draw runs once however many race it or re-send it, the
//! entrants with the smallest tickets win one code each from whichever pool holds one, anyone
//! else gets 410 `not_drawn`, and the view reveals the draw every entrant checks.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common;
use crate::coupons::api::{create, grab, view};
use crate::coupons::coupon_store;
use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use hongbao::coupons::draw::{run_draw, Drawn};
use hongbao::coupons::rules::{campaign_id, campaign_no};
use hongbao::coupons::PoolKeys;
use hongbao::domain::journal::Kind;
use hongbao::draws::rules::{self as draws, Reveal};
use hongbao::store::scripts::{text, Call, CouponDrawRunCall};
use hongbao::Store;

/// Redis `TIME`, Unix ms.
async fn redis_ms(store: &Store) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
    s * 1000 + us / 1000
}

/// A draw campaign body: `codes` uploaded codes over the pools of `planned` codes, started
/// `started_ms_ago` before `now` with an entry window of `entry_secs`, ending `ends_in_ms`
/// after `now`.
fn draw_campaign(
    now: i64,
    codes: &[String],
    planned: u64,
    started_ms_ago: i64,
    entry_secs: i64,
    ends_in_ms: i64,
    reference: &str,
) -> Value {
    json!({
        "title": "draw: 20 off 100",
        "codes": codes,
        "codes_planned": planned,
        "starts_at": rfc3339(now - started_ms_ago),
        "ends_at": rfc3339(now + ends_in_ms),
        "reference": reference,
        "draw": {"entry_secs": entry_secs},
    })
}

/// The keys of pool 0 of campaign `id`, of `pools` pools.
fn pool0(store: &Store, id: &str, pools: u32) -> PoolKeys {
    PoolKeys::new(
        &store.config().key_prefix,
        id,
        campaign_no(id).unwrap(),
        0,
        pools,
    )
}

/// The `draw_run` entries of campaign `id` in pool 0's journal.
async fn draw_runs(
    store: &Store,
    keys: &PoolKeys,
    id: &str,
) -> Vec<hongbao::domain::journal::Entry> {
    hongbao::store::journal::read(store, &keys.journal, 10_000)
        .await
        .unwrap()
        .into_iter()
        // The journal names a campaign by its number's 5 characters.
        .filter(|e| e.kind == Kind::DrawRun && e.reference == campaign_id(campaign_no(id).unwrap()))
        .collect()
}

/// Test: 100 users enter a draw campaign of 30 codes spread over 24 pools (each twice: the
/// same 202); from `draw_at` 50 grabs race the draw with 10 direct runs: the 30 users with the
/// smallest tickets get one code each (distinct, all 30 issued, a second grab answers the
/// same code), everyone else 410 `not_drawn`; the draw ran once (one `draw_run`), a re-sent
/// run answers its figures, and the view's reveal checks out for every entrant.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_smallest_tickets_win_the_codes_across_pools() {
    join_all(Backend::all().into_iter().map(|backend| async move {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes: Vec<String> = (0..30).map(|i| format!("DRAW-{i:04}")).collect();
        let body = draw_campaign(now, &codes, 60_000, 2_000, 10, 600_000, "draw-1");
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{backend}: {created}");
        let id = created["campaign_id"].as_str().unwrap().to_string();
        assert_eq!(created["status"], "entering", "{backend}: {created}");
        assert!(
            created["draw"]["seed"].is_null(),
            "{backend}: no seed before the draw"
        );
        let commitment = created["draw"]["commitment"].as_str().unwrap().to_string();
        let users: Vec<String> = (0..100).map(|i| format!("fan-{i:03}")).collect();

        // Act: every user enters twice, before draw_at.
        for u in users.iter().chain(&users) {
            let (s, b, _) = grab(&store, &id, u).await;
            assert_eq!(
                (s, b["entered"].as_bool()),
                (202, Some(true)),
                "{backend}: {b}"
            );
        }
        let draw_at = created["draw"]["draw_at"].as_str().unwrap();
        let draw_at_ms = chrono::DateTime::parse_from_rfc3339(draw_at)
            .unwrap()
            .timestamp_millis();
        common::sleep_until_redis_ms(&store, draw_at_ms).await;
        let runs: Vec<_> = (0..10)
            .map(|_| {
                let (store, id) = (store.clone(), id.clone());
                tokio::spawn(async move { run_draw(&store, &id).await.unwrap() })
            })
            .collect();
        let grabs: Vec<_> = users
            .iter()
            .take(50)
            .map(|u| {
                let (store, id, u) = (store.clone(), id.clone(), u.clone());
                tokio::spawn(async move { grab(&store, &id, &u).await })
            })
            .collect();
        let (runs, grabs) = tokio::join!(join_all(runs), join_all(grabs));
        let mut answers: Vec<(u16, Value)> = grabs
            .into_iter()
            .map(|g| {
                let (s, b, _) = g.unwrap();
                (s, b)
            })
            .collect();
        for u in &users[50..] {
            let (s, b, _) = grab(&store, &id, u).await;
            answers.push((s, b));
        }

        // Assert
        let drawn = Drawn {
            winners: 30,
            entrants: 100,
        };
        assert!(
            runs.into_iter().all(|r| r.unwrap() == Some(drawn)),
            "{backend}"
        );
        let (_, shown) = view(&store, &id, &users[0]).await;
        let seed = shown["draw"]["seed"].as_str().unwrap().to_string();
        let expected = winners_of(&seed, &users, 30);
        let mut won = BTreeSet::new();
        for (u, (s, b)) in users.iter().zip(&answers) {
            if expected.contains_key(u) {
                assert_eq!(*s, 200, "{backend}: {u}: {b}");
                assert!(
                    won.insert(b["code"].as_str().unwrap().to_string()),
                    "{backend}: {b}"
                );
                let (again, b2, _) = grab(&store, &id, u).await;
                assert_eq!(
                    (again, &b2["coupons"][0]),
                    (409, &b["code"]),
                    "{backend}: {b2}"
                );
            } else {
                assert_eq!(
                    (*s, b["error"].as_str()),
                    (410, Some("not_drawn")),
                    "{backend}: {u}: {b}"
                );
            }
        }
        assert_eq!(
            won,
            codes.iter().cloned().collect(),
            "{backend}: every code, once"
        );
        let (_, after) = view(&store, &id, &users[0]).await;
        assert_eq!(
            (after["codes_left"].as_u64(), after["status"].as_str()),
            (Some(0), Some("sold_out"))
        );
        let reveal = Reveal {
            commitment,
            seed: seed.clone(),
            entrants: after["draw"]["entrants"].as_u64().unwrap(),
            winners: after["draw"]["winners"].as_u64().unwrap(),
            threshold: after["draw"]["threshold"].as_str().map(str::to_string),
        };
        assert_eq!((reveal.entrants, reveal.winners), (100, 30));
        for u in &users {
            let (_, mine) = view(&store, &id, u).await;
            let ticket = mine["ticket"].as_str().unwrap();
            assert_eq!(
                reveal.check_entrant(u, ticket, expected.contains_key(u)),
                Ok(()),
                "{backend}: {u}"
            );
        }
        let keys = pool0(&store, &id, created_pools(&store, &id).await);
        let resent: redis::Value = CouponDrawRunCall {
            pool: &keys.pool,
            tickets: &keys.tickets,
            journal: &keys.journal,
            codes: 999,
            campaign_id: &campaign_id(campaign_no(&id).unwrap()),
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        assert_eq!(text("coupon_draw_run", resent).unwrap(), "drawn:30:100");
        let journaled = draw_runs(&store, &keys, &id).await;
        assert_eq!(journaled.len(), 1, "{backend}: {journaled:?}");
        let figures = journaled[0].draw.as_ref().unwrap();
        assert_eq!(
            (figures.entrants, figures.winners, figures.seed.as_str()),
            (100, 30, seed.as_str())
        );
    }))
    .await;
}

/// The winners of the draw of `seed` among `users` for `count` codes: user -> ticket.
fn winners_of(seed: &str, users: &[String], count: usize) -> HashMap<String, String> {
    let entrants: Vec<&str> = users.iter().map(String::as_str).collect();
    draws::winners(seed, &entrants, count)
        .unwrap()
        .into_iter()
        .map(|(ticket, user)| (user, ticket))
        .collect()
}

/// The number of pools of campaign `id` (pool 0's `pools`).
async fn created_pools(store: &Store, id: &str) -> u32 {
    let keys = pool0(store, id, 1);
    redis::cmd("HGET")
        .arg(&keys.pool)
        .arg("pools")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
}

/// Test: with fewer entrants than codes every entrant wins, with more the codes decide; an
/// entry after `draw_at` writes nothing and answers 410 `not_drawn`; a campaign nobody looked
/// at after `draw_at` is drawn by reclaim-cron's close, once, and its entrants expire with
/// its closed pools.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn late_entries_write_nothing_and_the_close_draws() {
    join_all(Backend::all().into_iter().map(|backend| async move {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes: Vec<String> = (0..5).map(|i| format!("FEW-{i:04}")).collect();
        let body = draw_campaign(now, &codes, 5, 4_000, 10, 9_000, "draw-late");
        let (s, created) = create(&store, &body).await;
        assert_eq!(s, 201, "{backend}: {created}");
        let other = draw_campaign(
            now,
            &["QUIET-0001".to_string()],
            1,
            4_000,
            10,
            9_000,
            "draw-quiet",
        );
        let (s, quiet) = create(&store, &other).await;
        assert_eq!(s, 201, "{backend}: {quiet}");
        let id = created["campaign_id"].as_str().unwrap().to_string();
        let quiet_id = quiet["campaign_id"].as_str().unwrap().to_string();
        let keys = pool0(&store, &id, 1);
        let quiet_keys = pool0(&store, &quiet_id, 1);
        for u in ["ann", "bo", "cy"] {
            assert_eq!(grab(&store, &id, u).await.0, 202, "{backend}");
            assert_eq!(grab(&store, &quiet_id, u).await.0, 202, "{backend}");
        }
        let draw_at =
            chrono::DateTime::parse_from_rfc3339(created["draw"]["draw_at"].as_str().unwrap())
                .unwrap()
                .timestamp_millis();
        common::sleep_until_redis_ms(&store, draw_at).await;

        // Act: a late user grabs the first campaign after draw_at (the draw not run yet: the
        // grab runs it); nobody looks at the second until reclaim-cron closes both.
        let (late, late_body, _) = grab(&store, &id, "late").await;
        let entrants: u64 = redis::cmd("ZCARD")
            .arg(&keys.tickets)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        let ends_ms = chrono::DateTime::parse_from_rfc3339(created["ends_at"].as_str().unwrap())
            .unwrap()
            .timestamp_millis();
        common::sleep_until_redis_ms(&store, ends_ms).await;
        let closed = hongbao::coupons::close::close_ended(
            &store,
            std::time::Instant::now() + std::time::Duration::from_secs(30),
        )
        .await
        .unwrap();

        // Assert
        assert_eq!(
            (late, late_body["error"].as_str()),
            (410, Some("not_drawn")),
            "{backend}: {late_body}"
        );
        assert_eq!(entrants, 3, "{backend}: the late grab entered nobody");
        assert_eq!(closed.closed, 2, "{backend}");
        for (k, id, winners) in [(&keys, &id, 3), (&quiet_keys, &quiet_id, 1)] {
            let journaled = draw_runs(&store, k, id).await;
            assert_eq!(journaled.len(), 1, "{backend}: {id}");
            let figures = journaled[0].draw.as_ref().unwrap();
            assert_eq!(
                (figures.entrants, figures.winners),
                (3, winners),
                "{backend}: {id}"
            );
        }
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&keys.tickets)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        assert!(
            ttl > 0,
            "{backend}: the entrants expire with the closed pool: {ttl}"
        );
    }))
    .await;
}

/// Test: a draw campaign's refusals write nothing: `per_user` above 1, an entry window out of
/// range, a draw not before `ends_at` (given a start, and without one by the store's clock),
/// each 400 `invalid_request`; the same reference then creates the valid campaign.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draw_campaigns_refusals_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store: Arc<Store> = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes = vec!["REFUSE-0001".to_string()];
        let good = draw_campaign(now, &codes, 1, 0, 60, 3_600_000, "draw-refusals");
        let mut per_user = good.clone();
        per_user["per_user"] = json!(2);
        let mut short = good.clone();
        short["draw"]["entry_secs"] = json!(9);
        let mut after_end = good.clone();
        after_end["draw"]["entry_secs"] = json!(3_600);
        let mut no_start = good.clone();
        no_start.as_object_mut().unwrap().remove("starts_at");
        no_start["ends_at"] = json!(rfc3339(now + 30_000));

        for (what, body) in [
            ("per_user", per_user),
            ("entry_secs", short),
            ("ends_at", after_end),
            ("no start", no_start),
        ] {
            let (s, b) = create(&store, &body).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{backend}: {what}: {b}"
            );
        }
        let (s, b) = create(&store, &good).await;
        assert_eq!(s, 201, "{backend}: the reference was never used: {b}");
    }
}
