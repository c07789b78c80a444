//! Free loopback port selection.
//!
//! Ports are picked at random (so parallel test processes rarely collide),
//! checked for bindability, and remembered so this process never hands the
//! same port out twice. A remaining race with another process is handled by
//! the caller, which retries with a new port if `redis-server` cannot bind.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};
use std::ops::Range;
use std::sync::Mutex;

/// Range the client ports are drawn from; the cluster bus port (`port +
/// 10000`) of every port in it is still a valid port.
const PORT_RANGE: Range<u16> = 20_000..54_000;

/// Offset of the Redis Cluster bus port from the client port.
pub const CLUSTER_BUS_OFFSET: u16 = 10_000;

/// Ports already handed out by this process.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Returns a random loopback port that is currently bindable and has not been
/// handed out before by this process. With `with_cluster_bus`, `port + 10000`
/// must be bindable too.
pub fn free_port(with_cluster_bus: bool) -> u16 {
    for _ in 0..1_000 {
        let port = rand::random_range(PORT_RANGE);
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.contains(&port) {
            continue;
        }
        if !bindable(port) || (with_cluster_bus && !bindable(port + CLUSTER_BUS_OFFSET)) {
            continue;
        }
        handed_out.insert(port);
        return port;
    }
    panic!("harness: found no free loopback port in {PORT_RANGE:?} after 1000 tries");
}

fn bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}
