//! The recording proxy: every chunk a client sends, logged with its connection and phase before
//! it is forwarded; the server's bytes forwarded untouched (and logged, to count its errors).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use crate::CHUNK_BYTES;

/// The recording phase of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Data, scripts and connections being set up: replayed before the measurement.
    Setup = 0,
    /// The storm: replayed and measured.
    Storm = 1,
    /// After the storm (connections closing): not replayed.
    After = 2,
}

impl Phase {
    /// The phase stored as `v` in the proxy's switch.
    pub fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Setup,
            1 => Phase::Storm,
            _ => Phase::After,
        }
    }
}

/// The bytes of one `read` from one side of a proxied connection, as the proxy saw them.
pub struct Chunk {
    /// The connection's number (in accept order).
    pub conn: usize,
    /// The phase when it was read.
    pub phase: Phase,
    /// The raw bytes.
    pub bytes: Vec<u8>,
}

/// What the proxy recorded.
#[derive(Default)]
pub struct Log {
    /// Every chunk read from a client, in the order they were read.
    pub sent: Vec<Chunk>,
    /// Every chunk read from the server, in the order they were read (only to count the
    /// recording's error replies).
    pub received: Vec<Chunk>,
}

/// The recording proxy: forwards every accepted connection to the server, logging every chunk
/// read from a client (in order, before forwarding it) and every chunk of the server's
/// replies (forwarded untouched).
pub struct Proxy {
    /// The address clients connect to.
    pub addr: SocketAddr,
    /// The current [`Phase`] (as `u8`).
    pub phase: Arc<AtomicU8>,
    /// Everything recorded so far.
    pub log: Arc<Mutex<Log>>,
    /// The accept loop.
    pub accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
        let addr = listener.local_addr().expect("proxy address");
        let phase = Arc::new(AtomicU8::new(Phase::Setup as u8));
        let log = Arc::new(Mutex::new(Log::default()));
        let (p, l) = (phase.clone(), log.clone());
        let accept = tokio::spawn(async move {
            let mut next = 0;
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(forward(client, upstream, next, p.clone(), l.clone()));
                next += 1;
            }
        });
        Proxy {
            addr,
            phase,
            log,
            accept,
        }
    }

    /// `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Tags the chunks read from now on with `phase`.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    /// Stops accepting and returns what was recorded so far.
    pub fn finish(self) -> Log {
        self.set_phase(Phase::After);
        self.accept.abort();
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Logs `bytes`, read from connection `conn`, into `log` (`sent` or `received`, as `side`
/// picks) with the current phase.
pub fn log_chunk(
    log: &Mutex<Log>,
    side: fn(&mut Log) -> &mut Vec<Chunk>,
    conn: usize,
    phase: &AtomicU8,
    bytes: &[u8],
) {
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    side(&mut log).push(Chunk {
        conn,
        phase: Phase::from_u8(phase.load(Ordering::SeqCst)),
        bytes: bytes.to_vec(),
    });
}

/// One proxied connection, number `conn`: client bytes logged and forwarded to `upstream`,
/// the server's bytes logged and forwarded back untouched.
pub async fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    conn: usize,
    phase: Arc<AtomicU8>,
    log: Arc<Mutex<Log>>,
) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return; // the client sees its connection closed
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_rx, client_tx) = client.into_split();
    let (server_rx, server_tx) = server.into_split();
    let back = tokio::spawn(pump(
        server_rx,
        client_tx,
        |l| &mut l.received,
        conn,
        phase.clone(),
        log.clone(),
    ));
    // Each client chunk is logged before it is forwarded, so a command caused by an earlier
    // reply is always logged after the command that reply answered.
    pump(client_rx, server_tx, |l| &mut l.sent, conn, phase, log).await;
    let _ = back.await;
}

/// Copies `rx` to `tx` until either side closes, logging every chunk read (before writing it)
/// into `log` (`sent` or `received`, as `side` picks); then shuts `tx` down.
pub async fn pump(
    mut rx: OwnedReadHalf,
    mut tx: OwnedWriteHalf,
    side: fn(&mut Log) -> &mut Vec<Chunk>,
    conn: usize,
    phase: Arc<AtomicU8>,
    log: Arc<Mutex<Log>>,
) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        log_chunk(&log, side, conn, &phase, &buf[..n]);
        if tx.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = tx.shutdown().await;
}
