//! `redis-server` processes with extra settings: TLS with a test CA made here with the
//! `openssl` CLI, ACL users. Each lives in its own temp dir and is killed on drop.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::ports;

/// How long a server may take to log "Ready to accept connections".
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// A test certificate authority and a server certificate it signed for `127.0.0.1` and
/// `localhost` (EC P-256, valid two days), as PEM files in a temp dir.
pub struct TestCa {
    dir: TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("harness: cannot run `openssl` (install the openssl package)");
    assert!(
        out.status.success(),
        "harness: openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TestCa {
    /// Makes a new CA (`ca.crt`) and a server key and certificate (`server.key`,
    /// `server.crt`) signed by it.
    pub fn new(name: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("hongbao-ca-")
            .tempdir()
            .expect("temp dir");
        let d = dir.path();
        let subj = format!("/CN=hongbao test CA {name}");
        openssl(
            d,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                "ca.key",
            ],
        );
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                &subj,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        openssl(
            d,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                "server.key",
            ],
        );
        openssl(
            d,
            &[
                "req",
                "-new",
                "-key",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        fs::write(
            d.join("ext.cnf"),
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        );
        TestCa { dir }
    }

    /// Path of the CA certificate (PEM).
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// The CA certificate's PEM text.
    pub fn ca_pem(&self) -> String {
        fs::read_to_string(self.ca_cert()).unwrap()
    }

    fn server_cert(&self) -> PathBuf {
        self.dir.path().join("server.crt")
    }

    fn server_key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}

/// A `redis-server` started with extra arguments (TLS, ACL users...), no persistence unless
/// the arguments ask for it.
pub struct ConfiguredServer {
    child: Option<Child>,
    port: u16,
    tls: bool,
    args: Vec<String>,
    dir: TempDir,
    aux: Option<TempDir>,
}

impl ConfiguredServer {
    /// A server listening only on a TLS port, with the certificate of `ca`.
    pub fn tls(ca: &TestCa, extra: &[&str]) -> Self {
        let mut args: Vec<String> = vec![
            "--port".into(),
            "0".into(),
            "--tls-cert-file".into(),
            ca.server_cert().display().to_string(),
            "--tls-key-file".into(),
            ca.server_key().display().to_string(),
            "--tls-ca-cert-file".into(),
            ca.ca_cert().display().to_string(),
            "--tls-auth-clients".into(),
            "no".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::start(true, args)
    }

    /// A plain-TCP server with ACL user `user` / `password` (all keys and commands) and the
    /// `default` user switched off.
    pub fn acl(user: &str, password: &str, extra: &[&str]) -> Self {
        let aux = tempfile::Builder::new()
            .prefix("hongbao-acl-")
            .tempdir()
            .expect("temp dir");
        let file = aux.path().join("users.acl");
        fs::write(
            &file,
            format!("user {user} on >{password} ~* &* +@all\nuser default off\n"),
        )
        .unwrap();
        let mut args: Vec<String> = vec!["--aclfile".into(), file.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut server = Self::start(false, args);
        server.aux = Some(aux);
        server
    }

    /// A plain-TCP server with the given extra arguments (e.g. `--requirepass`).
    pub fn plain(extra: &[&str]) -> Self {
        Self::start(false, extra.iter().map(|s| s.to_string()).collect())
    }

    fn start(tls: bool, args: Vec<String>) -> Self {
        crate::ensure_redis_installed();
        for _ in 0..10 {
            let dir = tempfile::Builder::new()
                .prefix("hongbao-redis-")
                .tempdir()
                .expect("temp dir");
            let port = ports::free_port(false);
            let mut server = ConfiguredServer {
                child: None,
                port,
                tls,
                args: args.clone(),
                dir,
                aux: None,
            };
            if server.spawn() {
                return server;
            }
        }
        panic!("harness: configured redis-server could not start in 10 attempts");
    }

    fn spawn(&mut self) -> bool {
        let log = self.dir.path().join("redis.log");
        let _ = fs::remove_file(&log);
        let mut cmd = Command::new("redis-server");
        if self.tls {
            cmd.args(["--tls-port", &self.port.to_string()]);
        } else {
            cmd.args(["--port", &self.port.to_string()]);
        }
        cmd.args([
            "--bind",
            "127.0.0.1",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
        ])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(self.dir.path())
        .arg("--logfile")
        .arg(&log)
        .args(&self.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("harness: cannot spawn redis-server");
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let text = fs::read_to_string(&log).unwrap_or_default();
            if let Ok(Some(_)) = child.try_wait() {
                if text.contains("Address already in use") {
                    return false;
                }
                panic!("harness: configured redis-server exited:\n{text}");
            }
            if text.contains("Ready to accept connections") {
                self.child = Some(child);
                return true;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("harness: configured redis-server not ready:\n{text}");
            }
            sleep(Duration::from_millis(20));
        }
    }

    /// `rediss://127.0.0.1:PORT` (TLS) or `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!(
            "{}://127.0.0.1:{}",
            if self.tls { "rediss" } else { "redis" },
            self.port
        )
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (no-op if stopped).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port (empty: nothing is persisted).
    pub fn restart(&mut self) {
        self.stop();
        for _ in 0..50 {
            if self.spawn() {
                return;
            }
            sleep(Duration::from_millis(100));
        }
        panic!("harness: configured redis-server restart failed");
    }
}

impl Drop for ConfiguredServer {
    fn drop(&mut self) {
        self.stop();
    }
}
