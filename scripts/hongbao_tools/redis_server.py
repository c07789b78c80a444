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
    context manager (`start` / `stop`).

    `also_bind`: more local addresses to listen on (the Docker bridge's gateway, for Lambda
    containers; protected mode is then off, as it refuses every non-loopback client without a
    password). `cluster`: a cluster-mode node (bus port free too) announcing `announce_ip`
    (clients follow MOVED to it)."""

    def __init__(
        self,
        port: int | None = None,
        *,
        also_bind: tuple[str, ...] = (),
        cluster: bool = False,
        announce_ip: str | None = None,
    ):
        self.port = port or free_port()
        self.also_bind = also_bind
        self.cluster = cluster
        self.announce_ip = announce_ip
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
            exe, "--port", str(self.port), "--bind", " ".join(("127.0.0.1", *self.also_bind)),
            "--save", "", "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
            "--logfile", os.path.join(self.dir, "redis.log"), "--maxclients", "10000",
        ]
        if self.also_bind:
            cmd += ["--protected-mode", "no"]
        if self.cluster:
            cmd += ["--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                    "--cluster-config-file", os.path.join(self.dir, "nodes.conf")]
            if self.announce_ip:
                cmd += ["--cluster-announce-ip", self.announce_ip]
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


class RedisCluster:
    """Three `RedisServer` masters in cluster mode (no replicas), slots spread by
    `redis-cli --cluster create`; a context manager. `also_bind` and `announce_ip` as for
    `RedisServer` (the nodes announce `announce_ip`, so a Lambda container reaches the node a
    MOVED names)."""

    def __init__(self, *, also_bind: tuple[str, ...] = (), announce_ip: str | None = None):
        self.nodes = [
            RedisServer(also_bind=also_bind, cluster=True, announce_ip=announce_ip)
            for _ in range(3)
        ]
        self.announce_ip = announce_ip or "127.0.0.1"

    def start(self) -> RedisCluster:
        """Starts the nodes, creates the cluster and returns once every node says
        `cluster_state:ok`."""
        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        r = subprocess.run(
            [cli, "--cluster", "create", *addrs, "--cluster-yes"],
            capture_output=True,
            text=True,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {r.stdout}{r.stderr}")
        deadline = time.monotonic() + 30
        while not all("cluster_state:ok" in n.command("CLUSTER", "INFO") for n in self.nodes):
            if time.monotonic() > deadline:
                raise TimeoutError("the cluster did not reach cluster_state:ok in 30 s")
            time.sleep(0.1)
        return self

    def urls(self, host: str | None = None) -> list[str]:
        """`redis://<host>:<port>` of every node (`host` defaults to the announced address)."""
        return [f"redis://{host or self.announce_ip}:{n.port}" for n in self.nodes]

    def wallet_total(self, prefix: str = "hb") -> tuple[int, int]:
        """(the sum of every wallet's balance in cents, the number of wallets) over every
        node."""
        total = n = 0
        for node in self.nodes:
            t, k = node.wallet_total(prefix)
            total, n = total + t, n + k
        return total, n

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
