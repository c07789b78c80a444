//! Campaigns: created once, spread over every master, and their batches joined before the
//! start.

use std::collections::HashSet;

use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{CodeSource, NewCampaign, Status};
use hongbao::coupons::{
    self, AddCodesOutcome, CampaignCreateOutcome, CouponGrabOutcome, Created, PoolKeys,
    RedeemOutcome,
};

use crate::common::sleep_until_redis_ms;

use super::{campaign, coupon_store, dump_all, redis_ms};

/// Test: creating a campaign: the same request under the same reference finds the same
/// campaign (also when the first attempt stopped after recording it), another request under it
/// is refused, and duplicate codes (within the request, or another campaign's) and an end in
/// the past are refused; every refusal writes nothing (`DUMP` of every key before and after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_a_campaign_once() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes = |from: usize, n: usize| -> Vec<String> {
            (from..from + n).map(|i| format!("DROP-{i:04}")).collect()
        };
        let first = campaign(now, "drop-1", CodeSource::Uploaded(codes(0, 100)));
        let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(&store, &first).await else {
            panic!("{backend}: not created")
        };
        assert_eq!(
            (
                &c.campaign_id[..5],
                c.campaign_id.len(),
                c.pools,
                c.codes_total,
                c.repeat
            ),
            ("00001", 21, 1, 100, false)
        );
        let again = coupons::create(&store, &first).await.unwrap();
        assert_eq!(
            again,
            CampaignCreateOutcome::Created(Created {
                repeat: true,
                ..c.clone()
            }),
            "{backend}"
        );

        let before = dump_all(&redis, &store).await;
        let refusals = [
            (
                campaign(now, "drop-1", CodeSource::Uploaded(codes(0, 99))),
                CampaignCreateOutcome::ReferenceReused,
            ),
            (
                campaign(now, "drop-2", CodeSource::Uploaded(codes(90, 20))),
                CampaignCreateOutcome::DuplicateCodes(codes(90, 10)),
            ),
            (
                campaign(
                    now,
                    "drop-3",
                    CodeSource::Uploaded(vec!["A-1111".into(), "B-2222".into(), "A-1111".into()]),
                ),
                CampaignCreateOutcome::DuplicateCodes(vec!["A-1111".into()]),
            ),
            (
                NewCampaign {
                    starts_at_ms: None,
                    ends_at_ms: now - 1,
                    redeem_by_ms: now + 1_000,
                    ..campaign(now, "drop-4", CodeSource::Generated(10))
                },
                CampaignCreateOutcome::EndsInPast,
            ),
        ];
        for (req, expected) in refusals {
            assert_eq!(
                coupons::create(&store, &req).await.unwrap(),
                expected,
                "{backend}"
            );
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );

        // A creation cut short after its record: the same request completes it.
        let second = campaign(now, "drop-5", CodeSource::Uploaded(codes(100, 50)));
        let keys = PoolKeys::new("hb", "00002", 2, 0, 1);
        let Ok(CampaignCreateOutcome::Created(c2)) = coupons::create(&store, &second).await else {
            panic!("{backend}: not created")
        };
        let mut conn = store.conn().await.unwrap();
        let _: () = redis::cmd("DEL")
            .arg(&keys.pool)
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await
            .unwrap();
        let again = coupons::create(&store, &second).await.unwrap();
        assert_eq!(
            again,
            CampaignCreateOutcome::Created(Created { repeat: true, ..c2 }),
            "{backend}"
        );
        let left: u64 = redis::cmd("LLEN")
            .arg(&keys.codes)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(left, 50, "{backend}");
    }
}

/// Test: a 200,000-code generated campaign on the 3-master cluster has 24 pools, 8 on each
/// master, every pool holding its share of the indices and the campaign's one secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_campaign_spreads_over_every_master() {
    let redis = TestRedis::start(Backend::Cluster);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let req = campaign(now, "big-drop", CodeSource::Generated(200_000));
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(&store, &req).await else {
        panic!("not created")
    };
    assert_eq!((c.pools, c.codes_total), (24, 200_000));
    let per_master: Vec<usize> = redis
        .on_every_node(redis::cmd("KEYS").arg("*:coupon:*").clone())
        .await
        .into_iter()
        .map(|v| match v {
            redis::Value::Array(keys) => keys.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(per_master, vec![8, 8, 8], "pools per master");
    let mut conn = store.conn().await.unwrap();
    let (mut total, mut secrets) = (0u64, HashSet::new());
    for k in 0..24 {
        let keys = PoolKeys::new("hb", &c.campaign_id, c.campaign_no, k, 24);
        let (t, next, end, secret): (u64, u64, u64, String) = redis::cmd("HMGET")
            .arg(&keys.pool)
            .arg("total")
            .arg("next")
            .arg("end")
            .arg("secret")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(end - next, t);
        total += t;
        secrets.insert(secret);
    }
    assert_eq!((total, secrets.len()), (200_000, 1));
    let view = coupons::campaign(&store, &c.campaign_id, Some("nobody"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            view.codes_total,
            view.codes_left,
            view.codes_issued,
            view.status,
            view.mine.len()
        ),
        (200_000, 200_000, 0, Status::Open, 0)
    );
}

/// Uploaded codes `BATCH-<from>` to `BATCH-<from + n - 1>` (4 digits).
fn batch(from: usize, n: usize) -> Vec<String> {
    (from..from + n).map(|i| format!("BATCH-{i:04}")).collect()
}

/// Creates `c`; its id.
async fn created(store: &hongbao::Store, c: &NewCampaign) -> String {
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(store, c).await else {
        panic!("not created")
    };
    c.campaign_id
}

/// A campaign of 10 uploaded codes (`BATCH-0000` to `BATCH-0009`) starting at `now` + 2 s,
/// and the batch `b1` of 20 more added to it; its id.
async fn later_with_a_batch(store: &hongbao::Store, now: i64) -> String {
    let later = NewCampaign {
        starts_at_ms: Some(now + 2_000),
        ..campaign(now, "later", CodeSource::Uploaded(batch(0, 10)))
    };
    let id = created(store, &later).await;
    let added = coupons::add_codes(store, &id, "b1", &batch(10, 20))
        .await
        .unwrap();
    assert!(
        matches!(added, AddCodesOutcome::Added { added: 20, .. }),
        "{added:?}"
    );
    id
}

/// Test: a batch joins a campaign before its start once per reference: sent again, it
/// answers `repeat` and adds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_joins_before_the_start_once_per_reference() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let id = later_with_a_batch(&store, redis_ms(&store).await).await;

        let again = coupons::add_codes(&store, &id, "b1", &batch(10, 20))
            .await
            .unwrap();

        let repeat = AddCodesOutcome::Added {
            codes_total: 30,
            repeat: true,
            added: 20,
            released: vec![],
        };
        assert_eq!(again, repeat, "{backend}");
    }
}

/// Test: another batch under a used reference, a code of another campaign or of the campaign,
/// a repeated code, a generated campaign, a started one and no campaign are refused, writing
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_batches_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let id = later_with_a_batch(&store, now).await;
        let open = created(
            &store,
            &campaign(now, "open", CodeSource::Uploaded(vec!["TAKEN-1".into()])),
        )
        .await;
        let generated = created(&store, &campaign(now, "gen", CodeSource::Generated(5))).await;
        let mut with_taken = batch(40, 3);
        with_taken.push("TAKEN-1".into());
        let repeated = vec!["X-0001".to_string(), "X-0001".to_string()];
        let refused = [
            (&id, "b1", batch(10, 21), AddCodesOutcome::ReferenceReused),
            (
                &id,
                "b2",
                with_taken,
                AddCodesOutcome::DuplicateCodes(vec!["TAKEN-1".into()]),
            ),
            (
                &id,
                "b3",
                batch(5, 1),
                AddCodesOutcome::DuplicateCodes(batch(5, 1)),
            ),
            (
                &id,
                "b4",
                repeated,
                AddCodesOutcome::DuplicateCodes(vec!["X-0001".into()]),
            ),
            (&generated, "b5", batch(60, 1), AddCodesOutcome::Generated),
            (&open, "b6", batch(70, 1), AddCodesOutcome::Started),
            (
                &"ZZZZZ".to_string(),
                "b7",
                batch(80, 1),
                AddCodesOutcome::NotFound,
            ),
        ];
        let before = dump_all(&redis, &store).await;

        for (campaign_id, reference, codes, expected) in refused {
            let got = coupons::add_codes(&store, campaign_id, reference, &codes)
                .await
                .unwrap();
            assert_eq!(got, expected, "{backend}: {reference}");
        }

        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );
    }
}

/// Test: after the start a batch is refused `Started`, and the codes of the creation and of
/// the batch are grabbed, each once, until the campaign is sold out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_start_every_batchs_codes_are_grabbed_once() {
    let visits = crate::coupons::NO_VISIT_LIMIT;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let id = later_with_a_batch(&store, now).await;
        sleep_until_redis_ms(&store, now + 2_000).await;

        let late = coupons::add_codes(&store, &id, "b8", &batch(90, 1))
            .await
            .unwrap();
        let mut got = HashSet::new();
        for u in 0..31 {
            match coupons::grab(&store, &id, &format!("user-{u}"), visits)
                .await
                .unwrap()
            {
                CouponGrabOutcome::Grabbed { code, .. } => assert!(got.insert(code), "{backend}"),
                CouponGrabOutcome::SoldOut => assert_eq!(u, 30, "{backend}"),
                other => panic!("{backend}: {other:?}"),
            }
        }

        assert_eq!(late, AddCodesOutcome::Started, "{backend}");
        assert_eq!(got, batch(0, 30).into_iter().collect(), "{backend}");
    }
}

/// Test: a code of an added batch is redeemed by its code alone, like one of the creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_of_an_added_batch_is_redeemed_by_its_code() {
    let visits = crate::coupons::NO_VISIT_LIMIT;
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    let id = later_with_a_batch(&store, now).await;
    sleep_until_redis_ms(&store, now + 2_000).await;
    let mut holder = None;
    for u in 0..30 {
        let user = format!("user-{u}");
        if let CouponGrabOutcome::Grabbed { code, .. } =
            coupons::grab(&store, &id, &user, visits).await.unwrap()
        {
            if code.as_str() >= "BATCH-0010" {
                holder = Some((user, code));
                break;
            }
        }
    }
    let (user, code) = holder.expect("a code of the batch was grabbed");

    let redeemed = coupons::redeem(&store, &code, &user, "o-1", None)
        .await
        .unwrap();

    assert!(
        matches!(redeemed, RedeemOutcome::Redeemed { repeat: false, .. }),
        "{redeemed:?}"
    );
}
