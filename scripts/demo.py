#!/usr/bin/env python3
"""The hongbao demo: a red-packet scenario played through the Lambda runtime path.

Starts its own redis-server (free loopback port) and the functions' bootstraps (`make local`;
HONGBAO_BOOTSTRAPS=release for the shipped ones, `make release`) under the
AWS Lambda Runtime Interface Emulator (one RIE process per sandbox; several grab and claim
sandboxes), then, only through Lambda invocations with API Gateway v2 / EventBridge events:

  deposit 200.00 to alice -> alice sends a 100-share lucky packet of 100.00 (double_mean) and a
  fixed packet of 10 x 1.00 -> 1,000 people grab concurrently (some also grab the fixed one) ->
  the winners claim, except about a fifth -> the packets expire -> reclaim-cron refunds ->
  alice's sent history and a winner's received history and yearly summaries ->
  a coupon drop: a merchant's campaign of 100 codes, the same 1,000 people racing for them (some
  pressing twice), a few coupons redeemed at checkout, the campaign closed by reclaim-cron after
  its end -> chat packets -> a merchant's budget paying 20 orders' packets shared to groups,
  the seed's own test (100 grabbers, 5 shares), claims, expiry refunding the merchant ->

and prints a report: winners and losers, a histogram of the amounts, best luck, claimed and
refunded totals per packet, every wallet touched, the money-conservation check, and the drop's
counts. Exits 1 if any invariant fails. `make demo` builds the binaries and runs this.

The steps live in scripts/hongbao_tools/demo/, one module per feature (`packets`, `history`,
`coupons`, `chat_packets`, `merchant_packets`, `ledger`).

    .venv/bin/python scripts/demo.py [--grabbers 1000] [--sandboxes 8] [--keep-redis]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from hongbao_tools.checks import Checks
from hongbao_tools.demo.packets import play
from hongbao_tools.deps import BUILD_COMMAND, LEDGER_EXPORT, PACKET_FUNCTIONS, missing_binaries
from hongbao_tools.paths import ROOT
from hongbao_tools.procs import install_signal_handlers, run_main
from hongbao_tools.report import Phases
from hongbao_tools.rie import LocalStack


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--grabbers", type=int, default=1000, help="people grabbing the lucky packet (1000)"
    )
    ap.add_argument("--sandboxes", type=int, default=8, help="grab sandboxes (RIE processes) (8)")
    ap.add_argument("--claim-sandboxes", type=int, default=4, help="claim sandboxes (4)")
    ap.add_argument("--threads", type=int, default=32, help="concurrent client threads (32)")
    ap.add_argument(
        "--fixed-grabbers",
        type=int,
        default=30,
        help="how many of the grabbers also go for the fixed packet (30)",
    )
    ap.add_argument("--expires-in", type=int, default=6, help="expires_in_secs of both packets (6)")
    ap.add_argument(
        "--no-claim", type=float, default=0.2, help="fraction of winners who never claim (0.2)"
    )
    ap.add_argument(
        "--drop-secs", type=float, default=10, help="seconds the coupon drop stays open (10)"
    )
    ap.add_argument("--coupon-sandboxes", type=int, default=4, help="coupon sandboxes (4)")
    ap.add_argument("--seed", type=int, help="seed of the choice of grabbers/non-claimers")
    ap.add_argument(
        "--keep-redis",
        action="store_true",
        help="leave the redis-server running after the demo (prints its URL)",
    )
    ap.add_argument(
        "--log-dir", type=Path, help="write every sandbox's output to DIR/<sandbox>.log"
    )
    args = ap.parse_args()
    if args.grabbers < 1 or args.sandboxes < 1 or args.claim_sandboxes < 1:
        ap.error("--grabbers, --sandboxes and --claim-sandboxes must be >= 1")
    install_signal_handlers()
    missing = missing_binaries((*PACKET_FUNCTIONS, "coupon", "merchant", LEDGER_EXPORT))
    if missing:
        print("missing bootstraps: " + ", ".join(map(str, missing)), file=sys.stderr)
        print(f"build them first: cd {ROOT} && {BUILD_COMMAND}   (or: make demo)", file=sys.stderr)
        return 2
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    inv = Checks(print_passes=False)
    ph = Phases()
    stack = LocalStack(
        pools={
            "grab": args.sandboxes,
            "claim": args.claim_sandboxes,
            "coupon": args.coupon_sandboxes,
        },
        functions=(*PACKET_FUNCTIONS, "coupon", "merchant"),
        log_dir=args.log_dir,
    )
    try:
        ph.run(
            "start redis-server and RIE sandboxes",
            stack.start,
            lambda _: f"{sum(len(p) for p in stack.pools.values())} sandboxes, {stack.redis.url}",
        )
        code = play(stack, args, rng, inv, ph)
        if args.keep_redis:
            stack.redis.detach()
            print(
                f"\nredis-server left running: {stack.redis.url} (pid {stack.redis.proc.pid}, "
                f"dir {stack.redis.dir}); stop it with: kill {stack.redis.proc.pid}"
            )
    finally:
        stack.close()
    ph.print(f"(seed {seed})")
    print(f"\nInvariants: {inv.passed} of {len(inv.results)} hold")
    inv.print_failed(details=True)
    if not inv.failed and code == 0:
        print("ALL INVARIANTS HOLD")
        return 0
    return 1


if __name__ == "__main__":
    run_main(main, "interrupted: sandboxes and redis-server stopped")
