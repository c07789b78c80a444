//! Reclaim throughput: how fast one reclaim-cron run drains a due backlog, through
//! `hongbao::store::reclaim::run_until` (the function's code path: lock, batches of
//! `HONGBAO_RECLAIM_BATCH`, settle.lua per packet, re-drives of pending claims, index removal)
//! against a private `redis-server`.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench reclaim_backlog
//! BENCH_PACKETS=20000 cargo bench -p hongbao-tests --bench reclaim_backlog
//! ```
//!
//! The backlog is made through `packets::create` (1,000 senders, 2 shares of 50 cents, 1 s
//! expiry); one packet in 10 has a share grabbed and claimed, one in 100 a claim left pending
//! after step 1 (reclaim re-drives it). Then one run with the default settings (batch 500,
//! lock 55 s, so at most 50 s of batches) and a 60 s Lambda deadline; the goal is the whole
//! backlog in that one run. Prints packets/s and checks that every cent came back; writes the
//! figures to `target/bench/reclaim_backlog.json` too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use harness::RedisServer;
use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::packets::{self, CreateOutcome, GrabOutcome, NewPacket};
use hongbao::store::keys::Keys;
use hongbao::store::reclaim;
use hongbao::store::scripts::{Call, ClaimCall};
use hongbao::wallet;
use hongbao::{Config, Store};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::write_json;

const DEFAULT_PACKETS: usize = 100_000;
const SENDERS: usize = 1_000;
/// The Lambda deadline of the one reclaim run (template.yaml: reclaim-cron's Timeout).
const DEADLINE_SECS: u64 = 60;

fn main() {
    let n: usize = std::env::var("BENCH_PACKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PACKETS);
    let redis = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cfg = Config {
            redis_url: redis.url(),
            redis_cluster: false,
            redis_cluster_auto: false,
            ..Config::default()
        };
        cfg.packets.packets_per_minute = 0; // thousands of packets per sender
        cfg.packets.max_open_packets = 0;
        cfg.packets.packets_per_day = 0;
        let store = Arc::new(Store::new(cfg));
        let per_sender = n.div_ceil(SENDERS) as i64 * 100;
        for s in 0..SENDERS {
            wallet::deposit(&store, &format!("sender{s}"), per_sender, "seed")
                .await
                .unwrap();
        }
        let req = NewPacket {
            total_cents: 100,
            count: 2,
            mode: Mode::Fixed,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 1,
            greeting: None,
            recipients: Vec::new(),
            opens_in_secs: 0,
            cover: None,
            password: None,
            draw: None,
        };
        let started = Instant::now();
        let made: Vec<(String, i64)> = futures::stream::iter(0..n)
            .map(|i| {
                let store = store.clone();
                let req = req.clone();
                async move {
                    let sender = format!("sender{}", i % SENDERS);
                    let CreateOutcome::Created(p) =
                        packets::create(&store, &sender, &req, None).await.unwrap()
                    else {
                        panic!("create refused")
                    };
                    if i % 10 == 0 {
                        let grabber = format!("grabber{i}");
                        let out = packets::grab(&store, &p.packet_id, &grabber).await.unwrap();
                        assert!(matches!(out, GrabOutcome::Grabbed { .. }), "{out:?}");
                        if i % 100 == 0 {
                            // Claim step 1 only: reclaim must re-drive the credit.
                            let pk = Keys::new("hb").packet(&p.packet_id);
                            let mut conn = store.conn().await.unwrap();
                            let _: redis::Value = ClaimCall {
                                meta: &pk.meta,
                                grabs: &pk.grabs,
                                claims: &pk.claims,
                                coupons: &pk.coupons,
                                books: &pk.meta,
                                journal: &pk.meta,
                                user_id: &grabber,
                                books_of: "",
                                call: "",
                            }
                            .invocation()
                            .invoke_async(&mut conn)
                            .await
                            .unwrap();
                        } else {
                            packets::claim(&store, &p.packet_id, &grabber)
                                .await
                                .unwrap();
                        }
                    }
                    (p.packet_id, p.expires_at_ms)
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        let made_secs = started.elapsed().as_secs_f64();
        let last_due = made.iter().map(|(_, e)| *e).max().unwrap();
        loop {
            let mut conn = store.conn().await.unwrap();
            let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
            if s * 1000 + us / 1000 > last_due {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let claimed_total: i64 = (0..n).filter(|i| i % 10 == 0).count() as i64 * 50;
        let expected_refund = n as i64 * 100 - claimed_total;

        let deadline = Instant::now() + Duration::from_secs(DEADLINE_SECS);
        let t0 = Instant::now();
        let summary = reclaim::run_until(&store, Some(deadline)).await.unwrap();
        let secs = t0.elapsed().as_secs_f64();

        println!("reclaim backlog (one run, batch 500, lock 55 s, deadline 60 s, one local redis-server)");
        println!("  backlog made:     {n} packets in {made_secs:.1} s (create + 10 % grab/claim)");
        println!(
            "  run:              {} settled, {} cents refunded, {} re-driven, {} failed, {} batches, {} left due",
            summary.settled,
            summary.refunded_cents,
            summary.redriven,
            summary.failed,
            summary.batches,
            summary.remaining_due
        );
        println!(
            "  throughput:       {:.0} packets/s ({secs:.2} s for the run)",
            summary.settled as f64 / secs
        );
        let drained = summary.settled as usize == n && summary.remaining_due == 0;
        println!(
            "  goal (whole backlog in one 60 s run): {}",
            if drained { "met" } else { "NOT met" }
        );
        let path = write_json(
            "reclaim_backlog",
            &json!({
                "packets": n,
                "senders": SENDERS,
                "made_secs": made_secs,
                "deadline_secs": DEADLINE_SECS,
                "run_secs": secs,
                "packets_per_sec": summary.settled as f64 / secs,
                "settled": summary.settled,
                "refunded_cents": summary.refunded_cents,
                "redriven": summary.redriven,
                "failed": summary.failed,
                "batches": summary.batches,
                "remaining_due": summary.remaining_due,
                "drained_in_one_run": drained,
            }),
        );
        println!("  figures:          {}", path.display());
        assert_eq!(summary.refunded_cents, expected_refund, "refunds");
        assert_eq!(summary.redriven as usize, (0..n).filter(|i| i % 100 == 0).count());
    });
}
