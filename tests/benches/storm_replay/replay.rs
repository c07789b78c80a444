//! A recording replayed on a fresh server: the setup in order, then every connection's storm
//! at once, saturated, with the server's CPU and command counts read around it.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use harness::{RedisServer, RESPONSE_TIMEOUT};
use redis::aio::MultiplexedConnection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::recording::{Recording, Step};
use crate::resp::value_end;
use crate::storms::verify;
use crate::support::{commandstats_calls, node_conn, server_main_thread_cpu_secs};

/// One replay connection: writes recorded chunks and reads the replies they are owed.
pub struct ReplayConn {
    /// The socket.
    pub stream: TcpStream,
    /// Bytes read and not yet parsed from `pos` on.
    pub buf: Vec<u8>,
    /// Where the next reply starts in `buf`.
    pub pos: usize,
    /// Error replies read.
    pub errors: u64,
    /// The first error reply.
    pub first_error: Option<String>,
}

impl ReplayConn {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr) -> ReplayConn {
        let stream = TcpStream::connect(addr).await.expect("replay connect");
        stream.set_nodelay(true).expect("nodelay");
        ReplayConn {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            pos: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// Writes `step`'s bytes, then reads until its replies have arrived (pushes, which answer
    /// no command, are skipped).
    pub async fn exchange(&mut self, step: &Step) -> Result<(), String> {
        self.stream
            .write_all(&step.bytes)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut got = 0;
        while got < step.replies {
            if self.pos < self.buf.len() {
                if let Some(end) = value_end(&self.buf, self.pos)? {
                    match self.buf[self.pos] {
                        b'>' => {}
                        b'-' | b'!' => {
                            self.errors += 1;
                            self.first_error.get_or_insert_with(|| {
                                String::from_utf8_lossy(&self.buf[self.pos..end])
                                    .trim()
                                    .to_string()
                            });
                            got += 1;
                        }
                        _ => got += 1,
                    }
                    self.pos = end;
                    continue;
                }
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.buf.reserve(16 * 1024);
            let read = tokio::time::timeout(RESPONSE_TIMEOUT, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| {
                    format!(
                        "no reply within {RESPONSE_TIMEOUT:?} ({got} of {} read)",
                        step.replies
                    )
                })?
                .map_err(|e| format!("read: {e}"))?;
            if read == 0 {
                return Err(format!(
                    "the server closed the connection ({got} of {} replies read)",
                    step.replies
                ));
            }
        }
        Ok(())
    }
}

/// What one replay of one recording measured.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Server main-thread CPU over the storm, microseconds.
    pub cpu_usec: f64,
    /// Whether `cpu_usec` is the main thread's (`*_main_thread` fields) or the process's.
    pub main_thread: bool,
    /// Wall time of the storm's replay, seconds.
    pub wall_secs: f64,
    /// `INFO commandstats` calls per command during the storm (`info` left out).
    pub commands: BTreeMap<String, u64>,
    /// Error replies during the setup.
    pub setup_errors: u64,
    /// Error replies during the storm.
    pub errors: u64,
    /// Checks that did not hold.
    pub problems: Vec<String>,
}

/// `INFO <section>` on `conn`.
pub async fn info(conn: &mut MultiplexedConnection, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("INFO {section}: {e}"))
}

/// Replays `rec` on `server` (fresh): the setup in order, then the storm saturated, measured.
pub async fn replay(rec: Arc<Recording>, server: &RedisServer) -> Replay {
    let addr: SocketAddr = format!("127.0.0.1:{}", server.port())
        .parse()
        .expect("address");
    let mut admin = node_conn(&server.url()).await;
    let mut problems = Vec::new();

    // Setup: every chunk in recorded order, each on its own connection's replay connection.
    let mut conns: HashMap<usize, ReplayConn> = HashMap::new();
    for step in &rec.setup {
        let conn = match conns.entry(step.conn) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(ReplayConn::open(addr).await),
        };
        if let Err(e) = conn.exchange(step).await {
            panic!(
                "{}: setup replay, connection {}: {e}",
                rec.scenario.name(),
                step.conn
            );
        }
    }
    // The same error replies as the recording (e.g. `CLIENT SETINFO` on a server without it).
    let setup_errors: u64 = conns.values().map(|c| c.errors).sum();
    if setup_errors != rec.errors[0] {
        let first = conns.values().find_map(|c| c.first_error.clone());
        problems.push(format!(
            "{setup_errors} error replies in the setup replay (e.g. {first:?}), {} recorded \
             (e.g. {:?})",
            rec.errors[0], rec.first_errors[0]
        ));
    }
    // The storm's connections, opened (or kept) before the measurement; the others closed.
    let mut storm_conns = Vec::with_capacity(rec.storm.len());
    for (k, steps) in rec.storm.iter().enumerate() {
        let conn = match conns.remove(&steps[0].conn) {
            Some(mut c) => {
                c.errors = 0;
                c.first_error = None;
                c
            }
            None => ReplayConn::open(addr).await,
        };
        storm_conns.push((k, conn));
    }
    drop(conns);

    let stats_before = commandstats_calls(&info(&mut admin, "commandstats").await);
    let (cpu_before, main_thread) = server_main_thread_cpu_secs(&info(&mut admin, "cpu").await);
    let started = Instant::now();
    let handles: Vec<_> = storm_conns
        .into_iter()
        .map(|(k, mut conn)| {
            let rec = rec.clone();
            tokio::spawn(async move {
                for step in &rec.storm[k] {
                    conn.exchange(step).await?;
                }
                Ok::<_, String>((conn.errors, conn.first_error))
            })
        })
        .collect();
    let mut errors = 0;
    let mut first_error = None;
    for h in handles {
        match h.await.expect("replay task") {
            Ok((n, first)) => {
                errors += n;
                first_error = first_error.or(first);
            }
            Err(e) => problems.push(format!("storm replay: {e}")),
        }
    }
    let wall_secs = started.elapsed().as_secs_f64();
    let (cpu_after, _) = server_main_thread_cpu_secs(&info(&mut admin, "cpu").await);
    let stats_after = commandstats_calls(&info(&mut admin, "commandstats").await);
    if errors != rec.errors[1] {
        problems.push(format!(
            "{errors} error replies in the storm replay (e.g. {first_error:?}), {} recorded \
             (e.g. {:?})",
            rec.errors[1], rec.first_errors[1]
        ));
    }
    problems.extend(verify(&mut admin, &rec.out.checks).await);
    let commands = stats_after
        .into_iter()
        .filter(|(name, _)| name != "info")
        .map(|(name, calls)| {
            let before = stats_before.get(&name).copied().unwrap_or(0);
            (name, calls - before)
        })
        .filter(|(_, calls)| *calls > 0)
        .collect();
    Replay {
        cpu_usec: (cpu_after - cpu_before) * 1e6,
        main_thread,
        wall_secs,
        commands,
        setup_errors,
        errors,
        problems,
    }
}
