//! Redis errors and outages through the handlers: 500 for what a retry cannot fix, 503 +
//! `Retry-After` while Redis is down, and consistent state after its restart.

use harness::{Backend, RedisServer, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{deposit, with_packet};
use crate::common::{self, call, event, with_sub, Function};

/// A Redis error that a retry cannot fix is 500 `internal`, never 503 + Retry-After
/// (clients would retry it forever). A wallet key of the wrong type (another program wrote a
/// list under our name) makes `WRONGTYPE` inside the script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrongtype_is_500_not_503() {
    for backend in Backend::all() {
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
    let principals =
        hongbao::wallet::rules::IamPrincipals::parse(common::DEPOSIT_PRINCIPALS).unwrap();
    cfg.wallet.deposit_principals = principals.clone();
    cfg.wallet.support_principals = principals;
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
        (
            Function::Wallet,
            with_packet(event("wallet-support-packet"), &id),
        ),
        (Function::Wallet, event("wallet-support-wallet")),
        (Function::Wallet, event("wallet-support-coupon")),
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
