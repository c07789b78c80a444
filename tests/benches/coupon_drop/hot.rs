//! Part 4: grabs per second of one hot campaign, beside `redis-benchmark`.

use std::sync::Arc;

use harness::RedisServer;
use hongbao::coupons;
use hongbao::coupons::rules::VisitLimit;
use hongbao::coupons::PoolKeys;
use hongbao::store::scripts::{Call, CouponGrabCall};
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};

use crate::crowd::{check_campaign, hongbao_crowd, told, Crowd};
use crate::server::{config, flush, generated_campaign, load_grab, main_cpu, pct};
use crate::support::{info_field, median, node_conn, pin, query, redis_benchmark};
use crate::{Settings, RAND_RANGE};

/// A phase of part 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `redis-benchmark -c clients -P pipeline`.
    Rb {
        /// Connections.
        clients: u32,
        /// Pipeline depth.
        pipeline: u32,
    },
    /// `tasks` tasks over one `Store`.
    Hongbao {
        /// Concurrent tasks.
        tasks: usize,
    },
}

impl Phase {
    /// Every phase, in table order.
    pub const ALL: [Phase; 4] = [
        Phase::Rb {
            clients: 50,
            pipeline: 1,
        },
        Phase::Rb {
            clients: 50,
            pipeline: 16,
        },
        Phase::Hongbao { tasks: 64 },
        Phase::Hongbao { tasks: 256 },
    ];

    /// Its name.
    pub fn name(self) -> String {
        match self {
            Phase::Rb { clients, pipeline } => {
                format!("redis-benchmark -c {clients} -P {pipeline}")
            }
            Phase::Hongbao { tasks } => format!("hongbao {tasks} tasks / 1 Store"),
        }
    }
}

/// One run of a phase.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Requests.
    pub requests: u64,
    /// Codes issued.
    pub grabs: u64,
    /// Wall time, seconds.
    pub secs: f64,
    /// `EVALSHA` usec per call.
    pub usec_per_call: f64,
    /// Server main-thread CPU, µs.
    pub cpu_usec: f64,
}

impl Run {
    /// Grabs per second.
    pub fn rate(&self) -> f64 {
        self.grabs as f64 / self.secs
    }
}

/// Part 4's server and admin store.
pub struct HotBench {
    /// The server.
    pub server: RedisServer,
    /// Admin connection.
    pub admin: MultiplexedConnection,
    /// Admin store (creations, checks).
    pub store: Arc<Store>,
}

/// Runs `phase` once on a fresh campaign of `n` codes.
pub async fn hot_run(
    b: &mut HotBench,
    phase: Phase,
    n: u64,
    visits: VisitLimit,
    tag: &str,
    problems: &mut Vec<String>,
) -> Run {
    let prefix = b.store.config().key_prefix.clone();
    flush(&mut b.admin, &prefix).await;
    let c = generated_campaign(&b.store, &format!("hot-{tag}"), n).await;
    let keys = PoolKeys::new(&prefix, &c.campaign_id, c.campaign_no, 0, c.pools);
    coupons::campaign(&b.store, &c.campaign_id, None)
        .await
        .expect("campaign")
        .expect("campaign exists");
    let label = format!("part 4 {} ({tag})", phase.name());
    let (secs, before, told_pairs) = match phase {
        Phase::Rb { clients, pipeline } => {
            let user = "rb-__rand_int__";
            let words = CouponGrabCall {
                pool: &keys.pool,
                codes: &keys.codes,
                issued: &keys.issued,
                issued_by_time: &keys.issued_by_time,
                holders: &keys.holders,
                rate: &keys.visits(user),
                pending: &keys.pending,
                journal: &keys.journal,
                user_id: user,
                home: 0,
                rate_limit: visits.per_window,
                rate_window_ms: visits.window_ms,
                reservation: "0000000000000000",
                campaign_id: &c.campaign_id,
            }
            .evalsha_words();
            let _: () = query(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
            let before = main_cpu(&mut b.admin).await;
            let port = b.server.port();
            let rps = tokio::task::spawn_blocking(move || {
                redis_benchmark(port, clients, n, pipeline, Some(RAND_RANGE), &words)
            })
            .await
            .expect("redis-benchmark task");
            (n as f64 / rps, before, None)
        }
        Phase::Hongbao { tasks } => {
            let store = Arc::new(Store::new(config(b.server.url(), false)));
            store.conn().await.expect("connect");
            let crowd = Crowd {
                users: n,
                repeat_every: 0,
                tasks,
                prefix: "h",
            };
            let _: () = query(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
            let before = main_cpu(&mut b.admin).await;
            let out = hongbao_crowd(store, &c.campaign_id, &crowd, visits).await;
            if out.mix[0] != n {
                problems.push(format!(
                    "{label}: {} of {n} calls grabbed ({:?})",
                    out.mix[0], out.mix
                ));
            }
            (out.secs, before, Some(told(&crowd, &out)))
        }
    };
    let cpu = main_cpu(&mut b.admin).await - before;
    let info: String = query(&mut b.admin, &["INFO", "commandstats"]).await;
    let calls = info_field(&info, "cmdstat_evalsha", Some("calls")) as u64;
    let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
    if calls != n || failed > 0 {
        problems.push(format!(
            "{label}: {calls} EVALSHA calls ({failed} failed) for {n} requests"
        ));
    }
    let grabs: Option<u64> = query(&mut b.admin, &["HGET", &keys.pool, "issued"]).await;
    let grabs = grabs.unwrap_or(0);
    let rb = matches!(phase, Phase::Rb { .. });
    let found = check_campaign(&b.store, &c, &told_pairs.unwrap_or_default(), None).await;
    problems.extend(
        found
            .into_iter()
            // redis-benchmark's callers are not told: only the server's invariants.
            .filter(|p| !(rb && p.contains("told to callers")))
            .map(|p| format!("{label}: {p}")),
    );
    Run {
        requests: n,
        grabs,
        secs,
        usec_per_call: info_field(&info, "cmdstat_evalsha", Some("usec_per_call")),
        cpu_usec: cpu * 1e6,
    }
}

/// Part 4: every phase, `BENCH_HOT_ROUNDS` rounds, alternating order.
pub async fn hot(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> Vec<(Phase, Vec<Run>)> {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut admin = node_conn(&server.url()).await;
    load_grab(&mut admin).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    let mut b = HotBench {
        server,
        admin,
        store,
    };
    let mut results: Vec<(Phase, Vec<Run>)> = Phase::ALL.iter().map(|p| (*p, Vec::new())).collect();
    for round in 0..s.hot_rounds {
        // redis-benchmark and hongbao alternate; every other round backwards.
        let mut order = vec![0, 2, 1, 3];
        if round % 2 == 1 {
            order.reverse();
        }
        for k in order {
            let phase = results[k].0;
            let run = hot_run(
                &mut b,
                phase,
                s.grabs,
                visits,
                &format!("{round}-{k}"),
                problems,
            )
            .await;
            eprintln!(
                "  part 4 round {}: {}: {:.0} grabs/s",
                round + 1,
                phase.name(),
                run.rate()
            );
            results[k].1.push(run);
        }
    }
    results
}

/// The best rate of `runs`.
pub fn best_rate(runs: &[Run]) -> f64 {
    runs.iter().map(Run::rate).fold(0.0, f64::max)
}

/// The median over rounds of `runs`' rate as a percentage of `reference`'s in the same round.
pub fn paired(runs: &[Run], reference: &[Run]) -> f64 {
    median(
        runs.iter()
            .zip(reference)
            .map(|(r, x)| pct(r.rate(), x.rate()))
            .collect(),
    )
}

/// Prints part 4's table.
pub fn print_hot(results: &[(Phase, Vec<Run>)], s: &Settings) {
    println!();
    println!(
        "## 4. Grabs per second: one hot generated campaign of {} codes (one pool) on one \
         server, {} rounds",
        s.grabs, s.hot_rounds
    );
    println!();
    println!(
        "| phase | requests | grabs/s (best) | grabs/s (median) | % of rb -P 1 (best / paired) \
         | % of rb -P 16 (best / paired) | EVALSHA µs/call (median) | server CPU µs/request \
         (median) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (p1, p16) = (&results[0].1, &results[1].1);
    for (phase, runs) in results {
        let b = best_rate(runs);
        println!(
            "| {} | {} | {b:.0} | {:.0} | {:.0}% / {:.0}% | {:.0}% / {:.0}% | {:.2} | {:.2} |",
            phase.name(),
            runs[0].requests,
            median(runs.iter().map(Run::rate).collect()),
            pct(b, best_rate(p1)),
            paired(runs, p1),
            pct(b, best_rate(p16)),
            paired(runs, p16),
            median(runs.iter().map(|r| r.usec_per_call).collect()),
            median(
                runs.iter()
                    .map(|r| r.cpu_usec / r.requests as f64)
                    .collect()
            ),
        );
    }
    println!();
    println!(
        "rb = redis-benchmark sending the EVALSHA store::coupons::grab sends (user id and visit \
         key with __rand_int__, -r {RAND_RANGE}); grabs = the pool's issued count; paired = \
         median over rounds of the ratio to rb in the same round; hongbao's grab is the EVALSHA \
         then, after a win, the user's coupon list (MULTI, ZADD, PEXPIREAT ×2, EXEC) in a \
         second round trip, which rb does not send"
    );
}

/// Part 4's JSON.
pub fn hot_json(results: &[(Phase, Vec<Run>)], s: &Settings) -> Value {
    json!({
        "codes_per_phase": s.grabs,
        "rounds": s.hot_rounds,
        "phases": results.iter().map(|(phase, runs)| json!({
            "phase": phase.name(),
            "best_grabs_per_sec": best_rate(runs),
            "median_grabs_per_sec": median(runs.iter().map(Run::rate).collect()),
            "runs": runs.iter().map(|r| json!({
                "requests": r.requests,
                "grabs": r.grabs,
                "secs": r.secs,
                "grabs_per_sec": r.rate(),
                "evalsha_usec_per_call": r.usec_per_call,
                "server_cpu_usec_per_request": r.cpu_usec / r.requests as f64,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
