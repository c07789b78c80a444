//! The summary table: one line per part that ran.

use crate::cluster::ClusterSpread;
use crate::hot::{paired, Phase, Run};
use crate::memory::Memory;
use crate::pools::PoolMove;
use crate::storm_cpu::{Measure, Scenario, StormCpu};
use crate::support::median;

/// Prints the summary table: one line per part that ran.
pub fn print_summary(
    storm: Option<&StormCpu>,
    cluster: Option<&ClusterSpread>,
    mem: Option<&Memory>,
    hot: Option<&[(Phase, Vec<Run>)]>,
    pools: Option<&[PoolMove]>,
) {
    println!();
    println!("## Summary");
    println!();
    println!("| # | measure | hongbao | baseline | hongbao / baseline, goal |");
    println!("| --- | --- | ---: | ---: | --- |");
    if let Some(r) = storm {
        for (si, scenario) in Scenario::ALL.iter().enumerate() {
            let (m, lo, hi) = r.ratio(si, 1);
            let (md, _, _) = r.ratio(si, 2);
            println!(
                "| 1 | server main-thread CPU per grab request, {} | {:.2} µs | seed 004 {:.2} µs \
                 (+ DEL {:.2} µs) | {m:.2}× [{lo:.2}–{hi:.2}] ({md:.2}× of + DEL); goal ≤ 1.0×: {} |",
                scenario.name(),
                r.usec(si, 0),
                r.usec(si, 1),
                r.usec(si, 2),
                if m <= 1.0 { "met" } else { "not met" }
            );
        }
        println!(
            "| 1 | coupon_grab.lua EVALSHA usec_per_call (storm / wins) | {:.2} / {:.2} µs | — | — |",
            median(r.runs[0][0].iter().map(Measure::evalsha_usec_per_call).collect()),
            median(r.runs[1][0].iter().map(Measure::evalsha_usec_per_call).collect()),
        );
    }
    if let Some(c) = cluster {
        let shares: Vec<String> = c
            .shares()
            .iter()
            .map(|(_, usec, cpu)| format!("{:.1}% / {:.1}%", 100.0 * usec, 100.0 * cpu))
            .collect();
        println!(
            "| 2 | each master's share of the grab CPU (EVALSHA µs / main-thread CPU) | {} | 33.3% | goal ±5 points: {} |",
            shares.join(", "),
            if c.met() { "met" } else { "not met" }
        );
    }
    if let Some(m) = mem {
        let (_, _, _, all) = m.uploaded();
        let (issued, journal, _) = m.issued();
        println!(
            "| 3 | bytes per uploaded code (pool + directory + records) | {all:.1} B | seed SADD {:.1} B | {:.2}× |",
            m.seed(),
            all / m.seed()
        );
        println!(
            "| 3 | bytes per generated code before issuing / per issued code (+ journal) | {:.3} B / {issued:.1} B (+ {journal:.1} B) | — | — |",
            m.generated()
        );
    }
    if let Some(h) = hot {
        let med = |runs: &[Run]| median(runs.iter().map(Run::rate).collect());
        let best_hb = h
            .iter()
            .filter(|(p, _)| matches!(p, Phase::Hongbao { .. }))
            .max_by(|a, b| med(&a.1).total_cmp(&med(&b.1)))
            .expect("hongbao phases");
        println!(
            "| 4 | grabs/s of one hot campaign on one node (medians over rounds) | {:.0} ({}) | rb -P 1 {:.0}, -P 16 {:.0} | {:.0}% / {:.0}% (paired medians) |",
            med(&best_hb.1),
            best_hb.0.name(),
            med(&h[0].1),
            med(&h[1].1),
            paired(&best_hb.1, &h[0].1),
            paired(&best_hb.1, &h[1].1)
        );
    }
    if let Some(p) = pools {
        let cells: Vec<String> = p
            .iter()
            .map(|r| {
                format!(
                    "{} {}: {:.1} MB, biggest DUMP {:.1} MB, MIGRATE {:.0} ms",
                    r.size,
                    r.state,
                    r.pool_bytes as f64 / 1e6,
                    r.dump_bytes as f64 / 1e6,
                    r.biggest_ms
                )
            })
            .collect();
        println!(
            "| 5 | one pool: bytes, biggest key's DUMP, its MIGRATE | {} | — | — |",
            cells.join("; ")
        );
    }
}
