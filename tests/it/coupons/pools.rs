//! Campaigns of many pools: empty home pools borrow from the others; a code redeemed by
//! itself.

use std::collections::HashSet;

use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_id, home_pool, CodeKey, CodeSource, Status};
use hongbao::coupons::{self, CampaignCreateOutcome, CouponGrabOutcome, PoolKeys, RedeemOutcome};
use hongbao::store::scripts::{text, Call, CouponCreatePoolCall, CouponGrabCall};
use hongbao::Store;

use super::{campaign, coupon_store, redis_ms, SECRET};

/// Writes pool `k` of a 3-pool uploaded campaign number `no` with `codes`.
async fn create_pool_of_three(store: &Store, no: u64, k: u32, codes: &[&str], now: i64) {
    let keys = PoolKeys::new("hb", &campaign_id(no), no, k, 3);
    let reply = CouponCreatePoolCall {
        pool: &keys.pool,
        codes: &keys.codes,
        fingerprint: "v1:three",
        title: "three pools",
        starts_at_ms: now - 1_000,
        ends_at_ms: now + 600_000,
        redeem_by_ms: now + 1_200_000,
        per_user: 1,
        pools: 3,
        kind: "uploaded",
        first_index: 0,
        end_index: 0,
        secret: "",
        campaign_total: 15,
        id_tag: "",
        batch: codes,
        ..Default::default()
    }
    .invocation()
    .invoke_async(&mut store.conn().await.unwrap())
    .await
    .unwrap();
    assert_eq!(text("coupon_create_pool", reply).unwrap(), "created");
}

/// Test: three pools holding 5, 0 and 10 codes, 40 users grabbing at once through the store:
/// users whose home pool is empty take codes from the others, so exactly the 15 codes are
/// issued, each once, and `sold_out` is answered only once every pool is empty. A reservation
/// left open (a sandbox that stopped after step 1) is completed by the user's next grab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_home_pools_borrow_from_the_others() {
    let visits = crate::coupons::NO_VISIT_LIMIT;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let pool0: Vec<String> = (0..5).map(|i| format!("P0-{i:03}")).collect();
        let pool2: Vec<String> = (0..10).map(|i| format!("P2-{i:03}")).collect();
        let (refs0, refs2): (Vec<&str>, Vec<&str>) = (
            pool0.iter().map(String::as_str).collect(),
            pool2.iter().map(String::as_str).collect(),
        );
        create_pool_of_three(&store, 9, 0, &refs0, now).await;
        create_pool_of_three(&store, 9, 1, &[], now).await;
        create_pool_of_three(&store, 9, 2, &refs2, now).await;
        let id = campaign_id(9);

        // A reservation left open: step 1 only, for a user of the empty pool 1.
        let stranded = (0..)
            .map(|u| format!("stranded-{u}"))
            .find(|u| home_pool(9, u, 3) == 1)
            .unwrap();
        let keys1 = PoolKeys::new("hb", &id, 9, 1, 3);
        let reply = CouponGrabCall {
            pool: &keys1.pool,
            codes: &keys1.codes,
            issued: &keys1.issued,
            issued_by_time: &keys1.issued_by_time,
            holders: &keys1.holders,
            rate: &keys1.visits(&stranded),
            pending: &keys1.pending,
            journal: &keys1.journal,
            user_id: &stranded,
            home: 1,
            rate_limit: 0,
            rate_window_ms: 1_000,
            reservation: "00000000000000r1",
            campaign_id: &id,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        assert_eq!(
            text("coupon_grab", reply).unwrap(),
            "reserved:00000000000000r1"
        );

        let users: Vec<String> = (0..40).map(|u| format!("user-{u}")).collect();
        let tasks = users.iter().map(|u| {
            let (store, u, id) = (store.clone(), u.clone(), id.clone());
            tokio::spawn(async move { coupons::grab(&store, &id, &u, visits).await.unwrap() })
        });
        let mut codes = Vec::new();
        let mut sold_out = 0;
        for outcome in join_all(tasks).await {
            match outcome.unwrap() {
                CouponGrabOutcome::Grabbed { code, .. } => codes.push(code),
                CouponGrabOutcome::SoldOut => sold_out += 1,
                other => panic!("{backend}: {other:?}"),
            }
        }
        // The stranded reservation holds one code (taken by its re-drive below) or none left.
        let again = coupons::grab(&store, &id, &stranded, visits).await.unwrap();
        match &again {
            CouponGrabOutcome::AlreadyGrabbed { codes: mine } => codes.extend(mine.iter().cloned()),
            CouponGrabOutcome::SoldOut => {}
            other => panic!("{backend}: {other:?}"),
        }
        assert_eq!(codes.len(), 15, "{backend}: {sold_out} sold out, {again:?}");
        let distinct: HashSet<&String> = codes.iter().collect();
        assert_eq!(distinct.len(), 15, "{backend}: a code issued twice");
        let mut conn = store.conn().await.unwrap();
        for k in 0..3 {
            let keys = PoolKeys::new("hb", &id, 9, k, 3);
            let left: u64 = redis::cmd("LLEN")
                .arg(&keys.codes)
                .query_async(&mut conn)
                .await
                .unwrap();
            let open: u64 = redis::cmd("HLEN")
                .arg(&keys.pending)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!((left, open), (0, 0), "{backend}: pool {k}");
        }
        // The user whose reservation was completed holds its code on a repeat.
        assert_eq!(
            coupons::grab(&store, &id, &stranded, visits).await.unwrap(),
            again
        );
        let view = coupons::campaign(&store, &id, Some("user-0"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                view.codes_total,
                view.codes_left,
                view.codes_issued,
                view.status
            ),
            (15, 0, 15, Status::SoldOut),
            "{backend}"
        );
    }
}

/// Test: through the store, a coupon grabbed from an uploaded and from a generated campaign is
/// redeemed by its code alone (a generated code also in lower case with dashes); a typo, an
/// unknown code and another user's code are `NotFound` alike; the same order repeats, another
/// is refused with the order that redeemed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeem_by_code_alone() {
    let visits = crate::coupons::NO_VISIT_LIMIT;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let mut grabbed = Vec::new();
        for (reference, source) in [
            (
                "up",
                CodeSource::Uploaded(vec!["WELCOME-1".into(), "WELCOME-2".into()]),
            ),
            ("gen", CodeSource::Generated(2)),
        ] {
            let Ok(CampaignCreateOutcome::Created(c)) =
                coupons::create(&store, &campaign(now, reference, source)).await
            else {
                panic!("{backend}: not created")
            };
            let Ok(CouponGrabOutcome::Grabbed { code, .. }) =
                coupons::grab(&store, &c.campaign_id, "alice", visits).await
            else {
                panic!("{backend}: no code")
            };
            grabbed.push((c.campaign_id, code));
        }
        for (id, code) in &grabbed {
            let spelled = if code.len() == 18 {
                format!("{}-{}", &code[..9], &code[9..]).to_lowercase()
            } else {
                code.clone()
            };
            assert_eq!(
                coupons::redeem(&store, code, "bob", "o-1", None)
                    .await
                    .unwrap(),
                RedeemOutcome::NotFound,
                "{backend}: someone else's code"
            );
            let RedeemOutcome::Redeemed {
                campaign_id,
                repeat: false,
                redeemed_at_ms,
                ..
            } = coupons::redeem(&store, &spelled, "alice", "o-1", None)
                .await
                .unwrap()
            else {
                panic!("{backend}: {code} not redeemed")
            };
            assert_eq!(&campaign_id, id);
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-1", None)
                    .await
                    .unwrap(),
                RedeemOutcome::Redeemed {
                    campaign_id: id.clone(),
                    redeemed_at_ms,
                    repeat: true,
                    discount: None,
                    discount_cents: None,
                }
            );
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-2", None)
                    .await
                    .unwrap(),
                RedeemOutcome::AlreadyRedeemed {
                    order_reference: "o-1".into(),
                    redeemed_at_ms
                }
            );
        }
        let generated = &grabbed[1].1;
        let mut typo = generated.clone().into_bytes();
        typo[7] = if typo[7] == b'A' { b'B' } else { b'A' };
        let typo = String::from_utf8(typo).unwrap();
        let never_issued = CodeKey::new(SECRET).unwrap().code(2, 1);
        for code in [typo.as_str(), "NO-SUCH-CODE", never_issued.as_str()] {
            assert_eq!(
                coupons::redeem(&store, code, "alice", "o-3", None)
                    .await
                    .unwrap(),
                RedeemOutcome::NotFound,
                "{backend}: {code}"
            );
        }
    }
}

/// Test: every code a campaign issues, from the grabber's home pool or taken for a reservation
/// of an empty pool, is in its pool's `issued_by_time` once, as
/// `<grabbed_at_ms, 13 digits>:<pool>/<code>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_issued_code_is_indexed_by_time_in_its_pool() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = coupon_store(&redis, |_| {});
    let now = redis_ms(&store).await;
    create_pool_of_three(&store, 9, 0, &["P0-000"], now).await;
    create_pool_of_three(&store, 9, 1, &[], now).await;
    create_pool_of_three(&store, 9, 2, &["P2-000", "P2-001"], now).await;
    let id = campaign_id(9);
    let visits = crate::coupons::NO_VISIT_LIMIT;
    let borrower = (0..)
        .map(|u| format!("u-{u}"))
        .find(|u| home_pool(9, u, 3) == 1);
    let users = borrower
        .into_iter()
        .chain((0..9).map(|u| format!("user-{u}")));
    let mut issued = HashSet::new();
    for user in users {
        if let CouponGrabOutcome::Grabbed {
            code,
            grabbed_at_ms,
            ..
        } = coupons::grab(&store, &id, &user, visits).await.unwrap()
        {
            issued.insert((code, grabbed_at_ms));
        }
    }

    let mut indexed = HashSet::new();
    for k in 0..3 {
        let keys = PoolKeys::new("hb", &id, 9, k, 3);
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(&keys.issued_by_time)
            .arg(0)
            .arg(-1)
            .query_async(&mut store.conn().await.unwrap())
            .await
            .unwrap();
        for member in members {
            let (ms, item) = member.split_once(':').unwrap();
            let (pool, code) = item.split_once('/').unwrap();
            assert_eq!((ms.len(), pool), (13, k.to_string().as_str()), "{member}");
            indexed.insert((code.to_string(), ms.parse::<i64>().unwrap()));
        }
    }
    assert_eq!(indexed.len(), 3);
    assert_eq!(indexed, issued);
}
