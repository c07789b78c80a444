"""The `serve` example (`cargo build -p hongbao --example serve`): the whole HTTP API on one
local port, identity from the `x-user-id` header; started on a given Redis, and called over
real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request

from . import functions
from .deps import require_example
from .procs import spawn, wait_for_port

# The IAM principal the example stamps on every request, allowed to deposit, withdraw and call
# the coupon merchant routes (create campaigns, add codes, redeem) by default.
LOCAL_PRINCIPAL = "arn:aws:iam::000000000000:user/hongbao-local"


def start_api(redis_url: str, addr: str) -> subprocess.Popen:
    """Starts the `serve` example on `addr` (`host:port`) against `redis_url` and returns once
    it listens (killed on exit, or with `procs.kill_tree`). Identity from `x-user-id`
    (HONGBAO_AUTH_MODE=header); every AWS_IAM route allowed for LOCAL_PRINCIPAL unless its
    principals variable (functions.json) says otherwise. Its /docs page needs nothing installed:
    Swagger UI's files are built into the example."""
    env = dict(os.environ)
    env.update(
        {
            "REDIS_URL": redis_url,
            "HONGBAO_AUTH_MODE": "header",
            **{v: env.get(v, LOCAL_PRINCIPAL) for v in functions.PRINCIPALS},
            "HONGBAO_SERVE_ADDR": addr,
            "RUST_LOG": env.get("RUST_LOG", "warn"),
        }
    )
    proc = spawn([str(require_example("serve"))], env=env)
    wait_for_port(int(addr.rsplit(":", 1)[1]), proc, timeout=20)
    return proc


def request(
    base: str,
    method: str,
    path: str,
    *,
    user: str | None = None,
    body: dict | None = None,
    headers: dict | None = None,
) -> tuple[int, dict, dict]:
    """One HTTP call to `base` + `path` as `user` (`x-user-id`), a `body` sent as
    `application/json` (`headers` may override it); returns (status, JSON body, headers),
    error answers included."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if user:
        req.add_header("x-user-id", user)
    if data is not None:
        # urllib would send application/x-www-form-urlencoded, which the API refuses (415).
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null"), dict(resp.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), dict(e.headers)
