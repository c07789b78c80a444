"""The `sam` CLI and the built template: the environment `sam` runs with, `sam build` into
target/sam-local/build, the built template's functions (routes, Schedule events), the Docker
bridge's gateway the containers reach the host at, and the parameters a team sets for an
existing store."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from cfnlint.decode import decode_str

from .. import functions
from ..checks import Checks
from ..deps import install_deps
from ..paths import ROOT, TARGET_DIR, VENV_DIR

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
    """`sam build` of template.yaml for `arch` into BUILD_DIR; its time in seconds. An arm64
    build needs rustup's aarch64 target (`install-deps.sh --with-sam-build`); this machine's
    x86_64 one needs nothing more."""
    if arch == "arm64":
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


def sdk_only_where_asked(c: Checks) -> None:
    """Each built bootstrap links the AWS SDK's EventBridge client exactly when its function's
    crate turns on hongbao's `eventbridge` feature, and every bootstrap links the Secrets
    Manager client (each function reads the Redis password's secret at Init when
    `REDIS_PASSWORD_SECRET_ARN` is set: `hongbao::lambda::secrets`). The marks are the clients'
    crates' source paths in panic locations. `sam build` runs in the function's crate (its
    CodeUri), where cargo resolves that crate's features alone; built from the workspace root,
    every bootstrap linked the EventBridge client."""
    for logical_id, name in functions.RESOURCES.items():
        manifest = (ROOT / "functions" / name / "Cargo.toml").read_text(encoding="utf-8")
        wants = '"eventbridge"' in manifest
        bootstrap = BUILD_DIR / logical_id / "bootstrap"
        binary = bootstrap.read_bytes() if bootstrap.is_file() else b""
        size = f"{bootstrap}: {len(binary) if binary else 'missing'} B"
        links = re.search(rb"/aws-sdk-eventbridge-\d", binary) is not None
        c.check(
            f"{logical_id}'s bootstrap {'links' if wants else 'does not link'} the EventBridge "
            "client",
            links == wants,
            size,
        )
        c.check(
            f"{logical_id}'s bootstrap links the Secrets Manager client",
            re.search(rb"/aws-sdk-secretsmanager-\d", binary) is not None,
            size,
        )


def store_parameters(arch: str, endpoint: str, *, cluster: bool) -> dict[str, str]:
    """The template's parameters as a team sets them for an existing store without auth
    (`endpoint`: host:port, comma-separated for a cluster's nodes), the fixtures' IAM role
    allowed on every AWS_IAM route (each principals parameter)."""
    return {
        "Architecture": arch,
        "ExistingCacheEndpoint": endpoint,
        "RedisAuth": "none",
        "RedisCluster": "true" if cluster else "false",
        **dict.fromkeys(functions.PRINCIPALS.values(), FIXTURE_ROLE),
    }
