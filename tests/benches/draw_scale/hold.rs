//! How long one command or one background step holds the server: `SLOWLOG` (the server's own
//! time per command, every command from a threshold: 0 µs, or [`SCRIPT_CALLS`] while scripts
//! run, since a script's own commands are logged too), `LATENCY LATEST` (the latency monitor,
//! threshold 1 ms: commands and the expiry cycle, which `SLOWLOG` never sees), and a client
//! sending `PING` every millisecond on its own connection (the longest round trip: whatever
//! held the main thread, seen from outside, plus this machine's scheduling noise).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::{json, Value as Json};

use super::Server;

/// One `SLOWLOG` entry: the command's name (and a script's SHA-1 for `EVALSHA`) and its time.
#[derive(Clone, Debug)]
pub struct Logged {
    pub command: String,
    pub sha: String,
    pub usec: u64,
}

/// One `LATENCY LATEST` event: its name, latest and all-time-max ms since the reset.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: String,
    pub latest_ms: i64,
    pub max_ms: i64,
}

impl Event {
    pub fn json(&self) -> Json {
        json!({"event": self.name, "latest_ms": self.latest_ms, "max_ms": self.max_ms})
    }
}

/// What one measured step held the server for.
#[derive(Clone, Debug)]
pub struct Held {
    /// Every command the step sent, as `SLOWLOG` logged them (oldest first).
    pub logged: Vec<Logged>,
    pub events: Vec<Event>,
    /// The longest `PING` round trip during the step, µs.
    pub ping_max_usec: u64,
    pub pings: usize,
}

impl Held {
    /// The longest command (none: 0), µs, leaving out the probe's `PING`s and the bench's
    /// own `SLOWLOG`/`CONFIG`/`LATENCY`/`DBSIZE` commands.
    pub fn max_usec(&self) -> u64 {
        self.measured().map(|l| l.usec).max().unwrap_or(0)
    }

    /// The commands of the step itself.
    pub fn measured(&self) -> impl Iterator<Item = &Logged> {
        self.logged.iter().filter(|l| {
            !matches!(
                l.command.as_str(),
                "ping" | "slowlog" | "config" | "latency" | "dbsize"
            )
        })
    }

    /// The `n` longest commands logged, the bench's own included, as `<command> <µs>`.
    pub fn longest(&self, n: usize) -> Vec<String> {
        let mut all: Vec<&Logged> = self.logged.iter().collect();
        all.sort_by_key(|l| std::cmp::Reverse(l.usec));
        all.iter()
            .take(n)
            .map(|l| format!("{} {}", l.command, l.usec))
            .collect()
    }

    /// The longest `LATENCY LATEST` event (none: 0), ms.
    pub fn max_event_ms(&self) -> i64 {
        self.events.iter().map(|e| e.max_ms).max().unwrap_or(0)
    }

    pub fn json(&self) -> Json {
        json!({
            "max_command_usec": self.max_usec(),
            "commands": self.measured().count(),
            "latency_latest": self.events.iter().map(Event::json).collect::<Vec<_>>(),
            "longest_logged": self.longest(5),
            "ping_max_usec": self.ping_max_usec,
            "pings": self.pings,
        })
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => text(other).parse().unwrap_or(0),
    }
}

/// The `SLOWLOG` threshold while scripts run, µs. Redis 7.0 and Valkey 9 log the commands a
/// script calls as well as the script, and logging two per winner (`LPOP`, `HSET`) at 0 µs
/// made a winner about a fifth dearer on Redis and twice as dear on Valkey in this bench's
/// runs; every `draw_run.lua` call takes longer than this, every command inside it far less.
pub const SCRIPT_CALLS: u64 = 100;

/// Logs every command of `from_usec` or more from now on (room for `max_len`), starts the
/// latency monitor at 1 ms, and clears both.
pub async fn arm(s: &mut Server, max_len: usize, from_usec: u64) {
    s.cmd(&[
        "CONFIG",
        "SET",
        "slowlog-log-slower-than",
        &from_usec.to_string(),
    ])
    .await;
    s.cmd(&["CONFIG", "SET", "slowlog-max-len", &max_len.to_string()])
        .await;
    s.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "1"])
        .await;
    s.cmd(&["SLOWLOG", "RESET"]).await;
    s.cmd(&["LATENCY", "RESET"]).await;
}

/// What was logged since [`arm`]; puts the thresholds back to the defaults (10 ms, monitor
/// off).
async fn collect(s: &mut Server) -> (Vec<Logged>, Vec<Event>) {
    // The latency monitor first: it would see the SLOWLOG GET too.
    let latest: Vec<Value> = s.query(&["LATENCY", "LATEST"]).await;
    let log: Vec<Value> = s.query(&["SLOWLOG", "GET", "-1"]).await;
    s.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "10000"])
        .await;
    s.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "0"])
        .await;
    let mut logged: Vec<Logged> = log
        .iter()
        .filter_map(|e| match e {
            Value::Array(f) if f.len() >= 4 => {
                let args = match &f[3] {
                    Value::Array(a) => a.iter().map(text).collect::<Vec<_>>(),
                    _ => Vec::new(),
                };
                Some(Logged {
                    command: args.first().map(|c| c.to_lowercase()).unwrap_or_default(),
                    sha: args.get(1).cloned().unwrap_or_default(),
                    usec: int(&f[2]) as u64,
                })
            }
            _ => None,
        })
        .collect();
    logged.reverse(); // SLOWLOG GET answers the newest first
    let events = latest
        .iter()
        .filter_map(|e| match e {
            Value::Array(f) if f.len() >= 4 => Some(Event {
                name: text(&f[0]),
                latest_ms: int(&f[2]),
                max_ms: int(&f[3]),
            }),
            _ => None,
        })
        .collect();
    (logged, events)
}

/// A `PING` every millisecond on `conn` until the flag is set; (longest round trip µs, pings).
fn probe(
    mut conn: MultiplexedConnection,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<(u64, usize)>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let task = tokio::spawn(async move {
        let (mut max, mut n) = (0u64, 0usize);
        while !flag.load(Ordering::Relaxed) {
            let sent = Instant::now();
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .expect("PING");
            max = max.max(sent.elapsed().as_micros() as u64);
            n += 1;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        (max, n)
    });
    (stop, task)
}

/// Runs `step` with every command of `from_usec` or more logged ([`arm`]) and the `PING` probe
/// on a connection of its own; answers what `step` answered and what it held the server for.
pub async fn measure<F, T>(s: &mut Server, max_len: usize, from_usec: u64, step: F) -> (T, Held)
where
    F: std::future::Future<Output = T>,
{
    let probe_conn = s.connect().await;
    arm(s, max_len, from_usec).await;
    let (stop, task) = probe(probe_conn);
    let out = step.await;
    stop.store(true, Ordering::Relaxed);
    let (ping_max_usec, pings) = task.await.expect("probe");
    let (logged, events) = collect(s).await;
    (
        out,
        Held {
            logged,
            events,
            ping_max_usec,
            pings,
        },
    )
}

/// Waits until the server holds fewer than `keys` keys (an expired key reclaimed by the
/// expiry cycle, never touched by a command), polling `DBSIZE` every 5 ms; panics after 60 s.
pub async fn until_fewer_keys(conn: &mut MultiplexedConnection, keys: i64) -> Duration {
    let started = Instant::now();
    loop {
        let n: i64 = redis::cmd("DBSIZE")
            .query_async(conn)
            .await
            .expect("DBSIZE");
        if n < keys {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "an expired key was not reclaimed within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
