//! A single `redis-server` process (or `valkey-server`, see [`crate::engine`]) in its own
//! temporary directory.

use std::fmt::Write;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::engine::{self, Engine};
use crate::ports;

/// How long a freshly spawned server may take to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a persistent server may take to shut down cleanly.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// How many ports to try before giving up when `redis-server` cannot bind.
const MAX_ATTEMPTS: usize = 10;
/// Name of the server log inside the temp dir.
const LOG_FILE: &str = "redis.log";
/// Name of the file capturing the server's stdout/stderr inside the temp dir.
const STDIO_FILE: &str = "stdio.log";

/// How a server is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No persistence at all.
    Ephemeral,
    /// AOF with `appendfsync always`; data survives stop/restart.
    Persistent,
    /// Node of a Redis Cluster, no persistence.
    ClusterNode,
}

/// Why spawning a server failed.
enum SpawnError {
    /// The port (or cluster bus port) was taken: retry with another one.
    PortInUse,
    /// Anything else: the message includes the log tail.
    Failed(String),
}

/// A standalone `redis-server` on a free loopback port, with its own temp dir
/// (working dir, log file, AOF). Dropping it kills the process and removes the
/// directory.
pub struct RedisServer {
    // `child` is killed in `Drop::drop`, before the fields (and thus `dir`) drop.
    child: Option<Child>,
    port: u16,
    mode: Mode,
    /// Arguments appended to the command line of every later (re)start (see
    /// [`set_extra_args`](Self::set_extra_args)).
    extra_args: Vec<String>,
    dir: TempDir,
}

impl RedisServer {
    /// Starts a server without persistence (`--save "" --appendonly no`).
    pub fn start() -> Self {
        Self::start_mode(Mode::Ephemeral)
    }

    /// Starts a server with `--appendonly yes --appendfsync always`, so data
    /// survives [`stop`](Self::stop) + [`restart`](Self::restart).
    pub fn start_persistent() -> Self {
        Self::start_mode(Mode::Persistent)
    }

    pub(crate) fn start_mode(mode: Mode) -> Self {
        engine::ensure_server_installed();
        for _ in 0..MAX_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix("hongbao-redis-")
                .tempdir()
                .expect("harness: cannot create temp dir for redis-server");
            let port = ports::free_port(mode == Mode::ClusterNode);
            match spawn(dir.path(), port, mode, &[]) {
                Ok(child) => {
                    let server = RedisServer {
                        child: Some(child),
                        port,
                        mode,
                        extra_args: Vec::new(),
                        dir,
                    };
                    // Once per process: which server runs, and is it the one asked for?
                    engine::announce(|| {
                        sync_conn(port)
                            .and_then(|mut c| redis::cmd("INFO").arg("server").query(&mut c).ok())
                            .unwrap_or_default()
                    });
                    return server;
                }
                Err(SpawnError::PortInUse) => continue,
                Err(SpawnError::Failed(msg)) => panic!("{msg}"),
            }
        }
        panic!("harness: redis-server could not bind a free port in {MAX_ATTEMPTS} attempts");
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (log file `redis.log`, AOF, `nodes.conf`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id while the server runs (e.g. to freeze it with `SIGSTOP` in a fault test).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is currently running (i.e. not [`stop`](Self::stop)ped).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Stops the server. A persistent server is shut down cleanly
    /// (`redis-cli shutdown`, flushing the AOF) and awaited; any other server
    /// is killed. No-op if already stopped.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.mode == Mode::Persistent {
            let _ = Command::new(Engine::current().cli_program())
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "shutdown"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                sleep(Duration::from_millis(10));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Sets command-line arguments (e.g. `--cluster-announce-port 1234`) that every later
    /// [`restart`](Self::restart) appends to the mode's own, so that a restarted server is
    /// configured as the running one was (settings made with `CONFIG SET` are lost on a
    /// restart: the harness runs servers without a config file).
    pub(crate) fn set_extra_args(&mut self, args: Vec<String>) {
        self.extra_args = args;
    }

    /// Starts the server again on the same port and directory (stopping it
    /// first if it is running) and waits until it answers `PING` and has
    /// finished loading its data.
    pub fn restart(&mut self) {
        self.stop();
        let mut last_err = String::new();
        for _ in 0..MAX_ATTEMPTS {
            match spawn(self.dir.path(), self.port, self.mode, &self.extra_args) {
                Ok(child) => {
                    self.child = Some(child);
                    return;
                }
                Err(SpawnError::PortInUse) => {
                    last_err = format!(
                        "port {} is in use\n{}",
                        self.port,
                        log_tail(self.dir.path())
                    );
                    sleep(Duration::from_millis(200));
                }
                Err(SpawnError::Failed(msg)) => panic!("{msg}"),
            }
        }
        panic!("harness: redis-server restart failed: {last_err}");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Spawns `redis-server` (with `extra_args` after the mode's arguments) and waits until it is
/// ready.
fn spawn(dir: &Path, port: u16, mode: Mode, extra_args: &[String]) -> Result<Child, SpawnError> {
    let stdio = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(STDIO_FILE))
        .expect("harness: cannot create redis stdio log");
    let program = Engine::current().server_program();
    let mut cmd = Command::new(&program);
    cmd.arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--protected-mode", "no"])
        .args(["--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join(LOG_FILE))
        // Fault tests freeze servers with `DEBUG SLEEP` (Redis 7 disables DEBUG by default).
        .args(["--enable-debug-command", "yes"]);
    match mode {
        Mode::Ephemeral => cmd.args(["--save", "", "--appendonly", "no"]),
        Mode::Persistent => cmd.args(["--appendonly", "yes", "--appendfsync", "always"]),
        Mode::ClusterNode => cmd
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", "nodes.conf"])
            .args(["--cluster-node-timeout", "5000"])
            // A replica (a restarted master, say) syncs at once instead of after the default
            // 5 s wait for more replicas to share one RDB transfer.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--save", "", "--appendonly", "no"]),
    };
    cmd.args(extra_args);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(
            stdio
                .try_clone()
                .expect("harness: cannot clone file handle"),
        )
        .stderr(stdio)
        .spawn()
        .map_err(|e| {
            SpawnError::Failed(format!(
                "harness: cannot spawn {}: {e}",
                program.to_string_lossy()
            ))
        })?;

    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = log_tail(dir);
            return Err(if log.contains("Address already in use") {
                SpawnError::PortInUse
            } else {
                SpawnError::Failed(format!(
                    "harness: {} on port {port} exited during startup ({status})\n{log}",
                    program.to_string_lossy()
                ))
            });
        }
        if is_ready(port, child.id()) {
            return Ok(child);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Failed(format!(
                "harness: {} on port {port} not ready after {READY_TIMEOUT:?}\n{}",
                program.to_string_lossy(),
                log_tail(dir)
            )));
        }
        sleep(Duration::from_millis(20));
    }
}

/// True if the server on `port` is our process (`pid`), answers `PING` and
/// is not loading. Checking the pid guards against a foreign server that won
/// the race for the port while ours is about to fail binding.
fn is_ready(port: u16, pid: u32) -> bool {
    let Some(mut conn) = sync_conn(port) else {
        return false;
    };
    if redis::cmd("PING").query::<String>(&mut conn).is_err() {
        return false;
    }
    let Ok(info) = redis::cmd("INFO")
        .arg("server")
        .arg("persistence")
        .query::<String>(&mut conn)
    else {
        return false;
    };
    info.lines()
        .any(|l| l.trim() == format!("process_id:{pid}"))
        && info.lines().any(|l| l.trim() == "loading:0")
}

/// A blocking connection with short timeouts, or `None` if not reachable.
pub(crate) fn sync_conn(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let conn = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    conn.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    Some(conn)
}

/// The last lines of the server log and captured stdout/stderr.
pub(crate) fn log_tail(dir: &Path) -> String {
    let mut out = String::new();
    for name in [LOG_FILE, STDIO_FILE] {
        let text = fs::read_to_string(dir.join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(30)..];
        let _ = writeln!(out, "--- {} (last {} lines) ---", name, tail.len());
        for line in tail {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}
