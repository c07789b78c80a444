//! The coupon checkout through the store and its scripts (`coupon_hold.lua`,
//! `coupon_redeem.lua`, `coupon_release.lua`): a hold raced by many orders, a hold
//! that lapses by itself, a hold released and a redemption reversed (credited back once),
//! every script sent twice, a refusal under the minimum or without the order's total, and
//! records written before holds. Re-runs after later transitions: `reruns.rs`.

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_no, CodeSource, Discount, Off};
use hongbao::coupons::{
    self, CampaignCreateOutcome, CouponGrabOutcome, HoldOutcome, PoolKeys, RedeemOutcome,
    ReleaseOutcome, Released,
};
use hongbao::store::scripts::{text, Call, CouponHoldCall, CouponRedeemCall, CouponReleaseCall};
use hongbao::Store;

use super::{campaign, coupon_store, dump_all, redis_ms};

use crate::coupons::NO_VISIT_LIMIT as VISITS;

/// Ten minutes, ms: a hold that does not lapse during a test.
pub(super) const LONG: u64 = 600_000;

/// A day, ms: how long the scripts keep a call's answer here.
pub(super) const KEEP: u64 = 86_400_000;

/// A campaign of `codes` (uploaded, one pool) under `reference`, worth `discount`, with
/// `alice` holding its first code; (campaign id, alice's code, the pool's keys).
pub(super) async fn alices_coupon(
    store: &Store,
    reference: &str,
    codes: &[&str],
    discount: Option<Discount>,
) -> (String, String, PoolKeys) {
    let now = redis_ms(store).await;
    let mut req = campaign(
        now,
        reference,
        CodeSource::Uploaded(codes.iter().map(|c| c.to_string()).collect()),
    );
    req.discount = discount;
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(store, &req).await else {
        panic!("not created")
    };
    let Ok(CouponGrabOutcome::Grabbed { code, .. }) =
        coupons::grab(store, &c.campaign_id, "alice", VISITS).await
    else {
        panic!("alice won no code")
    };
    let no = campaign_no(&c.campaign_id).unwrap();
    let keys = PoolKeys::new("hb", &c.campaign_id, no, 0, 1);
    (c.campaign_id, code, keys)
}

/// A field of the pool's hash, as an integer.
pub(super) async fn pool_count(store: &Store, keys: &PoolKeys, field: &str) -> i64 {
    redis::cmd("HGET")
        .arg(&keys.pool)
        .arg(field)
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap()
}

/// The kinds of the entries of the pool's journal, oldest first.
async fn journal_kinds(store: &Store, keys: &PoolKeys) -> Vec<String> {
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(&keys.journal)
        .arg("-")
        .arg("+")
        .query_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
    entries
        .into_iter()
        .filter_map(|(_, fields)| fields.into_iter().find(|(k, _)| k == "kind"))
        .map(|(_, v)| v)
        .collect()
}

/// The key of call `call`'s answer on the pool of issued hash `issued`, for a script call's
/// borrowed keys.
fn answer_key(issued: &str, call: &str) -> &'static str {
    Box::leak(hongbao::store::keys::Keys::call_answer(issued, call).into_boxed_str())
}

/// The script calls of one coupon with a fixed call id, as the client would re-send them.
pub(super) struct Calls<'a> {
    pub(super) keys: &'a PoolKeys,
    pub(super) campaign_id: &'a str,
    pub(super) code: &'a str,
}

impl Calls<'_> {
    pub(super) async fn hold(
        &self,
        store: &Store,
        order: &str,
        total: &str,
        discount: &str,
        call: &str,
    ) -> String {
        let reply = CouponHoldCall {
            pool: &self.keys.pool,
            issued: &self.keys.issued,
            call_answer: answer_key(&self.keys.issued, call),
            code: self.code,
            user_id: "alice",
            order_reference: order,
            hold_ms: LONG,
            order_total_cents: total,
            discount_cents: discount,
            call,
            call_keep_ms: KEEP,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        text("coupon_hold", reply).unwrap()
    }

    pub(super) fn redeem_call<'c>(&'c self, order: &'c str, call: &'c str) -> CouponRedeemCall<'c> {
        CouponRedeemCall {
            pool: &self.keys.pool,
            issued: &self.keys.issued,
            journal: &self.keys.journal,
            books: &self.keys.pool,
            grabs: &self.keys.pool,
            call_answer: answer_key(&self.keys.issued, call),
            code: self.code,
            user_id: "alice",
            order_reference: order,
            campaign_id: self.campaign_id,
            order_total_cents: "",
            discount_cents: "",
            call,
            share: "",
            call_keep_ms: KEEP,
        }
    }

    pub(super) async fn redeem(&self, store: &Store, order: &str, call: &str) -> String {
        let reply = self
            .redeem_call(order, call)
            .invocation()
            .invoke_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        text("coupon_redeem", reply).unwrap()
    }

    pub(super) fn release_call<'c>(
        &'c self,
        order: &'c str,
        call: &'c str,
    ) -> CouponReleaseCall<'c> {
        CouponReleaseCall {
            pool: &self.keys.pool,
            issued: &self.keys.issued,
            journal: &self.keys.journal,
            books: &self.keys.pool,
            grabs: &self.keys.pool,
            ledger: &self.keys.pool,
            call_answer: answer_key(&self.keys.issued, call),
            code: self.code,
            order_reference: order,
            campaign_id: self.campaign_id,
            call,
            share: "",
            ledger_cap: 100,
            call_keep_ms: KEEP,
        }
    }

    pub(super) async fn release(&self, store: &Store, order: &str, call: &str) -> String {
        let reply = self
            .release_call(order, call)
            .invocation()
            .invoke_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        text("coupon_release", reply).unwrap()
    }
}

/// Test: 32 checkouts of 32 distinct orders race to hold one code: exactly one hold wins, and
/// every other order is told `held` with the winner's `held_until`; none of them may redeem it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_orders_race_to_hold_one_code() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, code, _) = alices_coupon(&store, "race-1", &["RACE-1"], None).await;

        let tasks = (0..32).map(|i| {
            let (store, code) = (store.clone(), code.clone());
            tokio::spawn(async move {
                let order = format!("order-{i}");
                let outcome = coupons::hold(&store, &code, "alice", &order, LONG, None).await;
                (order, outcome.unwrap())
            })
        });
        let answers: Vec<(String, HoldOutcome)> = join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();

        let winners: Vec<(&String, i64)> = answers
            .iter()
            .filter_map(|(order, o)| match o {
                HoldOutcome::Held { held_until_ms, .. } => Some((order, *held_until_ms)),
                _ => None,
            })
            .collect();
        assert_eq!(winners.len(), 1, "{backend}: {answers:?}");
        let (winner, until) = winners[0];
        for (order, outcome) in &answers {
            if order != winner {
                assert_eq!(
                    outcome,
                    &HoldOutcome::HeldByOther {
                        held_until_ms: until
                    },
                    "{backend}: {order}"
                );
            }
        }
        let other = if winner == "order-0" {
            "order-1"
        } else {
            "order-0"
        };
        assert_eq!(
            coupons::redeem(&store, &code, "alice", other, None)
                .await
                .unwrap(),
            RedeemOutcome::Held {
                held_until_ms: until
            },
            "{backend}"
        );
    }
}

/// Test: a hold lapses by itself at `held_until` (Redis `TIME`, no job): the next order takes
/// the coupon, and the lapsed order may no longer redeem it while the new hold lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_hold_is_taken_by_the_next_order() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, code, _) = alices_coupon(&store, "lapse-1", &["LAPSE-1"], None).await;
        // A hold of 1 ms (the API's least is 30 s; the store takes any length).
        let HoldOutcome::Held { held_until_ms, .. } =
            coupons::hold(&store, &code, "alice", "o-1", 1, None)
                .await
                .unwrap()
        else {
            panic!("{backend}: not held")
        };
        crate::common::sleep_until_redis_ms(&store, held_until_ms).await;

        let taken = coupons::hold(&store, &code, "alice", "o-2", LONG, None)
            .await
            .unwrap();
        let HoldOutcome::Held {
            held_until_ms: until,
            ..
        } = taken
        else {
            panic!("{backend}: {taken:?}")
        };
        assert!(until > held_until_ms, "{backend}");
        assert_eq!(
            coupons::redeem(&store, &code, "alice", "o-1", None)
                .await
                .unwrap(),
            RedeemOutcome::Held {
                held_until_ms: until
            },
            "{backend}"
        );
        assert!(matches!(
            coupons::redeem(&store, &code, "alice", "o-2", None)
                .await
                .unwrap(),
            RedeemOutcome::Redeemed { repeat: false, .. }
        ));
    }
}

/// Test: an order's hold released, another order redeems the coupon; a hold's release is not
/// journaled (only the redemption is), and the release repeats with `repeat`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_hold_lets_another_order_redeem() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "release-1", &["REL-1"], None).await;
        assert!(matches!(
            coupons::hold(&store, &code, "alice", "o-1", LONG, None)
                .await
                .unwrap(),
            HoldOutcome::Held { .. }
        ));
        assert!(matches!(
            coupons::redeem(&store, &code, "alice", "o-2", None)
                .await
                .unwrap(),
            RedeemOutcome::Held { .. }
        ));

        let released = coupons::release(&store, &code, "o-1").await.unwrap();
        let ReleaseOutcome::Released {
            released: Released::Hold,
            repeat: false,
            released_at_ms,
            ..
        } = released
        else {
            panic!("{backend}: {released:?}")
        };
        let redeemed = coupons::redeem(&store, &code, "alice", "o-2", None)
            .await
            .unwrap();
        assert!(
            matches!(redeemed, RedeemOutcome::Redeemed { repeat: false, .. }),
            "{backend}: {redeemed:?}"
        );
        assert_eq!(
            coupons::release(&store, &code, "o-1").await.unwrap(),
            ReleaseOutcome::Released {
                campaign_id: id.clone(),
                released: Released::Hold,
                released_at_ms,
                repeat: true,
                discount: None,
            },
            "{backend}: the repeat after another order redeemed it"
        );
        assert_eq!(
            journal_kinds(&store, &keys).await,
            ["coupon_issued", "coupon_redeemed"],
            "{backend}"
        );
    }
}

/// Test: a redemption reversed twice is credited back once: the pool's `redeemed` count goes
/// down once, the journal holds one `coupon_released`, the coupon is `issued` again and
/// another order redeems it; the reversed order may take it again later (a new cycle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redemption_reversed_twice_is_credited_back_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "reverse-1", &["REV-1"], None).await;
        assert!(matches!(
            coupons::redeem(&store, &code, "alice", "o-1", None)
                .await
                .unwrap(),
            RedeemOutcome::Redeemed { repeat: false, .. }
        ));
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 1);

        let first = coupons::release(&store, &code, "o-1").await.unwrap();
        let second = coupons::release(&store, &code, "o-1").await.unwrap();
        let ReleaseOutcome::Released {
            released: Released::Redemption,
            repeat: false,
            released_at_ms,
            ..
        } = first
        else {
            panic!("{backend}: {first:?}")
        };
        assert_eq!(
            second,
            ReleaseOutcome::Released {
                campaign_id: id.clone(),
                released: Released::Redemption,
                released_at_ms,
                repeat: true,
                discount: None,
            },
            "{backend}"
        );
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 0, "{backend}");
        let kinds = journal_kinds(&store, &keys).await;
        assert_eq!(
            kinds,
            ["coupon_issued", "coupon_redeemed", "coupon_released"],
            "{backend}"
        );
        let page = coupons::page(&store, "alice", 10, None).await.unwrap();
        assert_eq!(page.coupons[0].state.as_str(), "issued", "{backend}");

        // Redeemable again, by another order; then the first order's release still repeats.
        assert!(matches!(
            coupons::redeem(&store, &code, "alice", "o-2", None)
                .await
                .unwrap(),
            RedeemOutcome::Redeemed { repeat: false, .. }
        ));
        assert!(matches!(
            coupons::release(&store, &code, "o-1").await.unwrap(),
            ReleaseOutcome::Released { repeat: true, .. }
        ));
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 1, "{backend}");
        // o-2 reverses too, and o-1 takes the coupon again: a new cycle.
        coupons::release(&store, &code, "o-2").await.unwrap();
        assert!(matches!(
            coupons::hold(&store, &code, "alice", "o-1", LONG, None)
                .await
                .unwrap(),
            HoldOutcome::Held { .. }
        ));
        assert!(matches!(
            coupons::release(&store, &code, "o-1").await.unwrap(),
            ReleaseOutcome::Released {
                released: Released::Hold,
                repeat: false,
                ..
            }
        ));
    }
}

/// Test: each checkout script sent twice with the same arguments (a lost reply re-sent by the
/// client) answers as its first run did and writes nothing more: the hold keeps its deadline
/// and discount, the redemption answers `repeat` 0 and counts once, the release answers
/// `repeat` 0 and credits back once; every key is the same after each re-run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_script_sent_twice_answers_as_its_first_run() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (id, code, keys) = alices_coupon(&store, "twice-1", &["TWICE-1"], None).await;
        let calls = Calls {
            keys: &keys,
            campaign_id: &id,
            code: &code,
        };

        let hold = calls
            .hold(&store, "o-1", "9000", "900", "00000000000000a1")
            .await;
        assert!(
            hold.starts_with("held:") && hold.ends_with(":900:0"),
            "{hold}"
        );
        let after = dump_all(&redis, &store).await;
        let again = calls
            .hold(&store, "o-1", "9000", "900", "00000000000000a1")
            .await;
        assert_eq!(again, hold, "{backend}: the hold's re-run");
        assert_eq!(
            dump_all(&redis, &store).await,
            after,
            "{backend}: the hold's re-run wrote"
        );

        let redeem = calls.redeem(&store, "o-1", "00000000000000b1").await;
        // The hold's discount is kept: the redeem gave no total.
        assert!(
            redeem.starts_with("redeemed:") && redeem.ends_with(":0:900"),
            "{redeem}"
        );
        let after = dump_all(&redis, &store).await;
        assert_eq!(
            calls.redeem(&store, "o-1", "00000000000000b1").await,
            redeem,
            "{backend}"
        );
        assert_eq!(
            dump_all(&redis, &store).await,
            after,
            "{backend}: the redeem's re-run wrote"
        );
        // Another call of the same order is a repeat.
        let other = calls.redeem(&store, "o-1", "00000000000000b2").await;
        assert_eq!(other, redeem.replace(":0:900", ":1:900"), "{backend}");

        let release = calls.release(&store, "o-1", "00000000000000c1").await;
        assert!(
            release.starts_with("released:redemption:") && release.ends_with(":0"),
            "{release}"
        );
        let after = dump_all(&redis, &store).await;
        assert_eq!(
            calls.release(&store, "o-1", "00000000000000c1").await,
            release,
            "{backend}"
        );
        assert_eq!(
            dump_all(&redis, &store).await,
            after,
            "{backend}: the release's re-run wrote"
        );
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 0, "{backend}");
        assert_eq!(
            journal_kinds(&store, &keys).await,
            ["coupon_issued", "coupon_redeemed", "coupon_released"],
            "{backend}"
        );
    }
}

/// Test: a campaign with a minimum order refuses a hold and a redeem that give no order total
/// (`order_total_required` with the minimum), writing nothing: the minimum cannot be skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimum_needs_the_order_total() {
    let rule = Discount {
        off: Off::Amount(500),
        min_order_cents: Some(5_000),
    };
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, code, _) = alices_coupon(&store, "min-total", &["MINT-1"], Some(rule)).await;
        let before = dump_all(&redis, &store).await;

        let hold = coupons::hold(&store, &code, "alice", "o-1", LONG, None).await;
        let redeem = coupons::redeem(&store, &code, "alice", "o-1", None).await;

        let required = 5_000;
        assert_eq!(
            hold.unwrap(),
            HoldOutcome::OrderTotalRequired {
                min_order_cents: required
            },
            "{backend}"
        );
        assert_eq!(
            redeem.unwrap(),
            RedeemOutcome::OrderTotalRequired {
                min_order_cents: required
            },
            "{backend}"
        );
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );
    }
}

/// Test: an order below the campaign's minimum is refused (`below_minimum` with the minimum)
/// by the hold and the redeem, and writes nothing (every key compared before and after); at
/// the minimum the discount is the campaign's, kept with the hold and recorded with its
/// redemption.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_minimum_writes_nothing() {
    let rule = Discount {
        off: Off::Percent {
            percent: 15,
            max_cents: Some(1_000),
        },
        min_order_cents: Some(5_000),
    };
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, code, keys) = alices_coupon(&store, "min-1", &["MIN-1"], Some(rule)).await;
        let below = HoldOutcome::BelowMinimum {
            min_order_cents: 5_000,
        };

        let before = dump_all(&redis, &store).await;
        let hold = coupons::hold(&store, &code, "alice", "o-1", LONG, Some(4_999));
        assert_eq!(hold.await.unwrap(), below, "{backend}");
        let redeem = coupons::redeem(&store, &code, "alice", "o-1", Some(4_999));
        assert_eq!(
            redeem.await.unwrap(),
            RedeemOutcome::BelowMinimum {
                min_order_cents: 5_000
            },
            "{backend}"
        );
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );

        // 15 % of 5,999 is 899.85: 899; of 9,999 it is 1,499: capped at 1,000.
        let held = coupons::hold(&store, &code, "alice", "o-1", LONG, Some(5_999));
        let HoldOutcome::Held {
            discount_cents,
            discount,
            ..
        } = held.await.unwrap()
        else {
            panic!("{backend}: not held")
        };
        assert_eq!((discount_cents, discount), (Some(899), Some(rule)));
        let redeemed = coupons::redeem(&store, &code, "alice", "o-1", Some(9_999));
        let RedeemOutcome::Redeemed { discount_cents, .. } = redeemed.await.unwrap() else {
            panic!("{backend}: not redeemed")
        };
        assert_eq!(discount_cents, Some(1_000), "{backend}");
        assert_eq!(pool_count(&store, &keys, "min_order").await, 5_000);
    }
}

/// Test: records written before holds existed still read: a redemption recorded as
/// `<user>\n<grabbed_at>\n<order>\n<redeemed_at>` answers its order's repeat (no discount
/// known), refuses another order, shows `redeemed` in the user's list, and is reversed by its
/// order's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_before_holds_still_read() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let (_, code, keys) = alices_coupon(&store, "old-1", &["OLD-1"], None).await;
        let mut conn = store.conn().await.unwrap();
        let record: String = redis::cmd("HGET")
            .arg(&keys.issued)
            .arg(&code)
            .query_async(&mut conn)
            .await
            .unwrap();
        let old = format!("{record}\nold-order\n1700000000000");
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg(&keys.issued)
            .arg(&code)
            .arg(&old)
            .ignore()
            .cmd("HINCRBY")
            .arg(&keys.pool)
            .arg("redeemed")
            .arg(1)
            .ignore()
            .query_async(&mut conn)
            .await
            .unwrap();

        let again = coupons::redeem(&store, &code, "alice", "old-order", None).await;
        assert!(matches!(
            again.unwrap(),
            RedeemOutcome::Redeemed {
                repeat: true,
                redeemed_at_ms: 1_700_000_000_000,
                discount_cents: None,
                ..
            }
        ));
        assert!(matches!(
            coupons::hold(&store, &code, "alice", "new-order", LONG, None)
                .await
                .unwrap(),
            HoldOutcome::AlreadyRedeemed { .. }
        ));
        let page = coupons::page(&store, "alice", 10, None).await.unwrap();
        assert_eq!(page.coupons[0].state.as_str(), "redeemed", "{backend}");
        assert_eq!(page.coupons[0].redeemed_at_ms, Some(1_700_000_000_000));

        assert!(matches!(
            coupons::release(&store, &code, "old-order").await.unwrap(),
            ReleaseOutcome::Released {
                released: Released::Redemption,
                repeat: false,
                ..
            }
        ));
        assert_eq!(pool_count(&store, &keys, "redeemed").await, 0, "{backend}");
        let record_after: String = redis::cmd("HGET")
            .arg(&keys.issued)
            .arg(&code)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(record_after, record, "{backend}: issued again as grabbed");
    }
}
