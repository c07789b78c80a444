//! Checkout calls re-sent after later transitions of their coupon (a stalled connection's
//! re-send arrives seconds later): each answers its first run from its answer's own key
//! (`lua/records.lua`: call_answer_add) and writes nothing; no bound on a coupon's calls; and
//! the journal's ids of transitions within one millisecond.

use harness::{Backend, TestRedis};
use hongbao::store::scripts::Call;

use super::checkout::{alices_coupon, pool_count, Calls, KEEP};
use super::{coupon_store, dump_all};

/// Test: a redeem re-sent after its order's release (the payment failed) answers its first
/// run and writes nothing: the coupon stays issued, its pool's count 0, and another order may
/// redeem it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_sent_again_after_a_release_redeems_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "late-redeem", &["LATE-R"], None).await;
        let calls = Calls {
            keys: &keys,
            campaign_id: &id,
            code: &code,
        };
        let first = calls.redeem(&store, "o-a", "00000000000000c1").await;
        calls.release(&store, "o-a", "00000000000000d1").await;
        let before = dump_all(&redis, &store).await;

        let again = calls.redeem(&store, "o-a", "00000000000000c1").await;

        assert_eq!(again, first, "{backend}: the re-run's answer");
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: the re-run wrote"
        );
        let other = calls.redeem(&store, "o-b", "00000000000000c2").await;
        assert!(other.starts_with("redeemed:"), "{backend}: {other}");
    }
}

/// Test: a hold re-sent after its order's release answers its first run and holds nothing:
/// another order redeems the coupon at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_sent_again_after_a_release_holds_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "late-hold", &["LATE-H"], None).await;
        let calls = Calls {
            keys: &keys,
            campaign_id: &id,
            code: &code,
        };
        let first = calls.hold(&store, "o-a", "", "", "00000000000000e1").await;
        calls.release(&store, "o-a", "00000000000000f1").await;
        let before = dump_all(&redis, &store).await;

        let again = calls.hold(&store, "o-a", "", "", "00000000000000e1").await;

        assert_eq!(again, first, "{backend}: the re-run's answer");
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: the re-run wrote"
        );
        let other = calls.redeem(&store, "o-b", "00000000000000e2").await;
        assert!(other.starts_with("redeemed:"), "{backend}: {other}");
    }
}

/// Test: a release re-sent after a later cycle of its order (redeem, release, redeem again)
/// answers its first run and reverses nothing: the last redemption stands, counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_sent_again_after_a_later_cycle_reverses_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "late-release", &["LATE-L"], None).await;
        let calls = Calls {
            keys: &keys,
            campaign_id: &id,
            code: &code,
        };
        calls.redeem(&store, "o-a", "0000000000000101").await;
        let first = calls.release(&store, "o-a", "0000000000000201").await;
        calls.redeem(&store, "o-a", "0000000000000102").await;
        calls.release(&store, "o-a", "0000000000000202").await;
        calls.redeem(&store, "o-a", "0000000000000103").await;
        let before = dump_all(&redis, &store).await;

        let again = calls.release(&store, "o-a", "0000000000000201").await;

        assert_eq!(again, first, "{backend}: the re-run's answer");
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: the re-run wrote"
        );
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 1, "{backend}");
    }
}

/// Test: three redeem / release cycles of one order sent in one pipeline (within about one
/// millisecond) leave journal entries whose `event_id`s are all distinct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_ids_stay_distinct_within_one_millisecond() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "same-ms", &["SAME-MS"], None).await;
        let calls = Calls {
            keys: &keys,
            campaign_id: &id,
            code: &code,
        };
        calls.redeem(&store, "o-a", "0000000000000a00").await;
        calls.release(&store, "o-a", "0000000000000b00").await;
        let ids: Vec<(String, String)> = (1..=3)
            .map(|n| (format!("{n:016x}"), format!("{:016x}", n + 16)))
            .collect();
        let mut pipe = redis::pipe();
        for (redeem, release) in &ids {
            for words in [
                calls.redeem_call("o-a", redeem).evalsha_words(),
                calls.release_call("o-a", release).evalsha_words(),
            ] {
                pipe.cmd(&words[0]).arg(&words[1..]);
            }
        }

        let _: Vec<redis::Value> = pipe
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();

        let entries = hongbao::store::journal::read(&store, &keys.journal, 100)
            .await
            .unwrap();
        let distinct: std::collections::BTreeSet<&str> =
            entries.iter().map(|e| e.event_id.as_str()).collect();
        assert_eq!(
            entries.len(),
            9,
            "{backend}: issued + 4 redeemed/released pairs"
        );
        assert_eq!(distinct.len(), entries.len(), "{backend}: {entries:?}");
    }
}

/// Test: a journal emptied by its export's ack keeps its last stream id (it expires by itself
/// a minute later): the next redemption's entry, in the same millisecond or not, gets a later
/// id, and the journal holds it without a TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emptied_journal_never_gives_a_stream_id_twice() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "acked", &["ACKED-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    calls.redeem(&store, "o-a", "00000000000f0001").await;
    let read = async || {
        let entries = hongbao::store::journal::read(&store, &keys.journal, 100)
            .await
            .unwrap();
        entries.into_iter().map(|e| e.stream_id).collect::<Vec<_>>()
    };
    let acked = read().await;
    hongbao::store::journal::ack(&store, &keys.journal, &acked)
        .await
        .unwrap();
    let mut conn = store.conn().await.unwrap();
    let kept_ttl: i64 = redis::cmd("PTTL")
        .arg(&keys.journal)
        .query_async(&mut conn)
        .await
        .unwrap();

    calls.release(&store, "o-a", "00000000000f0002").await;

    let next = read().await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&keys.journal)
        .query_async(&mut conn)
        .await
        .unwrap();
    let id_of = |s: &str| -> (u64, u64) {
        let (ms, seq) = s.split_once('-').unwrap();
        (ms.parse().unwrap(), seq.parse().unwrap())
    };
    assert!(kept_ttl > 0 && kept_ttl <= 60_000, "{kept_ttl}");
    assert_eq!(next.len(), 1);
    assert!(
        id_of(&next[0]) > id_of(acked.last().unwrap()),
        "{acked:?} then {next:?}"
    );
    assert_eq!(ttl, -1);
}

/// Test: 200 releases for made-up orders on one coupon (each answers `not_found`, kept under
/// its own call id) leave the owner's checkout free: its hold and redeem answer at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_for_made_up_orders_never_lock_the_coupon() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "made-up", &["MADE-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    for n in 0..200 {
        let answer = calls
            .release(&store, &format!("fake-{n}"), &format!("{n:016x}"))
            .await;
        assert_eq!(answer, "not_found", "release {n}");
    }

    let held = calls.hold(&store, "o-a", "", "", "00000000000a0001").await;
    let redeemed = calls.redeem(&store, "o-a", "00000000000a0002").await;

    assert!(held.starts_with("held:"), "{held}");
    assert!(redeemed.starts_with("redeemed:"), "{redeemed}");
}

/// Test: 40 hold and release cycles of one order (a checkout whose payments keep failing),
/// then its redeem redeems the coupon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_after_forty_failed_payments_redeems() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "cycles", &["CYCLE-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    for n in 0..40u64 {
        let held = calls
            .hold(&store, "o-a", "", "", &format!("{:016x}", 2 * n))
            .await;
        assert!(held.starts_with("held:"), "cycle {n}: {held}");
        let released = calls
            .release(&store, "o-a", &format!("{:016x}", 2 * n + 1))
            .await;
        assert!(
            released.starts_with("released:hold:"),
            "cycle {n}: {released}"
        );
    }

    let redeemed = calls.redeem(&store, "o-a", "00000000000b0001").await;

    assert!(redeemed.starts_with("redeemed:"), "{redeemed}");
    assert_eq!(pool_count(&store, &keys, "redeemed").await, 1);
}

/// Test: a redeem sent after 64 checkout calls on its coupon redeems it; re-sent after its
/// order's release, it answers its first run and redeems nothing again: the pool counts no
/// redemption and the journal holds one `coupon_redeemed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeem_after_many_calls_is_kept_and_never_applied_twice() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "many-calls", &["MANY-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    for n in 0..64 {
        calls
            .hold(&store, "o-a", "", "", &format!("{n:016x}"))
            .await;
    }
    let first = calls.redeem(&store, "o-a", "00000000000c0001").await;
    calls.release(&store, "o-a", "00000000000c0002").await;

    let again = calls.redeem(&store, "o-a", "00000000000c0001").await;

    assert!(first.starts_with("redeemed:"), "{first}");
    assert_eq!(again, first);
    assert_eq!(pool_count(&store, &keys, "redeemed").await, 0);
}

/// Test: a checkout call's answer is one string under its own key, kept the keep time
/// (`call_keep_ms`) and no longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_answer_is_kept_the_keep_time() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "answer-ttl", &["TTL-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };

    let held = calls.hold(&store, "o-a", "", "", "00000000000d0001").await;

    let key = hongbao::store::keys::Keys::call_answer(&keys.issued, "00000000000d0001");
    let mut conn = store.conn().await.unwrap();
    let (answer, ttl): (String, i64) = redis::pipe()
        .cmd("GET")
        .arg(&key)
        .cmd("PTTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(answer, held);
    assert!(ttl > KEEP as i64 - 60_000 && ttl <= KEEP as i64, "{ttl}");
}

/// Test: a release sent within the keep time of its pool's keys' expiry (a share coupon's
/// packet after its retention began, a closed campaign) answers `not_found` and writes
/// nothing, as it will once the keys are gone: no answer is recorded that its re-run could
/// not find.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_in_the_pools_last_horizon_writes_nothing() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "closing", &["CLOSE-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    calls.redeem(&store, "o-a", "00000000000e0001").await;
    let mut conn = store.conn().await.unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg(&keys.pool)
        .arg(KEEP - 1_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = dump_all(&redis, &store).await;

    let answer = calls.release(&store, "o-a", "00000000000e0002").await;

    assert_eq!(answer, "not_found");
    assert_eq!(dump_all(&redis, &store).await, before, "the release wrote");
}
