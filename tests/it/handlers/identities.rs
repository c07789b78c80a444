//! Any identity provider's subject as a user id, through every function: Auth0, Google, Okta
//! and Cognito subjects, ids with `:`, `{`, `}`, `|`, `%`, spaces and other scripts, on a
//! standalone server and on a cluster. `a:ledger` beside `a` is the collision an unescaped id
//! would make (its wallet hash would be `a`'s ledger list: WRONGTYPE, or worse).

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{self, call, event, with_body, with_placeholder, with_sub, Function};

/// Each user's deposit, cents.
const DEPOSIT: i64 = 2_000;
/// Each share of the packet everyone grabs, cents.
const SHARE: i64 = 100;

/// Subjects of every shape a user id may take (1 to 255 printable characters), the longest
/// one, and two ids on one wallet tag where one is the other + ":ledger" (found in about
/// 65,536 SHA-1s): unescaped, the second one's wallet hash would be the first one's ledger.
fn subjects() -> Vec<String> {
    let mut users: Vec<String> = [
        "auth0|65f0c1e2d3b4a5968700aa11",
        "google-oauth2|104398765432109876543",
        "00u1abcdEFGH2345ijk6",
        "3f2a9c1e-8b7d-4e6f-a5c4-1b2d3e4f5a6b",
        "a",
        "a:ledger",
        "{x}",
        "x}{y",
        "pipe|and space",
        "%41",
        "A",
        "张伟 🧧",
        "user@example.com",
    ]
    .map(String::from)
    .to_vec();
    let user_tag = hongbao::store::keys::user_tag;
    let victim = (0u32..)
        .map(|n| format!("mallory-{n}"))
        .find(|v| user_tag(v) == user_tag(&format!("{v}:ledger")))
        .unwrap();
    users.extend(["é".repeat(255), format!("{victim}:ledger"), victim]);
    users
}

/// Every subject deposits [`DEPOSIT`], the first sends a fixed packet of one [`SHARE`] each,
/// and every subject grabs and claims its share. Returns the packet id.
async fn everyone_grabs_and_claims(store: &Arc<Store>, users: &[String]) -> String {
    for (i, u) in users.iter().enumerate() {
        let (s, b) = deposit(store, u, DEPOSIT, &format!("dep-{i}")).await;
        assert_eq!(
            (s, b["user_id"].as_str()),
            (201, Some(u.as_str())),
            "{u:?}: {b}"
        );
    }
    let body = json!({"total_cents": SHARE * users.len() as i64, "count": users.len(),
                      "mode": "fixed"});
    let create = with_body(event("create-packet-fixed"), &body.to_string());
    let (s, created, _) = call(store, Function::CreatePacket, &with_sub(create, &users[0])).await;
    assert_eq!(s, 201, "{created}");
    let id = created["packet_id"].as_str().unwrap().to_string();
    for u in users {
        for (function, fixture) in [
            (Function::Grab, "grab-grab"),
            (Function::Claim, "claim-claim"),
        ] {
            let (s, b, _) = call(
                store,
                function,
                &with_sub(with_packet(event(fixture), &id), u),
            )
            .await;
            assert_eq!(s, 200, "{fixture} by {u:?}: {b}");
        }
    }
    id
}

/// `poster` posts an article and `voter` votes it up; returns the vote's answer.
async fn post_and_vote(store: &Arc<Store>, poster: &str, voter: &str) -> (u16, Value) {
    let post = r#"{"title":"hello","link":"https://example.com/"}"#;
    let (s, posted, _) = call(
        store,
        Function::Vote,
        &with_sub(with_body(event("vote-post-article"), post), poster),
    )
    .await;
    assert_eq!(
        (s, posted["poster"].as_str()),
        (201, Some(poster)),
        "{posted}"
    );
    let vote = with_placeholder(
        event("vote-vote"),
        "ARTICLE_ID",
        posted["article_id"].as_str().unwrap(),
    );
    let (s, voted, _) = call(
        store,
        Function::Vote,
        &with_sub(with_body(vote, r#"{"direction":"up"}"#), voter),
    )
    .await;
    (s, voted)
}

/// Test: every subject's wallet ends at its deposit, plus its share, less what it sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subject_ends_at_its_exact_balance() {
    let users = subjects();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        everyone_grabs_and_claims(&store, &users).await;

        for u in &users {
            let (s, w, _) = call(&store, Function::Wallet, &with_sub(event("wallet-get"), u)).await;

            let sent = if *u == users[0] {
                SHARE * users.len() as i64
            } else {
                0
            };
            let want = (200, Some(u.as_str()), Some(DEPOSIT + SHARE - sent));
            let got = (s, w["user_id"].as_str(), w["balance_cents"].as_i64());
            assert_eq!(got, want, "{backend:?} {u:?}: {w}");
        }
    }
}

/// Test: the packet's view lists every subject among its grabbers, as each sent its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subject_is_listed_among_the_grabbers() {
    let users = subjects();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let id = everyone_grabs_and_claims(&store, &users).await;

        let view = with_sub(with_packet(event("grab-view"), &id), &users[0]);
        let (s, view, _) = call(&store, Function::Grab, &view).await;

        assert_eq!(s, 200, "{view}");
        let mut grabbers: Vec<&str> = view["grabs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["user_id"].as_str().unwrap())
            .collect();
        grabbers.sort_unstable();
        let mut want: Vec<&str> = users.iter().map(String::as_str).collect();
        want.sort_unstable();
        assert_eq!(grabbers, want, "{backend:?}");
    }
}

/// Test: subjects with braces, pipes and spaces post and vote on one article.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjects_with_braces_and_pipes_post_and_vote() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (s, voted) = post_and_vote(&store, "x}{y", "pipe|and space").await;

        assert_eq!(
            (s, voted["votes"].as_i64()),
            (200, Some(2)),
            "{backend:?}: {voted}"
        );
    }
}

/// Test: after every subject moved money and voted, every key has exactly one hash tag and
/// no user id reached a key unescaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_subject_reaches_a_key_unescaped() {
    let users = subjects();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        everyone_grabs_and_claims(&store, &users).await;
        post_and_vote(&store, "x}{y", "pipe|and space").await;

        for key in redis.all_keys().await {
            assert_eq!(
                (key.matches('{').count(), key.matches('}').count()),
                (1, 1),
                "{key}"
            );
            assert!(
                !key.contains([' ', '|', '@']) && key.is_ascii(),
                "{backend:?} {key}"
            );
        }
    }
}
