//! A crowd guessing a password packet's password: the packet's guess budget
//! (`HONGBAO_GUESS_BUDGET`, `grab.lua`).

use std::sync::Arc;

use futures::StreamExt;
use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::json;

use super::{create, with_packet};
use crate::common::{self, call, event, with_body, with_sub, Function};

/// Accounts in the crowd.
const ACCOUNTS: usize = 1_000;
/// Wrong guesses each account sends.
const GUESSES_EACH: usize = 3;
/// The packet's budget of wrong guesses per window in this test.
const BUDGET: u32 = 50;
/// The guess window in this test, ms: longer than the test, so the crowd guesses in one
/// window (the bound below allows for more anyway).
const WINDOW_MS: u64 = 60_000;

/// `POST /packets/{id}/grab` by `user` with `password`: (status, error, `Retry-After`).
async fn guess(
    store: &Arc<Store>,
    id: &str,
    user: &str,
    password: &str,
) -> (u16, Option<String>, Option<String>) {
    let body = json!({ "password": password }).to_string();
    let ev = with_body(with_sub(with_packet(event("grab-grab"), id), user), &body);
    let (s, b, retry) = call(store, Function::Grab, &ev).await;
    (s, b["error"].as_str().map(str::to_string), retry)
}

/// Test: 1,000 accounts guessing a password packet's password 3 times each get at most the
/// packet's budget plus one answered guess per account in a window (403 `wrong_password`);
/// every other guess is 429 `rate_limited` with a `Retry-After` within the window. In their
/// midst a member who mistyped once more is refused (429), and with the right password grabs
/// a share (200): the crowd never blocks the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_over_the_guess_budget_is_slowed_and_the_password_still_opens() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| {
            c.packets.guess_budget = BUDGET;
            c.packets.guess_window_ms = WINDOW_MS;
        });
        common::fund(&store, "alice", 10_000).await;
        let body = json!({"total_cents": 500, "count": 5, "password": "芝麻开门"});
        let (s, p) = create(&store, "alice", &body).await;
        assert_eq!(s, 201, "{p}");
        let id = p["packet_id"].as_str().unwrap().to_string();
        let started = std::time::Instant::now();

        let calls = (0..GUESSES_EACH).flat_map(|round| {
            (0..ACCOUNTS).map(move |a| (format!("crowd{a}"), format!("guess {round}")))
        });
        let answers: Vec<_> = futures::stream::iter(calls)
            .map(|(user, pw)| {
                let (store, id) = (store.clone(), id.clone());
                async move { guess(&store, &id, &user, &pw).await }
            })
            .buffer_unordered(32)
            .collect()
            .await;
        let (mistyped, typo_retry) = {
            let first = guess(&store, &id, "erin", "芝麻關門").await;
            let again = guess(&store, &id, "erin", "芝麻开门!").await;
            (first, again)
        };
        let (member, _, _) = guess(&store, &id, "erin", "芝麻开门").await;

        let windows = started.elapsed().as_millis() as u64 / WINDOW_MS + 1;
        let answered = answers
            .iter()
            .filter(|a| (a.0, a.1.as_deref()) == (403, Some("wrong_password")))
            .count();
        let most = windows as usize * (BUDGET as usize + ACCOUNTS);
        assert!(
            answered <= most,
            "{backend:?}: {answered} of {} guesses answered, at most {most} allowed",
            answers.len()
        );
        for (s, error, retry) in answers.iter().filter(|a| a.0 != 403) {
            assert_eq!(
                (*s, error.as_deref()),
                (429, Some("rate_limited")),
                "{backend:?}"
            );
            let secs: u64 = retry.as_deref().expect("Retry-After").parse().unwrap();
            assert!(
                (1..=WINDOW_MS / 1000).contains(&secs),
                "{backend:?}: {secs}"
            );
        }
        assert_eq!(
            (mistyped.0, typo_retry.0, typo_retry.1.as_deref()),
            (403, 429, Some("rate_limited")),
            "{backend:?}: erin's typos, one guess per window"
        );
        assert_eq!(member, 200, "{backend:?}: the right password");
    }
}

/// Test: one account's wrong guesses on a password packet stop at `HONGBAO_GUESSES_PER_USER`
/// (10 here): its first 10 are 403 `wrong_password`, every later attempt 403
/// `guesses_exhausted`, the right password too, writing nothing; another account with the
/// right password grabs a share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_accounts_guesses_stop_for_good_at_its_cap() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |c| {
            c.packets.grab_rate_limit = 0;
            c.packets.guess_budget = 0;
            c.packets.guesses_per_user = 10;
        });
        common::fund(&store, "alice", 10_000).await;
        let body = json!({"total_cents": 500, "count": 5, "password": "芝麻开门"});
        let (s, p) = create(&store, "alice", &body).await;
        assert_eq!(s, 201, "{p}");
        let id = p["packet_id"].as_str().unwrap().to_string();
        let mut answered = Vec::new();
        for n in 0..10 {
            answered.push(guess(&store, &id, "mallory", &format!("{n:06}")).await.1);
        }
        let before = common::snapshot(&redis).await;

        // Act
        let wrong = guess(&store, &id, "mallory", "000010").await;
        let right = guess(&store, &id, "mallory", "芝麻开门").await;
        let member = guess(&store, &id, "bob", "芝麻开门").await;

        // Assert
        assert!(
            answered
                .iter()
                .all(|e| e.as_deref() == Some("wrong_password")),
            "{backend}: {answered:?}"
        );
        assert_eq!(wrong.0, 403, "{backend}");
        assert_eq!(wrong.1.as_deref(), Some("guesses_exhausted"), "{backend}");
        assert_eq!(right.1.as_deref(), Some("guesses_exhausted"), "{backend}");
        assert_eq!(member.0, 200, "{backend}: {member:?}");
        let after = common::snapshot(&redis).await;
        let changed: Vec<&String> = after
            .iter()
            .filter(|kv| !before.contains(kv))
            .map(|(k, _)| k)
            .collect();
        assert!(
            changed.iter().all(|k| !k.contains("mallory")),
            "{backend}: mallory's refused attempts wrote {changed:?}"
        );
    }
}
