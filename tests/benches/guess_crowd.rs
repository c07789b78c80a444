//! A crowd guessing a password packet's password: 1,000 accounts send wrong guesses as fast as
//! this machine lets them, through `store::packets::grab_with_password` (the grab function's
//! store step: one EVALSHA of `grab.lua` each), on a private `redis-server`, first with the
//! packet's guess budget off (`HONGBAO_GUESS_BUDGET=0` and `HONGBAO_GUESSES_PER_USER=0`: each
//! account limited by the grab rate limit alone), then with the defaults on (the budget, and
//! each account's 10 wrong guesses over the packet's life: later ones are refused). Half-way through each run a member who knows
//! the password grabs once.
//!
//! ```text
//! cargo bench -p hongbao-tests --bench guess_crowd
//! BENCH_SECS=30 BENCH_ACCOUNTS=1000 BENCH_TASKS=64 cargo bench -p hongbao-tests --bench guess_crowd
//! ```
//!
//! Per run: the guesses the crowd had answered (`wrong_password`: what it learns) per second,
//! the guesses refused (429, or 403 `guesses_exhausted`), the server's `usec_per_call` of EVALSHA (`INFO commandstats`;
//! every call of the run is a grab) and the member's grab (its answer and wall time). Prints a
//! table and writes `target/bench/guess_crowd.json`. Checks: with the budget on, the crowd's
//! answered guesses stay within (budget + accounts) per window started, and the member wins.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::RedisServer;
use hongbao::packets;
use hongbao::packets::rules::password::{Password, PasswordText};
use hongbao::packets::rules::GrabOutcome;
use hongbao::wallet;
use hongbao::{Config, Store};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;

use support::{bench_config, create_packet, env_num, evalsha_stats, fail_on, lucky_packet};

/// Default seconds per run (`BENCH_SECS`): two default guess windows.
const DEFAULT_SECS: u64 = 20;
/// Default accounts in the crowd (`BENCH_ACCOUNTS`).
const DEFAULT_ACCOUNTS: usize = 1_000;
/// Default concurrent guessing tasks (`BENCH_TASKS`), each cycling through its share of the
/// accounts, one call in flight each.
const DEFAULT_TASKS: usize = 64;

/// What one run measured.
struct Run {
    label: &'static str,
    budget: u32,
    window_ms: u64,
    secs: f64,
    answered: u64,
    refused: u64,
    usec_per_call: f64,
    member: String,
    member_ms: f64,
}

/// `text` as a grab's password.
fn password(text: &str) -> Password {
    serde_json::from_value::<PasswordText>(json!(text))
        .expect("password")
        .normalised()
}

/// One run: a fresh password packet, `accounts` accounts guessing wrong on `tasks` tasks for
/// `secs`, the member's grab half-way.
async fn run(label: &'static str, cfg: Config, accounts: usize, tasks: usize, secs: u64) -> Run {
    let (budget, window_ms) = (cfg.packets.guess_budget, cfg.packets.guess_window_ms);
    let store = Arc::new(Store::new(cfg));
    wallet::deposit(&store, "sender", 1_000, &format!("fund-{label}"))
        .await
        .expect("deposit");
    let secret = serde_json::from_value::<PasswordText>(json!("open sesame"))
        .expect("password")
        .check()
        .expect("password");
    let new = packets::NewPacket {
        password: Some(secret.clone()),
        ..lucky_packet(1_000, 10)
    };
    let id: Arc<str> = create_packet(&store, "sender", &new).await.into();
    let mut conn = store.conn().await.expect("connect");
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .expect("RESETSTAT");
    let (answered, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let until = started + Duration::from_secs(secs);
    let crowd: Vec<_> = (0..tasks)
        .map(|t| {
            let (store, id) = (store.clone(), id.clone());
            let (answered, refused) = (answered.clone(), refused.clone());
            tokio::spawn(async move {
                let guess = password("guess");
                let mine: Vec<String> = (t..accounts)
                    .step_by(tasks)
                    .map(|a| format!("c{a}"))
                    .collect();
                for user in mine.iter().cycle() {
                    if Instant::now() >= until {
                        break;
                    }
                    match packets::grab_with_password(&store, &id, user, Some(&guess)).await {
                        Ok(GrabOutcome::WrongPassword) => answered.fetch_add(1, Ordering::Relaxed),
                        Ok(GrabOutcome::RateLimited { .. } | GrabOutcome::GuessesExhausted) => {
                            refused.fetch_add(1, Ordering::Relaxed)
                        }
                        other => panic!("{user}: {other:?}"),
                    };
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(secs) / 2).await;
    let sent = Instant::now();
    let member = packets::grab_with_password(&store, &id, "member", Some(&secret))
        .await
        .expect("the member's grab");
    let member_ms = sent.elapsed().as_secs_f64() * 1e3;
    for task in crowd {
        task.await.expect("a guessing task");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .expect("INFO");
    let (_, usec_per_call) = evalsha_stats(&info);
    Run {
        label,
        budget,
        window_ms,
        secs: elapsed,
        answered: answered.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
        usec_per_call,
        member: match member {
            GrabOutcome::Grabbed { .. } => "grabbed".into(),
            other => format!("{other:?}"),
        },
        member_ms,
    }
}

fn main() {
    let secs = env_num("BENCH_SECS").unwrap_or(DEFAULT_SECS).max(1);
    let accounts = env_num("BENCH_ACCOUNTS").unwrap_or(DEFAULT_ACCOUNTS).max(1);
    let tasks = env_num("BENCH_TASKS")
        .unwrap_or(DEFAULT_TASKS)
        .clamp(1, accounts);
    let server = RedisServer::start();
    let rt = support::runtime();
    let base = bench_config(server.url(), false);
    let mut off = base.clone();
    off.packets.guess_budget = 0;
    off.packets.guesses_per_user = 0;
    let runs = rt.block_on(async {
        vec![
            run("budget off", off, accounts, tasks, secs).await,
            run("budget on (defaults)", base, accounts, tasks, secs).await,
        ]
    });
    let limit = Config::default().packets;
    println!(
        "{accounts} accounts on {tasks} tasks, {secs} s per run; grab rate limit {} per {} ms \
         per account\n",
        limit.grab_rate_limit, limit.grab_rate_window_ms
    );
    println!(
        "| run | budget / window | answered guesses/s | refused/s | EVALSHA µs/call | member |"
    );
    println!("| --- | --- | ---: | ---: | ---: | --- |");
    let mut problems = Vec::new();
    for r in &runs {
        println!(
            "| {} | {} / {} ms | {:.0} | {:.0} | {:.2} | {} in {:.1} ms |",
            r.label,
            r.budget,
            r.window_ms,
            r.answered as f64 / r.secs,
            r.refused as f64 / r.secs,
            r.usec_per_call,
            r.member,
            r.member_ms
        );
        if r.member != "grabbed" {
            problems.push(format!(
                "{}: the member's grab answered {}",
                r.label, r.member
            ));
        }
        if r.budget > 0 {
            // Fixed windows opened one after another: at most ceil(secs / window) + 1 of them.
            let windows = (r.secs * 1e3 / r.window_ms as f64).ceil() as u64 + 1;
            let most = windows * (u64::from(r.budget) + accounts as u64);
            if r.answered > most {
                problems.push(format!(
                    "{}: {} guesses answered, more than {most} ({windows} windows)",
                    r.label, r.answered
                ));
            }
        }
    }
    let json = json!({
        "accounts": accounts,
        "tasks": tasks,
        "secs_per_run": secs,
        "runs": runs.iter().map(|r| json!({
            "run": r.label,
            "guess_budget": r.budget,
            "guess_window_ms": r.window_ms,
            "secs": r.secs,
            "answered": r.answered,
            "refused": r.refused,
            "answered_per_sec": r.answered as f64 / r.secs,
            "refused_per_sec": r.refused as f64 / r.secs,
            "evalsha_usec_per_call": r.usec_per_call,
            "member": r.member,
            "member_ms": r.member_ms,
        })).collect::<Vec<_>>(),
    });
    let path = support::write_json("guess_crowd", &json);
    println!("\nfigures: {}", path.display());
    fail_on(&problems);
}
