"""A private `redis-server` on a free loopback port (never 6379), without persistence, in a
temp dir, with a redis-py client for audits."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

try:
    import redis
except ImportError as e:  # not the project's venv, or install-deps.sh has not run yet
    raise ImportError(
        f"hongbao_tools needs redis-py: run scripts/install-deps.sh and use .venv/bin/python ({e})"
    ) from e

from .deps import find_redis_server
from .procs import forget, free_port, kill_tree, spawn, wait_for_port


class RedisServer:
    """A private `redis-server` on a free loopback port, no persistence, in a temp dir; a
    context manager (`start` / `stop`)."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.dir: str | None = None
        self.proc: subprocess.Popen | None = None
        self.client: redis.Redis | None = None
        self.detached = False

    @property
    def url(self) -> str:
        """`redis://127.0.0.1:<port>`."""
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> RedisServer:
        """Starts the server and returns once it answers PING."""
        exe = find_redis_server()
        self.dir = tempfile.mkdtemp(prefix="hongbao-redis-")
        # fmt: off
        cmd = [
            exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"), "--maxclients", "10000",
        ]
        # fmt: on
        self.proc = spawn(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(self.port, self.proc, timeout=10)
        # Thread-safe (a connection pool); replies decoded to str, as the audits expect.
        self.client = redis.Redis(
            host="127.0.0.1",
            port=self.port,
            socket_timeout=5.0,
            socket_connect_timeout=5.0,
            decode_responses=True,
            encoding_errors="replace",
        )
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

    def wallet_total(self, prefix: str = "hb") -> tuple[int, int]:
        """(the sum of every wallet's balance in cents, the number of wallets), via SCAN."""
        total = n = 0
        for key in self.wallet_keys(prefix):
            total += int(self.command("HGET", key, "balance") or 0)
            n += 1
        return total, n

    def detach(self) -> None:
        """Leaves the server running after this process exits (`--keep-redis`)."""
        if self.proc is not None:
            forget(self.proc)
        self.detached = True

    def stop(self) -> None:
        """Stops the server (unless detached) and removes its dir."""
        if self.client:
            self.client.close()
        if self.detached or self.proc is None:
            return
        kill_tree(self.proc, grace=2.0)
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
