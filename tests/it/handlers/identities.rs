//! Any identity provider's subject as a user id, through every function.

use harness::{Backend, TestRedis};
use serde_json::json;

use super::{deposit, with_packet};
use crate::common::{self, call, event, with_body, with_sub, Function};

/// Any identity provider's `sub` is a user id (1 to 255 printable characters), and
/// no id can break or collide in a key: Auth0, Google, Okta and Cognito subjects, ids with
/// `:`, `{`, `}`, `|`, `%`, spaces and other scripts deposit, create, grab, claim, read their
/// wallet, post and vote, with exact balances, on a standalone server and on a cluster.
/// `a:ledger` beside `a` is the collision an unescaped id would make (its wallet hash would be
/// `a`'s ledger list: WRONGTYPE, or worse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_provider_subjects() {
    let subjects = [
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
    ];
    let long = "é".repeat(255);
    // Two ids on one wallet tag where one is the other + ":ledger" (found in about 65,536
    // SHA-1s): unescaped, the second one's wallet hash would be the first one's ledger list.
    let user_tag = hongbao::store::keys::user_tag;
    let victim = (0u32..)
        .map(|n| format!("mallory-{n}"))
        .find(|v| user_tag(v) == user_tag(&format!("{v}:ledger")))
        .unwrap();
    let twin = format!("{victim}:ledger");
    let mut users: Vec<&str> = subjects.to_vec();
    users.extend([long.as_str(), victim.as_str(), twin.as_str()]);
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        for (i, u) in users.iter().enumerate() {
            let (s, b) = deposit(&store, u, 2_000, &format!("dep-{i}")).await;
            assert_eq!(
                (s, b["user_id"].as_str()),
                (201, Some(*u)),
                "{backend:?} {u:?}: {b}"
            );
        }
        let sender = users[0];
        let count = users.len();
        let body = json!({"total_cents": 100 * count, "count": count, "mode": "fixed"}).to_string();
        let (s, created, _) = call(
            &store,
            Function::CreatePacket,
            &with_sub(with_body(event("create-packet-fixed"), &body), sender),
        )
        .await;
        assert_eq!(s, 201, "{backend:?}: {created}");
        let id = created["packet_id"].as_str().unwrap().to_string();
        for u in &users {
            let (s, b, _) = call(
                &store,
                Function::Grab,
                &with_sub(with_packet(event("grab-grab"), &id), u),
            )
            .await;
            assert_eq!(
                (s, b["amount_cents"].as_i64()),
                (200, Some(100)),
                "{u:?}: {b}"
            );
            let (s, b, _) = call(
                &store,
                Function::Claim,
                &with_sub(with_packet(event("claim-claim"), &id), u),
            )
            .await;
            assert_eq!(s, 200, "{backend:?} claim by {u:?}: {b}");
        }
        let (s, view, _) = call(
            &store,
            Function::Grab,
            &with_sub(with_packet(event("grab-view"), &id), sender),
        )
        .await;
        assert_eq!(s, 200, "{view}");
        let mut grabbers: Vec<&str> = view["grabs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["user_id"].as_str().unwrap())
            .collect();
        grabbers.sort_unstable();
        let mut want = users.clone();
        want.sort_unstable();
        assert_eq!(grabbers, want, "{backend:?}");
        for u in &users {
            let (s, w, _) = call(&store, Function::Wallet, &with_sub(event("wallet-get"), u)).await;
            let expect = 2_000 + 100 - if *u == sender { 100 * count as i64 } else { 0 };
            assert_eq!(
                (s, w["user_id"].as_str(), w["balance_cents"].as_i64()),
                (200, Some(*u), Some(expect)),
                "{backend:?} {u:?}: {w}"
            );
        }
        // Voting: an article posted by one exotic id, voted by another.
        let (s, posted, _) = call(
            &store,
            Function::Vote,
            &with_sub(
                with_body(
                    event("vote-post-article"),
                    r#"{"title":"hello","link":"https://example.com/"}"#,
                ),
                "x}{y",
            ),
        )
        .await;
        assert_eq!(
            (s, posted["poster"].as_str()),
            (201, Some("x}{y")),
            "{posted}"
        );
        let article = posted["article_id"].as_str().unwrap();
        let ev = serde_json::from_str(
            &event("vote-vote")
                .to_string()
                .replace("ARTICLE_ID", article),
        )
        .unwrap();
        let (s, voted, _) = call(
            &store,
            Function::Vote,
            &with_sub(with_body(ev, r#"{"direction":"up"}"#), "pipe|and space"),
        )
        .await;
        assert_eq!((s, voted["votes"].as_i64()), (200, Some(2)), "{voted}");
        // Every key has exactly one hash tag, and no user id reached a key unescaped.
        for key in redis.all_keys().await {
            assert_eq!(key.matches('{').count(), 1, "{backend:?} {key}");
            assert_eq!(key.matches('}').count(), 1, "{backend:?} {key}");
            assert!(
                !key.contains([' ', '|', '@']) && key.is_ascii(),
                "{backend:?} {key}"
            );
        }
    }
}
