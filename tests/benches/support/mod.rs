//! Helpers shared by the benchmarks in `tests/benches/` (`#[path = "support/mod.rs"] mod
//! support;`): the client's CPU time, and the server's figures read from `INFO`.
#![allow(dead_code)] // each benchmark uses a subset

/// CPU time (user + system) used so far by this process (`RUSAGE_SELF`) or by its waited-for
/// children (`RUSAGE_CHILDREN`, e.g. `redis-benchmark`), seconds.
pub fn rusage_cpu(who: libc::c_int) -> f64 {
    // SAFETY: `getrusage` only writes the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(who, &mut usage), 0, "getrusage");
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The numeric field `name` of an `INFO` reply (`name:value` lines, or the `k=v` item `item`
/// after `name:` when it is given), 0 if absent.
pub fn info_field(info: &str, name: &str, item: Option<&str>) -> f64 {
    let value = info
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'));
    let value = match (value, item) {
        (Some(v), Some(item)) => v
            .split(',')
            .find_map(|kv| kv.strip_prefix(item)?.strip_prefix('=')),
        (v, None) => v,
        (None, _) => None,
    };
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

/// CPU time (user + system) the server has used so far, seconds, from an `INFO cpu` reply.
pub fn server_cpu_secs(info_cpu: &str) -> f64 {
    info_field(info_cpu, "used_cpu_user", None) + info_field(info_cpu, "used_cpu_sys", None)
}

/// `(calls, usec_per_call)` of `cmdstat_evalsha` in an `INFO commandstats` reply: the server's
/// own time per script call.
pub fn evalsha_stats(info_commandstats: &str) -> (u64, f64) {
    (
        info_field(info_commandstats, "cmdstat_evalsha", Some("calls")) as u64,
        info_field(info_commandstats, "cmdstat_evalsha", Some("usec_per_call")),
    )
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
/// the workspace's `target/`), so that two runs can be compared; returns the path.
pub fn write_json(name: &str, value: &serde_json::Value) -> std::path::PathBuf {
    let dir = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("bench");
    std::fs::create_dir_all(&dir).expect("target/bench");
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).expect("write JSON");
    path
}

/// CPU time (user + system) of the server's main thread so far, seconds, from an `INFO cpu`
/// reply (`used_cpu_user_main_thread` + `used_cpu_sys_main_thread`), and whether those fields
/// were there; without them (servers before Redis 6.2) the whole process's time
/// ([`server_cpu_secs`]).
pub fn server_main_thread_cpu_secs(info_cpu: &str) -> (f64, bool) {
    let has = |name: &str| {
        info_cpu
            .lines()
            .any(|l| l.strip_prefix(name).is_some_and(|v| v.starts_with(':')))
    };
    if has("used_cpu_user_main_thread") && has("used_cpu_sys_main_thread") {
        (
            info_field(info_cpu, "used_cpu_user_main_thread", None)
                + info_field(info_cpu, "used_cpu_sys_main_thread", None),
            true,
        )
    } else {
        (server_cpu_secs(info_cpu), false)
    }
}

/// `calls` of every command in an `INFO commandstats` reply (`cmdstat_<name>:calls=...`),
/// by command name (lower case, subcommands as `config|get`).
pub fn commandstats_calls(info_commandstats: &str) -> std::collections::BTreeMap<String, u64> {
    info_commandstats
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .trim()
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}
