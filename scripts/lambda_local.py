"""Run the hongbao Lambda functions locally, the way `sam local invoke` does, without Docker.

Each function's release `bootstrap` binary (`target/release/<name>`) runs under the AWS Lambda
Runtime Interface Emulator (RIE) that the `aws-sam-cli` wheel ships
(`samcli/local/rapid/aws-lambda-rie-<arch>`): the binary talks to RIE's Runtime API exactly as
it talks to the real Lambda service, and we invoke it through RIE's invoke endpoint
`POST /2015-03-31/functions/function/invocations`. One RIE process is one sandbox: it runs one
bootstrap and serves one invocation at a time, like one Lambda execution environment; a
`SandboxPool` of N of them is a function scaled out to N environments.

Python 3 standard library plus redis-py (`redis`, pinned in scripts/requirements.txt, which
scripts/install-deps.sh installs into `.venv`). Pieces:

* `find_rie()` — the RIE binary (runs scripts/install-deps.sh when it is missing).
* `find_redis_server()` — `redis-server` (runs `scripts/install-deps.sh --redis-only` when it
  is missing).
* `RedisServer` — a private `redis-server` on a free loopback port in a temp dir (never 6379),
  with a redis-py client (`client`, replies decoded to str) and `command` / `scan_iter` for
  audits.
* `Sandbox` — one RIE + one bootstrap; `invoke(event) -> dict` (HTTP functions: `statusCode`,
  `headers`, `body` with the JSON body parsed); parses RIE's `INIT REPORT` / `REPORT` lines
  (cold start, `Duration`).
* `SandboxPool` — N sandboxes of one function with a thread-safe checkout.
* `LocalStack` — Redis plus a sandbox pool per function (by default the five red-packet
  functions, what demo.py plays; `functions=FUNCTIONS` adds next-order-code and vote), as a
  context manager.
* Event builders that start from `events/<name>.json` (`grab_event`, `claim_event`, ...,
  `order_codes_event`, `post_article_event`, `vote_event`, `list_articles_event`,
  `article_groups_event`, `group_articles_event`).

Every process started here is killed (with its children) on exit, on exceptions, on Ctrl-C and
on SIGTERM/SIGHUP.
"""

from __future__ import annotations

import atexit
import copy
import http.client
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

try:
    import redis
except ImportError as e:  # not the project's venv, or install-deps.sh has not run yet
    raise ImportError(
        f"lambda_local needs redis-py: run scripts/install-deps.sh and use .venv/bin/python ({e})"
    ) from e

ROOT = Path(__file__).resolve().parent.parent
EVENTS_DIR = ROOT / "events"
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
RELEASE_DIR = TARGET_DIR / "release"
DEPOSIT_PRINCIPALS = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/*"
VENV_DIR = Path(os.environ.get("HONGBAO_VENV") or ROOT / ".venv")
INSTALL_DEPS = ROOT / "scripts" / "install-deps.sh"

# The red-packet functions (the default stack: what demo.py plays) ...
PACKET_FUNCTIONS = ("create-packet", "grab", "claim", "reclaim-cron", "wallet")
# ... and every function of the project (e2e_rie.py runs them all).
FUNCTIONS = PACKET_FUNCTIONS + ("next-order-code", "vote")
DEFAULT_FUNCTIONS = PACKET_FUNCTIONS
HTTP_FUNCTIONS = ("create-packet", "grab", "claim", "wallet", "next-order-code", "vote")
BUILD_COMMAND = "cargo build --release " + " ".join(f"-p {f}" for f in FUNCTIONS)
# As in template.yaml: MemorySize 256, Timeout 5 (reclaim-cron 60).
MEMORY_MB = 256
TIMEOUT_SECS = {"reclaim-cron": 60}
DEFAULT_TIMEOUT_SECS = 5
INVOKE_PATH = "/2015-03-31/functions/function/invocations"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Process bookkeeping: everything we start is killed on exit, whatever the way out.
# --------------------------------------------------------------------------------------------

_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()
_signals_installed = False


def _register(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live[proc.pid] = proc


def _unregister(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.pop(proc.pid, None)


def _children_of(pid: int) -> list[int]:
    """The pids whose parent is `pid` (from /proc; empty elsewhere)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(name))
    return out


def _descendants(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        for child in _children_of(todo.pop()):
            if child not in seen:
                seen.append(child)
                todo.append(child)
    return seen


def kill_tree(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """Stops `proc` and all its descendants: SIGTERM first (RIE then stops its runtime), SIGKILL
    whatever is left after `grace` seconds. Only ever signals processes we started (the
    process group of `proc`, which was started in its own session, and its descendants)."""
    if proc.poll() is None:
        kids = _descendants(proc.pid)
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        for pid in kids:  # children that moved to another process group
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    else:
        try:  # the leader is gone; its group may not be
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _unregister(proc)


def shutdown_all() -> None:
    """Kills every process this module started and has not stopped yet."""
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        kill_tree(p, grace=1.0)


def _on_signal(signum, _frame):
    # Turn SIGTERM/SIGHUP into an exception so `finally` blocks and context managers run.
    raise SystemExit(128 + signum)


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP exit through the normal cleanup path, and Ctrl-C raises
    KeyboardInterrupt even when the shell started us with SIGINT ignored. Call from the main
    thread."""
    global _signals_installed
    if _signals_installed or threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _signals_installed = True


atexit.register(shutdown_all)


def _spawn(cmd: list[str], **kw) -> subprocess.Popen:
    """Starts `cmd` in its own session (so its whole group can be killed) and registers it."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    _register(proc)
    return proc


# --------------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------------

_handed_out: set[int] = set()
_port_lock = threading.Lock()


def free_port() -> int:
    """A free TCP port on 127.0.0.1, never one handed out before by this process, never 6379."""
    with _port_lock:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _handed_out and port != 6379:
                _handed_out.add(port)
                return port
    raise RuntimeError("no free port found")


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
            time.sleep(0.02)


# --------------------------------------------------------------------------------------------
# Binaries: RIE, redis-server, the function bootstraps
# --------------------------------------------------------------------------------------------


def _rie_arch() -> str:
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def _glob_rie(venv: Path) -> Path | None:
    name = f"aws-lambda-rie-{_rie_arch()}"
    for p in sorted(venv.glob(f"lib/python*/site-packages/samcli/local/rapid/{name}")):
        return p
    return None


def install_deps(*args: str) -> None:
    """Runs scripts/install-deps.sh ARGS, the project's one installer (redis-server from apt,
    the pinned Python packages of scripts/requirements.txt into the venv); it installs only what
    is missing. Its output goes to stderr. A failure is logged, not raised: the caller's lookup
    then reports what is still missing."""
    cmd = ["bash", str(INSTALL_DEPS), *args]
    log(f"lambda_local: running {' '.join(['scripts/install-deps.sh', *args])}")
    r = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=2)
    if r.returncode != 0:
        log(f"lambda_local: scripts/install-deps.sh failed with exit code {r.returncode}")


def find_rie(install: bool = True) -> Path:
    """The RIE binary: `$HONGBAO_RIE`, else the one in `.venv`'s aws-sam-cli; runs
    scripts/install-deps.sh when it is missing (and `install` is true)."""
    env = os.environ.get("HONGBAO_RIE")
    if env:
        p = Path(env)
        if not p.is_file():
            raise FileNotFoundError(f"HONGBAO_RIE={env} does not exist")
        return p
    rie = _glob_rie(VENV_DIR)
    if rie is None and install:
        install_deps()
        rie = _glob_rie(VENV_DIR)
    if rie is None:
        raise FileNotFoundError(
            f"aws-lambda-rie-{_rie_arch()} not found in {VENV_DIR} (run scripts/install-deps.sh)"
        )
    if not os.access(rie, os.X_OK):
        rie.chmod(rie.stat().st_mode | 0o111)
    return rie


def find_redis_server(install: bool = True) -> str:
    """`redis-server` on PATH (or /usr/bin, /usr/local/bin); runs `scripts/install-deps.sh
    --redis-only` when it is missing (and `install` is true)."""
    def lookup() -> str | None:
        return shutil.which("redis-server") or next(
            (p for p in ("/usr/bin/redis-server", "/usr/local/bin/redis-server") if os.access(p, os.X_OK)),
            None,
        )

    exe = lookup()
    if exe is None and install:
        install_deps("--redis-only")
        exe = lookup()
    if exe is None:
        raise FileNotFoundError("redis-server not found (run scripts/install-deps.sh)")
    return exe


def binary_path(function: str) -> Path:
    return RELEASE_DIR / function


def missing_binaries(functions: Iterable[str] = DEFAULT_FUNCTIONS) -> list[Path]:
    return [binary_path(f) for f in functions if not os.access(binary_path(f), os.X_OK)]


def require_binaries(functions: Iterable[str] = DEFAULT_FUNCTIONS) -> None:
    """Raises with the build command when a release binary is missing."""
    missing = missing_binaries(functions)
    if missing:
        raise FileNotFoundError(
            "missing release binaries: " + ", ".join(str(m) for m in missing)
            + f"\nbuild them first:  (cd {ROOT} && {BUILD_COMMAND})"
        )


# --------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------


class RedisServer:
    """A private `redis-server` on a free loopback port, no persistence, in a temp dir."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.dir: str | None = None
        self.proc: subprocess.Popen | None = None
        self.client: redis.Redis | None = None
        self.detached = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> "RedisServer":
        exe = find_redis_server()
        self.dir = tempfile.mkdtemp(prefix="hongbao-redis-")
        cmd = [
            exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"), "--maxclients", "10000",
        ]
        self.proc = _spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.proc, timeout=10)
        # Thread-safe (a connection pool); replies decoded to str, as the audits expect.
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5.0,
                                  socket_connect_timeout=5.0, decode_responses=True,
                                  encoding_errors="replace")
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.client.ping():
                    break
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server does not answer PING")
            time.sleep(0.05)
        return self

    def command(self, *args: Any) -> Any:
        """Runs one Redis command, e.g. `command("HGET", key, "balance")`; the reply as redis-py
        parses it, strings decoded (str), `None` for a nil reply. An error reply raises
        `redis.ResponseError`."""
        return self.client.execute_command(*args)

    def scan_iter(self, match: str, type_: str | None = None, count: int = 1000) -> Iterator[str]:
        """Every key matching the glob `match` (and of type `type_`, e.g. "hash"), via SCAN."""
        return self.client.scan_iter(match=match, count=count, _type=type_)

    def wallet_keys(self, prefix: str = "hb") -> Iterator[str]:
        """Every wallet hash `<prefix>:{tag}:wallet:<user>` (SCAN): not the user's other hashes
        (`:idem` records, `:history` totals), whose names carry one more `:` segment (a user id
        is percent-encoded in a key, so it holds no `:`)."""
        for key in self.scan_iter(f"{prefix}:*:wallet:*", "hash"):
            if key.count(":") == 3:
                yield key

    def detach(self) -> None:
        """Leaves the server running after this process exits (`--keep-redis`)."""
        if self.proc is not None:
            _unregister(self.proc)
        self.detached = True

    def stop(self) -> None:
        if self.client:
            self.client.close()
        if self.detached or self.proc is None:
            return
        kill_tree(self.proc, grace=2.0)
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------------------------
# Sandboxes
# --------------------------------------------------------------------------------------------

REPORT_RE = re.compile(
    r"REPORT RequestId: (?P<rid>\S+)\s+(?:Init Duration: (?P<init>[\d.]+) ms\s+)?"
    r"Duration: (?P<dur>[\d.]+) ms\s+Billed Duration: (?P<billed>[\d.]+) ms"
    r"(?:\s+Memory Size: (?P<mem>\d+) MB)?(?:\s+Max Memory Used: (?P<maxmem>\d+) MB)?"
)
INIT_REPORT_RE = re.compile(r"INIT REPORT\(durationMs: (?P<ms>[\d.]+)\)")


@dataclass
class Report:
    """One RIE `REPORT` line."""

    request_id: str
    duration_ms: float
    billed_ms: float
    init_duration_ms: float | None  # RIE's `Init Duration` field (cold starts only)


class InvocationError(RuntimeError):
    """The invocation itself failed (RIE error, function error, no JSON payload)."""


class LambdaResponse(dict):
    """The function's response payload (a dict) plus invocation metadata as attributes."""

    client_ms: float = 0.0
    sandbox: "Sandbox | None" = None

    @property
    def status(self) -> int | None:
        return self.get("statusCode")


class Sandbox:
    """One RIE process running one release binary: one Lambda execution environment.

    It serves one invocation at a time (callers serialise; `SandboxPool` does it for you).
    RIE starts the bootstrap lazily, on the first invocation (the cold start)."""

    def __init__(self, function: str, env: dict[str, str] | None = None, *,
                 redis_url: str | None = None, binary: Path | None = None,
                 rie: Path | None = None, name: str | None = None,
                 log_path: Path | None = None, echo: bool = False, keep_lines: int = 5000):
        self.function = function
        self.name = name or function
        self.binary = Path(binary or binary_path(function))
        self.rie = Path(rie or find_rie())
        self.redis_url = redis_url
        self.extra_env = dict(env or {})
        self.log_path = log_path
        self.echo = echo
        self.port = 0
        self.api_port = 0
        self.proc: subprocess.Popen | None = None
        self.lines: deque[str] = deque(maxlen=keep_lines)
        self.reports: list[Report] = []
        self.init_report_ms: float | None = None  # RIE's `INIT REPORT(durationMs: ...)`
        self.invocations = 0
        self.client_ms: list[float] = []
        self.error_lines = 0
        self._cond = threading.Condition()
        self._conn: http.client.HTTPConnection | None = None
        self._busy = threading.Lock()
        self._reader: threading.Thread | None = None
        self._log_file = None

    # -- lifecycle ---------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(MEMORY_MB),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(TIMEOUT_SECS.get(self.function, DEFAULT_TIMEOUT_SECS)),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.function}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/{self.name}",
            "REDIS_CLUSTER": "false",
            # The IAM role of the deposit fixtures (events/wallet-deposit.json).
            "HONGBAO_DEPOSIT_PRINCIPALS": DEPOSIT_PRINCIPALS,
            "RUST_LOG": "info",
            "LOG_LEVEL": "info",  # RIE's own log level (its INIT REPORT line is at info)
        }
        if self.redis_url:
            env["REDIS_URL"] = self.redis_url
        env.update(self.extra_env)
        return env

    def start(self) -> "Sandbox":
        if not os.access(self.binary, os.X_OK):
            raise FileNotFoundError(f"{self.binary} is missing; build it: {BUILD_COMMAND}")
        if self.log_path:
            self._log_file = open(self.log_path, "a", encoding="utf-8")
        last_error: Exception | None = None
        for _ in range(3):  # a port may be taken between free_port() and RIE's bind: retry
            self.port, self.api_port = free_port(), free_port()
            env = self.environment()
            env["AWS_LAMBDA_RUNTIME_API"] = f"127.0.0.1:{self.api_port}"
            cmd = [
                str(self.rie),
                "--runtime-interface-emulator-address", f"127.0.0.1:{self.port}",
                "--runtime-api-address", f"127.0.0.1:{self.api_port}",
                str(self.binary),
            ]
            self.proc = _spawn(cmd, env=env, cwd=str(self.binary.parent),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            self._reader = threading.Thread(target=self._read_output, args=(self.proc,),
                                            name=f"rie-{self.name}", daemon=True)
            self._reader.start()
            try:
                wait_for_port(self.port, self.proc, timeout=10)
                return self
            except (RuntimeError, TimeoutError) as e:
                last_error = e
                kill_tree(self.proc)
        raise RuntimeError(f"sandbox {self.name} did not start: {last_error}\n" + self.tail())

    def _read_output(self, proc: subprocess.Popen) -> None:
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            m = REPORT_RE.search(line)
            mi = INIT_REPORT_RE.search(line) if m is None else None
            with self._cond:
                self.lines.append(line)
                if '"level":"ERROR"' in line:
                    self.error_lines += 1
                if m:
                    self.reports.append(Report(
                        m["rid"], float(m["dur"]), float(m["billed"]),
                        float(m["init"]) if m["init"] else None,
                    ))
                    self._cond.notify_all()
                elif mi and self.init_report_ms is None:
                    self.init_report_ms = float(mi["ms"])
            if self._log_file:
                self._log_file.write(line + "\n")
            if self.echo:
                print(f"[{self.name}] {line}", file=sys.stderr, flush=True)
        proc.stdout.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self._conn:
            self._conn.close()
            self._conn = None
        if self.proc is not None:
            kill_tree(self.proc)
        if self._reader is not None:
            self._reader.join(timeout=2)
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def tail(self, n: int = 30) -> str:
        with self._cond:
            return "\n".join(list(self.lines)[-n:])

    # -- invocation --------------------------------------------------------------------------

    def invoke_raw(self, payload: bytes, timeout: float = 30.0) -> tuple[int, bytes, dict, float]:
        """POSTs `payload` to RIE's invoke endpoint: (HTTP status, body, headers, client ms)."""
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(f"sandbox {self.name} is busy: one invocation at a time")
        try:
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            t0 = time.perf_counter()
            try:
                self._conn.request("POST", INVOKE_PATH, body=payload,
                                   headers={"Content-Type": "application/json"})
                resp = self._conn.getresponse()
                body = resp.read()
            except Exception:
                self._conn.close()
                self._conn = None
                raise
            ms = (time.perf_counter() - t0) * 1000.0
            self.invocations += 1
            self.client_ms.append(ms)
            return resp.status, body, dict(resp.getheaders()), ms
        finally:
            self._busy.release()

    def invoke(self, event: dict, timeout: float = 30.0) -> LambdaResponse:
        """Invokes the function with `event`. Returns its response payload; for an HTTP
        function `{"statusCode", "headers", "body", ...}` with `body` parsed from JSON (left a
        string when it is not JSON). Raises `InvocationError` when the invocation failed."""
        status, raw, headers, ms = self.invoke_raw(json.dumps(event).encode(), timeout)
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            raise InvocationError(f"{self.name}: non-JSON payload (HTTP {status}): {raw[:300]!r}")
        if status != 200 or headers.get("X-Amz-Function-Error") or (
            isinstance(data, dict) and "errorType" in data and "statusCode" not in data
        ):
            raise InvocationError(f"{self.name}: invocation failed (HTTP {status}): {raw[:500]!r}"
                                  f"\n--- sandbox log tail ---\n{self.tail()}")
        if not isinstance(data, dict):
            data = {"payload": data}
        out = LambdaResponse(data)
        if "statusCode" in out and isinstance(out.get("body"), str):
            body = out["body"]
            if out.get("isBase64Encoded"):
                import base64
                body = base64.b64decode(body).decode("utf-8", errors="replace")
            try:
                out["body"] = json.loads(body) if body else None
            except ValueError:
                out["body"] = body
        out.client_ms = ms
        out.sandbox = self
        return out

    def wait_reports(self, timeout: float = 5.0) -> list[Report]:
        """Waits until RIE printed a REPORT line for every invocation so far; returns them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.reports) < self.invocations:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return list(self.reports)

    @property
    def cold_start_ms(self) -> float | None:
        """Init duration of the first invocation: RIE's `INIT REPORT(durationMs)`, else the
        REPORT line's `Init Duration`."""
        if self.init_report_ms is not None:
            return self.init_report_ms
        return next((r.init_duration_ms for r in self.reports if r.init_duration_ms is not None), None)

    @property
    def report_init_duration_ms(self) -> float | None:
        """The `Init Duration` field of the first REPORT line, as RIE prints it."""
        return next((r.init_duration_ms for r in self.reports if r.init_duration_ms is not None), None)


class SandboxPool:
    """N sandboxes of one function; `invoke` checks an idle one out (blocking until one is
    free), so concurrent callers spread over them like Lambda scaling out."""

    def __init__(self, function: str, size: int, env: dict[str, str] | None = None, *,
                 redis_url: str | None = None, rie: Path | None = None,
                 log_dir: Path | None = None, echo: bool = False):
        self.function = function
        rie = rie or find_rie()
        self.sandboxes = [
            Sandbox(function, env, redis_url=redis_url, rie=rie,
                    name=f"{function}-{i + 1}" if size > 1 else function,
                    log_path=(Path(log_dir) / f"{function}-{i + 1}.log") if log_dir else None,
                    echo=echo)
            for i in range(size)
        ]
        self._idle: queue.Queue[Sandbox] = queue.Queue()

    def start(self) -> "SandboxPool":
        with ThreadPoolExecutor(max_workers=len(self.sandboxes)) as ex:
            list(ex.map(lambda s: s.start(), self.sandboxes))
        for s in self.sandboxes:
            self._idle.put(s)
        return self

    def close(self) -> None:
        with ThreadPoolExecutor(max_workers=max(1, len(self.sandboxes))) as ex:
            list(ex.map(lambda s: s.close(), self.sandboxes))

    def __enter__(self) -> "SandboxPool":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.sandboxes)

    def invoke(self, event: dict, timeout: float = 30.0) -> LambdaResponse:
        sb = self._idle.get()
        try:
            return sb.invoke(event, timeout)
        finally:
            self._idle.put(sb)

    def map(self, events: Iterable[dict], threads: int = 32,
            on_error: Callable[[dict, Exception], Any] | None = None) -> list[Any]:
        """Invokes every event from `threads` client threads; results in input order. An
        invocation that raises gives `on_error(event, exc)` (or re-raises)."""
        def one(ev):
            try:
                return self.invoke(ev)
            except Exception as e:  # noqa: BLE001 — handed to the caller
                if on_error is None:
                    raise
                return on_error(ev, e)

        ex = ThreadPoolExecutor(max_workers=threads)
        try:
            results = list(ex.map(one, events))
        except BaseException:
            ex.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: do not drain the queue
            raise
        ex.shutdown()
        return results

    def each(self, event_for: Callable[[Sandbox], dict]) -> list[LambdaResponse]:
        """Invokes every sandbox once, in parallel (e.g. to cold-start all of them)."""
        def one(sb):
            return sb.invoke(event_for(sb))

        with ThreadPoolExecutor(max_workers=len(self.sandboxes)) as ex:
            return list(ex.map(one, self.sandboxes))

    def wait_reports(self, timeout: float = 5.0) -> None:
        for s in self.sandboxes:
            s.wait_reports(timeout)

    def cold_starts_ms(self) -> list[float]:
        return [c for c in (s.cold_start_ms for s in self.sandboxes) if c is not None]

    def error_lines(self) -> int:
        return sum(s.error_lines for s in self.sandboxes)

    def invocations(self) -> list[int]:
        return [s.invocations for s in self.sandboxes]


class LocalStack:
    """A private Redis and a sandbox pool for each of `functions` (default: the red-packet
    functions; `FUNCTIONS` is all of them), sizes from `pools`, default 1.

        with LocalStack(pools={"grab": 8}) as stack:
            stack.invoke("wallet", deposit_event("alice", 100, "r1"))
    """

    def __init__(self, pools: dict[str, int] | None = None, env: dict[str, str] | None = None,
                 functions: Iterable[str] = DEFAULT_FUNCTIONS, log_dir: Path | None = None,
                 echo: bool = False):
        self.sizes = {f: max(1, (pools or {}).get(f, 1)) for f in functions}
        self.env = dict(env or {})
        self.log_dir = log_dir
        self.echo = echo
        self.redis = RedisServer()
        self.pools: dict[str, SandboxPool] = {}

    def start(self) -> "LocalStack":
        install_signal_handlers()
        require_binaries(self.sizes)
        rie = find_rie()
        try:
            self.redis.start()
            for f, n in self.sizes.items():
                self.pools[f] = SandboxPool(f, n, self.env, redis_url=self.redis.url, rie=rie,
                                            log_dir=self.log_dir, echo=self.echo)
            with ThreadPoolExecutor(max_workers=len(self.pools)) as ex:
                list(ex.map(lambda p: p.start(), self.pools.values()))
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for p in self.pools.values():
            p.close()
        self.redis.stop()

    def __enter__(self) -> "LocalStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __getitem__(self, function: str) -> SandboxPool:
        return self.pools[function]

    def invoke(self, function: str, event: dict) -> LambdaResponse:
        return self.pools[function].invoke(event)

    def all_sandboxes(self) -> list[Sandbox]:
        return [s for p in self.pools.values() for s in p.sandboxes]


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------

_event_cache: dict[str, dict] = {}
_request_seq = 0
_request_lock = threading.Lock()
NO_SUCH_PACKET = "0" * 24  # a well-formed packet id that no packet has


def load_event(name: str) -> dict:
    """A fresh copy of `events/<name>.json`."""
    if name not in _event_cache:
        with open(EVENTS_DIR / f"{name}.json", encoding="utf-8") as f:
            _event_cache[name] = json.load(f)
    return copy.deepcopy(_event_cache[name])


def _stamp(ev: dict) -> None:
    """A unique requestId and the current time, as API Gateway would set them."""
    global _request_seq
    with _request_lock:
        _request_seq += 1
        seq = _request_seq
    rc = ev.get("requestContext")
    if isinstance(rc, dict):
        now = time.time()
        rc["requestId"] = f"local-{seq:06d}-{uuid.uuid4().hex[:8]}"
        rc["timeEpoch"] = int(now * 1000)
        rc["time"] = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))


def _replace_in_path(ev: dict, old: str, new: str) -> None:
    """Replaces `old` by `new` in the event's path (rawPath, requestContext.http.path) and in
    its pathParameters."""
    ev["rawPath"] = ev["rawPath"].replace(old, new)
    ev["requestContext"]["http"]["path"] = ev["requestContext"]["http"]["path"].replace(old, new)
    if ev.get("pathParameters"):
        ev["pathParameters"] = {k: v.replace(old, new) for k, v in ev["pathParameters"].items()}


def http_event(fixture: str, *, packet_id: str | None = None, article_id: str | None = None,
               sub: str | None = None, body: Any = None, headers: dict[str, str] | None = None,
               query: dict[str, str] | None = None, auth: bool = True) -> dict:
    """An API Gateway v2 event from `events/<fixture>.json`: `packet_id` / `article_id`
    replace the `PACKET_ID` / `ARTICLE_ID` placeholders (path and pathParameters), `sub` the
    JWT claim `sub`, `body` (a dict is JSON-encoded) the body, `query` the query string (an
    empty dict removes it), `headers` are added; `auth=False` drops the authorizer."""
    ev = load_event(fixture)
    if packet_id is not None:
        _replace_in_path(ev, "PACKET_ID", packet_id)
    if article_id is not None:
        _replace_in_path(ev, "ARTICLE_ID", article_id)
    if query is not None:
        from urllib.parse import urlencode
        ev["rawQueryString"] = urlencode(query)
        if query:
            ev["queryStringParameters"] = dict(query)
        else:
            ev.pop("queryStringParameters", None)
    rc = ev["requestContext"]
    if not auth:
        rc.pop("authorizer", None)
    elif sub is not None:
        claims = rc.setdefault("authorizer", {}).setdefault("jwt", {"scopes": None}).setdefault(
            "claims", {})
        claims["sub"] = sub
        claims["username"] = sub
    if body is not None:
        ev["body"] = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
        ev["isBase64Encoded"] = False
    if headers:
        ev.setdefault("headers", {}).update({k.lower(): v for k, v in headers.items()})
    _stamp(ev)
    return ev


def deposit_event(user_id: str, amount_cents: int, reference: str, *, iam: bool = True) -> dict:
    """`POST /wallet/deposits` from events/wallet-deposit.json (AWS_IAM authorizer) or, with
    `iam=False`, from wallet-deposit-no-iam.json."""
    return http_event("wallet-deposit" if iam else "wallet-deposit-no-iam",
                      body={"user_id": user_id, "amount_cents": amount_cents, "reference": reference})


def create_event(sub: str, total_cents: int, count: int, mode: str = "lucky", *,
                 split: str | None = None, expires_in_secs: int | None = None,
                 greeting: str | None = None, idempotency_key: str | None = None) -> dict:
    body: dict[str, Any] = {"total_cents": total_cents, "count": count, "mode": mode}
    if split is not None:
        body["split"] = split
    if expires_in_secs is not None:
        body["expires_in_secs"] = expires_in_secs
    if greeting is not None:
        body["greeting"] = greeting
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    return http_event("create-packet-lucky", sub=sub, body=body, headers=headers)


def grab_event(packet_id: str, sub: str) -> dict:
    return http_event("grab-grab", packet_id=packet_id, sub=sub)


def view_event(packet_id: str, sub: str = "viewer") -> dict:
    return http_event("grab-view", packet_id=packet_id, sub=sub)


def claim_event(packet_id: str, sub: str) -> dict:
    return http_event("claim-claim", packet_id=packet_id, sub=sub)


def wallet_event(sub: str) -> dict:
    return http_event("wallet-get", sub=sub)


def order_codes_event(sub: str = "bob", count: int | None = None) -> dict:
    """`POST /order-codes` from events/next-order-code-single.json; `count` adds the body
    `{"count": N}` (none: no body, one code)."""
    return http_event("next-order-code-single", sub=sub,
                      body={"count": count} if count is not None else None)


def post_article_event(sub: str, title: str, link: str) -> dict:
    """`POST /articles` from events/vote-post-article.json."""
    return http_event("vote-post-article", sub=sub, body={"title": title, "link": link})


def vote_event(article_id: str, sub: str, direction: str = "up") -> dict:
    """`POST /articles/{id}/vote` from events/vote-vote.json."""
    return http_event("vote-vote", article_id=article_id, sub=sub, body={"direction": direction})


def list_articles_event(order: str = "score", page: int = 1, sub: str = "reader") -> dict:
    """`GET /articles?order=..&page=..` from events/vote-list.json."""
    return http_event("vote-list", sub=sub, query={"order": order, "page": str(page)})


def article_groups_event(article_id: str, sub: str, add: Iterable[str] = (),
                         remove: Iterable[str] = ()) -> dict:
    """`PUT /articles/{id}/groups` from events/vote-groups.json."""
    return http_event("vote-groups", article_id=article_id, sub=sub,
                      body={"add": list(add), "remove": list(remove)})


def group_articles_event(group: str, order: str = "score", page: int = 1,
                         sub: str = "reader") -> dict:
    """`GET /groups/{group}/articles?order=..&page=..` from events/vote-group-articles.json
    (whose group is `programming`)."""
    ev = http_event("vote-group-articles", sub=sub, query={"order": order, "page": str(page)})
    _replace_in_path(ev, "/groups/programming/", f"/groups/{group}/")
    ev["pathParameters"] = {"group": group}
    return ev


def scheduled_event() -> dict:
    ev = load_event("reclaim-cron-scheduled")
    ev["id"] = str(uuid.uuid4())
    ev["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ev


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def parse_rfc3339(s: str) -> float:
    """`2026-01-01T00:00:00.000Z` -> Unix seconds."""
    from datetime import datetime
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def cents(n: int) -> str:
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // 100}.{n % 100:02d}"
