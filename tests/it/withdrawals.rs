//! Withdrawals (`POST /wallet/withdrawals`, `lua/withdraw.lua`) through the wallet function's
//! router, on standalone and on the 3-master cluster: concurrent withdrawals racing one balance
//! pay out exactly what it covers, once per reference; every refusal (402, 409, 403, 400)
//! writes nothing (every key's DUMP before and after).

use std::sync::Arc;

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{self, call, event, with_body, Function};
use harness::{Backend, TestRedis};
use hongbao::store::keys::Keys;
use hongbao::wallet::{self, EntryKind};
use hongbao::Store;

/// A withdrawal event (`events/wallet-withdrawal.json`) with this body, signed by `arn`.
fn withdrawal(user: &str, cents: i64, reference: &str, arn: Option<&str>) -> Value {
    let body = json!({"user_id": user, "amount_cents": cents, "reference": reference});
    let mut v = with_body(event("wallet-withdrawal"), &body.to_string());
    if let Some(arn) = arn {
        v["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    }
    v
}

/// Every key's DUMP but the replication fences: with `REDIS_WAIT_REPLICAS` (`make replicas`)
/// the connection writes `<prefix>:{<tag>}:fence` after every acknowledged script, refusals
/// included, before its `WAIT`; that is replication, not a write of the withdrawal.
/// Nor the refusals' call answers (with a TTL: [`common::snapshot_but_call_answers`]).
async fn snapshot(redis: &TestRedis) -> Vec<(String, Option<Vec<u8>>)> {
    let mut keys = common::snapshot_but_call_answers(redis).await;
    keys.retain(|(k, _)| !k.ends_with(":fence"));
    keys
}

/// Sends a withdrawal; returns (status, body).
async fn withdraw(store: &Arc<Store>, user: &str, cents: i64, reference: &str) -> (u16, Value) {
    let (s, b, _) = call(
        store,
        Function::Wallet,
        &withdrawal(user, cents, reference, None),
    )
    .await;
    (s, b)
}

/// The signed amounts of `user`'s ledger entries of kind withdrawal, newest first.
async fn withdrawal_entries(store: &Store, user: &str) -> Vec<(i64, String)> {
    wallet::get(store, user)
        .await
        .unwrap()
        .entries
        .into_iter()
        .filter(|e| e.kind == EntryKind::Withdrawal)
        .map(|e| (e.amount_cents, e.reference))
        .collect()
}

/// 64 withdrawals of 300 cents with distinct references race a balance of 10,000 cents:
/// exactly 33 are paid (201), 31 are 402 `insufficient_funds`, the balance ends at 100, and
/// the ledger has the 33. Every request sent again: the 33 answer `repeat: true` with nothing
/// paid, the 31 are still 402. Then 16 concurrent requests with one new reference pay once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_withdrawals_pay_exactly_what_the_balance_covers() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "alice", 10_000).await;

        let race = |round: &'static str| {
            let store = store.clone();
            async move {
                let calls = (0..64).map(|i| {
                    let store = store.clone();
                    tokio::spawn(async move {
                        let r = withdraw(&store, "alice", 300, &format!("wd-{i}")).await;
                        (i, r)
                    })
                });
                let mut out: Vec<(usize, (u16, Value))> = join_all(calls)
                    .await
                    .into_iter()
                    .map(Result::unwrap)
                    .collect();
                out.sort_by_key(|(i, _)| *i);
                eprintln!("{backend} {round}: {} answers", out.len());
                out
            }
        };
        let first = race("first").await;
        let paid: Vec<usize> = first
            .iter()
            .filter(|(_, (s, b))| *s == 201 && b["repeat"] == json!(false))
            .map(|(i, _)| *i)
            .collect();
        let refused = first
            .iter()
            .filter(|(_, (s, b))| *s == 402 && b["error"] == json!("insufficient_funds"))
            .count();
        assert_eq!((paid.len(), refused), (33, 31), "{backend}: {first:?}");
        for (_, (s, b)) in &first {
            let balance = b["balance_cents"].as_i64().unwrap();
            assert!((0..=10_000).contains(&balance), "{backend}: {s} {b}");
            if *s == 402 {
                assert!(
                    balance < 300,
                    "{backend}: refused with {balance} cents left"
                );
            }
        }
        assert_eq!(wallet::balance(&store, "alice").await.unwrap(), 100);
        let mut entries = withdrawal_entries(&store, "alice").await;
        entries.sort();
        let mut expected: Vec<(i64, String)> =
            paid.iter().map(|i| (-300, format!("wd-{i}"))).collect();
        expected.sort();
        assert_eq!(entries, expected, "{backend}: one ledger entry per payment");

        // Retries of every request: nothing is paid twice, nothing refused is paid now.
        let again = race("again").await;
        for (i, (s, b)) in &again {
            if paid.contains(i) {
                assert_eq!(
                    (*s, &b["repeat"]),
                    (201, &json!(true)),
                    "{backend} wd-{i}: {b}"
                );
            } else {
                assert_eq!(
                    (*s, &b["error"]),
                    (402, &json!("insufficient_funds")),
                    "{b}"
                );
            }
            assert_eq!(b["balance_cents"], json!(100), "{backend} wd-{i}: {b}");
        }
        assert_eq!(wallet::balance(&store, "alice").await.unwrap(), 100);
        assert_eq!(withdrawal_entries(&store, "alice").await.len(), 33);

        // One reference sent 16 times at once: paid once.
        common::fund(&store, "alice", 900).await;
        let same = (0..16).map(|_| {
            let store = store.clone();
            tokio::spawn(async move { withdraw(&store, "alice", 700, "payout-7").await })
        });
        let answers: Vec<(u16, Value)> = join_all(same)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let fresh = answers
            .iter()
            .filter(|(s, b)| *s == 201 && b["repeat"] == json!(false))
            .count();
        let repeats = answers
            .iter()
            .filter(|(s, b)| *s == 201 && b["repeat"] == json!(true))
            .count();
        assert_eq!((fresh, repeats), (1, 15), "{backend}: {answers:?}");
        assert_eq!(wallet::balance(&store, "alice").await.unwrap(), 300);
    }
}

/// A role the withdrawal principals do not name.
const OTHER_ROLE: &str = "arn:aws:sts::123456789012:assumed-role/other/x";
/// A role whose name starts like the allowed one's.
const LOOKALIKE_ROLE: &str = "arn:aws:sts::123456789012:assumed-role/hongbao-payments-evil/x";

/// Who sends a refused withdrawal: the fixture's allowed role, another role, or nobody.
#[derive(Clone, Copy)]
enum By {
    Allowed,
    Role(&'static str),
    Unsigned,
}

/// Withdrawals refused once alice has 600 left after 400 withdrawn under `w1`:
/// (user, amount, reference, sender, status, error).
const REFUSED: [(&str, i64, &str, By, u16, &str); 13] = [
    ("alice", 601, "w2", By::Allowed, 402, "insufficient_funds"),
    ("nobody", 1, "w3", By::Allowed, 402, "insufficient_funds"),
    (
        "alice",
        401,
        "w1",
        By::Allowed,
        409,
        "idempotency_key_reused",
    ),
    (
        "alice",
        399,
        "w1",
        By::Allowed,
        409,
        "idempotency_key_reused",
    ),
    ("alice", 1, "w4", By::Role(OTHER_ROLE), 403, "forbidden"),
    ("alice", 1, "w4", By::Role(LOOKALIKE_ROLE), 403, "forbidden"),
    ("alice", 1, "w4", By::Unsigned, 403, "forbidden"),
    ("alice", 0, "w5", By::Allowed, 400, "invalid_request"),
    ("alice", -5, "w5", By::Allowed, 400, "invalid_request"),
    (
        "alice",
        100_000_000_001,
        "w5",
        By::Allowed,
        400,
        "invalid_request",
    ),
    ("alice", 1, "", By::Allowed, 400, "invalid_request"),
    ("alice", 1, "has space", By::Allowed, 400, "invalid_request"),
    ("", 1, "w5", By::Allowed, 400, "invalid_request"),
];

/// The event of a refused withdrawal of [`REFUSED`].
fn refused(user: &str, cents: i64, reference: &str, by: By) -> Value {
    match by {
        By::Allowed => withdrawal(user, cents, reference, None),
        By::Role(arn) => withdrawal(user, cents, reference, Some(arn)),
        By::Unsigned => common::without_auth(withdrawal(user, cents, reference, None)),
    }
}

/// A store where alice was funded 1,000 and withdrew 400 under `w1`: 600 left.
async fn alice_with_600(redis: &TestRedis) -> Arc<Store> {
    let store = common::store(redis, |_| {});
    common::fund(&store, "alice", 1_000).await;
    let (s, b) = withdraw(&store, "alice", 400, "w1").await;
    assert_eq!((s, &b["balance_cents"]), (201, &json!(600)), "{b}");
    store
}

/// Test: every refused withdrawal (402 over the balance, also on a wallet never used; 409 the
/// reference again with another amount; 403 from another role, a lookalike role or no
/// signature; 400 for bad fields) answers its status and writes nothing (every key's DUMP
/// before and after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_withdrawals_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = alice_with_600(&redis).await;
        let before = snapshot(&redis).await;

        let mut answers = Vec::new();
        for (user, cents, reference, by, _, _) in REFUSED {
            let (s, b, _) = call(
                &store,
                Function::Wallet,
                &refused(user, cents, reference, by),
            )
            .await;
            answers.push((s, b["error"].as_str().unwrap_or("").to_string()));
        }

        let expected: Vec<_> = REFUSED.iter().map(|r| (r.4, r.5.to_string())).collect();
        assert_eq!(answers, expected, "{backend}");
        assert_eq!(snapshot(&redis).await, before, "{backend}: a refusal wrote");
    }
}

/// Test: a withdrawal over the balance answers 402 with the balance, 0 for a wallet never used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_over_the_balance_answers_the_balance() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = alice_with_600(&redis).await;

    let (_, alices) = withdraw(&store, "alice", 601, "w2").await;
    let (_, nobodys) = withdraw(&store, "nobody", 1, "w3").await;

    assert_eq!(
        (&alices["balance_cents"], &nobodys["balance_cents"]),
        (&json!(600), &json!(0))
    );
}

/// Test: with `HONGBAO_WITHDRAWAL_PRINCIPALS` unset, the fixture's role is refused 403 and
/// nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawals_are_forbidden_without_withdrawal_principals() {
    let redis = TestRedis::start(Backend::Standalone);
    let closed = common::store(&redis, |c| {
        c.wallet.withdrawal_principals = Default::default()
    });
    common::fund(&closed, "alice", 1_000).await;
    let before = snapshot(&redis).await;

    let (s, b) = withdraw(&closed, "alice", 1, "w6").await;

    assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
    assert_eq!(snapshot(&redis).await, before, "a refusal wrote");
}

/// Test: a reference refused for funds leaves no record: it pays once the balance covers it,
/// and then answers `repeat: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_refused_for_funds_pays_once_the_balance_covers_it() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = alice_with_600(&redis).await;
    assert_eq!(withdraw(&store, "alice", 601, "w2").await.0, 402);
    common::fund(&store, "alice", 1).await;

    let (s, paid) = withdraw(&store, "alice", 601, "w2").await;
    let (_, again) = withdraw(&store, "alice", 601, "w2").await;

    assert_eq!((s, &paid["balance_cents"]), (201, &json!(0)), "{paid}");
    assert_eq!(again["repeat"], json!(true), "{again}");
}

/// Test: a withdrawal's record has no TTL (it is listed for forgetting after the dedup window)
/// and holds the fingerprint (the amount), the call that applied it and the balance it
/// answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_record_keeps_its_amount_call_and_balance_without_ttl() {
    let redis = TestRedis::start(Backend::Standalone);
    let _store = alice_with_600(&redis).await;
    let wk = Keys::new("hb").wallet("alice");
    let mut conn = redis.raw_conn().await;

    let ttl: i64 = redis::cmd("TTL")
        .arg(&wk.records)
        .query_async(&mut conn)
        .await
        .unwrap();
    let record: String = redis::cmd("HGET")
        .arg(&wk.records)
        .arg("wd:w1")
        .query_async(&mut conn)
        .await
        .unwrap();

    let fields: Vec<&str> = record.split(' ').collect();
    assert_eq!(ttl, -1, "the records hash has no TTL");
    assert_eq!(
        (fields[0], fields.len(), fields[2]),
        ("400", 3, "600"),
        "{record:?}"
    );
}

/// Test: `deposit.lua` and `withdraw.lua` refuse an owner that is neither `wallet` nor
/// `merchant` with an error, and write nothing (a wallet's keys and `balance` alone would
/// otherwise be moved under a merchant's journal kind, or the reverse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_movement_of_an_unknown_owner_is_refused_and_writes_nothing() {
    use hongbao::store::scripts::{Call, DepositCall, WithdrawCall};
    let redis = TestRedis::start(Backend::Standalone);
    let store = common::store(&redis, |_| {});
    let wk = Keys::new("hb").wallet("alice");
    let answer = Keys::call_answer(&wk.wallet, "00000000000000aa");
    let (book, ledger, records, forget) = (&wk.wallet, &wk.ledger, &wk.records, &wk.records_forget);
    let deposit = DepositCall {
        books: book,
        ledger,
        records,
        records_forget: forget,
        journal: &wk.journal,
        call_answer: &answer,
        amount_cents: 100,
        reference: "r1",
        record_id: "dep:r1",
        keep_ms: 86_400_000,
        ledger_cap: 5,
        owner_id: "alice",
        call: "00000000000000aa",
        call_keep_ms: 960_000,
        owner: "nobody",
        balance_limit_cents: 1_000_000,
    };
    let withdraw = WithdrawCall {
        books: book,
        ledger,
        records,
        records_forget: forget,
        journal: &wk.journal,
        call_answer: &answer,
        amount_cents: 100,
        reference: "r1",
        record_id: "wd:r1",
        keep_ms: 86_400_000,
        ledger_cap: 5,
        owner_id: "alice",
        call: "00000000000000aa",
        call_keep_ms: 960_000,
        owner: "nobody",
    };
    let mut conn = store.conn().await.unwrap();
    let deposited: redis::RedisResult<redis::Value> =
        deposit.invocation().invoke_async(&mut conn).await;
    let withdrawn: redis::RedisResult<redis::Value> =
        withdraw.invocation().invoke_async(&mut conn).await;

    for (what, reply) in [("deposit", deposited), ("withdraw", withdrawn)] {
        let e = reply.expect_err(what).to_string();
        assert!(
            e.contains("owner is neither wallet nor merchant"),
            "{what}: {e}"
        );
    }
    assert!(snapshot(&redis).await.is_empty(), "nothing written");
}
