//! Password packets (口令红包): the password and its verifier are kept out of every answer, log
//! line, journal entry and key.

use std::sync::Arc;

use harness::{Backend, TestRedis};
use hongbao::Store;
use serde_json::{json, Value};

use super::{create, journal_entries, view, with_packet};
use crate::common::{self, call, event, snapshot, with_body, with_header, with_sub, Function};

const PASSWORD: &str = "恭喜发财 café";

/// The bytes a test's tracing subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `POST /packets/{id}/grab` by `user` with `body` (a JSON object's text).
async fn grab_with(store: &Arc<Store>, id: &str, user: &str, body: &str) -> (u16, Value) {
    let ev = with_body(with_sub(with_packet(event("grab-grab"), id), user), body);
    let (s, b, _) = call(store, Function::Grab, &ev).await;
    (s, b)
}

/// Test: a password packet (口令红包) answers a grab without its password or with a wrong one
/// 403 `wrong_password` and writes nothing but the attempt the grab rate limit counts; the
/// right password (in another Unicode normal form) wins a share; 200 guesses by one user are
/// stopped by the rate limit; a password packet may be targeted too (both must hold); a
/// create repeated with the same `Idempotency-Key` and another password is 409. The password
/// and its verifier appear in no answer, no log line (at trace level) and no journal entry,
/// and the password in no key.
#[tokio::test(flavor = "current_thread")]
async fn password_packets() {
    use tracing_subscriber::fmt::format::FmtSpan;
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::FULL)
        .with_writer(move || writer.clone())
        .finish();
    // This thread's default only: the test runs on one thread (current_thread), and no test
    // installs a global subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);
    // Proves the capture works: every line hongbao writes while this test runs (at any level)
    // lands beside this one.
    tracing::info!("password_packets: capture on");
    let mut answers = String::new();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        // The grab rate limit alone (the cap on one user's guesses has its own test).
        let store = common::store(&redis, |c| c.packets.guesses_per_user = 0);
        common::fund(&store, "alice", 10_000).await;
        let (id, verifier) = create_once_per_key(&store, &mut answers).await;
        wrong_passwords_write_only_the_attempt(&store, &redis, &id, &mut answers, backend).await;
        // NFD of the same text: "e" + U+0301.
        let nfd = json!({"password": "恭喜发财 cafe\u{301}"}).to_string();
        let (s, b) = grab_with(&store, &id, "carol", &nfd).await;
        assert_eq!(s, 200, "{b}");
        answers.push_str(&b.to_string());
        let v = view(&store, &id, "carol").await;
        assert_eq!(v["password_protected"], true);
        answers.push_str(&v.to_string());
        guesses_are_rate_limited(&store, &id).await;
        targeted_and_password_protected(&store).await;
        secrets_in_no_key_or_journal(&store, &redis, &verifier, backend).await;
        let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
        assert!(logs.contains("capture on"), "the capture does not work");
        for secret in [PASSWORD, "café", verifier.as_str()] {
            assert!(
                !logs.contains(secret),
                "{backend:?}: a log line holds {secret:?}"
            );
            assert!(
                !answers.contains(secret),
                "{backend:?}: an answer holds {secret:?}"
            );
        }
    }
}

/// alice's password packet under idempotency key `pw-1`; the same key with the same password
/// repeats, with another one is 409. Returns the packet's id and its password's verifier.
async fn create_once_per_key(store: &Arc<Store>, answers: &mut String) -> (String, String) {
    let create_with = |password: &str| {
        let body = json!({"total_cents": 500, "count": 5, "password": password});
        with_header(
            with_sub(
                with_body(event("create-packet-lucky"), &body.to_string()),
                "alice",
            ),
            "idempotency-key",
            "pw-1",
        )
    };
    let ev = create_with(PASSWORD);
    let (s, p, _) = call(store, Function::CreatePacket, &ev).await;
    assert_eq!(
        (s, p["password_protected"].as_bool()),
        (201, Some(true)),
        "{p}"
    );
    answers.push_str(&p.to_string());
    let id = p["packet_id"].as_str().unwrap().to_string();
    let verifier =
        serde_json::from_value::<hongbao::packets::rules::password::PasswordText>(json!(PASSWORD))
            .unwrap()
            .normalised()
            .verifier(&id);
    // The same key: the same password repeats, another one is a different request.
    let (s, again, _) = call(store, Function::CreatePacket, &ev).await;
    assert_eq!((s, &again["packet_id"]), (201, &p["packet_id"]), "{again}");
    let (s, b, _) = call(
        store,
        Function::CreatePacket,
        &create_with("something else"),
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (409, Some("idempotency_key_reused")),
        "{b}"
    );
    (id, verifier)
}

/// No password, an empty object, a wrong accent, a wrong case: 403 `wrong_password`, and
/// nothing written but the counters: bob's attempt (the grab rate limit's key) and the packet's
/// wrong guesses (its guess budget's).
async fn wrong_passwords_write_only_the_attempt(
    store: &Arc<Store>,
    redis: &TestRedis,
    id: &str,
    answers: &mut String,
    backend: Backend,
) {
    let keys = hongbao::store::keys::Keys::new(&store.config().key_prefix);
    let counters = [
        keys.grab_rate(id, "bob"),
        keys.packet(id).wrong_guesses,
        keys.guesses(id, "bob"),
    ];
    let without_attempts = |mut all: Vec<(String, Option<Vec<u8>>)>| {
        all.retain(|(k, _)| !counters.contains(k));
        all
    };
    let before = without_attempts(snapshot(redis).await);
    for body in [
        "",
        "{}",
        r#"{"password": "恭喜发财 cafe"}"#,
        r#"{"password": "恭喜发财 CAFÉ"}"#,
    ] {
        let (s, b) = grab_with(store, id, "bob", body).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("wrong_password")),
            "{body}: {b}"
        );
        answers.push_str(&b.to_string());
    }
    assert_eq!(
        without_attempts(snapshot(redis).await),
        before,
        "{backend:?}: a wrong password wrote more than the counters"
    );
    let mut conn = redis.raw_conn().await;
    let wrong: u32 = redis::cmd("GET")
        .arg(&counters[1])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(wrong, 4, "{backend:?}: the packet's wrong guesses");
}

/// 200 guesses by one user: the rate limit stops them.
async fn guesses_are_rate_limited(store: &Arc<Store>, id: &str) {
    let started = std::time::Instant::now();
    let (mut refused, mut limited) = (0u64, 0u64);
    for i in 0..200 {
        let guess = json!({"password": format!("guess {i}")}).to_string();
        let (s, b) = grab_with(store, id, "mallory", &guess).await;
        match (s, b["error"].as_str()) {
            (403, Some("wrong_password")) => refused += 1,
            (429, Some("rate_limited")) => limited += 1,
            other => panic!("{other:?} {b}"),
        }
    }
    let windows = started.elapsed().as_millis() as u64 / 1_000 + 2;
    assert!(
        limited > 0 && refused <= 10 * windows,
        "{refused} refused, {limited} limited in {windows} windows"
    );
}

/// Targeted and password-protected: both must hold.
async fn targeted_and_password_protected(store: &Arc<Store>) {
    let body =
        json!({"total_cents": 200, "count": 2, "password": "pw", "recipients": ["dave", "erin"]});
    let (s, t) = create(store, "alice", &body).await;
    assert_eq!(s, 201, "{t}");
    let tid = t["packet_id"].as_str().unwrap();
    let (s, b) = grab_with(store, tid, "mallory", r#"{"password": "pw"}"#).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("not_a_recipient")),
        "{b}"
    );
    let (s, b) = grab_with(store, tid, "dave", r#"{"password": "PW"}"#).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("wrong_password")),
        "{b}"
    );
    assert_eq!(
        grab_with(store, tid, "dave", r#"{"password": "pw"}"#)
            .await
            .0,
        200
    );
}

/// The journal holds neither the verifier nor the password; no key holds the password.
async fn secrets_in_no_key_or_journal(
    store: &Arc<Store>,
    redis: &TestRedis,
    verifier: &str,
    backend: Backend,
) {
    let all = snapshot(redis).await;
    let journal_text = format!("{:?}", journal_entries(store, "alice").await);
    assert!(!journal_text.contains(verifier) && !journal_text.contains("café"));
    for (key, dump) in &all {
        let bytes = dump.as_deref().unwrap_or_default();
        assert!(
            !bytes
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes()),
            "{backend:?}: the password is in {key}"
        );
    }
}
