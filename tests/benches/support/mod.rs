//! Helpers shared by the benchmarks in `tests/benches/` (`#[path = "support/mod.rs"] mod
//! support;` in a one-file bench, `#[path = "../support/mod.rs"]` in a bench's `main.rs`): the
//! settings and figures files, the machine (client CPU time, pinning, load), the server's
//! figures read from `INFO`, connections to a deployment's nodes, benchmark-sized packets, and the
//! baselines' scripts (seed 000's grab, chapter 1's vote).
#![allow(dead_code)] // each benchmark uses a subset
#![allow(unused_imports)] // each benchmark uses a subset of the re-exports too

mod admin;
mod baselines;
mod info;
mod machine;
mod nodes;
mod packets;
mod redis_benchmark;

pub use admin::{block_query, load_script, runtime};
pub use baselines::{ch1_article, CH1_KEYS, CH1_VOTE, SEED_GRAB};
pub use info::{
    commandstats_calls, evalsha_stats, info_field, server_cpu_secs, server_main_thread_cpu_secs,
};
pub use machine::{loadavg, pin, run_info, rusage_cpu, Started};
pub use nodes::{node_conn, nodes, owner_of, query, Node};
pub use packets::{bench_config, create_packet, grab_as, lucky_packet};
pub use redis_benchmark::redis_benchmark;

/// Prints each check that did not hold (`check failed: <what>`), then fails the bench if there
/// was any.
pub fn fail_on(problems: &[String]) {
    for p in problems {
        println!("check failed: {p}");
    }
    assert!(
        problems.is_empty(),
        "{} checks failed (see above)",
        problems.len()
    );
}

/// `part` as a percentage of `whole`; 0 when `whole` is 0.
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// The environment variable `name` parsed as `T`, if set and valid.
pub fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Writes `value` to `<target dir>/bench/<name>.json` (the target dir is `CARGO_TARGET_DIR` or
/// the workspace's `target/`), so that two runs can be compared; returns the path. An object
/// gets the bench's name (`bench`) and the run that made it (`run`, [`run_info`]) added;
/// `make bench` draws every such file into target/bench/report.html (scripts/bench_report.py).
pub fn write_json(name: &str, value: &serde_json::Value) -> std::path::PathBuf {
    let mut value = value.clone();
    if let Some(fields) = value.as_object_mut() {
        fields.insert("bench".into(), serde_json::json!(name));
        fields.insert("run".into(), run_info());
    }
    let dir = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("bench");
    std::fs::create_dir_all(&dir).expect("target/bench");
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).expect("write JSON");
    path
}
