"""Lambda sandboxes, the way `sam local invoke` runs a function, without Docker.

A function's bootstrap (`target/local/<name>`, or the shipped `target/lambda/<name>/bootstrap`:
hongbao_tools.deps.binary_path) runs under the AWS Lambda
Runtime Interface Emulator (RIE) that the `aws-sam-cli` wheel ships
(`samcli/local/rapid/aws-lambda-rie-<arch>`): the binary talks to RIE's Runtime API exactly as
it talks to the real Lambda service, and we invoke it through RIE's invoke endpoint
`POST /2015-03-31/functions/function/invocations`. One RIE process is one `Sandbox`: it runs
one bootstrap and serves one invocation at a time, like one Lambda execution environment; a
`SandboxPool` of N of them is a function scaled out to N environments; a `LocalStack` is a
private Redis plus a pool per function.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import functions
from .deps import BUILD_COMMAND, PACKET_FUNCTIONS, binary_path, find_rie, require_binaries
from .emf import EmfTotals, parse_line
from .procs import free_port, install_signal_handlers, kill_tree, spawn, wait_for_port
from .redis_server import RedisServer

# The IAM role of every AWS_IAM fixture (events/wallet-deposit.json, coupon-create-campaign.json,
# merchant-deposit.json, ...), as a principal prefix.
DEPOSIT_PRINCIPALS = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/*"
# As in template.yaml: MemorySize 256; the Timeout of each function (functions.timeout_secs).
MEMORY_MB = 256
INVOKE_PATH = "/2015-03-31/functions/function/invocations"

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
    sandbox: Sandbox | None = None

    @property
    def status(self) -> int | None:
        """The HTTP status (`statusCode`), `None` for a non-HTTP function."""
        return self.get("statusCode")

    @property
    def replayed(self) -> bool:
        """Whether the answer carries `Idempotent-Replayed: true` (docs/idempotency.md)."""
        headers = {k.lower(): v for k, v in (self.get("headers") or {}).items()}
        return headers.get("idempotent-replayed") == "true"


class Sandbox:
    """One RIE process running one bootstrap: one Lambda execution environment.

    It serves one invocation at a time (callers serialise; `SandboxPool` does it for you).
    RIE starts the bootstrap lazily, on the first invocation (the cold start)."""

    def __init__(
        self,
        function: str,
        env: dict[str, str] | None = None,
        *,
        redis_url: str | None = None,
        binary: Path | None = None,
        rie: Path | None = None,
        name: str | None = None,
        log_path: Path | None = None,
        echo: bool = False,
        keep_lines: int = 5000,
    ):
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
        self.emf = EmfTotals()  # every EMF line it printed, added up (hongbao_tools.emf)
        self._cond = threading.Condition()
        self._conn: http.client.HTTPConnection | None = None
        self._busy = threading.Lock()
        self._reader: threading.Thread | None = None
        self._log_file = None

    # -- lifecycle ---------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The bootstrap's environment: what Lambda sets, the local Redis, the extra `env`."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(MEMORY_MB),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(functions.timeout_secs(self.function)),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.function}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/{self.name}",
            "REDIS_CLUSTER": "false",
            # Every AWS_IAM route allows the role of the IAM fixtures (events/wallet-deposit.json).
            **dict.fromkeys(functions.PRINCIPALS, DEPOSIT_PRINCIPALS),
            "RUST_LOG": "info",
            "LOG_LEVEL": "info",  # RIE's own log level (its INIT REPORT line is at info)
        }
        if self.redis_url:
            env["REDIS_URL"] = self.redis_url
        env.update(self.extra_env)
        return env

    def start(self) -> Sandbox:
        """Starts RIE (retrying on a taken port); the bootstrap starts on the first invoke."""
        if not os.access(self.binary, os.X_OK):
            raise FileNotFoundError(f"{self.binary} is missing; build it: {BUILD_COMMAND}")
        if self.log_path:
            # Open for the sandbox's life, closed by `close()`.
            self._log_file = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        last_error: Exception | None = None
        for _ in range(3):  # a port may be taken between free_port() and RIE's bind: retry
            self.port, self.api_port = free_port(), free_port()
            env = self.environment()
            env["AWS_LAMBDA_RUNTIME_API"] = f"127.0.0.1:{self.api_port}"
            cmd = [
                str(self.rie),
                "--runtime-interface-emulator-address",
                f"127.0.0.1:{self.port}",
                "--runtime-api-address",
                f"127.0.0.1:{self.api_port}",
                str(self.binary),
            ]
            self.proc = spawn(
                cmd,
                env=env,
                cwd=str(self.binary.parent),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            self._reader = threading.Thread(
                target=self._read_output, args=(self.proc,), name=f"rie-{self.name}", daemon=True
            )
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
            doc = parse_line(line)
            if doc is not None:
                self.emf.add(doc, self.function)
            with self._cond:
                self.lines.append(line)
                if '"level":"ERROR"' in line:
                    self.error_lines += 1
                if m:
                    self.reports.append(
                        Report(
                            m["rid"],
                            float(m["dur"]),
                            float(m["billed"]),
                            float(m["init"]) if m["init"] else None,
                        )
                    )
                    self._cond.notify_all()
                elif mi and self.init_report_ms is None:
                    self.init_report_ms = float(mi["ms"])
            if self._log_file:
                self._log_file.write(line + "\n")
            if self.echo:
                print(f"[{self.name}] {line}", file=sys.stderr, flush=True)
        proc.stdout.close()

    def alive(self) -> bool:
        """Whether the RIE process still runs."""
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """Stops RIE and the bootstrap, closes the log file."""
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

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def tail(self, n: int = 30) -> str:
        """The last `n` output lines."""
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
                self._conn.request(
                    "POST", INVOKE_PATH, body=payload, headers={"Content-Type": "application/json"}
                )
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
        except ValueError as e:
            raise InvocationError(
                f"{self.name}: non-JSON payload (HTTP {status}): {raw[:300]!r}"
            ) from e
        if (
            status != 200
            or headers.get("X-Amz-Function-Error")
            or (isinstance(data, dict) and "errorType" in data and "statusCode" not in data)
        ):
            raise InvocationError(
                f"{self.name}: invocation failed (HTTP {status}): {raw[:500]!r}"
                f"\n--- sandbox log tail ---\n{self.tail()}"
            )
        if not isinstance(data, dict):
            data = {"payload": data}
        out = LambdaResponse(data)
        if "statusCode" in out and isinstance(out.get("body"), str):
            body = out["body"]
            if out.get("isBase64Encoded"):
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
        return next(
            (r.init_duration_ms for r in self.reports if r.init_duration_ms is not None), None
        )

    @property
    def report_init_duration_ms(self) -> float | None:
        """The `Init Duration` field of the first REPORT line, as RIE prints it."""
        return next(
            (r.init_duration_ms for r in self.reports if r.init_duration_ms is not None), None
        )


class SandboxPool:
    """N sandboxes of one function; `invoke` checks an idle one out (blocking until one is
    free), so concurrent callers spread over them like Lambda scaling out."""

    def __init__(
        self,
        function: str,
        size: int,
        env: dict[str, str] | None = None,
        *,
        redis_url: str | None = None,
        rie: Path | None = None,
        log_dir: Path | None = None,
        echo: bool = False,
    ):
        self.function = function
        rie = rie or find_rie()
        self.sandboxes = [
            Sandbox(
                function,
                env,
                redis_url=redis_url,
                rie=rie,
                name=f"{function}-{i + 1}" if size > 1 else function,
                log_path=(Path(log_dir) / f"{function}-{i + 1}.log") if log_dir else None,
                echo=echo,
            )
            for i in range(size)
        ]
        self._idle: queue.Queue[Sandbox] = queue.Queue()

    def start(self) -> SandboxPool:
        """Starts every sandbox, in parallel."""
        with ThreadPoolExecutor(max_workers=len(self.sandboxes)) as ex:
            list(ex.map(lambda s: s.start(), self.sandboxes))
        for s in self.sandboxes:
            self._idle.put(s)
        return self

    def close(self) -> None:
        """Stops every sandbox, in parallel."""
        with ThreadPoolExecutor(max_workers=max(1, len(self.sandboxes))) as ex:
            list(ex.map(lambda s: s.close(), self.sandboxes))

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.sandboxes)

    def invoke(self, event: dict, timeout: float = 30.0) -> LambdaResponse:
        """Invokes an idle sandbox (waiting for one) with `event`."""
        sb = self._idle.get()
        try:
            return sb.invoke(event, timeout)
        finally:
            self._idle.put(sb)

    def map(
        self,
        events: Iterable[dict],
        threads: int = 32,
        on_error: Callable[[dict, Exception], Any] | None = None,
    ) -> list[Any]:
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
        """Waits for every sandbox's REPORT lines (`Sandbox.wait_reports`)."""
        for s in self.sandboxes:
            s.wait_reports(timeout)

    def cold_starts_ms(self) -> list[float]:
        """The cold start of every sandbox that had one."""
        return [c for c in (s.cold_start_ms for s in self.sandboxes) if c is not None]

    def error_lines(self) -> int:
        """ERROR log lines over all sandboxes."""
        return sum(s.error_lines for s in self.sandboxes)

    def invocations(self) -> list[int]:
        """Invocations served so far, per sandbox."""
        return [s.invocations for s in self.sandboxes]


class LocalStack:
    """A private Redis and a sandbox pool for each of `functions` (default: the red-packet
    functions; `FUNCTIONS` is all of them), sizes from `pools`, default 1.

        with LocalStack(pools={"grab": 8}) as stack:
            stack.invoke("wallet", deposit_event("alice", 100, "r1"))
    """

    def __init__(
        self,
        pools: dict[str, int] | None = None,
        env: dict[str, str] | None = None,
        functions: Iterable[str] = PACKET_FUNCTIONS,
        log_dir: Path | None = None,
        echo: bool = False,
    ):
        self.sizes = {f: max(1, (pools or {}).get(f, 1)) for f in functions}
        self.env = dict(env or {})
        self.log_dir = log_dir
        self.echo = echo
        self.redis = RedisServer()
        self.pools: dict[str, SandboxPool] = {}

    def start(self) -> LocalStack:
        """Starts Redis and every pool; stops what started when something fails."""
        install_signal_handlers()
        require_binaries(self.sizes)
        rie = find_rie()
        try:
            self.redis.start()
            # Each function connects as its own Redis user, as a deployment's do.
            functions.create_redis_users(self.redis.command)
            for f, n in self.sizes.items():
                self.pools[f] = SandboxPool(
                    f,
                    n,
                    {**functions.redis_user_env(f), **self.env},
                    redis_url=self.redis.url,
                    rie=rie,
                    log_dir=self.log_dir,
                    echo=self.echo,
                )
            with ThreadPoolExecutor(max_workers=len(self.pools)) as ex:
                list(ex.map(lambda p: p.start(), self.pools.values()))
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stops every pool and Redis."""
        for p in self.pools.values():
            p.close()
        self.redis.stop()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __getitem__(self, function: str) -> SandboxPool:
        return self.pools[function]

    def invoke(self, function: str, event: dict) -> LambdaResponse:
        """Invokes `function`'s pool with `event`."""
        return self.pools[function].invoke(event)

    def all_sandboxes(self) -> list[Sandbox]:
        """Every sandbox of every pool."""
        return [s for p in self.pools.values() for s in p.sandboxes]
