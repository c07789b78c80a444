//! Helpers shared by the benchmarks in `tests/benches/` (`#[path = "support/mod.rs"] mod
//! support;`): the client's CPU time, the server's figures read from `INFO`, and the baselines'
//! scripts (seed 000's grab, chapter 1's vote).
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

/// The original red-packet blog post's grab script, verbatim in its logic (`getHbLua`): KEYS[1]
/// pool of JSON shares, KEYS[2] detail list, KEYS[3] hash of users who grabbed, KEYS[4] the user
/// id.
pub const SEED_GRAB: &str = r#"
if redis.call('hexists', KEYS[3], KEYS[4]) ~= 0 then
  return '1'
else
  local hb = redis.call('rpop', KEYS[1])
  if hb then
    local x = cjson.decode(hb)
    x['userId'] = KEYS[4]
    local re = cjson.encode(x)
    redis.call('hset', KEYS[3], KEYS[4], '1')
    redis.call('lpush', KEYS[2], re)
    return re
  else
    return '0'
  end
end
return nil
"#;

/// "Redis in Action" chapter 1 `article_vote` (ZSCORE of the time set against the cutoff,
/// SADD of the voter, ZINCRBY of the score, HINCRBY of the votes) as one script. KEYS[1] time
/// set, KEYS[2] voted set, KEYS[3] score set, KEYS[4] article hash; ARGV[1] article member,
/// ARGV[2] user, ARGV[3] cutoff (Unix s).
pub const CH1_VOTE: &str = r#"
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) < tonumber(ARGV[3]) then
  return 0
end
if redis.call('SADD', KEYS[2], ARGV[2]) == 1 then
  redis.call('ZINCRBY', KEYS[3], 432, ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'votes', 1)
end
return 1
"#;

/// Chapter 1's keys for [`CH1_VOTE`]: time set, voted set, score set, article hash (the
/// article is member `a`).
pub const CH1_KEYS: [&str; 4] = [
    "ch1:{s}:time",
    "ch1:{s}:voted",
    "ch1:{s}:score",
    "ch1:{s}:article",
];

/// Posts chapter 1's one article `a` at Redis `TIME` (its time and score entries, its hash with
/// one vote) on `conn`; returns the cutoff to pass as [`CH1_VOTE`]'s ARGV[3] (Unix s).
pub async fn ch1_article(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let [time, _, score, hash] = CH1_KEYS;
    let now: (i64, i64) = redis::cmd("TIME").query_async(conn).await.expect("TIME");
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(time)
        .arg(now.0)
        .arg("a")
        .ignore()
        .cmd("ZADD")
        .arg(score)
        .arg(now.0 + 432)
        .arg("a")
        .ignore()
        .cmd("HSET")
        .arg(hash)
        .arg("votes")
        .arg(1)
        .ignore()
        .query_async(conn)
        .await
        .expect("ch1 setup");
    now.0 - hongbao::store::voting::ONE_WEEK_IN_SECONDS
}
