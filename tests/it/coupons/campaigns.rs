//! Campaigns: created once, spread over every master, and their batches joined before the
//! start.

use std::collections::HashSet;

use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{CodeSource, NewCampaign, Status, VisitLimit};
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

/// Test: batches of uploaded codes join a campaign before its start, once per reference: a
/// repeat adds nothing, another batch under the reference, a code of another campaign, a
/// repeated code, a generated campaign and a started one are refused, writing nothing; after
/// the start the codes of every batch are grabbed, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_join_before_the_start() {
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1_000,
    };
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let codes = |from: usize, n: usize| -> Vec<String> {
            (from..from + n).map(|i| format!("BATCH-{i:04}")).collect()
        };
        let later = NewCampaign {
            starts_at_ms: Some(now + 2_000),
            ..campaign(now, "later", CodeSource::Uploaded(codes(0, 10)))
        };
        let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(&store, &later).await else {
            panic!("{backend}: not created")
        };
        let Ok(CampaignCreateOutcome::Created(other)) = coupons::create(
            &store,
            &campaign(now, "open", CodeSource::Uploaded(vec!["TAKEN-1".into()])),
        )
        .await
        else {
            panic!("{backend}: not created")
        };
        let Ok(CampaignCreateOutcome::Created(generated)) =
            coupons::create(&store, &campaign(now, "gen", CodeSource::Generated(5))).await
        else {
            panic!("{backend}: not created")
        };
        let id = &c.campaign_id;
        assert_eq!(
            coupons::add_codes(&store, id, "b1", &codes(10, 20))
                .await
                .unwrap(),
            AddCodesOutcome::Added {
                codes_total: 30,
                repeat: false,
                added: 20,
                released: vec![],
            }
        );
        assert_eq!(
            coupons::add_codes(&store, id, "b1", &codes(10, 20))
                .await
                .unwrap(),
            AddCodesOutcome::Added {
                codes_total: 30,
                repeat: true,
                added: 20,
                released: vec![],
            }
        );
        let before = dump_all(&redis, &store).await;
        let mut with_taken = codes(40, 3);
        with_taken.push("TAKEN-1".into());
        let repeated = vec!["X-0001".to_string(), "X-0001".to_string()];
        for (campaign_id, reference, batch, expected) in [
            (id, "b1", codes(10, 21), AddCodesOutcome::ReferenceReused),
            (
                id,
                "b2",
                with_taken,
                AddCodesOutcome::DuplicateCodes(vec!["TAKEN-1".into()]),
            ),
            (
                id,
                "b3",
                codes(5, 1),
                AddCodesOutcome::DuplicateCodes(codes(5, 1)),
            ),
            (
                id,
                "b4",
                repeated,
                AddCodesOutcome::DuplicateCodes(vec!["X-0001".into()]),
            ),
            (
                &generated.campaign_id,
                "b5",
                codes(60, 1),
                AddCodesOutcome::Generated,
            ),
            (
                &other.campaign_id,
                "b6",
                codes(70, 1),
                AddCodesOutcome::Started,
            ),
            (
                &"ZZZZZ".to_string(),
                "b7",
                codes(80, 1),
                AddCodesOutcome::NotFound,
            ),
        ] {
            assert_eq!(
                coupons::add_codes(&store, campaign_id, reference, &batch)
                    .await
                    .unwrap(),
                expected,
                "{backend}: {reference}"
            );
        }
        assert_eq!(
            dump_all(&redis, &store).await,
            before,
            "{backend}: a refusal wrote"
        );

        sleep_until_redis_ms(&store, now + 2_000).await;
        assert_eq!(
            coupons::add_codes(&store, id, "b8", &codes(90, 1))
                .await
                .unwrap(),
            AddCodesOutcome::Started
        );
        let mut got = HashSet::new();
        let mut holders = Vec::new();
        for u in 0..31 {
            let user = format!("user-{u}");
            match coupons::grab(&store, id, &user, visits).await.unwrap() {
                CouponGrabOutcome::Grabbed { code, .. } => {
                    assert!(got.insert(code.clone()), "{backend}");
                    holders.push((user, code));
                }
                CouponGrabOutcome::SoldOut => assert_eq!(u, 30, "{backend}"),
                other => panic!("{backend}: {other:?}"),
            }
        }
        assert_eq!(got, codes(0, 30).into_iter().collect(), "{backend}");
        // A code of an added batch is redeemed by its code alone, like one of the creation.
        let (user, code) = holders
            .iter()
            .find(|(_, c)| c.as_str() >= "BATCH-0010")
            .unwrap();
        assert!(matches!(
            coupons::redeem(&store, code, user, "o-1", None)
                .await
                .unwrap(),
            RedeemOutcome::Redeemed { repeat: false, .. }
        ));
    }
}
