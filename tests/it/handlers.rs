//! Handler tests: API Gateway HTTP API (v2) events from `events/` (made with `sam local
//! generate-event apigateway http-api-proxy`, then edited) go through each function's real
//! handler against real `redis-server` processes (standalone and cluster).

use std::sync::Arc;

use harness::{Backend, RedisServer, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use crate::common::{
    self, call, event, snapshot, with_body, with_header, with_sub, without_auth, Function,
};

/// [`snapshot`] without the reclaim index: a refused create changes nothing else, and leaves
/// the index entry it wrote before the script ran (brought forward, for reclaim-cron to drop
/// within two minutes), because a late first run of the same call may still create the packet
/// within its delivery window (`store::packets::create`).
async fn snapshot_but_reclaim_index(redis: &TestRedis) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all = snapshot(redis).await;
    all.retain(|(key, _)| !key.ends_with("{reclaim}:due"));
    all
}

/// Replaces the `PACKET_ID` placeholder everywhere in the event.
fn with_packet(v: Value, id: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("PACKET_ID", id)).unwrap()
}

fn with_route(mut v: Value, method: &str, path: &str) -> Value {
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(method);
    v["requestContext"]["http"]["path"] = json!(path);
    v["routeKey"] = json!(format!("{method} {path}"));
    v
}

async fn deposit(store: &Arc<Store>, user: &str, cents: i64, reference: &str) -> (u16, Value) {
    let body = json!({"user_id": user, "amount_cents": cents, "reference": reference}).to_string();
    let (s, b, _) = call(
        store,
        Function::Wallet,
        &with_body(event("wallet-deposit"), &body),
    )
    .await;
    (s, b)
}

/// The whole HTTP contract's happy path, through the fixtures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixtures_through_the_handlers() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});

        let (s, b) = deposit(&store, "alice", 20_000, "dep-1").await;
        assert_eq!(
            (s, b["balance_cents"].clone(), b["repeat"].clone()),
            (201, json!(20_000), json!(false))
        );
        let (s, b) = deposit(&store, "alice", 20_000, "dep-1").await;
        assert_eq!(
            (s, b["balance_cents"].clone(), b["repeat"].clone()),
            (201, json!(20_000), json!(true))
        );

        let (s, created, _) = call(
            &store,
            Function::CreatePacket,
            &event("create-packet-lucky"),
        )
        .await;
        assert_eq!(s, 201, "{created}");
        let id = created["packet_id"].as_str().unwrap().to_string();
        assert_eq!(created["sender_id"], "alice");
        assert_eq!(created["total_cents"], 10_000);
        assert_eq!(created["count"], 100);
        assert_eq!(created["mode"], "lucky");
        assert_eq!(created["split"], "double_mean");
        assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
        for key in ["greeting", "expires_at"] {
            assert!(created.get(key).is_some(), "{key}");
        }
        let (s, fixed, _) = call(
            &store,
            Function::CreatePacket,
            &event("create-packet-fixed"),
        )
        .await;
        assert_eq!(
            (s, fixed["mode"].clone(), fixed["split"].clone()),
            (201, json!("fixed"), Value::Null)
        );

        let (s, grabbed, _) = call(
            &store,
            Function::Grab,
            &with_packet(event("grab-grab"), &id),
        )
        .await;
        assert_eq!(s, 200, "{grabbed}");
        assert_eq!(grabbed["packet_id"], id.as_str());
        assert_eq!(grabbed["share_id"], 1);
        assert!(grabbed["amount_cents"].as_i64().unwrap() >= 1);
        assert_eq!(grabbed["claim_by"], created["expires_at"]);
        let (s, again, _) = call(
            &store,
            Function::Grab,
            &with_packet(event("grab-grab"), &id),
        )
        .await;
        assert_eq!((s, again["error"].clone()), (409, json!("already_grabbed")));
        assert_eq!(again["share"]["amount_cents"], grabbed["amount_cents"]);
        assert_eq!(again["share"]["share_id"], 1);

        let (s, view, _) = call(
            &store,
            Function::Grab,
            &with_packet(event("grab-view"), &id),
        )
        .await;
        assert_eq!(s, 200);
        assert_eq!(view["status"], "open");
        assert_eq!(view["grabbed_count"], 1);
        assert_eq!(view["grabs"][0]["user_id"], "bob");
        assert_eq!(view["grabs"][0]["claimed"], false);
        assert_eq!(view["best_luck"], Value::Null);

        let (s, c1, _) = call(
            &store,
            Function::Claim,
            &with_packet(event("claim-claim"), &id),
        )
        .await;
        assert_eq!(s, 200, "{c1}");
        assert_eq!(c1["repeat"], false);
        assert_eq!(c1["balance_cents"], grabbed["amount_cents"]);
        let (s, c2, _) = call(
            &store,
            Function::Claim,
            &with_packet(event("claim-claim"), &id),
        )
        .await;
        assert_eq!(
            (s, c2["repeat"].clone(), c2["balance_cents"].clone()),
            (200, json!(true), c1["balance_cents"].clone())
        );

        let (s, w, _) = call(
            &store,
            Function::Wallet,
            &with_sub(event("wallet-get"), "bob"),
        )
        .await;
        assert_eq!(s, 200);
        assert_eq!(w["user_id"], "bob");
        assert_eq!(w["entries"][0]["kind"], "claim_credit");
        assert_eq!(w["entries"][0]["reference"], id.as_str());
        let (_, w, _) = call(&store, Function::Wallet, &event("wallet-get")).await;
        let kinds: Vec<&str> = w["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["packet_debit", "packet_debit", "deposit"]);
        assert_eq!(w["balance_cents"], 20_000 - 10_000 - 1_000);

        // The chat-packet fixtures: a password packet alice creates, bob grabs with its
        // password, and alice cancels (its two un-grabbed shares come back).
        let (s, pw, _) = call(
            &store,
            Function::CreatePacket,
            &event("create-packet-password"),
        )
        .await;
        assert_eq!(
            (s, pw["password_protected"].as_bool()),
            (201, Some(true)),
            "{pw}"
        );
        let pw_id = pw["packet_id"].as_str().unwrap();
        let (s, g, _) = call(
            &store,
            Function::Grab,
            &with_packet(event("grab-grab-password"), pw_id),
        )
        .await;
        assert_eq!(s, 200, "{g}");
        let (s, c, _) = call(
            &store,
            Function::CreatePacket,
            &with_packet(event("create-packet-cancel"), pw_id),
        )
        .await;
        assert_eq!(
            (s, c["status"].as_str(), c["refunded_cents"].as_i64()),
            (
                200,
                Some("cancelled"),
                Some(600 - g["amount_cents"].as_i64().unwrap())
            ),
            "{c}"
        );

        // The scheduled-event fixture is a valid EventBridge event for reclaim-cron.
        let sched: aws_lambda_events::eventbridge::EventBridgeEvent<Value> =
            serde_json::from_value(event("reclaim-cron-scheduled")).unwrap();
        assert_eq!(sched.detail_type, "Scheduled Event");
        let summary = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(summary.packets.settled, 0);
    }
}

/// Every bad input of the contract gets its 4xx code and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_refused_and_change_nothing() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        assert_eq!(deposit(&store, "alice", 5_000, "seed").await.0, 201);
        let (_, created, _) = call(
            &store,
            Function::CreatePacket,
            &with_header(
                with_body(
                    event("create-packet-lucky"),
                    r#"{"total_cents": 1000, "count": 10}"#,
                ),
                "idempotency-key",
                "key-1",
            ),
        )
        .await;
        let id = created["packet_id"].as_str().unwrap().to_string();
        let unknown_id = format!("{}ffffffffffffffffffff", &id[..4]);
        let create = |body: &str| with_body(event("create-packet-lucky"), body);
        let long = "x".repeat(101);
        let cases: Vec<(&str, Function, Value, u16, &str)> = vec![
            (
                "fractional amount",
                Function::CreatePacket,
                event("create-packet-bad-amount"),
                400,
                "invalid_request",
            ),
            (
                "amount as string",
                Function::CreatePacket,
                create(r#"{"total_cents":"100","count":2}"#),
                400,
                "invalid_request",
            ),
            (
                "amount as float",
                Function::CreatePacket,
                create(r#"{"total_cents":100.0,"count":2}"#),
                400,
                "invalid_request",
            ),
            (
                "unknown field",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"color":"red"}"#),
                400,
                "invalid_request",
            ),
            (
                "count 0",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":0}"#),
                400,
                "invalid_request",
            ),
            (
                "count too big",
                Function::CreatePacket,
                create(r#"{"total_cents":20000,"count":10001}"#),
                400,
                "invalid_request",
            ),
            (
                "negative count",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":-1}"#),
                400,
                "invalid_request",
            ),
            (
                "total below count",
                Function::CreatePacket,
                create(r#"{"total_cents":5,"count":10}"#),
                400,
                "invalid_request",
            ),
            (
                "total too big",
                Function::CreatePacket,
                create(r#"{"total_cents":20001,"count":10}"#),
                400,
                "invalid_request",
            ),
            (
                "fixed not divisible",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":3,"mode":"fixed"}"#),
                400,
                "invalid_request",
            ),
            (
                "split on fixed",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"mode":"fixed","split":"line_cut"}"#),
                400,
                "invalid_request",
            ),
            (
                "unknown mode",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"mode":"huge"}"#),
                400,
                "invalid_request",
            ),
            (
                "unknown split",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"split":"even"}"#),
                400,
                "invalid_request",
            ),
            (
                "expires 0",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"expires_in_secs":0}"#),
                400,
                "invalid_request",
            ),
            (
                "expires > 7 days",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"expires_in_secs":604801}"#),
                400,
                "invalid_request",
            ),
            (
                "greeting too long",
                Function::CreatePacket,
                create(&format!(
                    r#"{{"total_cents":100,"count":2,"greeting":"{long}"}}"#
                )),
                400,
                "invalid_request",
            ),
            (
                "malformed JSON",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"#),
                400,
                "invalid_request",
            ),
            (
                "empty body",
                Function::CreatePacket,
                create(""),
                400,
                "invalid_request",
            ),
            (
                "JSON array",
                Function::CreatePacket,
                create("[1,2]"),
                400,
                "invalid_request",
            ),
            (
                "idempotency key too long",
                Function::CreatePacket,
                with_header(
                    create(r#"{"total_cents":100,"count":2}"#),
                    "idempotency-key",
                    &"k".repeat(65),
                ),
                400,
                "invalid_request",
            ),
            (
                "no JWT",
                Function::CreatePacket,
                event("create-packet-no-auth"),
                401,
                "unauthorized",
            ),
            (
                "bad user id",
                Function::CreatePacket,
                with_sub(create(r#"{"total_cents":100,"count":2}"#), "a\nb"),
                401,
                "unauthorized",
            ),
            (
                "user id too long",
                Function::CreatePacket,
                with_sub(create(r#"{"total_cents":100,"count":2}"#), &"u".repeat(256)),
                401,
                "unauthorized",
            ),
            (
                "insufficient funds",
                Function::CreatePacket,
                create(r#"{"total_cents":20000,"count":2}"#),
                402,
                "insufficient_funds",
            ),
            (
                "idempotency key reused",
                Function::CreatePacket,
                with_header(
                    create(r#"{"total_cents":999,"count":10}"#),
                    "idempotency-key",
                    "key-1",
                ),
                409,
                "idempotency_key_reused",
            ),
            (
                "grab malformed id",
                Function::Grab,
                with_packet(event("grab-grab"), "nope"),
                404,
                "not_found",
            ),
            (
                "grab unknown id",
                Function::Grab,
                with_packet(event("grab-grab"), &unknown_id),
                404,
                "not_found",
            ),
            (
                "view unknown id",
                Function::Grab,
                with_packet(event("grab-view"), &unknown_id),
                404,
                "not_found",
            ),
            (
                "grab without JWT",
                Function::Grab,
                without_auth(with_packet(event("grab-grab"), &id)),
                401,
                "unauthorized",
            ),
            (
                "claim without a share",
                Function::Claim,
                with_packet(event("claim-claim"), &id),
                404,
                "no_share",
            ),
            (
                "claim unknown id",
                Function::Claim,
                with_packet(event("claim-claim"), &unknown_id),
                404,
                "not_found",
            ),
            (
                "deposit without IAM",
                Function::Wallet,
                event("wallet-deposit-no-iam"),
                403,
                "forbidden",
            ),
            (
                // The x-iam-principal header stands for a signed principal only in header mode
                // (`sam local`); a deployed function (JWT mode) ignores it.
                "deposit without IAM, an allowed principal claimed in x-iam-principal",
                Function::Wallet,
                with_header(
                    event("wallet-deposit-no-iam"),
                    "x-iam-principal",
                    "arn:aws:sts::123456789012:assumed-role/hongbao-payments/payments-backend",
                ),
                403,
                "forbidden",
            ),
            (
                "deposit zero",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":0,"reference":"r"}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit negative",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":-5,"reference":"r"}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit fractional",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":1.5,"reference":"r"}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit empty reference",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":5,"reference":""}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit bad user",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"b\u0007b","amount_cents":5,"reference":"r"}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit unknown field",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":5,"reference":"r","memo":1}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit missing field",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","amount_cents":5}"#,
                ),
                400,
                "invalid_request",
            ),
            (
                "deposit reference reused",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"alice","amount_cents":6,"reference":"seed"}"#,
                ),
                409,
                "idempotency_key_reused",
            ),
            (
                "wallet without JWT",
                Function::Wallet,
                without_auth(event("wallet-get")),
                401,
                "unauthorized",
            ),
            (
                "unknown route",
                Function::Wallet,
                with_route(event("wallet-get"), "GET", "/wallets/x"),
                404,
                "not_found",
            ),
            (
                "wrong method",
                Function::Grab,
                with_route(
                    with_packet(event("grab-view"), &id),
                    "DELETE",
                    &format!("/packets/{id}"),
                ),
                405,
                "method_not_allowed",
            ),
            (
                "route of another function",
                Function::Grab,
                with_packet(event("claim-claim"), &id),
                404,
                "not_found",
            ),
        ];
        // A repeated key is refused on every JSON route (serde_json would keep the
        // last value, so `{"count":100,"count":1}` was read as 1 by one parser and 100 by
        // another), and text other users see carries no control or invisible format character.
        let mut cases = cases;
        let invalid =
            |name: &'static str, f: Function, ev: Value| (name, f, ev, 400u16, "invalid_request");
        cases.extend([
            invalid(
                "create: repeated key",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"count":3}"#),
            ),
            invalid(
                "create: repeated key, same value",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"total_cents":100,"count":2}"#),
            ),
            invalid(
                "order codes: repeated key",
                Function::NextOrderCode,
                with_body(
                    event("next-order-code-single"),
                    r#"{"count":100,"count":1}"#,
                ),
            ),
            invalid(
                "deposit: repeated key",
                Function::Wallet,
                with_body(
                    event("wallet-deposit"),
                    r#"{"user_id":"bob","user_id":"alice","amount_cents":5,"reference":"r2"}"#,
                ),
            ),
            invalid(
                "post article: repeated key",
                Function::Vote,
                with_body(
                    event("vote-post-article"),
                    r#"{"title":"a","title":"b","link":"https://example.com/"}"#,
                ),
            ),
            invalid(
                "vote: repeated key",
                Function::Vote,
                with_body(
                    event("vote-vote"),
                    r#"{"direction":"up","direction":"down"}"#,
                ),
            ),
            invalid(
                "greeting with a right-to-left override",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"greeting":"\u202egnp.exe\u0007\n\r"}"#),
            ),
            invalid(
                "greeting with a bell",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"greeting":"hi\u0007"}"#),
            ),
            invalid(
                "greeting with a zero-width space",
                Function::CreatePacket,
                create(r#"{"total_cents":100,"count":2,"greeting":"hi\u200bthere"}"#),
            ),
            invalid(
                "title with a right-to-left override",
                Function::Vote,
                with_body(
                    event("vote-post-article"),
                    r#"{"title":"\u202etxt.exe","link":"https://example.com/"}"#,
                ),
            ),
        ]);
        let before = snapshot_but_reclaim_index(&redis).await;
        assert!(!before.is_empty());
        for (name, f, ev, status, code) in cases {
            let (s, body, _) = call(&store, f, &ev).await;
            assert_eq!(
                (s, body["error"].as_str()),
                (status, Some(code)),
                "{backend:?} {name}: {body}"
            );
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}"
            );
            assert_eq!(
                snapshot_but_reclaim_index(&redis).await,
                before,
                "{backend:?} {name} changed the data"
            );
        }
    }
}

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
    for backend in Backend::ALL {
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

/// The abuse quotas at their production defaults, standalone and cluster: a sender's
/// 11th packet in a minute (`HONGBAO_PACKETS_PER_MINUTE` = 10), a user's order codes past 500
/// a day (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`) and a poster's 21st article in 24 h
/// (`HONGBAO_VOTE_ARTICLES_PER_DAY`) are 429 + `Retry-After` with nothing written (DUMP of
/// every key before and after), while another user is unaffected; an article's 17th group
/// (`HONGBAO_VOTE_MAX_GROUPS_PER_ARTICLE`) is 409 `too_many_groups`, nothing written, and a
/// request may name at most 16 groups per list. (Before, one user took all 90,000 codes of a
/// day in 0.6 s, and an article collected 64 groups.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abuse_quotas() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let defaults = hongbao::Config::default();
        let store = common::store(&redis, |c| {
            c.packets.packets_per_minute = defaults.packets.packets_per_minute;
            c.order_codes.per_user_per_day = defaults.order_codes.per_user_per_day;
            c.voting.articles_per_day = defaults.voting.articles_per_day;
        });
        assert_eq!(store.config().voting.articles_per_day, 20);
        assert_eq!(store.config().voting.max_groups_per_article, 16);
        assert_eq!(store.config().packets.packets_per_minute, 10);
        assert_eq!(store.config().order_codes.per_user_per_day, 500);
        assert_eq!(deposit(&store, "spammer", 10_000, "seed").await.0, 201);
        assert_eq!(deposit(&store, "other", 10_000, "seed").await.0, 201);
        let create = |who: &str| {
            with_sub(
                with_body(
                    event("create-packet-lucky"),
                    r#"{"total_cents":1,"count":1}"#,
                ),
                who,
            )
        };
        for i in 0..10 {
            let (s, b, _) = call(&store, Function::CreatePacket, &create("spammer")).await;
            assert_eq!(s, 201, "{backend:?} create {i}: {b}");
        }
        let before = snapshot_but_reclaim_index(&redis).await;
        let (s, b, retry) = call(&store, Function::CreatePacket, &create("spammer")).await;
        assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
        let retry: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(
            snapshot_but_reclaim_index(&redis).await,
            before,
            "{backend:?}: a refused create wrote"
        );
        let (s, b, _) = call(&store, Function::CreatePacket, &create("other")).await;
        assert_eq!(s, 201, "{backend:?} another sender: {b}");

        let codes = |who: &str, n: u32| {
            with_sub(
                with_body(
                    event("next-order-code-batch"),
                    &format!(r#"{{"count":{n}}}"#),
                ),
                who,
            )
        };
        for _ in 0..5 {
            let (s, b, _) = call(&store, Function::NextOrderCode, &codes("spammer", 100)).await;
            assert_eq!(s, 201, "{backend:?}: {b}");
        }
        let before = snapshot(&redis).await;
        let (s, b, retry) = call(&store, Function::NextOrderCode, &codes("spammer", 1)).await;
        assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
        assert!(b["date"].is_string(), "{b}");
        let retry: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=86_400).contains(&retry), "{retry}");
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused order code wrote"
        );
        let (s, b, _) = call(&store, Function::NextOrderCode, &codes("other", 100)).await;
        assert_eq!(s, 201, "{backend:?} another user: {b}");

        // Articles: 20 a day per poster.
        let post = |who: &str| {
            with_sub(
                with_body(
                    event("vote-post-article"),
                    r#"{"title":"spam","link":"https://example.com/"}"#,
                ),
                who,
            )
        };
        let mut first = String::new();
        for i in 0..20 {
            let (s, b, _) = call(&store, Function::Vote, &post("spammer")).await;
            assert_eq!(s, 201, "{backend:?} post {i}: {b}");
            if i == 0 {
                first = b["article_id"].as_str().unwrap().to_string();
            }
        }
        let before = snapshot(&redis).await;
        let (s, b, retry) = call(&store, Function::Vote, &post("spammer")).await;
        assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
        let retry: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=86_400).contains(&retry), "{retry}");
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused post wrote"
        );
        let (s, b, _) = call(&store, Function::Vote, &post("other")).await;
        assert_eq!(s, 201, "{backend:?} another poster: {b}");

        // Groups: at most 16 per article, whatever the number of requests.
        let groups = |body: String| {
            let ev = event("vote-groups")
                .to_string()
                .replace("ARTICLE_ID", &first);
            with_sub(
                with_body(serde_json::from_str(&ev).unwrap(), &body),
                "spammer",
            )
        };
        let names = |from: usize, n: usize| -> Vec<String> {
            (from..from + n).map(|i| format!("g{i}")).collect()
        };
        let (s, b, _) = call(
            &store,
            Function::Vote,
            &groups(json!({"add": names(0, 17)}).to_string()),
        )
        .await;
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_request")),
            "{b}"
        );
        for half in [0, 8] {
            let (s, b, _) = call(
                &store,
                Function::Vote,
                &groups(json!({"add": names(half, 8)}).to_string()),
            )
            .await;
            assert_eq!(s, 200, "{backend:?}: {b}");
        }
        let before = snapshot(&redis).await;
        let (s, b, _) = call(
            &store,
            Function::Vote,
            &groups(json!({"add": names(16, 1)}).to_string()),
        )
        .await;
        assert_eq!(
            (s, b["error"].as_str(), b["limit"].as_i64()),
            (409, Some("too_many_groups"), Some(16)),
            "{b}"
        );
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused change wrote"
        );
        // A swap keeps the count: allowed; re-adding a present group too.
        let (s, b, _) = call(
            &store,
            Function::Vote,
            &groups(json!({"add": names(16, 1), "remove": names(0, 1)}).to_string()),
        )
        .await;
        assert_eq!(s, 200, "{backend:?}: {b}");
        let (s, b, _) = call(
            &store,
            Function::Vote,
            &groups(json!({"add": names(1, 15)}).to_string()),
        )
        .await;
        assert_eq!(
            (s, b["groups"].as_array().map(Vec::len)),
            (200, Some(16)),
            "{b}"
        );
    }
}

/// A targeted packet for 3 recipients with 3 shares, standalone and cluster. A
/// fourth user's grab is 403 `not_a_recipient` and changes nothing (DUMP of every key before
/// and after); the view is 403 for that outsider and 200 for the sender and the recipients;
/// the 3 recipients grab and claim. A packet's `count` may not exceed its recipients, and
/// recipients must be distinct valid user ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targeted_packets() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        assert_eq!(deposit(&store, "sender", 10_000, "seed").await.0, 201);
        let create = |body: Value| {
            with_sub(
                with_body(event("create-packet-lucky"), &body.to_string()),
                "sender",
            )
        };
        let recipients = ["auth0|r1", "r2", "张三"];
        for (name, body) in [
            (
                "more shares than recipients",
                json!({"total_cents": 300, "count": 4, "recipients": recipients}),
            ),
            (
                "repeated recipient",
                json!({"total_cents": 300, "count": 2, "recipients": ["r2", "r2"]}),
            ),
            (
                "empty list",
                json!({"total_cents": 300, "count": 1, "recipients": []}),
            ),
            (
                "bad user id",
                json!({"total_cents": 300, "count": 1, "recipients": ["a\u{0007}"]}),
            ),
            (
                "501 recipients",
                json!({"total_cents": 300, "count": 1, "recipients": (0..501).map(|i| format!("u{i}")).collect::<Vec<_>>()}),
            ),
        ] {
            let before = snapshot(&redis).await;
            let (s, b, _) = call(&store, Function::CreatePacket, &create(body)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (400, Some("invalid_request")),
                "{backend:?} {name}: {b}"
            );
            assert_eq!(snapshot(&redis).await, before, "{backend:?} {name} wrote");
        }
        let (s, created, _) = call(
            &store,
            Function::CreatePacket,
            &create(json!({"total_cents": 300, "count": 3, "recipients": recipients})),
        )
        .await;
        assert_eq!(s, 201, "{backend:?}: {created}");
        let id = created["packet_id"].as_str().unwrap().to_string();
        let grab = |who: &str| with_sub(with_packet(event("grab-grab"), &id), who);
        let view = |who: &str| with_sub(with_packet(event("grab-view"), &id), who);

        let before = snapshot(&redis).await;
        for outsider in ["outsider", "sender"] {
            let (s, b, _) = call(&store, Function::Grab, &grab(outsider)).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (403, Some("not_a_recipient")),
                "{backend:?} {outsider}: {b}"
            );
        }
        assert_eq!(
            snapshot(&redis).await,
            before,
            "{backend:?}: a refused grab wrote"
        );
        let (s, b, _) = call(&store, Function::Grab, &view("outsider")).await;
        assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        for who in ["sender", "r2"] {
            let (s, b, _) = call(&store, Function::Grab, &view(who)).await;
            assert_eq!(s, 200, "{backend:?} view by {who}: {b}");
        }
        let mut total = 0;
        for r in recipients {
            let (s, b, _) = call(&store, Function::Grab, &grab(r)).await;
            assert_eq!(s, 200, "{backend:?} grab by {r}: {b}");
            total += b["amount_cents"].as_i64().unwrap();
            let (s, b, _) = call(
                &store,
                Function::Claim,
                &with_sub(with_packet(event("claim-claim"), &id), r),
            )
            .await;
            assert_eq!(
                (s, b["repeat"].as_bool()),
                (200, Some(false)),
                "{backend:?} {r}: {b}"
            );
        }
        assert_eq!(total, 300);
        let (s, b, _) = call(&store, Function::Grab, &view("outsider")).await;
        assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        let (s, b, _) = call(&store, Function::Grab, &view("张三")).await;
        assert_eq!((s, b["grabbed_count"].as_i64()), (200, Some(3)), "{b}");
        // An untargeted packet is still anyone's.
        let (s, open, _) = call(
            &store,
            Function::CreatePacket,
            &create(json!({"total_cents": 100, "count": 1})),
        )
        .await;
        assert_eq!(s, 201, "{open}");
        let open_id = open["packet_id"].as_str().unwrap();
        let (s, b, _) = call(
            &store,
            Function::Grab,
            &with_sub(with_packet(event("grab-grab"), open_id), "outsider"),
        )
        .await;
        assert_eq!(s, 200, "{backend:?}: {b}");
    }
}

/// A Redis error that a retry cannot fix is 500 `internal`, never 503 + Retry-After
/// (clients would retry it forever). A wallet key of the wrong type (another program wrote a
/// list under our name) makes `WRONGTYPE` inside the script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrongtype_is_500_not_503() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let wallet = hongbao::store::keys::Keys::new(&store.config().key_prefix)
            .wallet("mallory")
            .wallet;
        let mut conn = redis.raw_conn().await;
        let _: i64 = redis::cmd("RPUSH")
            .arg(&wallet)
            .arg("not a wallet")
            .query_async(&mut conn)
            .await
            .unwrap();
        let (status, body, retry_after) = call(
            &store,
            Function::Wallet,
            &with_sub(event("wallet-get"), "mallory"),
        )
        .await;
        assert_eq!(
            (status, body["error"].as_str(), retry_after),
            (500, Some("internal"), None),
            "{backend:?}: {body}"
        );
    }
}

/// Redis stopped mid-test: the functions answer 503 with Retry-After (never a business
/// answer), and after a restart the state is consistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_means_503_then_consistent_after_restart() {
    let mut server = RedisServer::start_persistent();
    let mut cfg = hongbao::Config {
        redis_url: server.url(),
        connect_timeout: std::time::Duration::from_millis(300),
        response_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    cfg.wallet.deposit_principals =
        hongbao::domain::wallet::IamPrincipals::parse(common::DEPOSIT_PRINCIPALS).unwrap();
    let store = std::sync::Arc::new(Store::new(cfg));
    assert_eq!(deposit(&store, "alice", 20_000, "d1").await.0, 201);
    let (_, created, _) = call(
        &store,
        Function::CreatePacket,
        &event("create-packet-lucky"),
    )
    .await;
    let id = created["packet_id"].as_str().unwrap().to_string();
    let grab_as = |u: &str| with_sub(with_packet(event("grab-grab"), &id), u);
    let claim_as = |u: &str| with_sub(with_packet(event("claim-claim"), &id), u);
    for u in ["u1", "u2", "u3"] {
        assert_eq!(call(&store, Function::Grab, &grab_as(u)).await.0, 200);
    }
    assert_eq!(call(&store, Function::Claim, &claim_as("u1")).await.0, 200);

    server.stop();
    let down: Vec<(Function, Value)> = vec![
        (Function::Grab, grab_as("u4")),
        (Function::Grab, grab_as("u1")),
        (Function::Grab, with_packet(event("grab-view"), &id)),
        (Function::Claim, claim_as("u2")),
        (Function::CreatePacket, event("create-packet-fixed")),
        (Function::Wallet, event("wallet-get")),
        (Function::Wallet, event("wallet-deposit")),
    ];
    for (f, ev) in &down {
        let (s, body, retry) = call(&store, *f, ev).await;
        assert_eq!(
            (s, body["error"].as_str()),
            (503, Some("unavailable")),
            "{f:?}: {body}"
        );
        assert_eq!(retry.as_deref(), Some("1"));
    }
    assert!(hongbao::lambda::reclaim::run(&store, None).await.is_err());

    server.restart();
    // The same client reconnects; state is as it was: u1 keeps its share, u2 can still claim.
    let mut ok = false;
    for _ in 0..50 {
        if call(&store, Function::Wallet, &event("wallet-get")).await.0 == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ok, "no recovery after restart");
    let (s, b, _) = call(&store, Function::Grab, &grab_as("u1")).await;
    assert_eq!((s, b["error"].as_str()), (409, Some("already_grabbed")));
    let (s, b, _) = call(&store, Function::Claim, &claim_as("u2")).await;
    assert_eq!((s, b["repeat"].clone()), (200, json!(false)));
    assert_eq!(call(&store, Function::Grab, &grab_as("u4")).await.0, 200);
    let (_, view, _) = call(
        &store,
        Function::Grab,
        &with_packet(event("grab-view"), &id),
    )
    .await;
    assert_eq!(view["grabbed_count"], 4);
    let users: Vec<String> = ["alice", "u1", "u2", "u3", "u4"].map(String::from).to_vec();
    common::assert_conserved(&store, &users, &[id], 20_000).await;
}

/// Sets the IAM caller's `userArn`.
fn with_user_arn(mut v: Value, arn: &str) -> Value {
    v["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    v
}

/// Deposits only from `HONGBAO_DEPOSIT_PRINCIPALS` (exact or `*` prefix; unset: nobody), and
/// never over `HONGBAO_MAX_BALANCE_CENTS`: 201, or 403 / 409 with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposit_principals_and_balance_limit() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |c| c.wallet.max_balance_cents = 1_000);
    let body = |cents: i64, r: &str| {
        json!({"user_id": "alice", "amount_cents": cents, "reference": r}).to_string()
    };
    let dep = |arn: &str, cents: i64, r: &str| {
        with_user_arn(with_body(event("wallet-deposit"), &body(cents, r)), arn)
    };
    let allowed = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/worker-7";
    let (s, b, _) = call(&store, Function::Wallet, &dep(allowed, 600, "a")).await;
    assert_eq!((s, b["balance_cents"].clone()), (201, json!(600)), "{b}");
    let before = snapshot(&redis).await;
    for arn in [
        "arn:aws:sts::123456789012:assumed-role/hongbao-payments-evil/x",
        "arn:aws:sts::123456789012:assumed-role/other/x",
        "arn:aws:iam::123456789012:user/hongbao-payments",
        "",
    ] {
        let (s, b, _) = call(&store, Function::Wallet, &dep(arn, 1, "b")).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("forbidden")),
            "{arn}: {b}"
        );
    }
    let (s, b, _) = call(&store, Function::Wallet, &dep(allowed, 401, "c")).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (409, Some("balance_limit")),
        "{b}"
    );
    assert_eq!(
        snapshot(&redis).await,
        before,
        "a refused deposit wrote something"
    );
    let (s, _, _) = call(&store, Function::Wallet, &dep(allowed, 400, "c")).await;
    assert_eq!(s, 201, "up to the limit exactly");

    // Unset: nobody may deposit.
    let closed = common::store(&redis, |c| c.wallet.deposit_principals = Default::default());
    let before = snapshot(&redis).await;
    let (s, _, _) = call(&closed, Function::Wallet, &dep(allowed, 1, "d")).await;
    assert_eq!(s, 403);
    assert_eq!(snapshot(&redis).await, before);
}

/// README promises through the handlers: `GET /wallet` pages the newest 50 entries of a ledger
/// capped at 1,000; one deposit is at most 10^11 cents; a grab storm by one user gets 429 +
/// `Retry-After` on the 11th repeat within the window, and the limit lifts once it passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_page_deposit_cap_and_grab_rate_limit() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    for i in 0..1_005 {
        hongbao::store::wallet::deposit(&store, "alice", 1, &format!("d{i}"))
            .await
            .unwrap();
    }
    let (s, w, _) = call(
        &store,
        Function::Wallet,
        &with_sub(event("wallet-get"), "alice"),
    )
    .await;
    assert_eq!((s, w["balance_cents"].clone()), (200, json!(1_005)));
    let refs: Vec<&str> = w["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reference"].as_str().unwrap())
        .collect();
    let newest: Vec<String> = (955..1_005).rev().map(|i| format!("d{i}")).collect();
    assert_eq!(refs, newest, "the newest 50, newest first");
    let mut conn = redis.raw_conn().await;
    let kept: i64 = redis::cmd("LLEN")
        .arg(hongbao::store::keys::Keys::new("hb").wallet("alice").ledger)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(kept, 1_000, "the ledger keeps 1,000 entries");

    assert_eq!(deposit(&store, "bob", 100_000_000_001, "big").await.0, 400);
    assert_eq!(deposit(&store, "bob", 100_000_000_000, "big").await.0, 201);

    let body = r#"{"total_cents":1000,"count":2,"mode":"lucky","expires_in_secs":600}"#;
    let (s, p, _) = call(
        &store,
        Function::CreatePacket,
        &with_sub(with_body(event("create-packet-lucky"), body), "alice"),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let id = p["packet_id"].as_str().unwrap().to_string();
    let grab = with_sub(with_packet(event("grab-grab"), &id), "storm");
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..12 {
        let (s, _, retry) = call(&store, Function::Grab, &grab).await;
        statuses.push(s);
        retry_after = retry;
    }
    assert_eq!(statuses[0], 200);
    assert!(statuses[1..11].iter().all(|s| *s == 409), "{statuses:?}");
    assert_eq!(statuses[11], 429, "{statuses:?}");
    let secs: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!(
        (1..=1).contains(&secs),
        "Retry-After {secs} for a 1 s window"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let (s, b, _) = call(&store, Function::Grab, &grab).await;
    assert_eq!(s, 409, "the limit lifts after the window: {b}");
}
