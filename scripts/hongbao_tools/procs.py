"""Processes the scripts start: each in its own session, all killed (with their children) on
exit, on exceptions, on Ctrl-C and on SIGTERM/SIGHUP; and free loopback ports for them."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import NoReturn

_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()
_signals_installed = False


def log(msg: str) -> None:
    """Prints `msg` to stderr at once (progress that must not mix into a report on stdout)."""
    print(msg, file=sys.stderr, flush=True)


def run_main(main: Callable[[], int], interrupted: str) -> NoReturn:
    """A script's entry point: exits with `main()`'s status; on Ctrl-C prints `interrupted` to
    stderr and exits 130 (the signal handlers have stopped what the script started)."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("\n" + interrupted)
        sys.exit(130)


def spawn(cmd: list[str], **kw) -> subprocess.Popen:
    """Starts `cmd` (`subprocess.Popen` keywords in `kw`) in its own session, so its whole
    process group can be killed, and registers it to be killed on exit."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    with _live_lock:
        _live[proc.pid] = proc
    return proc


def forget(proc: subprocess.Popen) -> None:
    """Leaves `proc` running when this process exits (it is no longer killed on exit)."""
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
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        for pid in kids:  # children that moved to another process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    else:
        # The leader is gone; its group may not be.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    forget(proc)


def shutdown_all() -> None:
    """Kills every process started with `spawn` that is still registered."""
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


def wait_for_port(
    port: int,
    proc: subprocess.Popen | None = None,
    timeout: float = 10.0,
    host: str = "127.0.0.1",
) -> None:
    """Returns once something listens on `host`:`port`; raises when `proc` exits first or
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError as e:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s") from e
            time.sleep(0.02)
