//! A fault-injecting TCP proxy in front of one server: every connection accepted on its
//! loopback port is forwarded byte for byte to `127.0.0.1:<target>`, and a [`ProxyControl`]
//! injects faults into the client side of that path: delayed replies, a lost reply, all
//! connections cut at once, a partition that heals.
//!
//! The proxy runs on its own thread with its own tokio runtime: a test whose clients saturate
//! the test's runtime must not starve the proxy, or a stalled proxy would look like a fault
//! nobody injected.
//!
//! Faults apply to client connections only. When cluster nodes announce their proxy's port
//! (see [`ReplicatedCluster::start_proxied`](crate::ReplicatedCluster::start_proxied)), a
//! replica replicates from its master's announced port, so replication links run through the
//! proxy too; the proxy recognises them by their handshake (the replica sends `REPLCONF`,
//! `PSYNC` or `SYNC`) and forwards them untouched by every fault, because the faults model
//! the network between clients and servers, not between nodes. A connection whose client has
//! sent only `PING` or `AUTH` so far (how a replica's handshake begins) is not yet known:
//! replies on it are neither dropped nor delayed until its client sends something else.
//!
//! ```no_run
//! use std::time::Duration;
//! use harness::proxy::FaultProxy;
//! # let server = harness::RedisServer::start();
//! let proxy = FaultProxy::start(server.port());
//! let control = proxy.control();
//! control.set_reply_delay(Duration::from_millis(200));
//! control.drop_next_reply();
//! # drop(proxy);
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::ports;

/// Bytes read from a socket at most per chunk.
const CHUNK_BYTES: usize = 16 * 1024;
/// Server-to-client chunks held per connection (delayed or blackholed) before the proxy stops
/// reading from the server, which leaves the rest in the kernel's buffers (TCP backpressure).
const HELD_CHUNKS: usize = 256;
/// How many ports to try when the listener cannot bind.
const BIND_ATTEMPTS: usize = 20;
/// Pause after a failed `accept` (e.g. out of file descriptors), instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a connection is, as far as its first commands tell.
const KIND_UNKNOWN: u8 = 0;
/// A client connection: every fault applies.
const KIND_CLIENT: u8 = 1;
/// A replica's replication link: no fault applies.
const KIND_REPLICATION: u8 = 2;

/// A fault-injecting TCP proxy to `127.0.0.1:<target port>` (see the module docs). Dropping it
/// stops the proxy and closes every connection it forwards.
pub struct FaultProxy {
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A cheap, cloneable handle that injects faults into a [`FaultProxy`] and reads its
/// counters. It stays usable after the proxy is dropped (the faults then reach nobody).
#[derive(Clone)]
pub struct ProxyControl {
    shared: Arc<Shared>,
}

/// Counters of a [`FaultProxy`], since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Connections accepted from clients.
    pub connections_accepted: u64,
    /// Connections open right now (accepted and not yet closed).
    pub connections_open: u64,
    /// Accepted connections closed at once because the target did not accept the proxy's
    /// connection (e.g. the server was killed).
    pub connect_failures: u64,
    /// Connections recognised as a replica's replication link (exempt from faults).
    pub replication_links: u64,
    /// Bytes forwarded from clients to the server.
    pub bytes_to_server: u64,
    /// Bytes forwarded from the server to clients.
    pub bytes_to_client: u64,
    /// Server-to-client chunks held for the reply delay.
    pub delayed_chunks: u64,
    /// Server chunks discarded by [`ProxyControl::drop_next_reply`] (one per connection it
    /// closed).
    pub replies_dropped: u64,
    /// Calls of [`ProxyControl::cut_all`].
    pub cuts: u64,
    /// Connections closed by [`ProxyControl::cut_all`].
    pub connections_cut: u64,
    /// Times the blackhole was switched on (off to on).
    pub blackholes: u64,
}

/// State shared by the proxy's thread and every [`ProxyControl`].
struct Shared {
    /// The proxy's own port.
    port: u16,
    /// The server's port.
    target_port: u16,
    /// Current reply delay, microseconds.
    reply_delay_us: AtomicU64,
    /// Drops armed by [`ProxyControl::drop_next_reply`] and not yet done.
    pending_drops: AtomicU64,
    /// True while the blackhole is on.
    blackhole: watch::Sender<bool>,
    /// Bumped by every [`ProxyControl::cut_all`]; each connection watches it.
    cut: watch::Sender<u64>,
    connections_accepted: AtomicU64,
    connections_open: AtomicU64,
    connect_failures: AtomicU64,
    replication_links: AtomicU64,
    bytes_to_server: AtomicU64,
    bytes_to_client: AtomicU64,
    delayed_chunks: AtomicU64,
    replies_dropped: AtomicU64,
    cuts: AtomicU64,
    connections_cut: AtomicU64,
    blackholes: AtomicU64,
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards every connection to
    /// `127.0.0.1:target_port`, on a thread of its own. Returns once the listener is bound.
    pub fn start(target_port: u16) -> FaultProxy {
        let listener = bind_free_port();
        let port = listener
            .local_addr()
            .expect("harness: proxy listener has no address")
            .port();
        listener
            .set_nonblocking(true)
            .expect("harness: cannot make the proxy listener non-blocking");
        let shared = Arc::new(Shared::new(port, target_port));
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("harness: cannot build the proxy's runtime");
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fault-proxy-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener)
                        .expect("harness: cannot register the proxy listener");
                    tokio::select! {
                        () = accept_loop(listener, thread_shared) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime drops every connection task, and with them both
                // sockets of every connection: clients see the connection close.
                drop(runtime);
            })
            .expect("harness: cannot spawn the proxy thread");
        FaultProxy {
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The proxy's loopback port (what clients connect to).
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// The server's port the proxy forwards to.
    pub fn target_port(&self) -> u16 {
        self.shared.target_port
    }

    /// `redis://127.0.0.1:<proxy port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.shared.port)
    }

    /// A handle that injects faults and reads counters.
    pub fn control(&self) -> ProxyControl {
        ProxyControl {
            shared: self.shared.clone(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.shared.stats()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ProxyControl {
    /// The proxy's loopback port.
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// The server's port the proxy forwards to.
    pub fn target_port(&self) -> u16 {
        self.shared.target_port
    }

    /// Holds every chunk from the server for `delay` after it arrives before forwarding it to
    /// the client (order kept per connection); [`Duration::ZERO`] clears it. Chunks already
    /// held keep the delay they arrived with.
    pub fn set_reply_delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.reply_delay_us.store(us, Ordering::SeqCst);
    }

    /// The current reply delay.
    pub fn reply_delay(&self) -> Duration {
        Duration::from_micros(self.shared.reply_delay_us.load(Ordering::SeqCst))
    }

    /// Arms a one-shot fault ("the command ran but its reply was lost"): the next chunk of
    /// bytes that arrives from the server on any client connection is discarded, and that
    /// connection is closed on both sides at once, together with any of its chunks still
    /// held by a reply delay. Closing is what makes it a clean fault: forwarding later replies
    /// on that connection would pair them with the wrong requests. Each call arms one more
    /// drop; [`drops_done`](Self::drops_done) counts the drops done.
    pub fn drop_next_reply(&self) {
        self.shared.pending_drops.fetch_add(1, Ordering::SeqCst);
    }

    /// Drops armed by [`drop_next_reply`](Self::drop_next_reply) and not yet done.
    pub fn pending_drops(&self) -> u64 {
        self.shared.pending_drops.load(Ordering::SeqCst)
    }

    /// Replies discarded by [`drop_next_reply`](Self::drop_next_reply) so far.
    pub fn drops_done(&self) -> u64 {
        self.shared.replies_dropped.load(Ordering::SeqCst)
    }

    /// Closes every open client connection at once (both sides), whatever is in flight.
    /// Connections accepted afterwards are forwarded as usual.
    pub fn cut_all(&self) {
        self.shared.cuts.fetch_add(1, Ordering::SeqCst);
        self.shared.cut.send_modify(|generation| *generation += 1);
    }

    /// While on, bytes in both directions of every client connection are held (neither
    /// forwarded nor dropped): a network partition. Switching it off forwards what was held,
    /// in order. New connections are still accepted (and held).
    pub fn set_blackhole(&self, on: bool) {
        let was_on = self.shared.blackhole.send_replace(on);
        if on && !was_on {
            self.shared.blackholes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether the blackhole is on.
    pub fn blackhole(&self) -> bool {
        *self.shared.blackhole.borrow()
    }

    /// Clears every fault that lasts: the reply delay, the blackhole and armed drops.
    pub fn clear_faults(&self) {
        self.set_reply_delay(Duration::ZERO);
        self.set_blackhole(false);
        self.shared.pending_drops.store(0, Ordering::SeqCst);
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.shared.stats()
    }
}

impl Shared {
    fn new(port: u16, target_port: u16) -> Shared {
        Shared {
            port,
            target_port,
            reply_delay_us: AtomicU64::new(0),
            pending_drops: AtomicU64::new(0),
            blackhole: watch::Sender::new(false),
            cut: watch::Sender::new(0),
            connections_accepted: AtomicU64::new(0),
            connections_open: AtomicU64::new(0),
            connect_failures: AtomicU64::new(0),
            replication_links: AtomicU64::new(0),
            bytes_to_server: AtomicU64::new(0),
            bytes_to_client: AtomicU64::new(0),
            delayed_chunks: AtomicU64::new(0),
            replies_dropped: AtomicU64::new(0),
            cuts: AtomicU64::new(0),
            connections_cut: AtomicU64::new(0),
            blackholes: AtomicU64::new(0),
        }
    }

    fn stats(&self) -> ProxyStats {
        let get = |c: &AtomicU64| c.load(Ordering::SeqCst);
        ProxyStats {
            connections_accepted: get(&self.connections_accepted),
            connections_open: get(&self.connections_open),
            connect_failures: get(&self.connect_failures),
            replication_links: get(&self.replication_links),
            bytes_to_server: get(&self.bytes_to_server),
            bytes_to_client: get(&self.bytes_to_client),
            delayed_chunks: get(&self.delayed_chunks),
            replies_dropped: get(&self.replies_dropped),
            cuts: get(&self.cuts),
            connections_cut: get(&self.connections_cut),
            blackholes: get(&self.blackholes),
        }
    }

    /// Takes one armed drop, if any.
    fn take_drop(&self) -> bool {
        self.pending_drops
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Binds a loopback listener on a port from [`ports::free_port`], so that the proxy never
/// takes a port the harness hands to a server (or a server's cluster bus).
fn bind_free_port() -> std::net::TcpListener {
    for _ in 0..BIND_ATTEMPTS {
        let port = ports::free_port(false);
        if let Ok(listener) = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            return listener;
        }
    }
    panic!("harness: the proxy could not bind a free port in {BIND_ATTEMPTS} attempts");
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((client, _)) => {
                shared.connections_accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(client, shared.clone()));
            }
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// Counts a connection as open while it lives.
struct OpenGuard<'a>(&'a AtomicU64);

impl<'a> OpenGuard<'a> {
    fn new(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        OpenGuard(counter)
    }
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How one direction of a connection ended.
enum End {
    /// The sender closed its side cleanly; the other direction may still carry bytes.
    Eof,
    /// An I/O error, or a fault that closes the connection: close both sides now.
    Close,
}

/// Forwards one accepted connection until either side closes it, a fault closes it, or the
/// proxy stops. Returning drops both sockets, which closes them.
async fn serve(client: TcpStream, shared: Arc<Shared>) {
    let _open = OpenGuard::new(&shared.connections_open);
    // Subscribed before connecting: a cut while the proxy connects closes this one too.
    let mut cut = shared.cut.subscribe();
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, shared.target_port));
    let server = tokio::select! {
        connected = TcpStream::connect(target) => match connected {
            Ok(server) => server,
            Err(_) => {
                shared.connect_failures.fetch_add(1, Ordering::SeqCst);
                return;
            }
        },
        _ = cut.changed() => {
            shared.connections_cut.fetch_add(1, Ordering::SeqCst);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let kind = AtomicU8::new(KIND_UNKNOWN);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let (held_tx, held_rx) = mpsc::channel(HELD_CHUNKS);

    let requests = forward_requests(client_read, server_write, &shared, &kind);
    let replies_in = read_replies(server_read, held_tx, &shared, &kind);
    let replies_out = write_replies(held_rx, client_write, &shared, &kind);
    tokio::pin!(requests, replies_in, replies_out);
    let (mut requests_done, mut replies_in_done) = (false, false);
    loop {
        tokio::select! {
            end = &mut requests, if !requests_done => match end {
                End::Eof => requests_done = true,
                End::Close => return,
            },
            end = &mut replies_in, if !replies_in_done => match end {
                // The server closed: forward what is still held, then close.
                End::Eof => replies_in_done = true,
                End::Close => return,
            },
            () = &mut replies_out => return,
            changed = cut.changed() => {
                if changed.is_err() {
                    // Unreachable while `shared` (which owns the sender) lives; never spin.
                    std::future::pending::<()>().await;
                }
                if kind.load(Ordering::SeqCst) != KIND_REPLICATION {
                    shared.connections_cut.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}

/// Client to server: classifies the connection by its first commands, holds bytes while the
/// blackhole is on, forwards the rest. On the client's EOF, half-closes the server side.
async fn forward_requests(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: &Shared,
    kind: &AtomicU8,
) -> End {
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut blackhole = shared.blackhole.subscribe();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) => {
                let _ = to.shutdown().await;
                return End::Eof;
            }
            Ok(n) => n,
            Err(_) => return End::Close,
        };
        if kind.load(Ordering::SeqCst) == KIND_UNKNOWN {
            let classified = classify(&buf[..n]);
            if classified == KIND_REPLICATION {
                shared.replication_links.fetch_add(1, Ordering::SeqCst);
            }
            kind.store(classified, Ordering::SeqCst);
        }
        if kind.load(Ordering::SeqCst) != KIND_REPLICATION {
            wait_while_blackholed(&mut blackhole).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return End::Close;
        }
        shared.bytes_to_server.fetch_add(n as u64, Ordering::SeqCst);
    }
}

/// Server to proxy: reads chunks, does an armed drop (closing the connection), and queues
/// the rest with the time each may be forwarded. Ends with [`End::Eof`] when the server
/// closes (the queue's sender then drops, so the writer forwards what is held and ends).
async fn read_replies(
    mut from: OwnedReadHalf,
    held: mpsc::Sender<(Instant, Vec<u8>)>,
    shared: &Shared,
    kind: &AtomicU8,
) -> End {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) => return End::Eof,
            Ok(n) => n,
            Err(_) => return End::Close,
        };
        let client = kind.load(Ordering::SeqCst) == KIND_CLIENT;
        if client && shared.take_drop() {
            shared.replies_dropped.fetch_add(1, Ordering::SeqCst);
            return End::Close;
        }
        let delay = if client {
            Duration::from_micros(shared.reply_delay_us.load(Ordering::SeqCst))
        } else {
            Duration::ZERO
        };
        if !delay.is_zero() {
            shared.delayed_chunks.fetch_add(1, Ordering::SeqCst);
        }
        if held
            .send((Instant::now() + delay, buf[..n].to_vec()))
            .await
            .is_err()
        {
            return End::Close;
        }
    }
}

/// Proxy to client: forwards queued chunks in order, each no earlier than its release time
/// and not while the blackhole is on. Ends when the queue is closed and empty, or on an error.
async fn write_replies(
    mut held: mpsc::Receiver<(Instant, Vec<u8>)>,
    mut to: OwnedWriteHalf,
    shared: &Shared,
    kind: &AtomicU8,
) {
    let mut blackhole = shared.blackhole.subscribe();
    while let Some((release_at, chunk)) = held.recv().await {
        tokio::time::sleep_until(release_at).await;
        if kind.load(Ordering::SeqCst) != KIND_REPLICATION {
            wait_while_blackholed(&mut blackhole).await;
        }
        if to.write_all(&chunk).await.is_err() {
            return;
        }
        shared
            .bytes_to_client
            .fetch_add(chunk.len() as u64, Ordering::SeqCst);
    }
    let _ = to.shutdown().await;
}

/// Returns at once if the blackhole is off, else when it is switched off.
async fn wait_while_blackholed(blackhole: &mut watch::Receiver<bool>) {
    if blackhole.wait_for(|on| !*on).await.is_err() {
        // The sender lives in `Shared`, which outlives every connection; never spin.
        std::future::pending::<()>().await;
    }
}

/// The connection kind that the client's first chunk shows: a replication link when its
/// first command is `REPLCONF`, `PSYNC` or `SYNC`; still unknown after a bare `PING` or
/// `AUTH` (the replica's handshake starts with them); a client otherwise.
fn classify(chunk: &[u8]) -> u8 {
    let Some(name) = first_command_name(chunk) else {
        return KIND_CLIENT;
    };
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    if is("REPLCONF") || is("PSYNC") || is("SYNC") {
        KIND_REPLICATION
    } else if is("PING") || is("AUTH") {
        KIND_UNKNOWN
    } else {
        KIND_CLIENT
    }
}

/// The name of the first command in `chunk`: the first bulk string of a RESP array
/// (`*N\r\n$L\r\nNAME\r\n`), or the first word of an inline command.
fn first_command_name(chunk: &[u8]) -> Option<&[u8]> {
    if chunk.first() == Some(&b'*') {
        let after_count = find_crlf(chunk)? + 2;
        let rest = chunk.get(after_count..)?;
        if rest.first() != Some(&b'$') {
            return None;
        }
        let len_end = find_crlf(rest)?;
        let len: usize = std::str::from_utf8(&rest[1..len_end]).ok()?.parse().ok()?;
        rest.get(len_end + 2..len_end + 2 + len)
    } else {
        chunk
            .split(|b| b.is_ascii_whitespace())
            .find(|word| !word.is_empty())
    }
}

fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_replication_handshakes_and_clients() {
        assert_eq!(classify(b"*1\r\n$4\r\nPING\r\n"), KIND_UNKNOWN);
        assert_eq!(
            classify(b"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$4\r\n6379\r\n"),
            KIND_REPLICATION
        );
        assert_eq!(
            classify(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n"),
            KIND_REPLICATION
        );
        assert_eq!(classify(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), KIND_CLIENT);
        assert_eq!(classify(b"replconf capa eof\r\n"), KIND_REPLICATION);
        assert_eq!(classify(b"*2\r\n$3\r\nGE"), KIND_CLIENT);
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FaultProxy>();
        check::<ProxyControl>();
    }
}
