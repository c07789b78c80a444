//! A campaign's times: the start, the visit limit, and ended campaigns closed once.

use harness::{Backend, TestRedis};
use hongbao::api::error::rfc3339;
use serde_json::json;

use super::{create, grab, redeem, uploaded, view};
use crate::common::{self};
use crate::coupons::{coupon_store, redis_ms};

/// Test: before `starts_at` a grab is 425 `not_started` with `Retry-After` up to the start;
/// seed 004's visit limit turns the (N+1)th counted visit in a window into 429 with
/// `Retry-After`; at the start the grab wins; once every code is issued 410 `sold_out`; after
/// `ends_at` it is 410 `ended` (also where the campaign was seen sold out) and the campaign
/// shows `ended`. A coupon past `redeem_by` is 410 `expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_and_the_visit_limit() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |c| {
            c.coupons.visits.per_window = 3;
            c.coupons.visits.window_ms = 60_000;
        });
        let now = redis_ms(&store).await;
        let starts = now + 2_500;
        let ends = now + 5_000;
        let body = json!({
            "title": "flash", "codes": ["FLASH-1", "FLASH-2"],
            "starts_at": rfc3339(starts), "ends_at": rfc3339(ends),
            "redeem_by": rfc3339(ends), "reference": "flash-1",
        });
        let (s, c) = create(&store, &body).await;
        assert_eq!((s, &c["status"]), (201, &json!("scheduled")), "{c}");
        let id = c["campaign_id"].as_str().unwrap().to_string();
        for _ in 0..3 {
            let (s, b, retry) = grab(&store, &id, "bob").await;
            assert_eq!((s, b["error"].as_str()), (425, Some("not_started")), "{b}");
            let secs: u64 = retry.unwrap().parse().unwrap();
            assert!((1..=3).contains(&secs), "Retry-After {secs}");
        }
        let (s, b, retry) = grab(&store, &id, "bob").await;
        assert_eq!((s, b["error"].as_str()), (429, Some("rate_limited")), "{b}");
        let secs: u64 = retry.unwrap().parse().unwrap();
        assert!((1..=60).contains(&secs), "Retry-After {secs}");
        // Another user is not limited by bob's visits.
        common::sleep_until_redis_ms(&store, starts).await;
        let (s, b, _) = grab(&store, &id, "carol").await;
        assert_eq!(s, 200, "{b}");
        let code = b["code"].as_str().unwrap().to_string();
        let (_, v) = view(&store, &id, "carol").await;
        assert_eq!(
            (&v["status"], &v["codes_left"]),
            (&json!("open"), &json!(1))
        );
        let (s, _, _) = grab(&store, &id, "erin").await;
        assert_eq!(s, 200);
        let (s, b, _) = grab(&store, &id, "frank").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("sold_out")), "{b}");
        // After the end, also from a sandbox that has seen it sold out: 410 ended.
        common::sleep_until_redis_ms(&store, ends).await;
        let (s, b, _) = grab(&store, &id, "dave").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("ended")), "{b}");
        let (_, v) = view(&store, &id, "carol").await;
        assert_eq!(v["status"], "ended");
        let (s, b) = redeem(&store, &code, "carol", "late-order").await;
        assert_eq!((s, b["error"].as_str()), (410, Some("expired")), "{b}");
        assert_eq!(b["redeem_by"], json!(rfc3339(ends)));
    }
}

/// Test: reclaim-cron closes each ended campaign once: nothing before its end; after it, the
/// campaign's counts reported once in the journal (`campaign_ended`: issued, redeemed, never
/// issued, summed over a 24-pool generated campaign's pools), the un-issued uploaded codes'
/// list released, every pool key given its expiry, the campaign still showing `codes_left` +
/// issued = `codes_total`, and an issued coupon still redeemable until `redeem_by`. A second
/// run closes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_campaigns_are_closed_once() {
    use hongbao::domain::journal::Kind;
    use hongbao::store::journal::{self, JournalIndex};

    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let ends = now + 3_000;
        let codes: Vec<String> = (0..5).map(|i| format!("END-{i}")).collect();
        let mut up = uploaded(now, &codes, 3_000, "end-up");
        up["ends_at"] = json!(rfc3339(ends));
        let (_, up) = create(&store, &up).await;
        let up_id = up["campaign_id"].as_str().unwrap().to_string();
        let gen = json!({
            "title": "big", "generate": 60_000, "ends_at": rfc3339(ends),
            "redeem_by": rfc3339(ends + 600_000), "reference": "end-gen",
        });
        let (s, gen) = create(&store, &gen).await;
        assert_eq!(s, 201, "{gen}");
        let gen_id = gen["campaign_id"].as_str().unwrap().to_string();
        let mut up_won = Vec::new();
        for user in ["u1", "u2"] {
            let (s, b, _) = grab(&store, &up_id, user).await;
            assert_eq!(s, 200);
            up_won.push(b["code"].as_str().unwrap().to_string());
        }
        for user in ["g1", "g2", "g3"] {
            let (s, _, _) = grab(&store, &gen_id, user).await;
            assert_eq!(s, 200);
        }
        let (s, _) = redeem(&store, &up_won[0], "u1", "o-1").await;
        assert_eq!(s, 200);

        let early = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(
            early.campaigns_closed, 0,
            "{backend}: closed before the end"
        );
        common::sleep_until_redis_ms(&store, ends).await;
        let run = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(
            (run.campaigns_closed, run.campaigns_failed),
            (2, 0),
            "{backend}: {run:?}"
        );
        let again = hongbao::lambda::reclaim::run(&store, None).await.unwrap();
        assert_eq!(again.campaigns_closed, 0, "{backend}: closed twice");
        // A close sent again (a run cut short after pool 0 reported, before the index let the
        // campaign go): the same counts, no second report.
        let mut conn = store.conn().await.unwrap();
        let no = hongbao::coupons::rules::campaign_no(&up_id).unwrap();
        let (counts, _) = hongbao::coupons::close::close(&store, &mut conn, no)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (counts.issued, counts.redeemed, counts.never_issued),
            (2, 1, 3)
        );

        let index = JournalIndex::new("hb");
        let mut ended = Vec::new();
        for key in journal::pending(&store, &index).await.unwrap() {
            for e in journal::read(&store, &key, 10_000).await.unwrap() {
                if e.kind == Kind::CampaignEnded {
                    let c = e.campaign_counts.unwrap();
                    ended.push((e.reference.clone(), c.issued, c.redeemed, c.never_issued));
                }
            }
        }
        ended.sort();
        // The journal names a campaign by its number's 5 characters (the feed by its id).
        let mut expected = vec![
            (up_id[..5].to_string(), 2, 1, 3),
            (gen_id[..5].to_string(), 3, 0, 59_997),
        ];
        expected.sort();
        assert_eq!(ended, expected, "{backend}");

        for (id, total, issued) in [(&up_id, 5, 2), (&gen_id, 60_000, 3)] {
            let (_, v) = view(&store, id, "u1").await;
            assert_eq!(v["status"], "ended");
            assert_eq!(
                v["codes_left"].as_u64().unwrap() + issued,
                total,
                "{backend}: {v}"
            );
        }
        for key in redis.all_keys().await {
            if key.contains(&format!(":coupon:{up_id}:"))
                || key.contains(&format!(":coupon:{gen_id}:"))
            {
                assert!(!key.ends_with(":codes"), "{backend}: {key} not released");
                let ttl: i64 = redis::cmd("PTTL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                assert!(ttl > 0, "{backend}: {key} kept forever");
            }
        }
        let (s, b) = redeem(&store, &up_won[1], "u2", "o-2").await;
        assert_eq!(s, 200, "{backend}: {b}");
    }
}
