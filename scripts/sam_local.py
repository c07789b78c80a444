#!/usr/bin/env python3
"""`make sam-local`: every function run by `sam local invoke` and `sam local start-api` through
the real template.yaml, in Docker, on a Redis and a Redis cluster this script starts.

1. Docker: a daemon that answers, or Debian's `dockerd` started here (installed by
   scripts/install-deps.sh --with-docker when missing) and stopped at the end; the Lambda base
   image `public.ecr.aws/lambda/provided:al2023-<arch>`, built from Debian packages
   (hongbao_tools/docker.py; a second run finds it by its content label and builds nothing).
2. `sam build --parameter-overrides Architecture=<this machine's>` (cargo lambda, as a team's
   `sam build` runs it) into target/sam-local/build.
3. For a standalone redis-server and a 3-master cluster (both listening on the Docker bridge's
   gateway too, the cluster announcing it), with moto as EventBridge: every `events/*.json`
   fixture through `sam local invoke` of the function the built template routes it to (its
   HttpApi Method and Path, or its Schedule), with the template's environment (parameters as
   a team would set them for an existing store without auth; `--env-vars` replaces only
   `REDIS_URL`, whose `rediss://` the local servers do not speak, and points ledger-export's
   SDK at moto). Each answer's status and error code are checked, and its body against the
   OpenAPI document's schema for that operation and status. Path placeholders (PACKET_ID,
   ARTICLE_ID, CAMPAIGN_ID, COUPON_CODE) are filled with what the earlier fixtures created.

4. `sam local start-api` of the built template (warm containers) on a standalone store: the
   README's curl session and the chat-packet routes over real HTTP through SAM's local API
   Gateway. SAM emulates neither the JWT nor the IAM authorizer, so the functions run with
   `HONGBAO_AUTH_MODE=header` (the caller from `x-user-id`, the IAM principal from
   `x-iam-principal`), which Init accepts only where `sam local` sets `AWS_SAM_LOCAL=true`.

A template route that points at a function that does not serve it answers the router's 404
`no route` and fails its fixture; a variable the template forgets fails the function's Init or
its fixture (a deposit without HONGBAO_DEPOSIT_PRINCIPALS is 403).

    .venv/bin/python scripts/sam_local.py [--skip-build] [--only standalone|cluster|start-api]

Prints PASS/FAIL per check and a table of invocations; exit status 0 only if all pass.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import referencing
from cfnlint.decode import decode_str

from hongbao_tools import events
from hongbao_tools.checks import Checks
from hongbao_tools.deps import install_deps
from hongbao_tools.docker import DockerDaemon, ensure_base_image, lambda_arch
from hongbao_tools.moto import LedgerFeed, MotoServer
from hongbao_tools.paths import EVENTS_DIR, ROOT, TARGET_DIR, VENV_DIR
from hongbao_tools.procs import (
    free_port,
    install_signal_handlers,
    kill_tree,
    log,
    spawn,
    wait_for_port,
)
from hongbao_tools.redis_server import RedisCluster, RedisServer
from hongbao_tools.serve_api import request

SAM = VENV_DIR / "bin" / "sam"
WORK_DIR = TARGET_DIR / "sam-local"
BUILD_DIR = WORK_DIR / "build"
BUILT_TEMPLATE = BUILD_DIR / "template.yaml"
# The fixtures' IAM caller (events/wallet-deposit.json and the coupon merchant fixtures).
FIXTURE_ROLE = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/*"
BUS = "hongbao-sam-local"


@dataclass
class Function:
    """A function of the built template: its logical id, its routes and whether a Schedule
    event starts it."""

    logical_id: str
    routes: set[str] = field(default_factory=set)  # "POST /packets/{id}/grab"
    scheduled: bool = False


def read_template(path: Path) -> dict[str, Function]:
    """The built template's functions by logical id (HttpApi events as "METHOD /path")."""
    tpl, matches = decode_str(path.read_text(encoding="utf-8"))
    if tpl is None:
        raise RuntimeError(f"cannot parse {path}: {matches}")
    out: dict[str, Function] = {}
    for lid, res in tpl["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        f = Function(lid)
        for ev in (res.get("Properties", {}).get("Events") or {}).values():
            props = ev.get("Properties") or {}
            if ev.get("Type") == "HttpApi":
                f.routes.add(f"{props['Method'].upper()} {props['Path']}")
            elif ev.get("Type") == "Schedule":
                f.scheduled = True
        out[lid] = f
    return out


def route_owner(functions: dict[str, Function], route_key: str) -> str | None:
    """The logical id of the function the template routes `route_key` to."""
    owners = [f.logical_id for f in functions.values() if route_key in f.routes]
    return owners[0] if len(owners) == 1 else None


def bridge_gateway() -> str:
    """The default Docker bridge's gateway address (the host, as a container on it sees it)."""
    r = subprocess.run(
        ["docker", "network", "inspect", "bridge"], capture_output=True, text=True, check=True
    )
    config = json.loads(r.stdout)[0]["IPAM"]["Config"][0]
    if config.get("Gateway"):
        return config["Gateway"]
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


class OpenApi:
    """Response bodies checked against openapi.json: the schema of an operation's status."""

    def __init__(self) -> None:
        self.doc = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
        resource = referencing.Resource.from_contents(
            self.doc, default_specification=referencing.jsonschema.DRAFT202012
        )
        self.registry = referencing.Registry().with_resource("urn:openapi", resource)

    def problems(self, route_key: str, status: int, body: object) -> str | None:
        """None when `body` matches the documented schema of `route_key` answering `status`,
        else what is wrong (an undocumented status included)."""
        method, path = route_key.split(" ", 1)
        op = self.doc["paths"].get(path, {}).get(method.lower())
        if op is None:
            return f"{route_key} is not in openapi.json"
        resp = op["responses"].get(str(status))
        if resp is None:
            return f"{route_key} does not document {status}"
        if "$ref" in resp:
            name = resp["$ref"].rsplit("/", 1)[1]
            resp = self.doc["components"]["responses"][name]
        schema = resp.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return None if body in (None, "") else f"{status} documents no body"
        schema = json.loads(json.dumps(schema).replace('"#/', '"urn:openapi#/'))
        validator = jsonschema.Draft202012Validator(schema, registry=self.registry)
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            return f"{'/'.join(map(str, e.path)) or '(body)'}: {e.message}"[:300]
        return None


@dataclass
class Invocation:
    fixture: str
    function: str
    status: object
    seconds: float


class SamLocal:
    """`sam local invoke` of the built template's functions against one store."""

    def __init__(
        self,
        label: str,
        functions: dict[str, Function],
        parameters: dict[str, str],
        env_vars: dict,
        openapi: OpenApi,
        checks: Checks,
    ) -> None:
        self.label = label
        self.functions = functions
        self.parameters = parameters
        self.openapi = openapi
        self.c = checks
        self.tmp = Path(tempfile.mkdtemp(prefix="hongbao-sam-local-"))
        self.env_file = self.tmp / "env.json"
        self.env_file.write_text(json.dumps(env_vars, indent=2), encoding="utf-8")
        self.invocations: list[Invocation] = []
        self.seq = 0
        self.last_stderr = ""

    def invoke_function(self, logical_id: str, event: dict, name: str) -> tuple[dict | None, str]:
        """Runs `sam local invoke LOGICAL_ID -e <event>`: (its JSON payload or None, stderr)."""
        self.seq += 1
        ev_file = self.tmp / f"{self.seq:03d}-{name.split()[0]}"
        ev_file.write_text(json.dumps(event), encoding="utf-8")
        cmd = [
            str(SAM), "local", "invoke", logical_id,
            "--template", str(BUILT_TEMPLATE),
            "--event", str(ev_file),
            "--env-vars", str(self.env_file),
            "--parameter-overrides", " ".join(f"{k}={v}" for k, v in self.parameters.items()),
            "--skip-pull-image",
        ]  # fmt: skip
        t0 = time.perf_counter()
        r = subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=sam_env(), timeout=180
        )
        took = time.perf_counter() - t0
        payload = None
        for line in reversed(r.stdout.strip().splitlines()):
            try:
                payload = json.loads(line)
                break
            except ValueError:
                continue
        status = payload.get("statusCode") if isinstance(payload, dict) else None
        self.invocations.append(
            Invocation(name, logical_id, status if status is not None else "-", took)
        )
        return payload, r.stderr

    def http(
        self,
        name: str,
        event: dict,
        status: int,
        error: str | None = None,
    ) -> dict | None:
        """Invokes the function the template routes `event`'s routeKey to; checks the status,
        the error code and the body's schema. Returns the parsed body (None on failure)."""
        route_key = event["routeKey"]
        owner = route_owner(self.functions, route_key)
        if not self.c.check(
            f"[{self.label}] the template routes {route_key} to one function",
            owner is not None,
            f"owners: {[f.logical_id for f in self.functions.values() if route_key in f.routes]}",
        ):
            return None
        payload, stderr = self.invoke_function(owner, event, name)
        if not isinstance(payload, dict) or "statusCode" not in payload:
            self.c.check(
                f"[{self.label}] {name} -> {owner} answers an HTTP response",
                False,
                f"payload {payload!r}\n      {stderr[-1500:]}",
            )
            return None
        try:
            body = json.loads(payload.get("body") or "null")
        except ValueError:
            body = payload.get("body")
        want = f"{status}" + (f" {error}" if error else "")
        ok = payload["statusCode"] == status and (
            error is None or (isinstance(body, dict) and body.get("error") == error)
        )
        self.c.check(
            f"[{self.label}] {name} -> {owner}: {want}",
            ok,
            f"got {payload['statusCode']} {str(body)[:300]}"
            + ("" if ok else f"\n      {stderr[-800:]}"),
        )
        problem = self.openapi.problems(route_key, payload["statusCode"], body)
        self.c.check(
            f"[{self.label}] {name}: the body matches openapi.json ({route_key}, "
            f"{payload['statusCode']})",
            problem is None,
            problem or "",
        )
        return body if ok else None

    def scheduled(self, name: str, logical_id: str, event: dict) -> dict | None:
        """Invokes a scheduled function (it must have a Schedule event in the template)."""
        f = self.functions.get(logical_id)
        if not self.c.check(
            f"[{self.label}] {logical_id} has a Schedule event in the template",
            f is not None and f.scheduled,
        ):
            return None
        payload, stderr = self.invoke_function(logical_id, event, name)
        self.c.check(
            f"[{self.label}] {name} -> {logical_id} answers a summary",
            isinstance(payload, dict) and "errorType" not in payload,
            f"{payload!r}\n      {stderr[-1500:]}",
        )
        self.last_stderr = stderr
        return payload if isinstance(payload, dict) else None


def sam_env() -> dict[str, str]:
    """The environment `sam` runs with: the venv first on PATH (cargo lambda, for `sam
    build`), no telemetry, and no AWS credentials or profile: the containers then get SAM's
    placeholder credentials (what moto accepts; never real ones), and `sam` does not ask STS
    for the account id (with credentials it does, and waits for the network each invoke)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PATH"] = f"{VENV_DIR / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["SAM_CLI_TELEMETRY"] = "0"
    env["AWS_DEFAULT_REGION"] = "us-east-1"
    return env


def sam_build(c: Checks, arch: str) -> float:
    """`sam build` of template.yaml for `arch` into BUILD_DIR; its time in seconds."""
    install_deps("--with-sam-build")
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            str(SAM), "build", "--template", str(ROOT / "template.yaml"),
            "--build-dir", str(BUILD_DIR), "--parameter-overrides", f"Architecture={arch}",
        ],
        cwd=ROOT, capture_output=True, text=True, check=False, env=sam_env(),
    )  # fmt: skip
    took = time.perf_counter() - t0
    c.check(
        f"sam build (Architecture={arch}) in {took:.0f} s",
        r.returncode == 0,
        (r.stdout + r.stderr)[-3000:],
    )
    return took


def every_fixture(s: SamLocal, feed: LedgerFeed) -> None:
    """Every events/*.json fixture, in an order that gives the placeholders real ids."""
    c = s.c
    # Wallets (AWS_IAM routes).
    s.http("wallet-deposit.json", events.http_event("wallet-deposit"), 201)
    no_iam = events.http_event("wallet-deposit-no-iam")
    s.http("wallet-deposit-no-iam.json", no_iam, 403, "forbidden")
    s.http("wallet-withdrawal.json", events.http_event("wallet-withdrawal"), 201)
    s.http("wallet-get.json", events.http_event("wallet-get"), 200)
    # Red packets.
    lucky = s.http("create-packet-lucky.json", events.http_event("create-packet-lucky"), 201)
    s.http("create-packet-fixed.json", events.http_event("create-packet-fixed"), 201)
    bad = events.http_event("create-packet-bad-amount")
    s.http("create-packet-bad-amount.json", bad, 400, "invalid_request")
    s.http(
        "create-packet-no-auth.json",
        events.http_event("create-packet-no-auth"),
        401,
        "unauthorized",
    )
    pid = (lucky or {}).get("packet_id", "missing")
    s.http("grab-grab.json", events.http_event("grab-grab", packet_id=pid), 200)
    s.http("grab-view.json", events.http_event("grab-view", packet_id=pid), 200)
    s.http("claim-claim.json", events.http_event("claim-claim", packet_id=pid), 200)
    s.http("grab-history.json", events.http_event("grab-history"), 200)
    s.http("grab-summary.json", events.http_event("grab-summary"), 200)
    # Chat packets: a password packet, grabbed with it, then cancelled by its sender.
    chat = s.http("create-packet-password.json", events.http_event("create-packet-password"), 201)
    chat_id = (chat or {}).get("packet_id", "missing")
    grab = events.http_event("grab-grab-password", packet_id=chat_id)
    s.http("grab-grab-password.json", grab, 200)
    cancel = events.http_event("create-packet-cancel", packet_id=chat_id)
    cancelled = s.http("create-packet-cancel.json", cancel, 200)
    c.check(
        f"[{s.label}] the cancel refunded the two un-grabbed shares",
        cancelled is not None and 0 < cancelled.get("refunded_cents", 0) < 600,
        str(cancelled),
    )
    # Order codes.
    s.http("next-order-code-single.json", events.http_event("next-order-code-single"), 201)
    batch = s.http("next-order-code-batch.json", events.http_event("next-order-code-batch"), 201)
    c.check(
        f"[{s.label}] the batch holds 100 distinct codes",
        batch is not None and len(set(batch.get("codes", []))) == 100,
        str(batch)[:200],
    )
    bad = events.http_event("next-order-code-bad-count")
    s.http("next-order-code-bad-count.json", bad, 400, "invalid_request")
    # Article voting.
    article = s.http("vote-post-article.json", events.http_event("vote-post-article"), 201)
    aid = str((article or {}).get("article_id", "missing"))
    s.http("vote-vote.json", events.http_event("vote-vote", article_id=aid), 200)
    s.http("vote-groups.json", events.http_event("vote-groups", article_id=aid), 200)
    s.http("vote-list.json", events.http_event("vote-list"), 200)
    s.http("vote-group-articles.json", events.http_event("vote-group-articles"), 200)
    # Coupon drops: the fixture's campaign of generated codes, grabbed, viewed, listed and
    # redeemed; and a campaign of uploaded codes that the add-codes fixture adds a batch to.
    drop = s.http("coupon-create-campaign.json", events.http_event("coupon-create-campaign"), 201)
    cid = (drop or {}).get("campaign_id", "missing")
    won = s.http("coupon-grab.json", events.http_event("coupon-grab", campaign_id=cid), 200)
    s.http("coupon-view.json", events.http_event("coupon-view", campaign_id=cid), 200)
    s.http("coupon-list.json", events.http_event("coupon-list"), 200)
    redeem = json.loads(events.load_event("coupon-redeem")["body"])
    redeem["code"] = (won or {}).get("code", "missing")
    s.http("coupon-redeem.json", events.http_event("coupon-redeem", body=redeem), 200)
    uploaded = events.create_campaign_event(
        {
            "title": "uploaded codes",
            "codes": [f"SAM-{s.label.upper()}-{i}" for i in range(1, 3)],
            # Codes are added only before the start.
            "starts_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
            "ends_at": json.loads(events.load_event("coupon-create-campaign")["body"])["ends_at"],
            "reference": f"sam-local-{s.label}",
        }
    )
    second = s.http("a campaign of uploaded codes", uploaded, 201)
    s.http(
        "coupon-add-codes.json",
        events.http_event("coupon-add-codes", campaign_id=(second or {}).get("campaign_id", "-")),
        201,
    )
    # The scheduled functions.
    summary = s.scheduled(
        "reclaim-cron-scheduled.json", "ReclaimCronFunction", events.scheduled_event()
    )
    c.check(
        f"[{s.label}] reclaim-cron's summary: {{settled, refunded_cents, redriven, remaining_due}}",
        summary is not None
        and {"settled", "refunded_cents", "redriven", "remaining_due"} <= summary.keys(),
        str(summary),
    )
    export = s.scheduled(
        "ledger-export-scheduled.json",
        "LedgerExportFunction",
        events.load_event("ledger-export-scheduled"),
    )
    published = feed.drain()
    c.check(
        f"[{s.label}] ledger-export published the journal to EventBridge (moto): "
        f"{len(published)} events",
        export is not None and len(published) > 0,
        f"{export} / {len(published)} events\n      {s.last_stderr[-1500:]}",
    )
    kinds = {e.get("detail-type") for e in published}
    c.check(
        f"[{s.label}] the feed holds the deposit, withdrawal, packet debits, claim, cancel and "
        "its refund, and the coupon issued and redeemed",
        {
            "Deposit",
            "Withdrawal",
            "PacketDebit",
            "ClaimCredit",
            "PacketCancelled",
            "RefundCredit",
            "CouponIssued",
            "CouponRedeemed",
        }
        <= kinds,
        str(sorted(k for k in kinds if k)),
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

    def expect(name: str, ok: bool, detail: object) -> None:
        c.check(f"[{label} start-api] {name}", ok, str(detail)[:400])

    st, b, _ = call(
        "POST",
        "/wallet/deposits",
        body={"user_id": "alice", "amount_cents": 10000, "reference": "api-1"},
        headers=LOCAL_IAM,
    )
    expect("deposit 100.00 to alice -> 201", st == 201 and b.get("balance_cents") == 10000, b)
    st, b, _ = call(
        "POST",
        "/wallet/withdrawals",
        body={"user_id": "alice", "amount_cents": 500, "reference": "api-wd-1"},
        headers=LOCAL_IAM,
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
    st, camp, _ = call(
        "POST",
        "/campaigns",
        body={"title": "20 off 100", "codes": ["API-1"], "ends_at": ends, "reference": "api-drop"},
        headers=LOCAL_IAM,
    )
    expect("the merchant creates a campaign -> 201", st == 201, camp)
    st, won, _ = call("POST", f"/campaigns/{camp.get('campaign_id')}/grab", user="bob")
    expect("bob grabs the coupon -> 200", st == 200 and won.get("code") == "API-1", won)
    st, b, _ = call(
        "POST",
        "/coupons/redeem",
        body={"code": "API-1", "user_id": "bob", "order_reference": "api-order-1"},
        headers=LOCAL_IAM,
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
        parameters = {
            "Architecture": arch,
            "ExistingCacheEndpoint": f"{gateway}:{store.port}",
            "RedisAuth": "none",
            "RedisCluster": "false",
            "DepositPrincipals": FIXTURE_ROLE,
            "WithdrawalPrincipals": FIXTURE_ROLE,
            "CouponPrincipals": FIXTURE_ROLE,
        }
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


def every_fixture_is_played() -> list[str]:
    """The events/*.json fixtures every_fixture does not name (must be none)."""
    import inspect

    source = inspect.getsource(every_fixture)
    return sorted(p.name for p in EVENTS_DIR.glob("*.json") if p.name not in source)


def run_target(
    label: str,
    functions: dict[str, Function],
    gateway: str,
    arch: str,
    openapi: OpenApi,
    c: Checks,
) -> list[Invocation]:
    """Starts the store of `label` and moto, then plays every fixture."""
    c.section(f"sam local invoke: every fixture, {label} store")
    with MotoServer(host=gateway) as moto:
        feed = LedgerFeed(moto, BUS)
        store: RedisServer | RedisCluster
        if label == "cluster":
            store = RedisCluster(also_bind=(gateway,), announce_ip=gateway)
        else:
            store = RedisServer(also_bind=(gateway,))
        with store:
            if isinstance(store, RedisCluster):
                url = ",".join(store.urls(gateway))
                endpoint = ",".join(f"{gateway}:{n.port}" for n in store.nodes)
            else:
                url = f"redis://{gateway}:{store.port}"
                endpoint = f"{gateway}:{store.port}"
            parameters = {
                "Architecture": arch,
                "ExistingCacheEndpoint": endpoint,
                "RedisAuth": "none",
                "RedisCluster": "true" if label == "cluster" else "false",
                "DepositPrincipals": FIXTURE_ROLE,
                "WithdrawalPrincipals": FIXTURE_ROLE,
                "CouponPrincipals": FIXTURE_ROLE,
            }
            env_vars = {
                # The template says rediss:// (every store it deploys speaks only TLS).
                "Parameters": {"REDIS_URL": url},
                "LedgerExportFunction": {
                    "HONGBAO_EVENT_BUS_NAME": BUS,
                    "AWS_ENDPOINT_URL_EVENTBRIDGE": moto.url,
                },
            }
            s = SamLocal(label, functions, parameters, env_vars, openapi, c)
            every_fixture(s, feed)
            return s.invocations


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--skip-build", action="store_true", help="use target/sam-local/build as is")
    ap.add_argument(
        "--only",
        choices=("standalone", "cluster", "start-api"),
        help="only `sam local invoke` on one store, or only `sam local start-api`",
    )
    args = ap.parse_args()
    install_signal_handlers()
    t0 = time.perf_counter()
    c = Checks()
    arch = lambda_arch()
    c.section("Docker, the base image, sam build")
    unplayed = every_fixture_is_played()
    c.check("every events/*.json fixture is played", not unplayed, str(unplayed))
    table: list[Invocation] = []
    with DockerDaemon():
        t = time.perf_counter()
        tag, built = ensure_base_image(arch)
        c.check(
            f"base image {tag} {'built' if built else 'found (same content label)'} in "
            f"{time.perf_counter() - t:.1f} s",
            True,
        )
        if not args.skip_build:
            sam_build(c, arch)
        if not BUILT_TEMPLATE.is_file():
            c.check("target/sam-local/build/template.yaml exists", False)
            return 1
        functions = read_template(BUILT_TEMPLATE)
        gateway = bridge_gateway()
        openapi = OpenApi()
        for label in ("standalone", "cluster"):
            if args.only and args.only != label:
                continue
            try:
                table += run_target(label, functions, gateway, arch, openapi, c)
            except Exception as e:  # noqa: BLE001 — a crashed section is a failed check
                c.check(
                    f"[{label}] ran without an exception",
                    False,
                    "".join(traceback.format_exception(e)).rstrip().replace("\n", "\n      "),
                )
        if args.only in (None, "start-api"):
            try:
                run_start_api(functions, gateway, arch, c)
            except Exception as e:  # noqa: BLE001 — a crashed section is a failed check
                c.check(
                    "[start-api] ran without an exception",
                    False,
                    "".join(traceback.format_exception(e)).rstrip().replace("\n", "\n      "),
                )
    print("\ninvocations (sam local invoke, each a new container):")
    for inv in table:
        print(f"  {inv.fixture:<34} {inv.function:<24} {inv.status!s:>4}  {inv.seconds:5.1f} s")
    if table:
        secs = sorted(i.seconds for i in table)
        print(f"  {len(table)} invocations, median {secs[len(secs) // 2]:.1f} s")
    print(f"\n{c.passed} passed, {len(c.failed)} failed in {time.perf_counter() - t0:.1f} s")
    c.print_failed()
    return 0 if not c.failed else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("\ninterrupted")
        sys.exit(130)
