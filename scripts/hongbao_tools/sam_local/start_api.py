"""`sam local start-api` of the built template (warm containers) on a standalone store: the
README's curl session and the chat-packet and coupon routes over real HTTP through SAM's local
API Gateway, with HONGBAO_AUTH_MODE=header (SAM emulates neither authorizer)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..checks import Checks
from ..procs import free_port, kill_tree, spawn, wait_for_port
from ..redis_server import RedisServer
from ..serve_api import request
from .sam import (
    BUILT_TEMPLATE,
    SAM,
    WORK_DIR,
    Function,
    sam_env,
    store_parameters,
)

# The caller of the AWS_IAM routes in the start-api session: `sam local start-api` has no IAM
# authorizer, so under HONGBAO_AUTH_MODE=header (allowed by Init only with AWS_SAM_LOCAL=true,
# which sam local sets) this header stands for the signed principal.
LOCAL_IAM = {"x-iam-principal": "arn:aws:sts::123456789012:assumed-role/hongbao-payments/local"}


def start_api_session(c: Checks, base: str, label: str) -> None:
    """The README's curl session and the chat-packet routes, over real HTTP through `sam local
    start-api` (SAM's local API Gateway routing the template's HttpApi events)."""

    def call(method: str, path: str, *, user=None, body=None, headers=None):
        return request(base, method, path, user=user, body=body, headers=headers)

    def signed(path: str, body: dict):
        """A POST of an AWS_IAM route, as the fixtures' principal (LOCAL_IAM)."""
        return call("POST", path, body=body, headers=LOCAL_IAM)

    def expect(name: str, ok: bool, detail: object) -> None:
        c.check(f"[{label} start-api] {name}", ok, str(detail)[:400])

    st, b, _ = signed(
        "/wallet/deposits", {"user_id": "alice", "amount_cents": 10000, "reference": "api-1"}
    )
    expect("deposit 100.00 to alice -> 201", st == 201 and b.get("balance_cents") == 10000, b)
    st, b, _ = signed(
        "/wallet/withdrawals", {"user_id": "alice", "amount_cents": 500, "reference": "api-wd-1"}
    )
    expect("withdraw 5.00 -> 201", st == 201 and b.get("balance_cents") == 9500, b)
    st, b, _ = call("POST", "/wallet/deposits", body={"user_id": "x", "amount_cents": 1,
                                                      "reference": "api-2"})  # fmt: skip
    expect("a deposit without the principal -> 403", st == 403, b)
    body = {"total_cents": 1000, "count": 3, "greeting": "恭喜发财"}
    key = {"Idempotency-Key": "api-packet-1"}
    st, packet, _ = call("POST", "/packets", user="alice", body=body, headers=key)
    expect("alice creates a 3-share packet -> 201", st == 201 and "packet_id" in packet, packet)
    pid = packet.get("packet_id", "missing")
    st, share, _ = call("POST", f"/packets/{pid}/grab", user="bob")
    expect("bob grabs -> 200", st == 200 and share.get("amount_cents", 0) > 0, share)
    st, b, _ = call("POST", f"/packets/{pid}/claim", user="bob")
    expect("bob claims -> 200", st == 200 and b.get("repeat") is False, b)
    st, b, _ = call("GET", "/wallet", user="bob")
    expect("bob's wallet holds his share", b.get("balance_cents") == share.get("amount_cents"), b)
    st, b, _ = call("GET", "/packets?role=sent", user="alice")
    expect(
        "alice's sent history lists the packet",
        st == 200 and [i.get("packet_id") for i in b.get("items", [])] == [pid],
        b,
    )
    st, b, _ = call("GET", "/packets/summary", user="alice")
    expect("alice's summary: 1 packet, 10.00", (b.get("sent") or {}).get("total_cents") == 1000, b)
    st, b, _ = call("POST", "/order-codes", user="alice", body={"count": 2})
    expect("two order codes -> 201", st == 201 and len(b.get("codes", [])) == 2, b)
    st, art, _ = call(
        "POST", "/articles", user="alice", body={"title": "hongbao", "link": "https://a.example/"}
    )
    expect("post an article -> 201", st == 201 and art.get("votes") == 1, art)
    st, b, _ = call(
        "POST", f"/articles/{art.get('article_id')}/vote", user="carol", body={"direction": "up"}
    )
    expect("carol votes it up -> 200", st == 200 and b.get("votes") == 2, b)
    st, b, _ = call("GET", "/articles?order=score", user="carol")
    expect("the articles list shows it", st == 200 and len(b.get("articles", [])) == 1, b)
    # Chat packets: a password packet, grabbed with it, cancelled by alice.
    st, chat, _ = call(
        "POST",
        "/packets",
        user="alice",
        body={"total_cents": 300, "count": 3, "password": "芝麻开门"},
    )
    cid = chat.get("packet_id", "missing")
    expect("a password packet -> 201", st == 201 and chat.get("password_protected") is True, chat)
    st, b, _ = call("POST", f"/packets/{cid}/grab", user="dave")
    expect("grab without the password -> 403 wrong_password", b.get("error") == "wrong_password", b)
    st, won, _ = call("POST", f"/packets/{cid}/grab", user="dave", body={"password": "芝麻开门"})
    expect("grab with it -> 200", st == 200, won)
    st, b, _ = call("POST", f"/packets/{cid}/cancel", user="alice")
    expect(
        "alice cancels -> 200, the rest refunded",
        st == 200 and b.get("refunded_cents") == 300 - won.get("amount_cents", 0),
        b,
    )
    st, b, _ = call("POST", f"/packets/{cid}/grab", user="erin", body={"password": "芝麻开门"})
    expect("grab after the cancel -> 410 cancelled", st == 410 and b.get("error") == "cancelled", b)
    # A coupon drop: the merchant creates a campaign, bob grabs, the checkout redeems.
    ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    st, camp, _ = signed(
        "/campaigns",
        {"title": "20 off 100", "codes": ["API-1"], "ends_at": ends, "reference": "api-drop"},
    )
    expect("the merchant creates a campaign -> 201", st == 201, camp)
    st, won, _ = call("POST", f"/campaigns/{camp.get('campaign_id')}/grab", user="bob")
    expect("bob grabs the coupon -> 200", st == 200 and won.get("code") == "API-1", won)
    st, b, _ = signed(
        "/coupons/redeem", {"code": "API-1", "user_id": "bob", "order_reference": "api-order-1"}
    )
    expect("the checkout redeems it -> 200", st == 200 and b.get("repeat") is False, b)
    st, b, _ = call("GET", "/coupons", user="bob")
    expect(
        "bob's coupons: redeemed", [i.get("state") for i in b.get("items", [])] == ["redeemed"], b
    )
    st, b, _ = call("GET", "/wallet")
    expect("no x-user-id -> 401 unauthorized", st == 401 and b.get("error") == "unauthorized", b)


def run_start_api(functions: dict[str, Function], gateway: str, arch: str, c: Checks) -> None:
    """`sam local start-api` of the built template on a standalone store (warm containers,
    identity from headers: HONGBAO_AUTH_MODE=header, which Init accepts under sam local
    only), driven by start_api_session."""
    c.section("sam local start-api: the README's session over HTTP")
    with RedisServer(also_bind=(gateway,)) as store:
        tmp = Path(tempfile.mkdtemp(prefix="hongbao-sam-api-"))
        env_file = tmp / "env.json"
        env_file.write_text(
            json.dumps(
                {
                    "Parameters": {
                        "REDIS_URL": f"redis://{gateway}:{store.port}",
                        "HONGBAO_AUTH_MODE": "header",
                    }
                }
            ),
            encoding="utf-8",
        )
        port = free_port()
        parameters = store_parameters(arch, f"{gateway}:{store.port}", cluster=False)
        log_path = WORK_DIR / "start-api.log"
        before = containers()
        with open(log_path, "wb") as out:
            proc = spawn(
                [
                    str(SAM), "local", "start-api",
                    "--template", str(BUILT_TEMPLATE),
                    "--host", "127.0.0.1", "--port", str(port),
                    "--env-vars", str(env_file),
                    "--parameter-overrides",
                    " ".join(f"{k}={v}" for k, v in parameters.items()),
                    "--skip-pull-image", "--warm-containers", "EAGER",
                ],
                stdout=out, stderr=subprocess.STDOUT, env=sam_env(),
            )  # fmt: skip
        try:
            wait_for_port(port, proc, timeout=120)
            start_api_session(c, f"http://127.0.0.1:{port}", "standalone")
        except Exception:
            c.check("sam local start-api ran", False, log_path.read_text(errors="replace")[-3000:])
            raise
        finally:
            stop_gently(proc)
            # sam stops its warm containers but leaves some behind, exited: remove the ones
            # this run made (never another's).
            left = sorted(containers() - before)
            if left:
                subprocess.run(["docker", "rm", "-f", *left], capture_output=True, check=False)


def containers() -> set[str]:
    """The ids of every container, running or not."""
    r = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc"], capture_output=True, text=True, check=False
    )
    return set(r.stdout.split())


def stop_gently(proc: subprocess.Popen) -> None:
    """SIGINT first (sam then removes its warm containers), then the process group."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    kill_tree(proc)
