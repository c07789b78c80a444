//! Real AWS endpoints for EventBridge and CloudWatch Logs: [moto](https://docs.getmoto.org/) in server mode
//! (PyPI `moto[server]`, pinned in `scripts/requirements.txt`), started from the project's venv
//! (`.venv`, or `$HONGBAO_VENV`) as `python -m moto.server -H 127.0.0.1 -p PORT`, one private
//! process per [`MotoServer`], killed on drop.
//!
//! [`LedgerFeed`] sets up what the SAM template deploys for the ledger export: an EventBridge
//! bus, a rule on it matching `{"source": ["hongbao"]}` and a log group as the rule's target, so
//! a test can read back every event put on the bus.
//!
//! ```no_run
//! # async fn demo() {
//! use harness::moto::{LedgerFeed, MotoServer};
//! let moto = MotoServer::start();
//! let feed = LedgerFeed::create(&moto, "hongbao-ledger").await;
//! let events = aws_sdk_eventbridge::Client::new(&moto.sdk_config());
//! // ... PutEvents with source "hongbao" on feed.bus_name() ...
//! let envelopes = feed.drain().await;
//! # }
//! ```

use std::fs;
use std::io::{Read, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use tempfile::TempDir;

use crate::engine::{repo_root, venv};
use crate::ports;

/// The region of every client [`MotoServer::sdk_config`] configures.
pub const REGION: &str = "us-east-1";
/// The `source` the ledger export puts its events with, and the one [`LedgerFeed`]'s rule
/// matches.
pub const LEDGER_SOURCE: &str = "hongbao";

/// How long moto may take to answer HTTP after its spawn (about 2 s on an idle machine: the
/// Python imports).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How many ports to try before giving up when moto cannot bind.
const MAX_ATTEMPTS: usize = 10;
/// Name of the file capturing moto's stdout/stderr (its request log) inside the temp dir.
const LOG_FILE: &str = "moto.log";
/// The account moto answers as (its default).
const ACCOUNT: &str = "123456789012";

/// A moto server (`python -m moto.server`) on a free loopback port, with its own state (every
/// account and region moto simulates); killed, with its process group, on drop.
pub struct MotoServer {
    // `child` is killed in `Drop::drop`, before the fields (and thus `dir`) drop.
    child: Option<Child>,
    port: u16,
    dir: TempDir,
}

impl MotoServer {
    /// Spawns moto on `127.0.0.1` and a free port and waits until it answers HTTP. Panics,
    /// naming `scripts/install-deps.sh`, when the venv lacks moto.
    pub fn start() -> MotoServer {
        let python = moto_python();
        for _ in 0..MAX_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix("hongbao-moto-")
                .tempdir()
                .expect("harness: cannot create temp dir for moto");
            let port = ports::free_port(false);
            match spawn(&python, &dir, port) {
                Ok(child) => {
                    return MotoServer {
                        child: Some(child),
                        port,
                        dir,
                    }
                }
                Err(SpawnError::PortInUse) => continue,
                Err(SpawnError::Failed(msg)) => panic!("{msg}"),
            }
        }
        panic!("harness: moto could not bind a free port in {MAX_ATTEMPTS} attempts");
    }

    /// `http://127.0.0.1:PORT`: the endpoint of every service moto simulates.
    pub fn endpoint_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port moto listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// An SDK configuration for this server: region [`REGION`], static test credentials
    /// (`test`/`test`; moto checks none), [`endpoint_url`](Self::endpoint_url) for every service,
    /// and the rustls (ring) HTTP client the ledger export uses against AWS, here over plain
    /// HTTP. Built directly, not loaded: nothing of the environment (`AWS_*`, `~/.aws`) applies.
    pub fn sdk_config(&self) -> SdkConfig {
        let credentials = Credentials::new("test", "test", None, None, "hongbao-harness");
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::from_static(REGION))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .endpoint_url(self.endpoint_url())
            .http_client(
                aws_smithy_http_client::Builder::new()
                    .tls_provider(Provider::Rustls(CryptoMode::Ring))
                    .build_https(),
            )
            .build()
    }

    /// The last lines of moto's output (its request log, and a traceback on an internal
    /// error), for a failing test's message.
    pub fn log_tail(&self) -> String {
        log_tail(self.dir.path())
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&mut child);
        }
    }
}

/// `<venv>/bin/python` after checking that moto is installed there (its `moto_server` entry
/// point exists); panics naming the installer otherwise.
fn moto_python() -> PathBuf {
    let bin = venv().join("bin");
    let python = bin.join("python");
    if !python.is_file() || !bin.join("moto_server").is_file() {
        panic!(
            "harness: moto is not installed in {} (no {}); run scripts/install-deps.sh in {} \
             (it installs scripts/requirements.txt, moto[server] among them, into the venv)",
            venv().display(),
            bin.join("moto_server").display(),
            repo_root().display(),
        );
    }
    python
}

enum SpawnError {
    PortInUse,
    Failed(String),
}

/// Spawns moto in its own process group and waits until it answers HTTP.
fn spawn(python: &Path, dir: &TempDir, port: u16) -> Result<Child, SpawnError> {
    let log = fs::File::create(dir.path().join(LOG_FILE))
        .expect("harness: cannot create the moto log file");
    let mut child = Command::new(python)
        .args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .current_dir(dir.path())
        // Unbuffered, so that the log shows a traceback at once.
        .env("PYTHONUNBUFFERED", "1")
        // Its own group: Drop kills whatever moto may have started, too.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("harness: cannot clone file handle"))
        .stderr(log)
        .spawn()
        .map_err(|e| {
            SpawnError::Failed(format!(
                "harness: cannot spawn {} -m moto.server: {e}",
                python.display()
            ))
        })?;
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = log_tail(dir.path());
            return Err(if log.contains("Address already in use") {
                SpawnError::PortInUse
            } else {
                SpawnError::Failed(format!(
                    "harness: moto on port {port} exited during startup ({status}); a missing \
                     module means an incomplete venv: run scripts/install-deps.sh\n{log}"
                ))
            });
        }
        if is_ready(port) {
            return Ok(child);
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            return Err(SpawnError::Failed(format!(
                "harness: moto on port {port} not answering HTTP after {READY_TIMEOUT:?}\n{}",
                log_tail(dir.path())
            )));
        }
        sleep(Duration::from_millis(50));
    }
}

/// True if moto answers `GET /moto-api/data.json` (its state dump, `{}` when empty) on `port`:
/// a 200 with a JSON body, which a foreign server that won the race for the port would not
/// send.
fn is_ready(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!(
        "GET /moto-api/data.json HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    if stream.read_to_string(&mut response).is_err() {
        return false;
    }
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        return false;
    };
    head.starts_with("HTTP/1.") && head.contains(" 200 ") && body.trim_start().starts_with('{')
}

/// SIGKILL to the child's process group (moto and anything it started), then reaps the child.
fn kill_group(child: &mut Child) {
    if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is
        // involved. The group is the child's own (`process_group(0)`), and the child is not yet
        // reaped, so its id cannot have been reused.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last 30 lines of moto's output.
fn log_tail(dir: &Path) -> String {
    let text = fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(30)..];
    format!(
        "--- {LOG_FILE} (last {} lines) ---\n{}",
        tail.len(),
        tail.join("\n")
    )
}

/// An EventBridge bus whose events with source [`LEDGER_SOURCE`] a rule delivers to a
/// CloudWatch Logs log group, on a [`MotoServer`]; [`drain`](Self::drain) reads them back.
///
/// The log group is `/aws/events/<bus>-feed`, the rule `<bus>-to-feed`, with the
/// `EventPattern` `{"source": ["hongbao"]}` and the log group as its one target (EventBridge
/// writes each event as one log event, the envelope as JSON). A log group, not an SQS queue:
/// moto's SQS computes every queue attribute, a scan of the whole queue, for each message it
/// delivers, so a queue that grows (a feed read less often than it is written) makes every
/// `PutEvents` slower, and a long soak's exports then time out, re-publish, and grow it further;
/// moto appends a log event in constant time.
pub struct LedgerFeed {
    bus_name: String,
    log_group: String,
    /// moto's port: the log group is read over plain HTTP (see [`filter_log_events`]).
    port: u16,
    /// Log events already returned by [`drain`](Self::drain).
    read: Mutex<usize>,
}

impl LedgerFeed {
    /// Creates the bus `bus_name`, the log group and the rule targeting it on `moto`. Panics on
    /// any failed call.
    pub async fn create(moto: &MotoServer, bus_name: &str) -> LedgerFeed {
        let config = moto.sdk_config();
        let events = aws_sdk_eventbridge::Client::new(&config);
        let log_group = format!("/aws/events/{bus_name}-feed");
        let rule_name = format!("{bus_name}-to-feed");

        events
            .create_event_bus()
            .name(bus_name)
            .send()
            .await
            .unwrap_or_else(|e| panic!("harness: CreateEventBus {bus_name}: {e:?}"));
        let (port, group) = (moto.port(), log_group.clone());
        tokio::task::spawn_blocking(move || {
            logs_call(
                port,
                "CreateLogGroup",
                &serde_json::json!({ "logGroupName": group }),
            )
        })
        .await
        .expect("harness: CreateLogGroup task");
        let pattern = serde_json::json!({ "source": [LEDGER_SOURCE] }).to_string();
        events
            .put_rule()
            .name(&rule_name)
            .event_bus_name(bus_name)
            .event_pattern(pattern)
            .send()
            .await
            .unwrap_or_else(|e| panic!("harness: PutRule {rule_name} on {bus_name}: {e:?}"));
        let log_group_arn = format!("arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{log_group}");
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("ledger-feed")
            .arn(&log_group_arn)
            .build()
            .expect("harness: a target with an id and an arn");
        let put = events
            .put_targets()
            .rule(&rule_name)
            .event_bus_name(bus_name)
            .targets(target)
            .send()
            .await
            .unwrap_or_else(|e| panic!("harness: PutTargets {rule_name}: {e:?}"));
        assert_eq!(
            put.failed_entry_count, 0,
            "harness: PutTargets {rule_name} -> {log_group_arn} failed: {:?}",
            put.failed_entries
        );
        LedgerFeed {
            bus_name: bus_name.to_string(),
            log_group,
            port: moto.port(),
            read: Mutex::new(0),
        }
    }

    /// The bus name (`EventBusName` of `PutEvents`).
    pub fn bus_name(&self) -> &str {
        &self.bus_name
    }

    /// The log group's name.
    pub fn log_group(&self) -> &str {
        &self.log_group
    }

    /// Every event delivered since the last call (all of them on the first), parsed as JSON, in
    /// the order delivered: EventBridge envelopes `{"version", "id", "detail-type", "source",
    /// "time", "region", "resources", "detail"}`. AWS also sends `"account"`; moto 5.2 does not
    /// (its default target input template lacks it). Reads the log group with
    /// `FilterLogEvents` (10,000 events a page; moto lists them in the order written). Panics
    /// on a failed call or a log event that is not JSON.
    pub async fn drain(&self) -> Vec<serde_json::Value> {
        let (port, group) = (self.port, self.log_group.clone());
        let all = tokio::task::spawn_blocking(move || filter_log_events(port, &group))
            .await
            .expect("harness: FilterLogEvents task");
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<serde_json::Value> = all[(*read).min(all.len())..]
            .iter()
            .map(|body| {
                serde_json::from_str(body).unwrap_or_else(|e| {
                    panic!(
                        "harness: log event on {} is not JSON ({e}): {body}",
                        self.log_group
                    )
                })
            })
            .collect();
        *read = all.len();
        new
    }
}

/// Every log event's message in log group `group` on the moto server at `port`, in the order
/// written: `FilterLogEvents` pages (10,000 events each) until no `nextToken`. Panics on a
/// failed call.
fn filter_log_events(port: u16, group: &str) -> Vec<String> {
    let mut messages = Vec::new();
    let mut request = serde_json::json!({ "logGroupName": group });
    loop {
        let page = logs_call(port, "FilterLogEvents", &request);
        for event in page["events"].as_array().into_iter().flatten() {
            messages.push(event["message"].as_str().unwrap_or_default().to_string());
        }
        match page["nextToken"].as_str() {
            Some(token) if !token.is_empty() => request["nextToken"] = token.into(),
            _ => return messages,
        }
    }
}

/// One CloudWatch Logs call (`action`, e.g. `FilterLogEvents`) with JSON `request` to the moto
/// server at `port`; its JSON answer. Plain HTTP/1.0 JSON (`X-Amz-Target:
/// Logs_20140328.<action>`; moto checks no signature), not the AWS SDK: moto 5.2 answers
/// timestamps in fractional milliseconds, which the SDK's deserializer refuses, and the
/// harness needs two calls. Panics on a failed call or an answer other than 200.
fn logs_call(port: u16, action: &str, request: &serde_json::Value) -> serde_json::Value {
    let body = request.to_string();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("harness: connect to moto on port {port}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("harness: read timeout");
    let head = format!(
        "POST / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/x-amz-json-1.1\r\nX-Amz-Target: Logs_20140328.{action}\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/{REGION}/logs/aws4_request, \
         SignedHeaders=host, Signature=0\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut response = String::new();
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .and_then(|()| stream.read_to_string(&mut response).map(drop))
        .unwrap_or_else(|e| panic!("harness: {action} on moto port {port}: {e}"));
    let (status, json) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("harness: {action}: {response}"));
    assert!(status.contains(" 200 "), "harness: {action}: {response}");
    if json.trim().is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::from_str(json).unwrap_or_else(|e| panic!("harness: {action} ({e}): {json}"))
}
