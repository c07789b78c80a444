//! Part 1: server CPU per grab in a storm, hongbao beside seed 004.

use std::collections::BTreeMap;
use std::sync::Arc;

use harness::RedisServer;
use hongbao::coupons;
use hongbao::coupons::rules::VisitLimit;
use hongbao::Store;
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};

use crate::crowd::{
    check_campaign, check_seed, hongbao_crowd, seed_crowd, seed_sadd, told, Crowd, HB_PATHS,
    SEED_PATHS,
};
use crate::server::{codes, commandstats, config, flush, load_grab, main_cpu, uploaded_campaign};
use crate::support::{info_field, median, node_conn, pin, query};
use crate::Settings;

/// The designs of part 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// `store::coupons::grab`.
    Hongbao,
    /// Seed 004 as the brief lists it: GET, INCR, EXPIRE (first visit), SPOP.
    Seed,
    /// Seed 004 as its Java is written: also DEL when the count reads 0.
    SeedDel,
}

impl Design {
    /// Every design, in table order.
    pub const ALL: [Design; 3] = [Design::Hongbao, Design::Seed, Design::SeedDel];

    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Design::Hongbao => "hongbao",
            Design::Seed => "seed 004",
            Design::SeedDel => "seed 004 + DEL",
        }
    }

    /// Its answers' names.
    pub fn paths(self) -> &'static [&'static str] {
        match self {
            Design::Hongbao => &HB_PATHS,
            _ => &SEED_PATHS,
        }
    }
}

/// The scenarios of part 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `BENCH_GRABBERS` users for `BENCH_CODES` codes.
    Storm,
    /// `BENCH_WIN_USERS` users for `BENCH_CODES` codes.
    Wins,
}

impl Scenario {
    /// Both, in table order.
    pub const ALL: [Scenario; 2] = [Scenario::Storm, Scenario::Wins];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Storm => "storm",
            Scenario::Wins => "wins",
        }
    }

    /// Its crowd.
    pub fn crowd(self, s: &Settings) -> Crowd {
        match self {
            Scenario::Storm => s.crowd(s.grabbers, "u"),
            Scenario::Wins => s.crowd(s.win_users, "w"),
        }
    }
}

/// One measured run of a design.
#[derive(Debug, Clone)]
pub struct Measure {
    /// Requests sent.
    pub requests: u64,
    /// Server main-thread CPU over the run, µs.
    pub cpu_usec: f64,
    /// Wall time, seconds.
    pub secs: f64,
    /// Answers per path.
    pub mix: Vec<u64>,
    /// `INFO commandstats` over the run: command -> (calls, usec).
    pub stats: BTreeMap<String, (u64, f64)>,
}

impl Measure {
    /// Server CPU per request, µs.
    pub fn per_request(&self) -> f64 {
        self.cpu_usec / self.requests as f64
    }

    /// `usec_per_call` of `EVALSHA`.
    pub fn evalsha_usec_per_call(&self) -> f64 {
        self.stats
            .get("evalsha")
            .map_or(0.0, |&(calls, usec)| usec / calls.max(1) as f64)
    }
}

/// Part 1's server and clients.
pub struct StormBench {
    /// The server.
    pub server: RedisServer,
    /// Admin connection (setup, statistics).
    pub admin: MultiplexedConnection,
    /// hongbao's store (one sandbox).
    pub store: Arc<Store>,
    /// The seed's connection.
    pub seed: MultiplexedConnection,
}

/// Runs `design` on `scenario` once, from an empty server; the measure and the problems found.
pub async fn storm_run(
    b: &mut StormBench,
    design: Design,
    scenario: Scenario,
    round: usize,
    s: &Settings,
    visits: VisitLimit,
) -> (Measure, Vec<String>) {
    let prefix = b.store.config().key_prefix.clone();
    flush(&mut b.admin, &prefix).await;
    let crowd = scenario.crowd(s);
    let tag = format!("{}{round}", &scenario.name()[..1].to_uppercase());
    let all = codes(&tag, s.codes);
    let created = match design {
        Design::Hongbao => {
            let c =
                uploaded_campaign(&b.store, &format!("{}-{round}", scenario.name()), &all).await;
            // A warm sandbox: the campaign's shape known, connected.
            coupons::campaign(&b.store, &c.campaign_id, None)
                .await
                .expect("campaign")
                .expect("campaign exists");
            Some(c)
        }
        Design::Seed | Design::SeedDel => {
            seed_sadd(&mut b.admin, &all).await;
            None
        }
    };
    let _: () = query(&mut b.admin, &["CONFIG", "RESETSTAT"]).await;
    let cpu_before = main_cpu(&mut b.admin).await;
    let out = match design {
        Design::Hongbao => {
            let id = &created.as_ref().expect("campaign").campaign_id;
            hongbao_crowd(b.store.clone(), id, &crowd, visits).await
        }
        Design::Seed => seed_crowd(&b.seed, &crowd, visits, false).await,
        Design::SeedDel => seed_crowd(&b.seed, &crowd, visits, true).await,
    };
    let cpu_after = main_cpu(&mut b.admin).await;
    let mut stats = commandstats(&mut b.admin).await;
    stats.remove("info");
    let requests: u64 = out.mix.iter().sum();
    let label = format!("{} {} round {}", design.name(), scenario.name(), round + 1);
    let mut problems = Vec::new();
    if requests != crowd.requests() {
        problems.push(format!(
            "{label}: {requests} requests, {} expected",
            crowd.requests()
        ));
    }
    match (design, &created) {
        (Design::Hongbao, Some(c)) => {
            if out.mix[5] > 0 {
                problems.push(format!("{label}: {} grab calls failed", out.mix[5]));
            }
            if let Some(&(evals, _)) = stats.get("eval") {
                problems.push(format!("{label}: {evals} EVAL calls (NOSCRIPT fallbacks)"));
            }
            problems.extend(
                check_campaign(&b.store, c, &told(&crowd, &out), Some(&all))
                    .await
                    .into_iter()
                    .map(|p| format!("{label}: {p}")),
            );
        }
        _ => problems.extend(check_seed(&label, &out, s.codes)),
    }
    let info: String = query(&mut b.admin, &["INFO", "commandstats"]).await;
    let failed = info_field(&info, "cmdstat_evalsha", Some("failed_calls")) as u64;
    if failed > 0 {
        problems.push(format!("{label}: {failed} failed EVALSHA calls"));
    }
    (
        Measure {
            requests,
            cpu_usec: (cpu_after - cpu_before) * 1e6,
            secs: out.secs,
            mix: out.mix,
            stats,
        },
        problems,
    )
}

/// Part 1's figures: per scenario, per design, every round's measure.
pub struct StormCpu {
    /// `[scenario][design]` -> rounds.
    pub runs: Vec<Vec<Vec<Measure>>>,
    /// redis-server version.
    pub version: String,
}

impl StormCpu {
    /// Median µs CPU per request of `design` in `scenario`.
    pub fn usec(&self, scenario: usize, design: usize) -> f64 {
        median(
            self.runs[scenario][design]
                .iter()
                .map(Measure::per_request)
                .collect(),
        )
    }

    /// Median, min and max of the per-round ratio hongbao / `design` in `scenario`.
    pub fn ratio(&self, scenario: usize, design: usize) -> (f64, f64, f64) {
        let r: Vec<f64> = self.runs[scenario][0]
            .iter()
            .zip(&self.runs[scenario][design])
            .map(|(h, d)| h.per_request() / d.per_request())
            .collect();
        (
            median(r.clone()),
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    }

    /// Per command of `design` in `scenario`, over all rounds: (calls per request, µs per
    /// request), largest µs first.
    pub fn commands(&self, scenario: usize, design: usize) -> Vec<(String, f64, f64)> {
        let runs = &self.runs[scenario][design];
        let requests: u64 = runs.iter().map(|m| m.requests).sum();
        let mut by: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for m in runs {
            for (name, (calls, usec)) in &m.stats {
                let e = by.entry(name.clone()).or_default();
                e.0 += calls;
                e.1 += usec;
            }
        }
        let mut out: Vec<(String, f64, f64)> = by
            .into_iter()
            .filter(|(_, (calls, _))| *calls > 0)
            .map(|(name, (calls, usec))| {
                (name, calls as f64 / requests as f64, usec / requests as f64)
            })
            .collect();
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        out
    }
}

/// Part 1: every scenario and design, `BENCH_ROUNDS` rounds, on one pinned server.
pub async fn storm_cpu(
    s: &Settings,
    pinned: bool,
    visits: VisitLimit,
    problems: &mut Vec<String>,
) -> StormCpu {
    let server = RedisServer::start();
    if pinned {
        pin(server.pid(), 0);
    }
    let mut admin = node_conn(&server.url()).await;
    let info: String = query(&mut admin, &["INFO", "server"]).await;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    load_grab(&mut admin).await;
    let store = Arc::new(Store::new(config(server.url(), false)));
    store.conn().await.expect("connect");
    let seed = node_conn(&server.url()).await;
    let mut b = StormBench {
        server,
        admin,
        store,
        seed,
    };
    let mut runs: Vec<Vec<Vec<Measure>>> =
        vec![vec![Vec::new(); Design::ALL.len()]; Scenario::ALL.len()];
    for round in 0..s.rounds {
        for (si, scenario) in Scenario::ALL.iter().enumerate() {
            let mut order: Vec<usize> = (0..Design::ALL.len()).collect();
            if (round + si) % 2 == 1 {
                order.reverse();
            }
            for d in order {
                let (m, p) = storm_run(&mut b, Design::ALL[d], *scenario, round, s, visits).await;
                eprintln!(
                    "  part 1 round {}: {} {}: {} requests in {:.2} s, {:.2} µs CPU/request",
                    round + 1,
                    scenario.name(),
                    Design::ALL[d].name(),
                    m.requests,
                    m.secs,
                    m.per_request()
                );
                problems.extend(p);
                runs[si][d].push(m);
            }
        }
    }
    eprintln!("  part 1 server: {}", b.server.url());
    StormCpu { runs, version }
}

/// Prints part 1's tables.
pub fn print_storm(r: &StormCpu, s: &Settings) {
    println!();
    println!(
        "## 1. Server CPU per grab: hongbao beside seed 004 (standalone redis-server {}, {} \
         rounds)",
        r.version, s.rounds
    );
    println!();
    println!(
        "| scenario | design | requests | outcomes (last round) | requests/s (median) | µs CPU/request \
         (median) | hongbao / design (median [min–max]) | goal |"
    );
    println!("| --- | --- | ---: | --- | ---: | ---: | ---: | --- |");
    for (si, scenario) in Scenario::ALL.iter().enumerate() {
        for (d, design) in Design::ALL.iter().enumerate() {
            let runs = &r.runs[si][d];
            let last = runs.last().expect("a round");
            let outcomes: Vec<String> = design
                .paths()
                .iter()
                .zip(&last.mix)
                .filter(|(_, n)| **n > 0)
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            let (ratio, goal) = if d == 0 {
                ("—".to_string(), "—".to_string())
            } else {
                let (m, lo, hi) = r.ratio(si, d);
                let goal = if *design == Design::Seed {
                    format!("≤ 1.0×: {}", if m <= 1.0 { "met" } else { "not met" })
                } else {
                    "—".to_string()
                };
                (format!("{m:.2}× [{lo:.2}–{hi:.2}]"), goal)
            };
            println!(
                "| {} ({} users, {} codes) | {} | {} | {} | {:.0} | {:.2} | {ratio} | {goal} |",
                scenario.name(),
                scenario.crowd(s).users,
                s.codes,
                design.name(),
                last.requests,
                outcomes.join(", "),
                median(runs.iter().map(|m| m.requests as f64 / m.secs).collect()),
                r.usec(si, d),
            );
        }
    }
    println!();
    println!(
        "hongbao grab script (coupon_grab.lua) EVALSHA usec_per_call (INFO commandstats, \
         median over rounds): storm {:.2} µs, wins {:.2} µs",
        median(
            r.runs[0][0]
                .iter()
                .map(Measure::evalsha_usec_per_call)
                .collect()
        ),
        median(
            r.runs[1][0]
                .iter()
                .map(Measure::evalsha_usec_per_call)
                .collect()
        ),
    );
    println!();
    println!("| scenario | design | INFO commandstats per request: command calls × µs (all rounds; commands inside scripts counted too, their µs also inside the script's) |");
    println!("| --- | --- | --- |");
    for (si, scenario) in Scenario::ALL.iter().enumerate() {
        for (d, design) in Design::ALL.iter().enumerate() {
            let cmds: Vec<String> = r
                .commands(si, d)
                .iter()
                .map(|(name, calls, usec)| format!("{name} {calls:.2} × {usec:.2} µs"))
                .collect();
            println!(
                "| {} | {} | {} |",
                scenario.name(),
                design.name(),
                cmds.join(", ")
            );
        }
    }
    println!();
    println!(
        "µs CPU/request = the server's main-thread CPU (INFO cpu used_cpu_user_main_thread + \
         used_cpu_sys_main_thread) over the run / requests; every run from FLUSHALL; seed 004 = \
         GET visits:<user>, INCR, EXPIRE on the first visit, SPOP codes (one round trip each, \
         {} tasks over one redis-rs connection, as hongbao's {} tasks over one Store); + DEL = \
         canAccess as the seed's Java is written (DEL when the count reads 0); users 0, {n}, \
         2×{n}… press twice; the seed has no per-user limit beyond the visit limit, so a second \
         press takes a second code",
        s.tasks,
        s.tasks,
        n = s.repeat_every
    );
}

/// Part 1's JSON.
pub fn storm_json(r: &StormCpu, s: &Settings) -> Value {
    json!({
        "redis_version": r.version,
        "codes": s.codes,
        "rounds": s.rounds,
        "tasks": s.tasks,
        "repeat_every": s.repeat_every,
        "scenarios": Scenario::ALL.iter().enumerate().map(|(si, scenario)| json!({
            "scenario": scenario.name(),
            "users": scenario.crowd(s).users,
            "designs": Design::ALL.iter().enumerate().map(|(d, design)| {
                let (m, lo, hi) = r.ratio(si, d);
                json!({
                    "design": design.name(),
                    "usec_cpu_per_request_median": r.usec(si, d),
                    "hongbao_ratio_median": m,
                    "hongbao_ratio_min": lo,
                    "hongbao_ratio_max": hi,
                    "evalsha_usec_per_call_median": median(
                        r.runs[si][d].iter().map(Measure::evalsha_usec_per_call).collect()),
                    "commands_per_request": r.commands(si, d).iter().map(|(name, calls, usec)|
                        json!({"command": name, "calls": calls, "usec": usec}))
                        .collect::<Vec<_>>(),
                    "rounds": r.runs[si][d].iter().map(|m| json!({
                        "requests": m.requests,
                        "server_cpu_usec": m.cpu_usec,
                        "usec_cpu_per_request": m.per_request(),
                        "secs": m.secs,
                        "outcomes": design.paths().iter().zip(&m.mix)
                            .map(|(p, n)| (p.to_string(), json!(n)))
                            .collect::<serde_json::Map<_, _>>(),
                    })).collect::<Vec<_>>(),
                })
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
