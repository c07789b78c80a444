//! `redis-benchmark`: the physical limit of one Redis, run beside hongbao on the same server.

use std::process::Command;

/// Runs `redis-benchmark` against `127.0.0.1:port`: `n` requests of `command` (its words) over
/// `clients` connections, `pipeline` deep, each `__rand_int__` drawn from `0..random` when
/// given, with CSV output and without `LD_PRELOAD` (the bench may run under a preloaded
/// allocator; this measures the stock tool). Returns its requests per second; panics with its
/// output if it printed no figure.
pub fn redis_benchmark(
    port: u16,
    clients: u32,
    n: u64,
    pipeline: u32,
    random: Option<u64>,
    command: &[String],
) -> f64 {
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args([
            "-c",
            &clients.to_string(),
            "-n",
            &n.to_string(),
            "-P",
            &pipeline.to_string(),
        ]);
    if let Some(range) = random {
        cmd.args(["-r", &range.to_string()]);
    }
    let out = cmd
        .arg("--csv")
        .args(command)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run redis-benchmark");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // CSV: a header line, then `"<command>","<rps>",` and six latency fields.
    stdout
        .lines()
        .nth(1)
        .and_then(|l| l.rsplit("\",\"").nth(6))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "redis-benchmark failed: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}
