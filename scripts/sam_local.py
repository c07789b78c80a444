#!/usr/bin/env python3
"""`make sam-local`: every function run by `sam local invoke` and `sam local start-api` through
the real template.yaml, in Docker, on a Redis and a Redis cluster this script starts.

1. Docker: a daemon that answers, or Debian's `dockerd` started here (installed by
   scripts/install-deps.sh --with-docker when missing) and stopped at the end; the Lambda base
   image `public.ecr.aws/lambda/provided:al2023-<arch>`, built from Debian packages
   (hongbao_tools/docker.py; a second run finds it by its content label and builds nothing).
2. `sam build --parameter-overrides Architecture=<this machine's>` (cargo lambda, as a team's
   `sam build` runs it) into target/sam-local/build.
3. For a standalone redis-server and a 3-master cluster, at once (both listening on the Docker
   bridge's gateway too, the cluster announcing it), with moto as EventBridge: every `events/*.json`
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

Prints PASS/FAIL per check and a table of invocations; exit status 0 only if all pass. The parts
live in scripts/hongbao_tools/sam_local/ (`sam`, `invoke`, `fixtures`, `start_api`).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from hongbao_tools.checks import Checks
from hongbao_tools.docker import DockerDaemon, ensure_base_image, lambda_arch
from hongbao_tools.procs import install_signal_handlers, run_main
from hongbao_tools.sam_local.fixtures import every_fixture_is_played, run_target
from hongbao_tools.sam_local.invoke import Invocation, OpenApi
from hongbao_tools.sam_local.sam import (
    BUILT_TEMPLATE,
    Function,
    bridge_gateway,
    read_template,
    sam_build,
    sdk_only_where_asked,
)
from hongbao_tools.sam_local.start_api import run_start_api


def play_stores(
    labels: list[str],
    functions: dict[str, Function],
    gateway: str,
    arch: str,
    openapi: OpenApi,
    c: Checks,
) -> list[Invocation]:
    """Every fixture on each store of `labels`, the stores at once: an invocation mostly waits
    for Docker to start its container (on 2 cores `make sam-local` took 132 s so, 218 s with
    one store after the other). Each store's checks are held and printed after it, in order."""

    def play(label: str) -> tuple[Checks, list[Invocation]]:
        held = Checks(held=True)
        table: list[Invocation] = []
        held.guard(
            f"[{label}] ran without an exception",
            lambda: table.extend(run_target(label, functions, gateway, arch, openapi, held)),
        )
        return held, table

    with ThreadPoolExecutor(max_workers=len(labels) or 1) as pool:
        played = list(pool.map(play, labels))
    table: list[Invocation] = []
    for held, invocations in played:
        c.merge(held)
        table += invocations
    return table


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
        sdk_only_where_asked(c)
        functions = read_template(BUILT_TEMPLATE)
        gateway = bridge_gateway()
        openapi = OpenApi()
        labels = [x for x in ("standalone", "cluster") if args.only in (None, x)]
        table += play_stores(labels, functions, gateway, arch, openapi, c)
        if args.only in (None, "start-api"):
            c.guard(
                "[start-api] ran without an exception",
                lambda: run_start_api(functions, gateway, arch, c),
            )
    print("\ninvocations (sam local invoke, each a new container):")
    for inv in table:
        print(f"  {inv.fixture:<34} {inv.function:<24} {inv.status!s:>4}  {inv.seconds:5.1f} s")
    if table:
        secs = sorted(i.seconds for i in table)
        print(f"  {len(table)} invocations, median {secs[len(secs) // 2]:.1f} s")
    return c.summary(t0)


if __name__ == "__main__":
    run_main(main, "interrupted")
