#!/usr/bin/env python3
"""End-to-end tests of the hongbao functions through the real Lambda runtime path.

The functions' bootstraps (the local ones, target/local/<name>, `make local`; with
HONGBAO_BOOTSTRAPS=release the shipped target/lambda/<name>/bootstrap) run under the AWS Lambda
Runtime Interface Emulator (what `sam local invoke` runs inside its container), one RIE process per
sandbox, against a private redis-server on a free port. The script:

1. invokes every events/ fixture and checks status codes and bodies against the contract
   (red packets, wallets, deposits and withdrawals; order codes: next-order-code-*.json;
   voting: vote-*.json; coupon drops: coupon-*.json, a campaign of uploaded codes from its
   creation to its redemptions, one of generated codes, and the caller's coupons; chat
   packets: create-packet-password.json, grab-grab-password.json, create-packet-cancel.json,
   a scheduled packet; draws: create-packet-draw.json, coupon-create-draw-campaign.json,
   entered, drawn and checked from the views);
   then checks that a function reads only its own settings (a broken HONGBAO_VOTE_SITE fails
   the vote function's Init, naming the variable, while grab answers; so does a broken
   HONGBAO_COUPON_VISIT_WINDOW_MS the coupon function's);
2. grabs one 100-share packet with 1,000 distinct users from 32 client threads over 8 grab
   sandboxes: exactly 100 winners, 900 `sold_out`, amounts summing to the total;
3. lets a short-lived packet expire and checks reclaim-cron refunds total - claimed;
4. checks money conservation over every wallet in Redis;
5. prints cold start (RIE INIT REPORT) and warm latency (client side and RIE `Duration`)
   per function;
6. writes the grab storm of step 2 (every invocation's latency, client side and RIE
   `Duration`) to target/bench/e2e_grabs.json, which `make bench` draws as a latency
   distribution (scripts/bench_report.py).

With --grab-storm-only it runs step 2 alone (after cold-starting the create-packet, wallet and
grab sandboxes and depositing the packet's money) and writes the same file: what `make bench`
runs, in a few seconds.

It builds nothing: `make e2e` runs `make local` first (`make release` for the shipped
bootstraps). Prints PASS/FAIL per check; exit code 0 only if all pass.

The sections live in scripts/hongbao_tools/e2e/, one module per feature (`packets`, `wallet`,
`chat_packets`, `draws`, `order_codes`, `voting`, `coupons`, `concurrency`, `expiry`, `runtime`,
`latency`).

    .venv/bin/python scripts/e2e_rie.py [--grab-sandboxes 8] [--grabbers 1000] [--threads 32]
                                        [--grab-storm-only]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hongbao_tools import events
from hongbao_tools.bench.run import write_json
from hongbao_tools.checks import Checks
from hongbao_tools.deps import BUILD_COMMAND, FUNCTIONS, find_rie, missing_binaries
from hongbao_tools.e2e import (
    chat_packets,
    concurrency,
    coupons,
    draws,
    expiry,
    latency,
    merchants,
    order_codes,
    packets,
    runtime,
    voting,
    window,
)
from hongbao_tools.e2e.common import State
from hongbao_tools.paths import ROOT
from hongbao_tools.procs import install_signal_handlers, run_main
from hongbao_tools.rie import LocalStack

# What the grab storm alone needs: the packet's sender funded (wallet), the packet (create-packet)
# and the grabs.
STORM_FUNCTIONS = ("create-packet", "wallet", "grab")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--grab-sandboxes", type=int, default=8)
    ap.add_argument("--claim-sandboxes", type=int, default=2)
    ap.add_argument("--grabbers", type=int, default=1000)
    ap.add_argument("--shares", type=int, default=100)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--latency-invocations", type=int, default=200)
    ap.add_argument(
        "--log-dir", type=Path, help="write every sandbox's output to DIR/<sandbox>.log"
    )
    ap.add_argument(
        "--grab-storm-only",
        action="store_true",
        help="only the grab storm (step 2) and its target/bench/e2e_grabs.json (make bench)",
    )
    ap.add_argument(
        "--window-storm",
        type=int,
        metavar="CROWD",
        help="only a crowd of CROWD users against a first-come packet within 1 s and a draw "
        "packet over a 60 s entry window, and its target/bench/window_storm.json (make bench)",
    )
    args = ap.parse_args()
    install_signal_handlers()
    t0 = time.perf_counter()
    c = Checks()
    only_storm = args.grab_storm_only or args.window_storm is not None
    functions = STORM_FUNCTIONS if only_storm else FUNCTIONS
    missing = missing_binaries(functions)
    if missing:
        c.check(
            "release binaries exist",
            False,
            "missing: "
            + ", ".join(map(str, missing))
            + f"\n      build them: cd {ROOT} && {BUILD_COMMAND}",
        )
        return 1
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    s = State()
    stack = LocalStack(
        pools={"grab": args.grab_sandboxes, "claim": args.claim_sandboxes},
        functions=functions,
        log_dir=args.log_dir,
    )
    try:
        stack.start()
        print(
            f"redis-server {stack.redis.url}; RIE {find_rie()}; sandboxes: "
            + ", ".join(f"{f} x{len(p)}" for f, p in stack.pools.items())
        )
        storm = (
            "concurrency",
            lambda: concurrency.concurrency(stack, c, s, args.grabbers, args.shares, args.threads),
        )
        sections = (
            ("cold starts", lambda: latency.cold_starts(stack, c, s)),
            ("fixtures", lambda: packets.fixtures(stack, c, s)),
            ("chat packets", lambda: chat_packets.chat_packets(stack, c, s)),
            ("draws", lambda: draws.draws(stack, c, s)),
            ("order codes", lambda: order_codes.order_codes(stack, c, s)),
            ("voting", lambda: voting.voting(stack, c, s)),
            ("coupons", lambda: coupons.coupons(stack, c, s)),
            ("merchants", lambda: merchants.merchants(stack, c, s)),
            ("settings", lambda: runtime.settings_per_function(stack, c, s)),
            ("credentials", lambda: runtime.no_credentials_in_logs(stack, c, s)),
            ("password secret", lambda: runtime.password_secret(stack, c, s)),
            storm,
            ("expiry", lambda: expiry.expiry(stack, c, s)),
            ("metrics", lambda: runtime.metrics(stack, c, s)),
            ("latency", lambda: latency.latency(stack, c, s, args.latency_invocations)),
            ("redis users", lambda: runtime.redis_users(stack, c, s)),
            ("conservation", lambda: runtime.conservation(stack, c, s)),
        )
        if args.grab_storm_only:
            sections = (
                ("cold starts", lambda: latency.cold_starts(stack, c, s)),
                ("storm funds", lambda: fund_storm(stack, c, args.shares)),
                storm,
            )
        if args.window_storm is not None:
            sections = (
                ("cold starts", lambda: latency.cold_starts(stack, c, s)),
                (
                    "window storm",
                    lambda: window.window_storm(stack, c, s, args.window_storm, 60, 256),
                ),
            )
        for name, fn in sections:
            c.guard(f"{name} section ran without an exception", fn)
        if not only_storm:
            latency.print_table(stack, s, args.latency_invocations)
    finally:
        stack.close()
    if s.grab_storm is not None:
        print(f"grab storm latencies: {write_json('e2e_grabs', s.grab_storm)}")
    if s.window_storm is not None:
        print(f"first come vs a draw window: {write_json('window_storm', s.window_storm)}")
    return c.summary(t0)


def fund_storm(stack: LocalStack, c: Checks, shares: int) -> None:
    """Deposits the storm's packet (100 cents a share) into alice's wallet: the full run's
    wallet fixtures do it before the storm otherwise."""
    c.section("funds for the grab storm")
    r = stack.invoke("wallet", events.deposit_event("alice", 100 * shares, "grab-storm"))
    c.status(f"deposit of {100 * shares} cents for alice", r, 201)


if __name__ == "__main__":
    run_main(main, "interrupted: sandboxes and redis-server stopped")
