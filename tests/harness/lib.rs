//! Test harness: starts real, private `redis-server` processes (standalone or
//! a 3-master Redis Cluster) on free loopback ports for integration tests and
//! benchmarks, and gives async connections to them for assertions.
//! `HONGBAO_TEST_SERVER=valkey8|valkey9` starts Valkey 8.1 or 9.1 instead
//! (see [`engine`]). [`moto`] runs moto in server mode: real EventBridge and CloudWatch Logs
//! endpoints on loopback. [`proxy`] is a fault-injecting TCP proxy, which
//! [`ReplicatedCluster::start_proxied`] puts in front of every cluster node.
//!
//! Every server lives in its own temp dir and is killed on drop. Nothing here
//! ever touches a Redis that the harness did not start itself.
//!
//! ```no_run
//! # async fn demo() {
//! use harness::{Backend, TestRedis};
//! for backend in Backend::all() {
//!     let redis = TestRedis::start(backend);
//!     let mut conn = redis.raw_conn().await;
//!     let _: () = redis::cmd("SET").arg("k").arg(1).query_async(&mut conn).await.unwrap();
//!     assert_eq!(redis.all_keys().await, vec!["k".to_string()]);
//! }
//! # }
//! ```

mod backend;
mod cluster;
mod configured;
pub mod engine;
pub mod moto;
pub mod ports;
pub mod proxy;
mod replicated;
mod server;

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub use backend::{Backend, RawConn, TestRedis, REPLICAS_ENV};
pub use cluster::RedisCluster;
pub use configured::{ConfiguredServer, TestCa};
pub use engine::{ensure_server_installed, Engine, SERVER_ENV};
pub use proxy::{FaultProxy, ProxyControl, ProxyStats};
pub use replicated::{NodeInfo, ReplicatedCluster};
pub use server::RedisServer;

/// Response timeout of connections handed out by the harness. The `redis`
/// crate's default (500 ms) is too tight for busy CI machines.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes sure `redis-server` and `redis-cli` are on `PATH`, running the
/// project's installer `scripts/install-deps.sh --redis-only` (the
/// `redis-server` apt package) otherwise. Runs once per process; panics with a
/// clear message if Redis cannot be made available.
pub fn ensure_redis_installed() {
    static RESULT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(msg) = RESULT.get_or_init(install_redis) {
        panic!("{msg}");
    }
}

fn install_redis() -> Result<(), String> {
    let have_redis = || on_path("redis-server") && on_path("redis-cli");
    if have_redis() {
        return Ok(());
    }
    // The repository root: this crate lives in `<root>/tests`.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    eprintln!(
        "harness: redis-server/redis-cli not on PATH, running scripts/install-deps.sh --redis-only"
    );
    let status = Command::new("bash")
        .arg("scripts/install-deps.sh")
        .arg("--redis-only")
        .current_dir(root)
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && have_redis() => Ok(()),
        Ok(s) if s.success() => Err(
            "harness: scripts/install-deps.sh --redis-only succeeded but redis-server/redis-cli \
             are still not on PATH; install Redis (>= 7) manually"
                .to_string(),
        ),
        Ok(s) => Err(format!(
            "harness: redis-server/redis-cli are not on PATH and `scripts/install-deps.sh \
             --redis-only` failed ({s}); install Redis (>= 7) manually"
        )),
        Err(e) => Err(format!(
            "harness: redis-server/redis-cli are not on PATH and `bash scripts/install-deps.sh` \
             could not run in {root}: {e}; install Redis (>= 7) manually"
        )),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

/// An async connection to one node, with the harness response timeout as its connect timeout
/// too (the client's default, 1 s, is missed on a loaded 2-core machine: a test's snapshot then
/// failed to connect to a healthy server).
pub(crate) async fn node_conn(url: &str) -> redis::aio::MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(RESPONSE_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    redis::Client::open(url)
        .unwrap_or_else(|e| panic!("harness: bad url {url}: {e}"))
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap_or_else(|e| panic!("harness: cannot connect to {url}: {e}"))
}

/// All keys of a single node (SCAN), sorted.
pub(crate) async fn scan_keys(url: &str) -> Vec<String> {
    let mut conn = node_conn(url).await;
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("harness: SCAN on {url} failed: {e}"));
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys
}
