//! The server's figures read from `INFO` replies: a field, the server's CPU (whole process or
//! main thread), and the commands' calls and time (`INFO commandstats`).

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
