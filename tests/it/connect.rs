//! Connecting like production: TLS with a private CA, ACL users and passwords,
//! `REDIS_CLUSTER=auto`, and what the functions answer when the connection cannot be made.

use std::sync::Arc;

use futures::future::join_all;
use harness::{Backend, ConfiguredServer, TestCa, TestRedis};
use hongbao::packets::{self, ClaimOutcome, GrabOutcome};
use hongbao::store::redis_auth::{AuthKind, RedisAuth};
use hongbao::{Config, Error, Store};
use serde_json::{json, Value};

use crate::common;

fn cfg(url: &str, auth: RedisAuth) -> Config {
    Config {
        redis_url: url.to_string(),
        redis_auth: auth,
        connect_timeout: std::time::Duration::from_millis(1000),
        response_timeout: std::time::Duration::from_millis(1000),
        ..Config::default()
    }
}

fn ca_auth(ca: &str) -> RedisAuth {
    RedisAuth {
        ca_cert: Some(ca.to_string()),
        ..RedisAuth::default()
    }
}

fn password_auth(user: Option<&str>, password: &str) -> RedisAuth {
    RedisAuth {
        kind: AuthKind::Password,
        username: user.map(String::from),
        password: Some(password.to_string()),
        ..RedisAuth::default()
    }
}

/// Every red-packet script over this store: deposit, create, a 200-grabber storm on 20
/// shares, claims, a view, then a second packet that expires at once with one claim left after
/// step 1, so reclaim runs settle.lua and the claim re-drive (wallet_credit, claim_done,
/// transfer_release) over the same connection; and the conservation check.
async fn exercise(store: &Arc<Store>) {
    common::fund(store, "sender", 5_000).await;
    let p = common::create(store, "sender", &common::lucky(2_000, 20, 600)).await;
    let tasks = (0..200).map(|i| {
        let store = store.clone();
        let id = p.packet_id.clone();
        tokio::spawn(async move {
            (
                format!("u{i}"),
                packets::grab(&store, &id, &format!("u{i}")).await.unwrap(),
            )
        })
    });
    let mut winners = Vec::new();
    let mut sum = 0;
    for r in join_all(tasks).await {
        let (user, outcome) = r.unwrap();
        match outcome {
            GrabOutcome::Grabbed { share, .. } => {
                sum += share.amount_cents;
                winners.push(user);
            }
            GrabOutcome::SoldOut => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((winners.len(), sum), (20, 2_000));
    for u in &winners[..10] {
        assert!(matches!(
            packets::claim(store, &p.packet_id, u).await.unwrap(),
            ClaimOutcome::Claimed { .. }
        ));
    }
    let view = packets::view(store, &p.packet_id).await.unwrap().unwrap();
    assert_eq!(view.grabs.len(), 20);

    let short = common::create(store, "sender", &common::lucky(300, 3, 1)).await;
    let GrabOutcome::Grabbed { share, .. } = packets::grab(store, &short.packet_id, "late")
        .await
        .unwrap()
    else {
        panic!("grab of the short packet failed")
    };
    common::claim_step_one(store, &short.packet_id, "late").await;
    common::sleep_until_redis_ms(store, short.expires_at_ms).await;
    let s = hongbao::store::reclaim::run(store).await.unwrap();
    assert_eq!(
        (s.settled, s.refunded_cents, s.redriven, s.failed),
        (1, 300 - share.amount_cents, 1, 0),
        "{s:?}"
    );
    assert_eq!(
        hongbao::wallet::balance(store, "late").await.unwrap(),
        share.amount_cents
    );
    let mut users = winners.clone();
    users.push("sender".into());
    users.push("late".into());
    common::assert_conserved(store, &users, &[p.packet_id, short.packet_id], 5_000).await;
}

fn grab_event(id: &str) -> Value {
    let path = format!("{}/../events/grab-grab.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("PACKET_ID", id);
    serde_json::from_str(&text).unwrap()
}

/// The grab function's answer: (status, error code, Retry-After).
async fn grab_via_handler(store: &Arc<Store>) -> (u16, Value, Option<String>) {
    let ev = grab_event("00001111222233334444aaaa");
    let (status, body, retry) = common::call(store, common::Function::Grab, &ev).await;
    (status, body["error"].clone(), retry)
}

/// A connection that cannot be made: the store reports a clear `Unavailable` at cold start,
/// and a request answers 503 + `Retry-After: 1`.
async fn assert_refused(
    store: &Arc<Store>,
    expect_in_message: &[&str],
    secret: Option<&str>,
) -> String {
    let err = store
        .connect_at_cold_start()
        .await
        .expect_err("connect must fail");
    let msg = match &err {
        Error::Unavailable(m) => m.clone(),
        other => panic!("expected Unavailable, got {other:?}"),
    };
    for needle in expect_in_message {
        assert!(
            msg.to_lowercase().contains(&needle.to_lowercase()),
            "{needle:?} not in {msg:?}"
        );
    }
    if let Some(secret) = secret {
        assert!(!msg.contains(secret), "the message shows the secret: {msg}");
    }
    let (status, code, retry) = grab_via_handler(store).await;
    assert_eq!(
        (status, code, retry.as_deref()),
        (503, json!("unavailable"), Some("1"))
    );
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_with_a_private_ca() {
    let ca = TestCa::new("good");
    let server = ConfiguredServer::tls(&ca, &[]);
    // CA as a file path, and as PEM text (as a secret or variable would hold it).
    for trust in [ca.ca_cert().display().to_string(), ca.ca_pem()] {
        let store = Arc::new(Store::new(cfg(&server.url(), ca_auth(&trust))));
        store.connect_at_cold_start().await.expect("TLS connect");
        assert!(
            !store.conn().await.unwrap().is_cluster(),
            "auto: a standalone server"
        );
        let _: () = redis::cmd("FLUSHALL")
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        exercise(&store).await;
    }
    // A CA that did not sign the server's certificate, and the public roots: refused, clearly.
    let other = TestCa::new("other");
    let wrong = Arc::new(Store::new(cfg(
        &server.url(),
        ca_auth(&other.ca_cert().display().to_string()),
    )));
    let msg = assert_refused(
        &wrong,
        &[
            "rediss://127.0.0.1",
            "certificate",
            "UnknownIssuer",
            "REDIS_CA_CERT",
        ],
        None,
    )
    .await;
    eprintln!("wrong CA: {msg}");
    let public = Arc::new(Store::new(cfg(&server.url(), RedisAuth::default())));
    let msg = assert_refused(&public, &["certificate"], None).await;
    eprintln!("public roots: {msg}");
    // Plain TCP to a TLS-only port: refused, no business answer.
    let plain = Arc::new(Store::new(cfg(
        &server.url().replace("rediss://", "redis://"),
        RedisAuth::default(),
    )));
    assert_refused(&plain, &["redis://127.0.0.1"], None).await;
    // A CA path that does not exist.
    let missing = Arc::new(Store::new(cfg(
        &server.url(),
        ca_auth("/nonexistent/ca.pem"),
    )));
    assert_refused(&missing, &["REDIS_CA_CERT", "/nonexistent/ca.pem"], None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acl_user_and_password() {
    let server = ConfiguredServer::acl("hongbao-app", "correct-horse", &[]);
    let store = Arc::new(Store::new(cfg(
        &server.url(),
        password_auth(Some("hongbao-app"), "correct-horse"),
    )));
    store.connect_at_cold_start().await.expect("ACL connect");
    exercise(&store).await;

    let wrong = Arc::new(Store::new(cfg(
        &server.url(),
        password_auth(Some("hongbao-app"), "battery-staple"),
    )));
    let msg = assert_refused(
        &wrong,
        &["authentication failed", "REDIS_AUTH"],
        Some("battery-staple"),
    )
    .await;
    eprintln!("wrong password: {msg}");
    let nobody = Arc::new(Store::new(cfg(&server.url(), RedisAuth::default())));
    let msg = assert_refused(&nobody, &["NOAUTH"], None).await;
    eprintln!("no password: {msg}");
    // The same store keeps answering 503 (it retries the connect on each request).
    assert_eq!(grab_via_handler(&wrong).await.0, 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requirepass_auth_token() {
    let server = ConfiguredServer::plain(&["--requirepass", "elasticache-auth-token-0123456789"]);
    let store = Arc::new(Store::new(cfg(
        &server.url(),
        password_auth(None, "elasticache-auth-token-0123456789"),
    )));
    exercise(&store).await;
    let wrong = Arc::new(Store::new(cfg(
        &server.url(),
        password_auth(None, "not-the-token-0123456789"),
    )));
    let msg = assert_refused(
        &wrong,
        &["authentication failed"],
        Some("not-the-token-0123456789"),
    )
    .await;
    eprintln!("wrong AUTH token: {msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_auto_detection() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let mut config = cfg(&redis.url(), RedisAuth::default());
        assert!(
            !config.redis_cluster && config.redis_cluster_auto,
            "auto is the default"
        );
        config.redis_cluster_auto = true;
        let store = Arc::new(Store::new(config));
        let conn = store.conn().await.unwrap();
        assert_eq!(conn.is_cluster(), redis.is_cluster(), "{backend}");
        exercise(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_503_not_a_panic() {
    let port = harness::ports::free_port(false);
    let store = Arc::new(Store::new(cfg(
        &format!("redis://127.0.0.1:{port}"),
        RedisAuth::default(),
    )));
    assert_refused(&store, &[&format!("127.0.0.1:{port}")], None).await;
}

/// A hung server (SIGSTOP: the socket accepts, nothing answers) is 503 + `Retry-After` within
/// the timeouts, on a connected store and on a cold one, and the store recovers by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_server_is_503_within_the_timeouts() {
    let server = harness::RedisServer::start();
    let timeouts = |url: &str| Config {
        redis_url: url.to_string(),
        redis_cluster: false,
        redis_cluster_auto: false,
        connect_timeout: std::time::Duration::from_millis(300),
        response_timeout: std::time::Duration::from_millis(300),
        ..Config::default()
    };
    let warm = Arc::new(Store::new(timeouts(&server.url())));
    assert_eq!(
        grab_via_handler(&warm).await.0,
        404,
        "healthy: no such packet"
    );
    let pid = server.pid().unwrap() as i32;
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    struct Thaw(i32);
    impl Drop for Thaw {
        fn drop(&mut self) {
            unsafe {
                libc::kill(self.0, libc::SIGCONT);
            }
        }
    }
    let thaw = Thaw(pid);
    let cold = Arc::new(Store::new(timeouts(&server.url())));
    for (name, store, limit_ms) in [("connected", &warm, 1_500), ("cold", &cold, 2_500)] {
        let t = std::time::Instant::now();
        let (status, body, retry) = grab_via_handler(store).await;
        let ms = t.elapsed().as_millis();
        assert_eq!(
            (status, body.as_str(), retry.as_deref()),
            (503, Some("unavailable"), Some("1")),
            "{name}: {body}"
        );
        // Connected: the 300 ms response timeout (+ one reconnect attempt); cold: at most
        // 2 x connect + response timeout. Generous bounds for a shared 2-core machine.
        assert!(ms < limit_ms, "{name}: 503 after {ms} ms");
    }
    drop(thaw);
    let mut recovered = false;
    for _ in 0..50 {
        if grab_via_handler(&warm).await.0 == 404 && grab_via_handler(&cold).await.0 == 404 {
            recovered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        recovered,
        "the stores did not recover after the server resumed"
    );
}
