//! Checkout calls re-sent after later transitions of their coupon (a stalled connection's
//! re-send arrives seconds later): each answers its first run from the coupon's call log
//! (`lua/coupon_record.lua`) and writes nothing; the log's bound; and the journal's ids of
//! transitions within one millisecond.

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

/// Test: a coupon remembers at most 64 checkout calls at a time: the 65th distinct call is
/// `busy` until the oldest is forgotten (about the keep time), and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_call_log_refuses_the_next_call() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let (id, code, keys) = alices_coupon(&store, "full-log", &["FULL-1"], None).await;
    let calls = Calls {
        keys: &keys,
        campaign_id: &id,
        code: &code,
    };
    for n in 0..64 {
        let held = calls
            .hold(&store, "o-a", "", "", &format!("{n:016x}"))
            .await;
        assert!(held.starts_with("held:"), "call {n}: {held}");
    }
    let before = dump_all(&redis, &store).await;

    let busy = calls.hold(&store, "o-a", "", "", "00000000000000ff").await;

    let (word, ms) = busy.split_once(':').unwrap();
    assert_eq!(word, "busy", "{busy}");
    let ms: u64 = ms.parse().unwrap();
    assert!(ms > KEEP - 60_000 && ms <= KEEP, "{busy}");
    assert_eq!(dump_all(&redis, &store).await, before, "the refusal wrote");
}
