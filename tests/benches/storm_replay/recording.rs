//! A scenario recorded: its storm run through a fresh proxy, the client's chunks cut into
//! replay steps (the commands each completes), the recorded server checked.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

use harness::RedisServer;

use crate::proxy::{Phase, Proxy};
use crate::resp::{complete_commands, recorded_errors};
use crate::storms::{grab_seed_storm, grab_storm, verify, vote_ch1_storm, vote_storm, StormOut};
use crate::support::node_conn;
use crate::{Scenario, Settings};

/// One recorded chunk to replay: its bytes, and the replies to read after writing them.
pub struct Step {
    /// The recorded connection.
    pub conn: usize,
    /// The raw bytes.
    pub bytes: Vec<u8>,
    /// The commands this chunk completes (each gets one reply).
    pub replies: usize,
}

/// One scenario's recording, ready to replay.
pub struct Recording {
    /// The scenario.
    pub scenario: Scenario,
    /// The storm's outcome as its callers saw it.
    pub out: StormOut,
    /// Every setup chunk, in recorded order.
    pub setup: Vec<Step>,
    /// Every connection's storm chunks, in order, for each connection that sent any.
    pub storm: Vec<Vec<Step>>,
    /// Connections the clients opened.
    pub connections: usize,
    /// Commands in the setup chunks.
    pub setup_commands: usize,
    /// Commands in the storm chunks.
    pub storm_commands: usize,
    /// Storm chunks.
    pub storm_chunks: usize,
    /// Error replies the recorded server sent, `[setup, storm]`.
    pub errors: [u64; 2],
    /// The first error reply of each phase.
    pub first_errors: [Option<String>; 2],
}

impl Recording {
    /// Storm commands per request.
    pub fn commands_per_request(&self) -> f64 {
        self.storm_commands as f64 / self.out.requests as f64
    }
}

/// Records `scenario` on a fresh server through a fresh proxy; checks the recorded server's
/// state too.
pub async fn record(scenario: Scenario, server: &RedisServer, s: Settings) -> Recording {
    let upstream: SocketAddr = format!("127.0.0.1:{}", server.port())
        .parse()
        .expect("address");
    let proxy = Proxy::start(upstream).await;
    let mut out = match scenario {
        Scenario::Grab => grab_storm(&proxy, s).await,
        Scenario::GrabSeed => grab_seed_storm(&proxy, s).await,
        Scenario::Vote => vote_storm(&proxy, s).await,
        Scenario::VoteCh1 => vote_ch1_storm(&proxy, s).await,
    };
    let log = proxy.finish();
    let (errors, first_errors) = recorded_errors(&log.received)
        .unwrap_or_else(|e| panic!("{}: the server's replies: {e}", scenario.name()));
    let expected = match scenario {
        Scenario::Grab | Scenario::GrabSeed => s.grab_requests(),
        Scenario::Vote | Scenario::VoteCh1 => s.voters,
    };
    if out.requests != expected {
        out.problems
            .push(format!("{} requests, not {expected}", out.requests));
    }
    let mut direct = node_conn(&server.url()).await;
    out.problems.extend(
        verify(&mut direct, &out.checks)
            .await
            .into_iter()
            .map(|p| format!("recorded server: {p}")),
    );

    // Commands per chunk, per connection: a command split over chunks counts in the chunk
    // that completes it.
    let mut pending: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut setup = Vec::new();
    let mut storm: BTreeMap<usize, Vec<Step>> = BTreeMap::new();
    let (mut setup_commands, mut storm_commands, mut storm_chunks) = (0, 0, 0);
    let mut connections = 0;
    for c in log.sent {
        connections = connections.max(c.conn + 1);
        if c.phase == Phase::After {
            continue;
        }
        let buf = pending.entry(c.conn).or_default();
        buf.extend_from_slice(&c.bytes);
        let (replies, used) = complete_commands(buf)
            .unwrap_or_else(|e| panic!("{}: connection {}: {e}", scenario.name(), c.conn));
        buf.drain(..used);
        let step = Step {
            conn: c.conn,
            bytes: c.bytes,
            replies,
        };
        if c.phase == Phase::Setup {
            setup_commands += replies;
            setup.push(step);
        } else {
            storm_commands += replies;
            storm_chunks += 1;
            storm.entry(c.conn).or_default().push(step);
        }
    }
    for (conn, rest) in &pending {
        if !rest.is_empty() {
            out.problems.push(format!(
                "connection {conn} ended inside a command ({} bytes)",
                rest.len()
            ));
        }
    }
    Recording {
        scenario,
        out,
        setup,
        storm: storm.into_values().collect(),
        connections,
        setup_commands,
        storm_commands,
        storm_chunks,
        errors,
        first_errors,
    }
}
