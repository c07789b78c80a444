//! The rounds summarized: the printed tables and each scenario's JSON figures.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::recording::Recording;
use crate::replay::Replay;
use crate::support::median;
use crate::{Scenario, Settings, REPEAT_EVERY};

/// One scenario over all rounds.
pub struct Summary {
    /// Median µs of server main-thread CPU per request.
    pub usec: f64,
    /// For a hongbao scenario: its baseline, the median, min and max of the per-round ratio
    /// to it, and the goal.
    pub ratio: Option<(Scenario, f64, f64, f64, f64)>,
    /// Median calls per request by command (`INFO commandstats`).
    pub commands: BTreeMap<String, f64>,
    /// Median wall time of a replayed storm, seconds.
    pub wall_secs: f64,
}

impl Summary {
    /// Whether the goal is met (`None` for a baseline).
    pub fn met(&self) -> Option<bool> {
        self.ratio.map(|(_, r, _, _, goal)| r <= goal)
    }
}

/// Summarizes `rounds` (each round's replays, in [`Scenario::ALL`] order).
pub fn summarize(recs: &[Arc<Recording>], rounds: &[Vec<Replay>]) -> Vec<Summary> {
    let per_request = |round: &[Replay], k: usize| round[k].cpu_usec / recs[k].out.requests as f64;
    recs.iter()
        .enumerate()
        .map(|(k, rec)| {
            let ratio = rec.scenario.baseline().map(|(base, goal)| {
                let b = Scenario::ALL
                    .iter()
                    .position(|&s| s == base)
                    .expect("baseline");
                let ratios: Vec<f64> = rounds
                    .iter()
                    .map(|r| per_request(r, k) / per_request(r, b))
                    .collect();
                (
                    base,
                    median(ratios.clone()),
                    ratios.iter().copied().fold(f64::INFINITY, f64::min),
                    ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    goal,
                )
            });
            let mut names: Vec<&String> =
                rounds.iter().flat_map(|r| r[k].commands.keys()).collect();
            names.sort();
            names.dedup();
            let commands = names
                .into_iter()
                .map(|name| {
                    let calls = rounds
                        .iter()
                        .map(|r| {
                            r[k].commands.get(name).copied().unwrap_or(0) as f64
                                / rec.out.requests as f64
                        })
                        .collect();
                    (name.clone(), median(calls))
                })
                .collect();
            Summary {
                usec: median(rounds.iter().map(|r| per_request(r, k)).collect()),
                ratio,
                commands,
                wall_secs: median(rounds.iter().map(|r| r[k].wall_secs).collect()),
            }
        })
        .collect()
}

/// Prints the tables.
pub fn print_tables(recs: &[Arc<Recording>], sums: &[Summary], s: Settings) {
    println!();
    println!(
        "| scenario | requests | commands/request | µs CPU/request (median) | baseline | ratio \
         median [min–max] | goal | met |"
    );
    println!("| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        let (baseline, ratio, goal, met) = match (sum.ratio, sum.met()) {
            (Some((base, r, lo, hi, goal)), Some(met)) => (
                base.name().to_string(),
                format!("{r:.2}× [{lo:.2}–{hi:.2}]"),
                format!("≤ {goal:.1}×"),
                if met { "met" } else { "not met" }.to_string(),
            ),
            _ => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        println!(
            "| {} | {} | {:.2} | {:.2} | {baseline} | {ratio} | {goal} | {met} |",
            rec.scenario.name(),
            rec.out.requests,
            rec.commands_per_request(),
            sum.usec,
        );
    }

    println!();
    println!("| scenario | function | recorded storm's outcomes | recorded storm (s) | replayed storm, median (ms) | checks |");
    println!("| --- | --- | --- | ---: | ---: | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        println!(
            "| {} | {} | {} | {:.2} | {:.1} | {} |",
            rec.scenario.name(),
            rec.scenario.function(),
            rec.out.mix.text(),
            rec.out.secs,
            sum.wall_secs * 1e3,
            if rec.out.problems.is_empty() {
                "ok".to_string()
            } else {
                format!("{} FAILED", rec.out.problems.len())
            }
        );
    }

    println!();
    println!("| scenario | recorded: connections, setup commands, storm chunks, storm commands | replayed storm's INFO commandstats calls per request (median) |");
    println!("| --- | --- | --- |");
    for (rec, sum) in recs.iter().zip(sums) {
        let calls: Vec<String> = sum
            .commands
            .iter()
            .map(|(name, n)| format!("{name} {n:.2}"))
            .collect();
        println!(
            "| {} | {}, {}, {}, {} | {} |",
            rec.scenario.name(),
            rec.connections,
            rec.setup_commands,
            rec.storm_chunks,
            rec.storm_commands,
            calls.join(", ")
        );
    }
    println!();
    println!(
        "µs CPU/request = the replayed server's main-thread CPU (INFO cpu used_cpu_user_main_thread \
         + used_cpu_sys_main_thread) over the storm / requests, median of {} rounds; ratio = \
         median of the per-round ratios hongbao / baseline, [min–max] their spread; requests = \
         calls of the scenario's function ({} sandboxes, one request at a time each; grab: {} \
         grabbers, every {REPEAT_EVERY}th twice; vote: {} voters); commands/request = the \
         recorded storm's commands / requests; commandstats calls include commands run inside \
         scripts",
        s.rounds, s.sandboxes, s.grabbers, s.voters
    );
}

/// One scenario's figures as JSON: its recording, its summary, and its replay `k` of every
/// round.
pub fn scenario_json(rec: &Recording, sum: &Summary, rounds: &[Vec<Replay>], k: usize) -> Value {
    let per_round: Vec<Value> = rounds
        .iter()
        .map(|r| {
            json!({
                "server_cpu_usec": r[k].cpu_usec,
                "usec_cpu_per_request": r[k].cpu_usec / rec.out.requests as f64,
                "wall_secs": r[k].wall_secs,
                "setup_error_replies": r[k].setup_errors,
                "storm_error_replies": r[k].errors,
                "commandstats_calls": r[k].commands,
                "problems": r[k].problems,
            })
        })
        .collect();
    let outcomes: serde_json::Map<String, Value> = rec
        .out
        .mix
        .0
        .iter()
        .map(|(p, n)| (p.to_string(), json!(n)))
        .collect();
    json!({
        "scenario": rec.scenario.name(),
        "function": rec.scenario.function(),
        "requests": rec.out.requests,
        "connections": rec.connections,
        "setup_commands": rec.setup_commands,
        "storm_chunks": rec.storm_chunks,
        "storm_commands": rec.storm_commands,
        "recorded_setup_error_replies": rec.errors[0],
        "recorded_storm_error_replies": rec.errors[1],
        "commands_per_request": rec.commands_per_request(),
        "recorded_storm_secs": rec.out.secs,
        "outcomes": outcomes,
        "usec_cpu_per_request_median": sum.usec,
        "replay_wall_secs_median": sum.wall_secs,
        "baseline": sum.ratio.map(|(b, ..)| b.name()),
        "ratio_median": sum.ratio.map(|(_, r, ..)| r),
        "ratio_min": sum.ratio.map(|(_, _, lo, ..)| lo),
        "ratio_max": sum.ratio.map(|(_, _, _, hi, _)| hi),
        "goal": sum.ratio.map(|(.., goal)| goal),
        "met": sum.met(),
        "commandstats_calls_per_request_median": sum.commands,
        "rounds": per_round,
        "problems": rec.out.problems,
    })
}
