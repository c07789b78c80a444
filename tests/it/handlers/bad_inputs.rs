//! Every bad input of the contract, as a table: its 4xx code, and nothing changed.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::Value;

use super::{deposit, with_packet, with_route};
use crate::common::{
    self, assert_refused, call, event, with_body, with_header, with_sub, without_auth, Function,
    Refusal,
};

/// Create-packet bodies refused with 400 `invalid_request`.
const CREATE_INVALID: &[(&str, &str)] = &[
    ("amount as string", r#"{"total_cents":"100","count":2}"#),
    ("amount as float", r#"{"total_cents":100.0,"count":2}"#),
    (
        "unknown field",
        r#"{"total_cents":100,"count":2,"color":"red"}"#,
    ),
    ("count 0", r#"{"total_cents":100,"count":0}"#),
    ("count too big", r#"{"total_cents":20000,"count":10001}"#),
    ("negative count", r#"{"total_cents":100,"count":-1}"#),
    ("total below count", r#"{"total_cents":5,"count":10}"#),
    ("total too big", r#"{"total_cents":20001,"count":10}"#),
    (
        "fixed not divisible",
        r#"{"total_cents":100,"count":3,"mode":"fixed"}"#,
    ),
    (
        "split on fixed",
        r#"{"total_cents":100,"count":2,"mode":"fixed","split":"line_cut"}"#,
    ),
    (
        "unknown mode",
        r#"{"total_cents":100,"count":2,"mode":"huge"}"#,
    ),
    (
        "unknown split",
        r#"{"total_cents":100,"count":2,"split":"even"}"#,
    ),
    (
        "expires 0",
        r#"{"total_cents":100,"count":2,"expires_in_secs":0}"#,
    ),
    (
        "expires > 7 days",
        r#"{"total_cents":100,"count":2,"expires_in_secs":604801}"#,
    ),
    ("malformed JSON", r#"{"total_cents":100,"#),
    ("empty body", ""),
    ("JSON array", "[1,2]"),
    // A repeated key is refused on every JSON route (serde_json would keep the last value, so
    // `{"count":100,"count":1}` was read as 1 by one parser and 100 by another), and text other
    // users see carries no control or invisible format character.
    (
        "create: repeated key",
        r#"{"total_cents":100,"count":2,"count":3}"#,
    ),
    (
        "create: repeated key, same value",
        r#"{"total_cents":100,"total_cents":100,"count":2}"#,
    ),
    (
        "greeting with a right-to-left override",
        r#"{"total_cents":100,"count":2,"greeting":"\u202egnp.exe\u0007\n\r"}"#,
    ),
    (
        "greeting with a bell",
        r#"{"total_cents":100,"count":2,"greeting":"hi\u0007"}"#,
    ),
    (
        "greeting with a zero-width space",
        r#"{"total_cents":100,"count":2,"greeting":"hi\u200bthere"}"#,
    ),
];

/// Deposit bodies refused with 400 `invalid_request`.
const DEPOSIT_INVALID: &[(&str, &str)] = &[
    (
        "deposit zero",
        r#"{"user_id":"bob","amount_cents":0,"reference":"r"}"#,
    ),
    (
        "deposit negative",
        r#"{"user_id":"bob","amount_cents":-5,"reference":"r"}"#,
    ),
    (
        "deposit fractional",
        r#"{"user_id":"bob","amount_cents":1.5,"reference":"r"}"#,
    ),
    (
        "deposit empty reference",
        r#"{"user_id":"bob","amount_cents":5,"reference":""}"#,
    ),
    (
        "deposit bad user",
        r#"{"user_id":"b\u0007b","amount_cents":5,"reference":"r"}"#,
    ),
    (
        "deposit unknown field",
        r#"{"user_id":"bob","amount_cents":5,"reference":"r","memo":1}"#,
    ),
    (
        "deposit missing field",
        r#"{"user_id":"bob","amount_cents":5}"#,
    ),
    (
        "deposit: repeated key",
        r#"{"user_id":"bob","user_id":"alice","amount_cents":5,"reference":"r2"}"#,
    ),
];

/// Bodies of other functions' routes refused with 400 `invalid_request`: (name, function,
/// fixture, body).
const OTHER_INVALID: &[(&str, Function, &str, &str)] = &[
    (
        "order codes: repeated key",
        Function::NextOrderCode,
        "next-order-code-single",
        r#"{"count":100,"count":1}"#,
    ),
    (
        "post article: repeated key",
        Function::Vote,
        "vote-post-article",
        r#"{"title":"a","title":"b","link":"https://example.com/"}"#,
    ),
    (
        "vote: repeated key",
        Function::Vote,
        "vote-vote",
        r#"{"direction":"up","direction":"down"}"#,
    ),
    (
        "title with a right-to-left override",
        Function::Vote,
        "vote-post-article",
        r#"{"title":"\u202etxt.exe","link":"https://example.com/"}"#,
    ),
];

/// Every bad input of the contract gets its 4xx code and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_refused_and_change_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        let id = seed(&store).await;
        let mut cases = invalid_bodies();
        cases.extend(create_refusals());
        cases.extend(route_refusals(&id));
        // A refused create leaves the reclaim index entry it wrote before the script ran
        // (brought forward, for reclaim-cron to drop within two minutes), because a late first
        // run of the same call may still create the packet within its delivery window
        // (`store::packets::create`).
        let but_reclaim_index = |key: &str| !key.ends_with("{reclaim}:due");
        let label = format!("{backend:?}");
        assert_refused(&store, &redis, &label, cases, but_reclaim_index).await;
    }
}

/// alice's deposit `seed` and her packet made with idempotency key `key-1`; returns its id.
async fn seed(store: &Arc<Store>) -> String {
    assert_eq!(deposit(store, "alice", 5_000, "seed").await.0, 201);
    let (_, created, _) = call(
        store,
        Function::CreatePacket,
        &with_header(
            create(r#"{"total_cents": 1000, "count": 10}"#),
            "idempotency-key",
            "key-1",
        ),
    )
    .await;
    created["packet_id"].as_str().unwrap().to_string()
}

fn create(body: &str) -> Value {
    with_body(event("create-packet-lucky"), body)
}

/// The rows of the three tables of bodies, 400 `invalid_request` each.
fn invalid_bodies() -> Vec<Refusal> {
    let creates = CREATE_INVALID
        .iter()
        .map(|(name, body)| Refusal::invalid(*name, Function::CreatePacket, create(body)));
    let deposits = DEPOSIT_INVALID.iter().map(|(name, body)| {
        Refusal::invalid(
            *name,
            Function::Wallet,
            with_body(event("wallet-deposit"), body),
        )
    });
    let others = OTHER_INVALID.iter().map(|(name, f, fixture, body)| {
        Refusal::invalid(*name, *f, with_body(event(fixture), body))
    });
    creates.chain(deposits).chain(others).collect()
}

/// Create requests refused for what is around the body: its fixture, its header, its caller,
/// its funds.
fn create_refusals() -> Vec<Refusal> {
    let two = || create(r#"{"total_cents":100,"count":2}"#);
    let greeting = format!(
        r#"{{"total_cents":100,"count":2,"greeting":"{}"}}"#,
        "x".repeat(101)
    );
    let key = |ev: Value, key: &str| with_header(ev, "idempotency-key", key);
    let row = |name: &str, ev: Value, status: u16, code: &'static str| {
        Refusal::new(name, Function::CreatePacket, ev, status, code)
    };
    vec![
        row(
            "fractional amount",
            event("create-packet-bad-amount"),
            400,
            "invalid_request",
        ),
        row(
            "greeting too long",
            create(&greeting),
            400,
            "invalid_request",
        ),
        row(
            "idempotency key too long",
            key(two(), &"k".repeat(65)),
            400,
            "invalid_request",
        ),
        row(
            "no JWT",
            event("create-packet-no-auth"),
            401,
            "unauthorized",
        ),
        row("bad user id", with_sub(two(), "a\nb"), 401, "unauthorized"),
        row(
            "user id too long",
            with_sub(two(), &"u".repeat(256)),
            401,
            "unauthorized",
        ),
        row(
            "insufficient funds",
            create(r#"{"total_cents":20000,"count":2}"#),
            402,
            "insufficient_funds",
        ),
        row(
            "idempotency key reused",
            key(create(r#"{"total_cents":999,"count":10}"#), "key-1"),
            409,
            "idempotency_key_reused",
        ),
    ]
}

/// Requests to the packet and wallet routes refused for their id, caller or route; `id` is a
/// packet's.
fn route_refusals(id: &str) -> Vec<Refusal> {
    let unknown_id = format!("{}ffffffffffffffffffff", &id[..4]);
    let packet = |fixture: &str, id: &str| with_packet(event(fixture), id);
    let row = Refusal::new;
    let reused = r#"{"user_id":"alice","amount_cents":6,"reference":"seed"}"#;
    let delete = |ev| with_route(ev, "DELETE", &format!("/packets/{id}"));
    vec![
        row(
            "grab malformed id",
            Function::Grab,
            packet("grab-grab", "nope"),
            404,
            "not_found",
        ),
        row(
            "grab unknown id",
            Function::Grab,
            packet("grab-grab", &unknown_id),
            404,
            "not_found",
        ),
        row(
            "view unknown id",
            Function::Grab,
            packet("grab-view", &unknown_id),
            404,
            "not_found",
        ),
        row(
            "grab without JWT",
            Function::Grab,
            without_auth(packet("grab-grab", id)),
            401,
            "unauthorized",
        ),
        row(
            "claim without a share",
            Function::Claim,
            packet("claim-claim", id),
            404,
            "no_share",
        ),
        row(
            "claim unknown id",
            Function::Claim,
            packet("claim-claim", &unknown_id),
            404,
            "not_found",
        ),
        row(
            "deposit without IAM",
            Function::Wallet,
            event("wallet-deposit-no-iam"),
            403,
            "forbidden",
        ),
        // The x-iam-principal header stands for a signed principal only in header mode
        // (`sam local`); a deployed function (JWT mode) ignores it.
        row(
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
        row(
            "deposit reference reused",
            Function::Wallet,
            with_body(event("wallet-deposit"), reused),
            409,
            "idempotency_key_reused",
        ),
        row(
            "wallet without JWT",
            Function::Wallet,
            without_auth(event("wallet-get")),
            401,
            "unauthorized",
        ),
        row(
            "unknown route",
            Function::Wallet,
            with_route(event("wallet-get"), "GET", "/wallets/x"),
            404,
            "not_found",
        ),
        row(
            "wrong method",
            Function::Grab,
            delete(packet("grab-view", id)),
            405,
            "method_not_allowed",
        ),
        row(
            "route of another function",
            Function::Grab,
            packet("claim-claim", id),
            404,
            "not_found",
        ),
    ]
}
