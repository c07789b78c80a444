#!/usr/bin/env python3
"""`make sam-local`: every function run by `sam local invoke` through the real template.yaml,
in Docker, on a Redis and a Redis cluster this script starts.

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

A template route that points at a function that does not serve it answers the router's 404
`no route` and fails its fixture; a variable the template forgets fails the function's Init.

    .venv/bin/python scripts/sam_local.py [--skip-build] [--only standalone|cluster]

Prints PASS/FAIL per check and a table of invocations; exit status 0 only if all pass.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
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
from hongbao_tools.procs import install_signal_handlers, log
from hongbao_tools.redis_server import RedisCluster, RedisServer

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
    ap.add_argument("--only", choices=("standalone", "cluster"), help="one store only")
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
