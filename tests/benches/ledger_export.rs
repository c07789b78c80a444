//! ledger-export: how fast the money journal drains into EventBridge, and what an idle pass
//! costs.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench ledger_export
//! BENCH_ENTRIES=20000 cargo bench -p hongbao-tests --bench ledger_export
//! ```
//!
//! 1. **Backlog**: `BENCH_ENTRIES` (default 100,000) deposits into 10,000 wallets on a private
//!    `redis-server` (one journal entry each, spread over the journals of their tags), then
//!    ledger-export runs (`lambda::ledger_export::run_until`, the function's code path: lock,
//!    passes, `PutEvents` of 10, deletes) through the real EventBridge client against moto in
//!    server mode (a bus without rules), until the journals are empty. Prints entries/s. moto
//!    is a Python server on the same 2 cores, so this is a floor: EventBridge itself accepts
//!    far more.
//! 2. **Idle pass** on the local 3-master cluster: `store::journal::pending` with every journal
//!    empty, 20 times: the commands it sends (`EXISTS`, counted by the masters' `INFO
//!    commandstats`), their server time, and the pass's wall time.
//!
//! Writes the figures to `target/bench/ledger_export.json` too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use harness::moto::MotoServer;
use harness::{RedisCluster, RedisServer};
use hongbao::lambda::ledger_export::{self, eventbridge::EventBridgeSink};
use hongbao::store::journal::{self, JournalIndex};
use hongbao::wallet;
use hongbao::{Config, Store};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{env_num, info_field, median, write_json};

const WALLETS: usize = 10_000;
const IDLE_PASSES: usize = 20;

/// `(calls, usec)` of `cmdstat_exists` summed over `urls`.
async fn exists_stats(urls: &[String]) -> (f64, f64) {
    let mut total = (0.0, 0.0);
    for url in urls {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        total.0 += info_field(&info, "cmdstat_exists", Some("calls"));
        total.1 += info_field(&info, "cmdstat_exists", Some("usec"));
    }
    total
}

fn main() {
    let n: usize = env_num("BENCH_ENTRIES").unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // 1. Backlog through moto.
        let redis = RedisServer::start();
        let moto = MotoServer::start();
        // A bus without rules: moto then only accepts the events. With the feed's rule and
        // SQS target, moto delivers each event into its queue in Python (about 100 events/s
        // here, slower as the queue grows), which would measure moto, not the export.
        let bus = "hongbao-bench";
        aws_sdk_eventbridge::Client::new(&moto.sdk_config())
            .create_event_bus()
            .name(bus)
            .send()
            .await
            .unwrap();
        let mut cfg = Config {
            redis_url: redis.url(),
            redis_cluster: false,
            redis_cluster_auto: false,
            ..Config::default()
        };
        cfg.ledger_export.event_bus_name = bus.to_string();
        let store = Arc::new(Store::new(cfg));
        let t0 = Instant::now();
        futures::stream::iter(0..n)
            .map(|i| {
                let store = store.clone();
                async move {
                    wallet::deposit(&store, &format!("u{}", i % WALLETS), 1, &format!("d{i}"))
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(64)
            .collect::<Vec<()>>()
            .await;
        let made_secs = t0.elapsed().as_secs_f64();
        let index = JournalIndex::new("hb");
        let journals = journal::pending(&store, &index).await.unwrap().len();
        let sink = EventBridgeSink::new(aws_sdk_eventbridge::Client::new(&moto.sdk_config()), bus);
        let t1 = Instant::now();
        let (mut exported, mut runs, mut failed) = (0, 0, 0);
        while exported < n as u64 && runs < 1_000 {
            let deadline = Instant::now() + Duration::from_secs(60);
            let s = ledger_export::run_until(&store, &index, &sink, Some(deadline))
                .await
                .unwrap();
            exported += s.exported;
            failed += s.failed;
            runs += 1;
        }
        let export_secs = t1.elapsed().as_secs_f64();
        let left = journal::pending(&store, &index).await.unwrap().len();
        println!("ledger export backlog (one local redis-server, EventBridge = moto {} on loopback)", moto.endpoint_url());
        println!("  backlog made:  {n} deposits into {WALLETS} wallets, {journals} journals, in {made_secs:.1} s");
        println!(
            "  export:        {exported} entries in {runs} run(s), {export_secs:.1} s: {:.0} entries/s ({failed} refused, {left} journals left)",
            exported as f64 / export_secs
        );
        assert_eq!((exported, left), (n as u64, 0));

        // 2. Idle pass on the 3-master cluster.
        let cluster = RedisCluster::start();
        let cstore = Store::new(Config {
            redis_url: cluster.url(),
            redis_cluster: true,
            ..Config::default()
        });
        let cindex = JournalIndex::new("hb");
        assert!(journal::pending(&cstore, &cindex).await.unwrap().is_empty()); // warm
        let before = exists_stats(&cluster.urls()).await;
        let mut walls = Vec::new();
        for _ in 0..IDLE_PASSES {
            let t = Instant::now();
            assert!(journal::pending(&cstore, &cindex).await.unwrap().is_empty());
            walls.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let after = exists_stats(&cluster.urls()).await;
        let calls = (after.0 - before.0) / IDLE_PASSES as f64;
        let usec = (after.1 - before.1) / IDLE_PASSES as f64;
        let wall_ms = median(walls);
        println!("idle pass (3-master local cluster, every journal empty, {IDLE_PASSES} passes)");
        println!(
            "  per pass:      {calls:.0} EXISTS ({} expected), {:.1} ms of server time over the masters, {wall_ms:.0} ms wall (median)",
            cindex.commands(true),
            usec / 1000.0
        );
        let path = write_json(
            "ledger_export",
            &json!({
                "backlog": {
                    "entries": n, "wallets": WALLETS, "journals": journals,
                    "made_secs": made_secs, "runs": runs, "export_secs": export_secs,
                    "entries_per_sec": exported as f64 / export_secs, "refused": failed,
                    "endpoint": "moto (server mode, loopback; a bus without rules)",
                },
                "idle_pass_cluster": {
                    "masters": 3, "exists_per_pass": calls,
                    "server_ms_per_pass": usec / 1000.0, "wall_ms_median": wall_ms,
                },
            }),
        );
        println!("  written:       {}", path.display());
    });
}
