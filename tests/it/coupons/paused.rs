//! Batches of uploaded codes cut short by a paused master, on the 3-master + 3-replica cluster,
//! then sent again before the start, after the start and after the close.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use harness::ReplicatedCluster;
use hongbao::coupons::rules::{campaign_id, pool_of_code, CodeSource};
use hongbao::coupons::{
    self, keys::directory, AddCodesOutcome, CampaignCreateOutcome, CouponGrabOutcome, PoolKeys,
};
use hongbao::store::{Config, Store};

use super::{campaign, redis_ms};

use crate::coupons::NO_VISIT_LIMIT as VISITS;

/// Sets a field of every pool of campaign `no` (moving its start or end as time would).
async fn set_every_pool(store: &Store, no: u64, pools: u32, field: &str, value: i64) {
    let mut conn = store.conn().await.unwrap();
    for k in 0..pools {
        let _: i64 = redis::cmd("HSET")
            .arg(PoolKeys::new("hb", &campaign_id(no), no, k, pools).pool)
            .arg(field)
            .arg(value)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// Test: three batches of a 24-pool campaign land on the pools of two masters while the
/// third is paused (each answers 503), then are sent again: the first before the start (it
/// completes), the second after the start and the third after the close (the shares of the
/// paused master's pools are released). Afterwards every code of every batch is either
/// grabbed in the campaign or taken by a new campaign, and the close counts each code the
/// campaign holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_cut_short_by_a_paused_master_end_in_one_place() {
    let cluster = ReplicatedCluster::start();
    let store = Arc::new(Store::new(Config {
        redis_url: cluster.url(),
        redis_cluster: true,
        response_timeout: Duration::from_millis(1_000),
        ..Config::default()
    }));
    let now = redis_ms(&store).await;
    let mut req = campaign(
        now,
        "paused",
        CodeSource::Uploaded(vec!["SEED-0001".into()]),
    );
    req.starts_at_ms = Some(now + 3_600_000);
    req.ends_at_ms = now + 7_200_000;
    req.redeem_by_ms = now + 10_800_000;
    req.codes_planned = Some(60_000);
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(&store, &req).await else {
        panic!("not created")
    };
    let (id, no, pools) = (c.campaign_id.clone(), c.campaign_no, c.pools);
    assert_eq!(pools, 24);
    let pool_key = |k: u32| PoolKeys::new("hb", &id, no, k, pools).pool;
    // The paused master holds neither pool 0 nor a batch code's directory tag, so each batch
    // is recorded and claimed in full and then cut short on that master's pools.
    let (master0, _) = cluster.master_and_replica_of(&pool_key(0));
    let paused = (0..pools)
        .map(|k| cluster.master_and_replica_of(&pool_key(k)).0)
        .find(|m| *m != master0)
        .unwrap();
    let on_paused = |k: u32| cluster.master_and_replica_of(&pool_key(k)).0 == paused;
    let batch = |name: &str| -> Vec<String> {
        (0..)
            .map(|i| format!("{name}-{i:04}"))
            .filter(|code| cluster.master_and_replica_of(&directory("hb", code)).0 != paused)
            .take(60)
            .collect()
    };
    let batches = [batch("BEFORE"), batch("AFTER"), batch("CLOSED")];
    let refs = ["before", "after", "closed"];
    // Paused for about a second (the store's reply timeout), well within the cluster's node
    // timeout (5 s): no failover.
    cluster.pause(paused);
    let cut = futures::future::join_all(
        refs.iter()
            .zip(&batches)
            .map(|(reference, codes)| coupons::add_codes(&store, &id, reference, codes)),
    )
    .await;
    cluster.resume(paused);
    assert!(
        cut.iter().all(Result::is_err),
        "{cut:?} with a master paused"
    );

    let before = coupons::add_codes(&store, &id, refs[0], &batches[0])
        .await
        .unwrap();
    set_every_pool(&store, no, pools, "starts_at", now - 1_000).await;
    let after = coupons::add_codes(&store, &id, refs[1], &batches[1])
        .await
        .unwrap();

    let missed = |codes: &[String]| -> BTreeSet<String> {
        codes
            .iter()
            .filter(|code| on_paused(pool_of_code(no, code, pools)))
            .cloned()
            .collect()
    };
    let AddCodesOutcome::Added { released, .. } = &after else {
        panic!("after the start: {after:?}")
    };
    assert_eq!(
        released.iter().cloned().collect::<BTreeSet<_>>(),
        missed(&batches[1])
    );
    assert!(
        matches!(&before, AddCodesOutcome::Added { released, added: 60, .. } if released.is_empty()),
        "before the start: {before:?}"
    );

    // Every code in the campaign is grabbed, each once.
    let mut grabbed = BTreeSet::new();
    for u in 0.. {
        match coupons::grab(&store, &id, &format!("grabber-{u}"), VISITS)
            .await
            .unwrap()
        {
            CouponGrabOutcome::Grabbed { code, .. } => assert!(grabbed.insert(code)),
            CouponGrabOutcome::SoldOut => break,
            other => panic!("grabber-{u}: {other:?}"),
        }
    }
    set_every_pool(&store, no, pools, "ends_at", now).await;
    let mut conn = store.conn().await.unwrap();
    let (counts, _) = coupons::close::close(&store, &mut conn, no)
        .await
        .unwrap()
        .unwrap();
    let closed = coupons::add_codes(&store, &id, refs[2], &batches[2])
        .await
        .unwrap();

    let in_campaign = |codes: &[String]| -> BTreeSet<String> {
        let missed = missed(codes);
        codes
            .iter()
            .filter(|c| !missed.contains(*c))
            .cloned()
            .collect()
    };
    let mut expected: BTreeSet<String> = ["SEED-0001".to_string()].into();
    expected.extend(batches[0].iter().cloned());
    expected.extend(in_campaign(&batches[1]));
    expected.extend(in_campaign(&batches[2]));
    assert_eq!(
        grabbed, expected,
        "the codes grabbed are those in the campaign"
    );
    assert_eq!(
        (counts.issued, counts.never_issued),
        (expected.len() as u64, 0),
        "the close's counts"
    );
    let AddCodesOutcome::Added { released, .. } = &closed else {
        panic!("after the close: {closed:?}")
    };
    assert_eq!(
        released.iter().cloned().collect::<BTreeSet<_>>(),
        missed(&batches[2])
    );

    // The released codes are free for a new campaign.
    let mut free: Vec<String> = missed(&batches[1]).into_iter().collect();
    free.extend(missed(&batches[2]));
    let now = redis_ms(&store).await;
    let reuse = campaign(now, "reuse", CodeSource::Uploaded(free));
    assert!(
        matches!(
            coupons::create(&store, &reuse).await,
            Ok(CampaignCreateOutcome::Created(_))
        ),
        "the released codes are not free"
    );
}
