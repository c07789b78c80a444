//! reconcile-cron's rules on accounts the scripts moved: a clean history of 10,000 movements
//! (wallets' and merchants' budgets' deposits and withdrawals, every ledger trimmed past its
//! cap) reports nothing; a reference reused after its dedup window is one more movement; and
//! each kind of mismatch, planted, is reported.

use std::sync::Arc;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::domain::reconcile::{LedgerOwner, Mismatch, LEDGER_TRIMMED_FIELD};
use hongbao::merchants;
use hongbao::store::keys::Keys;
use hongbao::store::reconcile;
use hongbao::wallet;
use hongbao::wallet::rules::{DepositOutcome, LEDGER_CAP};
use hongbao::Store;

use crate::common;

/// `count` movements of `holder` `id`: deposits of 100 to 106 cents, every third a withdrawal
/// of 50 cents, each with its own reference.
async fn movements(store: &Store, holder: LedgerOwner, id: &str, count: usize) {
    for i in 0..count {
        let reference = format!("{id}-{i}");
        let (deposit, cents) = (i % 3 != 2, 100 + (i % 7) as i64);
        match (holder, deposit) {
            (LedgerOwner::Wallet, true) => {
                let _ = wallet::deposit(store, id, cents, &reference).await.unwrap();
            }
            (LedgerOwner::Wallet, false) => {
                let _ = wallet::withdraw(store, id, 50, &reference).await.unwrap();
            }
            (LedgerOwner::Merchant, true) => {
                let _ = merchants::deposit(store, id, cents, &reference)
                    .await
                    .unwrap();
            }
            (LedgerOwner::Merchant, false) => {
                let _ = merchants::withdraw(store, id, 50, &reference)
                    .await
                    .unwrap();
            }
        }
    }
}

/// Every account's mismatches in one pass of reconcile-cron's walk (runs of 1,000).
async fn pass(store: &Store) -> (u64, Vec<(LedgerOwner, String, Vec<Mismatch>)>) {
    let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut checked, mut found) = (0, Vec::new());
    loop {
        let (summary, unreconciled) = reconcile::run_until(store, far, 1_000).await.unwrap();
        checked += summary.checked;
        found.extend(
            unreconciled
                .into_iter()
                .map(|u| (u.holder, u.id, u.mismatches)),
        );
        if summary.pass_completed {
            return (checked, found);
        }
    }
}

async fn hincrby(store: &Store, key: &str, field: &str, by: i64) {
    let mut conn = store.conn().await.unwrap();
    let _: i64 = redis::cmd("HINCRBY")
        .arg(key)
        .arg(field)
        .arg(by)
        .query_async(&mut conn)
        .await
        .unwrap();
}

fn store_on(redis: &TestRedis) -> Arc<Store> {
    common::store(redis, |c| c.wallet.deposit_dedup_secs = 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_clean_history_of_10000_movements_reports_nothing() {
    for backend in Backend::all() {
        // Arrange: 10,000 movements over 4 wallets and 2 merchants, each ledger past its cap.
        let redis = TestRedis::start(backend);
        let store = store_on(&redis);
        let accounts = [
            (LedgerOwner::Wallet, "w0"),
            (LedgerOwner::Wallet, "w1"),
            (LedgerOwner::Wallet, "w2"),
            (LedgerOwner::Wallet, "w3"),
            (LedgerOwner::Merchant, "m0"),
            (LedgerOwner::Merchant, "m1"),
        ];
        let per_account = 10_000 / accounts.len() + 1;
        join_all(accounts.map(|(holder, id)| movements(&store, holder, id, per_account))).await;

        // Act
        let (checked, found) = pass(&store).await;

        // Assert
        assert_eq!(found, vec![], "{backend}");
        assert_eq!(checked, 6, "{backend}");
        let mut conn = store.conn().await.unwrap();
        let trimmed: Option<i64> = redis::cmd("HGET")
            .arg(Keys::new("hb").wallet("w0").wallet)
            .arg(LEDGER_TRIMMED_FIELD)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            per_account > LEDGER_CAP as usize && trimmed.is_some(),
            "{backend}"
        );
    }
}

#[tokio::test]
async fn a_deposit_reference_reused_after_its_dedup_window_is_one_more_deposit() {
    for backend in Backend::all() {
        // Arrange: `d1` deposited, its 1 s record forgotten (pruned by a later deposit), `d1`
        // deposited again.
        let redis = TestRedis::start(backend);
        let store = store_on(&redis);
        wallet::deposit(&store, "alice", 100, "d1").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        wallet::deposit(&store, "alice", 100, "d2").await.unwrap();
        let again = wallet::deposit(&store, "alice", 100, "d1").await.unwrap();
        assert!(
            matches!(again, DepositOutcome::Applied { .. }),
            "{backend}: {again:?}"
        );

        // Act
        let (_, found) = pass(&store).await;

        // Assert
        assert_eq!(found, vec![], "{backend}");
    }
}

/// The mismatches of one account after `plant` did something to it outside the scripts.
async fn planted(holder: LedgerOwner, plant: impl AsyncFn(&Store, &Keys)) -> Vec<Vec<Mismatch>> {
    let mut out = Vec::new();
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store_on(&redis);
        let keys = Keys::new("hb");
        plant(&store, &keys).await;
        out.push(
            reconcile::check_account(&store, holder, "acct")
                .await
                .unwrap(),
        );
    }
    out
}

#[tokio::test]
async fn a_trimmed_wallet_off_by_a_million_cents_is_reported() {
    let found = planted(LedgerOwner::Wallet, async |store, keys| {
        movements(store, LedgerOwner::Wallet, "acct", LEDGER_CAP as usize + 1).await;
        hincrby(store, &keys.wallet("acct").wallet, "balance", 1_000_000).await;
    })
    .await;

    for f in found {
        assert!(
            matches!(f.as_slice(), [Mismatch::LedgerSum { trimmed_cents, .. }, ..] if *trimmed_cents != 0),
            "{:?}",
            &f[..1]
        );
    }
}

#[tokio::test]
async fn a_merchant_balance_off_its_ledger_is_reported() {
    let found = planted(LedgerOwner::Merchant, async |store, keys| {
        movements(store, LedgerOwner::Merchant, "acct", 3).await;
        hincrby(store, &keys.merchant("acct").merchant, "balance", 5).await;
        hincrby(store, &keys.merchant("acct").merchant, "deposited", 5).await;
    })
    .await;

    for f in found {
        assert!(
            matches!(f.as_slice(), [Mismatch::LedgerSum { .. }, ..]),
            "{:?}",
            &f[..1]
        );
    }
}

#[tokio::test]
async fn a_merchant_whose_books_do_not_close_is_reported() {
    let found = planted(LedgerOwner::Merchant, async |store, keys| {
        movements(store, LedgerOwner::Merchant, "acct", 3).await;
        hincrby(store, &keys.merchant("acct").merchant, "reserved", 5).await;
    })
    .await;

    for f in found {
        assert!(matches!(f.as_slice(), [Mismatch::Books { .. }]), "{f:?}");
    }
}

#[tokio::test]
async fn a_merchant_deposit_in_the_ledger_twice_is_reported() {
    let found = planted(LedgerOwner::Merchant, async |store, keys| {
        movements(store, LedgerOwner::Merchant, "acct", 1).await;
        let m = keys.merchant("acct");
        let mut conn = store.conn().await.unwrap();
        let head: String = redis::cmd("LINDEX")
            .arg(&m.ledger)
            .arg(0)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: i64 = redis::cmd("LPUSH")
            .arg(&m.ledger)
            .arg(&head)
            .query_async(&mut conn)
            .await
            .unwrap();
        hincrby(store, &m.merchant, "balance", 100).await;
        hincrby(store, &m.merchant, "deposited", 100).await;
    })
    .await;

    for f in found {
        assert!(
            matches!(
                f.as_slice(),
                [
                    Mismatch::Twice {
                        kind: "deposit",
                        ..
                    },
                    ..
                ]
            ),
            "{f:?}"
        );
    }
}

#[tokio::test]
async fn a_balance_that_is_not_an_integer_is_reported() {
    let found = planted(LedgerOwner::Wallet, async |store, keys| {
        movements(store, LedgerOwner::Wallet, "acct", 1).await;
        let mut conn = store.conn().await.unwrap();
        let _: i64 = redis::cmd("HSET")
            .arg(keys.wallet("acct").wallet)
            .arg("balance")
            .arg("1e3")
            .query_async(&mut conn)
            .await
            .unwrap();
    })
    .await;

    for f in found {
        assert_eq!(
            f,
            vec![Mismatch::Field {
                name: "balance".into(),
                stored: "1e3".into()
            }]
        );
    }
}

#[tokio::test]
async fn a_ledger_item_that_does_not_parse_is_reported() {
    let found = planted(LedgerOwner::Wallet, async |store, keys| {
        movements(store, LedgerOwner::Wallet, "acct", 1).await;
        let mut conn = store.conn().await.unwrap();
        let () = redis::cmd("LSET")
            .arg(keys.wallet("acct").ledger)
            .arg(0)
            .arg("deposit|x")
            .query_async(&mut conn)
            .await
            .unwrap();
    })
    .await;

    for f in found {
        assert_eq!(
            f,
            vec![Mismatch::LedgerEntry {
                item: "deposit|x".into()
            }]
        );
    }
}

/// `holder` `id` with a ledger trimmed past its cap whose trimmed cents were never kept (the
/// field deleted, as before it existed); the cents the field held.
async fn trimmed_before_the_field(store: &Store, holder: LedgerOwner, id: &str) -> i64 {
    movements(store, holder, id, LEDGER_CAP as usize + 40).await;
    let keys = Keys::new("hb");
    let hash = match holder {
        LedgerOwner::Wallet => keys.wallet(id).wallet,
        LedgerOwner::Merchant => keys.merchant(id).merchant,
    };
    let mut conn = store.conn().await.unwrap();
    let (cents, _): (i64, i64) = redis::pipe()
        .cmd("HGET")
        .arg(&hash)
        .arg(LEDGER_TRIMMED_FIELD)
        .cmd("HDEL")
        .arg(&hash)
        .arg(LEDGER_TRIMMED_FIELD)
        .query_async(&mut conn)
        .await
        .unwrap();
    cents
}

/// The `ledger_baseline` / `merchant_ledger_baseline` entries of `id`'s journal: their cents.
async fn baselines(store: &Store, journal: &str) -> Vec<i64> {
    let entries = hongbao::store::journal::read(store, journal, 10_000)
        .await
        .unwrap();
    entries
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                hongbao::domain::journal::Kind::LedgerBaseline
                    | hongbao::domain::journal::Kind::MerchantLedgerBaseline
            )
        })
        .map(|e| e.ledger_trimmed_cents.unwrap())
        .collect()
}

/// Test: a wallet and a merchant whose ledgers were trimmed before their trimmed cents were
/// kept are given their baseline by the first pass (the cents the field would hold, each
/// journaled once) and reported by none; a later pass journals nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledgers_trimmed_before_the_field_are_baselined_once() {
    for backend in Backend::all() {
        // Arrange
        let redis = TestRedis::start(backend);
        let store = store_on(&redis);
        let wallet_cents = trimmed_before_the_field(&store, LedgerOwner::Wallet, "old-w").await;
        let merchant_cents = trimmed_before_the_field(&store, LedgerOwner::Merchant, "old-m").await;

        // Act
        let (_, first) = pass(&store).await;
        let (_, second) = pass(&store).await;

        // Assert
        assert_eq!((first, second), (vec![], vec![]), "{backend}");
        let keys = Keys::new("hb");
        assert_eq!(
            baselines(&store, &keys.wallet("old-w").journal).await,
            [wallet_cents],
            "{backend}"
        );
        assert_eq!(
            baselines(&store, &keys.merchant("old-m").journal).await,
            [merchant_cents],
            "{backend}"
        );
    }
}

/// Test: a balance moved outside the scripts after its ledger's baseline is reported.
#[tokio::test]
async fn drift_after_a_baseline_is_reported() {
    let found = planted(LedgerOwner::Wallet, async |store, keys| {
        trimmed_before_the_field(store, LedgerOwner::Wallet, "acct").await;
        let _ = pass(store).await;
        hincrby(store, &keys.wallet("acct").wallet, "balance", 5).await;
    })
    .await;

    for f in found {
        assert!(
            matches!(f.as_slice(), [Mismatch::LedgerSum { .. }, ..]),
            "{f:?}"
        );
    }
}

/// Test: a baseline sent again with its call id after the ledger moved on answers its first
/// run (`baselined` and its cents) and writes nothing.
#[tokio::test]
async fn a_baseline_sent_again_answers_its_first_run() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store_on(&redis);
    let cents = trimmed_before_the_field(&store, LedgerOwner::Wallet, "acct").await;
    let call = "0000000000ba5e01";
    let first = reconcile::baseline(&store, LedgerOwner::Wallet, "acct", call)
        .await
        .unwrap();
    movements(&store, LedgerOwner::Wallet, "acct", 3).await;
    let before = common::snapshot(&redis).await;

    let again = reconcile::baseline(&store, LedgerOwner::Wallet, "acct", call)
        .await
        .unwrap();

    assert_eq!((first, again), (Some(cents), Some(cents)));
    assert!(common::snapshot(&redis).await == before, "the re-run wrote");
}
