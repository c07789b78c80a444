#!/usr/bin/env python3
"""The hongbao demo: a red-packet scenario played through the Lambda runtime path.

Starts its own redis-server (free loopback port) and the release `bootstrap` binaries under the
AWS Lambda Runtime Interface Emulator (one RIE process per sandbox; several grab and claim
sandboxes), then, only through Lambda invocations with API Gateway v2 / EventBridge events:

  deposit 200.00 to alice -> alice sends a 100-share lucky packet of 100.00 (double_mean) and a
  fixed packet of 10 x 1.00 -> 1,000 people grab concurrently (some also grab the fixed one) ->
  the winners claim, except about a fifth -> the packets expire -> reclaim-cron refunds ->
  alice's sent history and a winner's received history and yearly summaries ->
  a coupon drop: a merchant's campaign of 100 codes, the same 1,000 people racing for them (some
  pressing twice), a few coupons redeemed at checkout, the campaign closed by reclaim-cron after
  its end ->

and prints a report: winners and losers, a histogram of the amounts, best luck, claimed and
refunded totals per packet, every wallet touched, the money-conservation check, and the drop's
counts. Exits 1 if any invariant fails. `make demo` builds the binaries and runs this.

    .venv/bin/python scripts/demo.py [--grabbers 1000] [--sandboxes 8] [--keep-redis]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from hongbao_tools import events
from hongbao_tools.checks import Checks, MoneyAudit, check_conservation, claimed_cents
from hongbao_tools.deps import BUILD_COMMAND, LEDGER_EXPORT, PACKET_FUNCTIONS, missing_binaries
from hongbao_tools.moto import LedgerFeed, MotoServer
from hongbao_tools.paths import ROOT
from hongbao_tools.procs import install_signal_handlers
from hongbao_tools.report import Phases, histogram, parse_rfc3339, percentile
from hongbao_tools.report import cents as money
from hongbao_tools.rie import LocalStack, Sandbox

SENDER = "alice"
DEPOSIT_CENTS = 20_000
LUCKY_TOTAL, LUCKY_COUNT = 10_000, 100
FIXED_TOTAL, FIXED_COUNT = 1_000, 10
GREETING = "恭喜发财，红包拿来"
DROP_CODES = 100
DROP_REDEEMED = 5


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
    missing = missing_binaries((*PACKET_FUNCTIONS, "coupon", LEDGER_EXPORT))
    if missing:
        print("missing release binaries: " + ", ".join(map(str, missing)), file=sys.stderr)
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
        functions=(*PACKET_FUNCTIONS, "coupon"),
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


def play(stack: LocalStack, args, rng: random.Random, inv: Checks, ph: Phases) -> int:
    grab_pool, claim_pool = stack["grab"], stack["claim"]

    # Cold start every sandbox with a request that moves no money.
    def cold():
        stack["wallet"].each(lambda sb: events.wallet_event("warmup"))
        stack["create-packet"].each(
            lambda sb: events.create_event("warmup", 100, 1)
        )  # 402, no money
        grab_pool.each(lambda sb: events.view_event(events.NO_SUCH_PACKET, "warmup"))
        claim_pool.each(lambda sb: events.claim_event(events.NO_SUCH_PACKET, "warmup"))
        r = stack["reclaim-cron"].each(lambda sb: events.scheduled_event())
        inv.check(
            "reclaim-cron on an empty store settles nothing",
            r[0].get("settled") == 0,
            str(dict(r[0])),
        )
        for p in stack.pools.values():
            p.wait_reports()
        return sorted(c for p in stack.pools.values() for c in p.cold_starts_ms())

    colds = ph.run(
        "cold-start every sandbox",
        cold,
        lambda c: (
            f"init (RIE INIT REPORT) median {percentile(c, 50):.1f} ms, "
            f"max {max(c):.1f} ms over {len(c)} sandboxes"
            if c
            else ""
        ),
    )

    # Deposit.
    def deposit():
        r = stack.invoke("wallet", events.deposit_event(SENDER, DEPOSIT_CENTS, "demo-topup-1"))
        inv.check(
            "deposit of 200.00 to alice -> 201, balance 200.00",
            r.status == 201 and r["body"]["balance_cents"] == DEPOSIT_CENTS,
            str(r["body"]),
        )
        return r

    ph.run("deposit 200.00 to alice (AWS_IAM)", deposit)
    deposits = DEPOSIT_CENTS

    # Create the packets.
    def create():
        lucky = stack.invoke(
            "create-packet",
            events.create_event(
                SENDER,
                LUCKY_TOTAL,
                LUCKY_COUNT,
                "lucky",
                split="double_mean",
                expires_in_secs=args.expires_in,
                greeting=GREETING,
                idempotency_key="demo-lucky-1",
            ),
        )
        fixed = stack.invoke(
            "create-packet",
            events.create_event(
                SENDER,
                FIXED_TOTAL,
                FIXED_COUNT,
                "fixed",
                expires_in_secs=args.expires_in,
                idempotency_key="demo-fixed-1",
            ),
        )
        for name, r in (("lucky", lucky), ("fixed", fixed)):
            if not inv.check(f"create {name} packet -> 201", r.status == 201, str(r["body"])):
                raise SystemExit(1)
        bal = stack.invoke("wallet", events.wallet_event(SENDER))["body"]["balance_cents"]
        inv.check(
            "alice paid 110.00 for the two packets",
            bal == DEPOSIT_CENTS - LUCKY_TOTAL - FIXED_TOTAL,
            f"balance {bal}",
        )
        return lucky["body"], fixed["body"]

    lucky, fixed = ph.run(
        "create a lucky 100 x ~1.00 and a fixed 10 x 1.00 packet",
        create,
        lambda r: f"lucky {r[0]['packet_id']}, fixed {r[1]['packet_id']}",
    )
    packets = {"lucky": lucky, "fixed": fixed}

    # 1,000 concurrent grabbers (and some of them on the fixed packet too).
    users = [f"user{i:04d}" for i in range(1, args.grabbers + 1)]
    fixed_users = rng.sample(users, min(args.fixed_grabbers, len(users)))
    jobs = [("lucky", u) for u in users] + [("fixed", u) for u in fixed_users]
    rng.shuffle(jobs)
    grab_events = [events.grab_event(packets[k]["packet_id"], u) for k, u in jobs]

    def grab_all():
        return grab_pool.map(grab_events, threads=args.threads)

    before = grab_pool.invocations()
    t = time.perf_counter()
    results = ph.run(
        f"{len(jobs)} concurrent grabs ({args.threads} threads, {len(grab_pool)} sandboxes)",
        grab_all,
    )
    grab_secs = time.perf_counter() - t
    served = [a - b for a, b in zip(grab_pool.invocations(), before, strict=True)]
    lat = [r.client_ms for r in results]
    ph.set_note(
        f"{len(jobs) / grab_secs:.0f} invocations/s, p50 {percentile(lat, 50):.1f} ms, "
        f"p99 {percentile(lat, 99):.1f} ms; per sandbox {served}"
    )
    shares: dict[str, dict[str, dict]] = {"lucky": {}, "fixed": {}}  # packet -> user -> share
    outcomes: dict[str, Counter] = {"lucky": Counter(), "fixed": Counter()}
    for (k, u), r in zip(jobs, results, strict=True):
        code = r.status if r.status == 200 else f"{r.status} {r['body'].get('error')}"
        outcomes[k][code] += 1
        if r.status == 200:
            shares[k][u] = r["body"]
    for k, total, count, asked in (
        ("lucky", LUCKY_TOTAL, LUCKY_COUNT, len(users)),
        ("fixed", FIXED_TOTAL, FIXED_COUNT, len(fixed_users)),
    ):
        won = min(count, asked)
        got = shares[k]
        inv.check(f"{k}: exactly {won} winners", len(got) == won, str(dict(outcomes[k])))
        inv.check(
            f"{k}: the other {asked - won} got 410 sold_out",
            outcomes[k]["410 sold_out"] == asked - won and sum(outcomes[k].values()) == asked,
            str(dict(outcomes[k])),
        )
        amounts = [s["amount_cents"] for s in got.values()]
        inv.check(
            f"{k}: share ids are 1..{won}, every share >= 0.01",
            sorted(s["share_id"] for s in got.values()) == list(range(1, won + 1))
            and all(a >= 1 for a in amounts),
        )
        if won == count:
            inv.check(
                f"{k}: the shares sum to the total {money(total)}",
                sum(amounts) == total,
                f"sum {sum(amounts)}",
            )
        if k == "fixed":
            inv.check(
                "fixed: every share is 1.00", all(a == FIXED_TOTAL // FIXED_COUNT for a in amounts)
            )
    inv.check(f"every grab sandbox served invocations ({served})", all(n > 0 for n in served))

    # Winners claim, except about a fifth.
    winners = sorted({u for k in shares for u in shares[k]})
    skip_n = round(len(winners) * args.no_claim)
    no_claim = set(rng.sample(winners, skip_n))
    claim_jobs = [(k, u) for k in shares for u in sorted(shares[k]) if u not in no_claim]
    rng.shuffle(claim_jobs)
    claim_events = [events.claim_event(packets[k]["packet_id"], u) for k, u in claim_jobs]
    claims = ph.run(
        f"{len(claim_jobs)} claims, {len(claim_pool)} sandboxes "
        f"({len(no_claim)} of {len(winners)} winners never claim)",
        lambda: claim_pool.map(claim_events, threads=min(args.threads, 16)),
    )
    claimed: dict[str, dict[str, int]] = {"lucky": {}, "fixed": {}}
    too_late = 0
    bad = []
    for (k, u), r in zip(claim_jobs, claims, strict=True):
        if (
            r.status == 200
            and r["body"]["repeat"] is False
            and r["body"]["amount_cents"] == shares[k][u]["amount_cents"]
        ):
            claimed[k][u] = r["body"]["amount_cents"]
        elif r.status == 410 and r["body"].get("error") == "expired":
            too_late += 1  # the machine was slower than --expires-in: the money goes back to alice
        else:
            bad.append((k, u, r.status, r["body"]))
    inv.check("every claim -> 200 with the grabbed amount, repeat false", not bad, str(bad[:3]))
    if too_late:
        print(
            f"  note: {too_late} claims came after expires_at"
            " (raise --expires-in on a slow machine)"
        )

    # Checkpoint: conservation while the packets still hold money.
    def audit(label: str) -> MoneyAudit:
        ids = {k: p["packet_id"] for k, p in packets.items()}
        return check_conservation(
            stack, inv, label, deposits, ids, users=[SENDER, *winners], viewer=SENDER
        )

    ph.run("audit checkpoint (before expiry)", lambda: audit("before expiry"))

    # Let the packets expire.
    deadline = max(parse_rfc3339(p["expires_at"]) for p in packets.values())

    def expire():
        wait = deadline - time.time() + 0.3
        if wait > 0:
            time.sleep(wait)
        late = sorted(no_claim)[:1]
        for u in late:
            k = "lucky" if u in shares["lucky"] else "fixed"
            r = stack.invoke("claim", events.claim_event(packets[k]["packet_id"], u))
            inv.check(
                f"a late claim by {u} after expires_at -> 410 expired",
                r.status == 410 and r["body"].get("error") == "expired",
                str(r["body"]),
            )
        r = stack.invoke("grab", events.grab_event(lucky["packet_id"], "latecomer"))
        inv.check(
            "a grab after expires_at -> 410 expired",
            r.status == 410 and r["body"].get("error") == "expired",
            str(r["body"]),
        )
        return wait

    ph.run(
        f"wait for expires_at (expires_in_secs {args.expires_in})",
        expire,
        lambda w: f"slept {max(w, 0):.1f} s",
    )

    # reclaim-cron.
    expected_refund = {k: p["total_cents"] - sum(claimed[k].values()) for k, p in packets.items()}
    summaries = []

    def reclaim():
        r = stack.invoke("reclaim-cron", events.scheduled_event())
        summaries.append(dict(r))
        r2 = stack.invoke("reclaim-cron", events.scheduled_event())
        summaries.append(dict(r2))
        inv.check(
            "reclaim-cron settles both packets and refunds total - claimed",
            r.get("settled") == 2
            and r.get("refunded_cents") == sum(expected_refund.values())
            and r.get("remaining_due") == 0,
            f"{dict(r)} expected refund {sum(expected_refund.values())}",
        )
        inv.check(
            "a second reclaim-cron run finds nothing to do",
            r2.get("settled") == 0 and r2.get("refunded_cents") == 0,
            str(dict(r2)),
        )
        return r

    ph.run("reclaim-cron (EventBridge scheduled event)", reclaim, lambda r: str(dict(r)))
    final = ph.run("final audit", lambda: audit("after reclaim"))
    views, held, walls, redis_n = final.views, final.held, final.wallets, final.redis_wallets

    # Per-packet and per-wallet invariants.
    for k, v in views.items():
        c = claimed_cents(v)
        inv.check(
            f"{k}: settled, claimed + refunded = total, nothing held",
            v["status"] == "settled"
            and c + v["refunded_cents"] == v["total_cents"]
            and held[k] == 0,
            f"status {v['status']} claimed {c} refunded {v['refunded_cents']} "
            f"total {v['total_cents']}",
        )
        inv.check(
            f"{k}: refunded = total - claimed as claimed by the claim calls",
            v["refunded_cents"] == expected_refund[k],
            f"{v['refunded_cents']} != {expected_refund[k]}",
        )
    lucky_amounts = [s["amount_cents"] for s in shares["lucky"].values()]
    best = views["lucky"].get("best_luck")
    if len(shares["lucky"]) == LUCKY_COUNT:
        top = max(lucky_amounts)
        first = min(
            (s["share_id"], u) for u, s in shares["lucky"].items() if s["amount_cents"] == top
        )[1]
        inv.check(
            "best luck (GET /packets/{id}) = the largest share, earliest on ties",
            best == {"user_id": first, "amount_cents": top},
            f"{best} vs {first} {top}",
        )
    credited = defaultdict(int)
    for k in claimed:
        for u, a in claimed[k].items():
            credited[u] += a
    wrong = [u for u in winners if walls[u]["balance_cents"] != credited.get(u, 0)]
    inv.check(
        "every grabber's balance = what they claimed (0 for those who didn't)",
        not wrong,
        str(wrong[:5]),
    )
    alice_expected = DEPOSIT_CENTS - LUCKY_TOTAL - FIXED_TOTAL + sum(expected_refund.values())
    inv.check(
        "alice = 200.00 - 110.00 + refunds",
        walls[SENDER]["balance_cents"] == alice_expected,
        f"{walls[SENDER]['balance_cents']} != {alice_expected}",
    )
    hist = ph.run(
        "history: the sender's and a winner's lists and yearly summary",
        lambda: history(stack, inv, packets, views, claimed, walls),
    )
    dropped = ph.run(
        f"coupon drop: {DROP_CODES} codes, {len(users)} people racing",
        lambda: drop(stack, args, rng, inv, users),
        lambda d: f"campaign {d['campaign_id']}: {d['outcomes']}",
    )
    chats = ph.run(
        "chat packets: a password packet, a scheduled one, one cancelled; every receipt checked",
        lambda: chat(stack, inv),
        lambda c: (
            f"{len(c['receipts'])} receipts verified, cancel refunded {money(c['cancel_refund'])}"
        ),
    )
    errors = sum(sb.error_lines for sb in stack.all_sandboxes())
    inv.check("no ERROR log line in any sandbox", errors == 0, f"{errors} lines")
    inv.check("every sandbox still running", all(sb.alive() for sb in stack.all_sandboxes()))
    feed = ph.run(
        "ledger-export (EventBridge scheduled event) -> EventBridge (moto) -> SQS",
        lambda: ledger(stack, inv),
        lambda f: f"{f['events']} events, {f['distinct']} distinct",
    )

    report(
        args,
        packets,
        outcomes,
        shares,
        claimed,
        no_claim,
        views,
        walls,
        summaries,
        colds,
        deposits,
        held,
        redis_n,
        grab_pool,
        served,
        too_late,
    )
    report_history(hist)
    report_drop(dropped)
    report_chat(chats)
    report_ledger(feed)
    return 0


def receipt_holds(view, my_share_id, my_cents):  # view: the JSON of GET /packets/{id}
    salt, shares = view["reveal"]["salt"], view["reveal"]["shares_cents"]
    digest = hashlib.sha256(
        f"hongbao-shares-v1:{salt}:{','.join(map(str, shares))}".encode()
    ).hexdigest()
    return (
        digest == view["commitment"]
        and sum(shares) == view["total_cents"]
        and shares[my_share_id - 1] == my_cents
    )


def chat(stack: LocalStack, inv: Checks) -> dict:
    """Red packets as chat apps ship them, each step a Lambda invocation: a password packet
    (口令红包), a packet scheduled to open two seconds later, and one its sender cancels after
    two grabs. Every packet's fairness receipt is checked from its public view alone, with the
    README's five lines (`receipt_holds`), for every grabber's share."""
    bal0 = stack.invoke("wallet", events.wallet_event(SENDER))["body"]["balance_cents"]
    word = "芝麻开门"

    def make(total, count, **kw):
        r = stack.invoke("create-packet", events.create_event(SENDER, total, count, **kw))
        inv.check(f"create {kw} -> 201", r.status == 201, str(r["body"]))
        return r["body"]

    pw = make(300, 3, password=word, cover="lantern-2027", expires_in_secs=4)
    inv.check(
        "the password packet shows password_protected, never the password",
        pw.get("password_protected") is True and word not in str(pw),
        str(pw),
    )
    grabs = {}
    for u, guess in (("bob", None), ("bob", "芝麻关门")):
        r = stack.invoke("grab", events.grab_event(pw["packet_id"], u, guess))
        inv.check(
            f"{u} grabs the password packet with {'no' if guess is None else 'a wrong'} password "
            "-> 403 wrong_password",
            r.status == 403 and r["body"].get("error") == "wrong_password",
            str(r["body"]),
        )
    for u in ("bob", "carol", "dave"):
        r = stack.invoke("grab", events.grab_event(pw["packet_id"], u, word))
        inv.check(f"{u} types the password -> 200", r.status == 200, str(r["body"]))
        grabs.setdefault(pw["packet_id"], []).append((u, r["body"]))

    sched = make(200, 2, opens_in_secs=2, expires_in_secs=2)
    r = stack.invoke("grab", events.grab_event(sched["packet_id"], "erin"))
    retry = {k.lower(): v for k, v in (r.get("headers") or {}).items()}.get("retry-after")
    inv.check(
        "a grab before opens_at -> 425 not_open_yet (+opens_at), Retry-After 1-2 s",
        r.status == 425
        and r["body"].get("error") == "not_open_yet"
        and r["body"].get("opens_at") == sched["opens_at"]
        and retry in ("1", "2"),
        f"{r['body']} Retry-After {retry}",
    )
    cancelled = make(500, 5, expires_in_secs=4)
    for u in ("frank", "grace"):
        r = stack.invoke("grab", events.grab_event(cancelled["packet_id"], u))
        inv.check(f"{u} grabs the packet to be cancelled -> 200", r.status == 200, str(r["body"]))
        grabs.setdefault(cancelled["packet_id"], []).append((u, r["body"]))
    grabbed = sum(b["amount_cents"] for _, b in grabs[cancelled["packet_id"]])
    c1 = stack.invoke("create-packet", events.cancel_event(cancelled["packet_id"], SENDER))
    c2 = stack.invoke("create-packet", events.cancel_event(cancelled["packet_id"], SENDER))
    inv.check(
        "alice cancels -> 200 cancelled, refunding the un-grabbed shares; a repeat -> the same",
        c1.status == 200
        and c1["body"].get("refunded_cents") == 500 - grabbed
        and c2.status == 200
        and c2["body"] == c1["body"],
        f"{c1['body']} then {c2['body']}",
    )
    r = stack.invoke("create-packet", events.cancel_event(cancelled["packet_id"], "frank"))
    inv.check("someone else cancels -> 403", r.status == 403, str(r["body"]))
    r = stack.invoke("grab", events.grab_event(cancelled["packet_id"], "heidi"))
    inv.check(
        "a grab after the cancel -> 410 cancelled",
        r.status == 410 and r["body"].get("error") == "cancelled",
        str(r["body"]),
    )
    r = stack.invoke("claim", events.claim_event(cancelled["packet_id"], "frank"))
    inv.check("frank claims after the cancel -> 200", r.status == 200, str(r["body"]))
    claimed = r["body"]["amount_cents"] if r.status == 200 else 0

    time.sleep(max(0.0, parse_rfc3339(sched["opens_at"]) - time.time() + 0.2))
    for u in ("erin", "ivan"):
        r = stack.invoke("grab", events.grab_event(sched["packet_id"], u))
        inv.check(f"{u} grabs after opens_at -> 200", r.status == 200, str(r["body"]))
        grabs.setdefault(sched["packet_id"], []).append((u, r["body"]))

    receipts = []
    for packet in (pw, sched, cancelled):
        v = stack.invoke("grab", events.view_event(packet["packet_id"], SENDER))["body"]
        inv.check(
            f"{packet['packet_id']}: the view's commitment is the one given at creation",
            v.get("commitment") == packet["commitment"] and "reveal" in v,
            str(v),
        )
        for u, share in grabs.get(packet["packet_id"], []):
            ok = "reveal" in v and receipt_holds(v, share["share_id"], share["amount_cents"])
            inv.check(f"{u}'s receipt for {packet['packet_id']} holds", ok, str(v.get("reveal")))
            receipts.append((packet["packet_id"], u, ok))

    deadline = max(parse_rfc3339(p["expires_at"]) for p in (pw, sched, cancelled))
    time.sleep(max(0.0, deadline - time.time() + 0.3))
    r = stack.invoke("reclaim-cron", events.scheduled_event())
    unclaimed = sum(b["amount_cents"] for g in grabs.values() for _, b in g) - claimed
    inv.check(
        "reclaim-cron settles the three and refunds every unclaimed grabbed share",
        r.get("settled") == 3 and r.get("refunded_cents") == unclaimed,
        f"{dict(r)} expected {unclaimed}",
    )
    bal1 = stack.invoke("wallet", events.wallet_event(SENDER))["body"]["balance_cents"]
    inv.check(
        "alice paid 10.00, got the cancel's refund and every unclaimed share back",
        bal1 == bal0 - 1_000 + (500 - grabbed) + unclaimed,
        f"{bal0} -> {bal1}",
    )
    v = stack.invoke("grab", events.view_event(cancelled["packet_id"], SENDER))["body"]
    inv.check(
        "the cancelled packet, settled: refunded = total - claimed",
        v.get("status") == "settled" and v.get("refunded_cents") == 500 - claimed,
        str(v),
    )
    return {
        "receipts": receipts,
        "cancel_refund": 500 - grabbed,
        "retry_after": retry,
        "packets": {
            "password": pw["packet_id"],
            "scheduled": sched["packet_id"],
            "cancelled": cancelled["packet_id"],
        },
    }


def report_chat(c: dict) -> None:
    print("\nChat packets (password, scheduled, cancelled):")
    for name, pid in c["packets"].items():
        print(f"  {name}: {pid}")
    ok = sum(1 for *_, good in c["receipts"] if good)
    print(f"  fairness receipts verified from the public view: {ok} of {len(c['receipts'])}")
    print(f"  the cancel refunded {money(c['cancel_refund'])} at once")


def rfc3339(t: float) -> str:
    """Unix seconds as the API's RFC 3339 UTC time with milliseconds."""
    from datetime import UTC

    return (
        datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def drop(stack: LocalStack, args, rng: random.Random, inv: Checks, users: list[str]) -> dict:
    """A coupon drop through the coupon function: the merchant (AWS_IAM) creates a campaign of
    DROP_CODES uploaded codes open for --drop-secs; every demo user grabs once and a tenth of
    them twice, all at once; a few winners redeem at checkout (one order each, sent twice,
    and another order refused); once the campaign has ended reclaim-cron closes it."""
    pool = stack["coupon"]
    codes = [f"SAVE20-{i:03d}" for i in range(DROP_CODES)]
    ends = time.time() + args.drop_secs
    body = {
        "title": "20 off 100",
        "codes": codes,
        "ends_at": rfc3339(ends),
        "redeem_by": rfc3339(ends + 3600),
        "reference": "demo-drop-1",
    }
    r = stack.invoke("coupon", events.create_campaign_event(body))
    if not inv.check(
        "the merchant creates a campaign of 100 codes -> 201", r.status == 201, str(r["body"])
    ):
        raise SystemExit(1)
    cid = r["body"]["campaign_id"]
    again = stack.invoke("coupon", events.create_campaign_event(body))
    inv.check(
        "the same creation sent again -> 200, the same campaign",
        again.status == 200 and again["body"]["campaign_id"] == cid,
        str(again["body"]),
    )
    twice = set(rng.sample(users, max(1, len(users) // 10)))
    jobs = users + sorted(twice)
    rng.shuffle(jobs)
    results = pool.map([events.coupon_grab_event(cid, u) for u in jobs], threads=args.threads)
    won: dict[str, str] = {}
    outcomes: Counter = Counter()
    doubles = []
    for u, r in zip(jobs, results, strict=True):
        key = r.status if r.status == 200 else f"{r.status} {r['body'].get('error')}"
        outcomes[key] += 1
        if r.status == 200:
            if u in won:
                inv.check(f"{u} wins one code only", False, r["body"]["code"])
            won.setdefault(u, r["body"]["code"])
        elif r.status == 409:
            doubles.append((u, r["body"].get("coupons")))
    inv.check(
        f"exactly {DROP_CODES} winners, {DROP_CODES} distinct codes, all from the upload",
        len(won) == DROP_CODES
        and len(set(won.values())) == DROP_CODES
        and set(won.values()) <= set(codes),
        str(dict(outcomes)),
    )
    inv.check(
        "everyone else is told 410 sold_out, a winner pressing again 409 with their code",
        outcomes[200] + outcomes["409 already_grabbed"] + outcomes["410 sold_out"] == len(jobs)
        and all(c == [won.get(u)] for u, c in doubles),
        str(dict(outcomes)),
    )
    redeemers = sorted(won)[:DROP_REDEEMED]
    for u in redeemers:
        order = f"order-{u}"
        first = stack.invoke("coupon", events.redeem_event(won[u], u, order))
        repeat = stack.invoke("coupon", events.redeem_event(won[u], u, order))
        other = stack.invoke("coupon", events.redeem_event(won[u], u, order + "-b"))
        inv.check(
            f"{u}'s coupon redeemed once (the same order again: repeat; another: 409)",
            first.status == 200
            and first["body"]["repeat"] is False
            and repeat.status == 200
            and repeat["body"]["repeat"] is True
            and other.status == 409
            and other["body"].get("order_reference") == order,
            f"{first['body']} {repeat['body']} {other['body']}",
        )
    loser = next(u for u in users if u not in won)
    stranger = stack.invoke("coupon", events.redeem_event(won[redeemers[0]], loser, "order-x"))
    inv.check("someone else's code -> 404", stranger.status == 404, str(stranger["body"]))
    view = stack.invoke("coupon", events.campaign_event(cid, redeemers[0]))["body"]
    inv.check(
        "the campaign shows sold_out, 0 of 100 left, and the caller's code",
        view.get("status") == "sold_out"
        and view.get("codes_left") == 0
        and view.get("coupons") == [won[redeemers[0]]],
        str(view),
    )
    mine = stack.invoke("coupon", events.coupons_event(redeemers[0]))["body"]
    inv.check(
        "GET /coupons lists the redeemed coupon",
        [(i["code"], i["state"]) for i in mine.get("items", [])]
        == [(won[redeemers[0]], "redeemed")],
        str(mine),
    )
    time.sleep(max(0.0, ends - time.time()) + 0.2)
    late = stack.invoke("coupon", events.coupon_grab_event(cid, loser))
    inv.check(
        "a grab after ends_at -> 410 ended",
        late.status == 410 and late["body"].get("error") == "ended",
        str(late["body"]),
    )
    closed = dict(stack.invoke("reclaim-cron", events.scheduled_event()))
    inv.check(
        "reclaim-cron closes the ended campaign",
        closed.get("campaigns_closed") == 1 and closed.get("campaigns_failed") == 0,
        str(closed),
    )
    ended = stack.invoke("coupon", events.campaign_event(cid, loser))["body"]
    inv.check("the campaign shows ended", ended.get("status") == "ended", str(ended))
    return {
        "campaign_id": cid,
        "outcomes": dict(outcomes),
        "winners": len(won),
        "redeemed": len(redeemers),
        "never_issued": DROP_CODES - len(won),
        "closed": closed,
    }


def report_drop(d: dict) -> None:
    print("\n== coupon drop")
    print(f"  campaign {d['campaign_id']}: {DROP_CODES} uploaded codes")
    print("  grabs: " + ", ".join(f"{k}: {n}" for k, n in sorted(d["outcomes"].items(), key=str)))
    print(
        f"  issued {d['winners']}, redeemed {d['redeemed']}, never issued {d['never_issued']}; "
        f"closed by reclaim-cron: {d['closed'].get('campaigns_closed')} campaign"
    )


def ledger(stack: LocalStack, inv: Checks) -> dict:
    """Runs ledger-export under RIE against moto's EventBridge: every movement of the scenario
    reaches the feed's queue, and the events reconcile with every wallet."""
    r = stack.redis
    journals = list(r.scan_iter("hb:*:journal", type_="stream"))
    entries = sum(r.command("XLEN", k) for k in journals)
    with MotoServer() as moto:
        feed = LedgerFeed(moto, "hongbao-demo-ledger")
        env = {**moto.lambda_env(), "HONGBAO_EVENT_BUS_NAME": feed.bus_name}
        with Sandbox(LEDGER_EXPORT, env, redis_url=r.url) as sb:
            run1 = dict(sb.invoke(events.scheduled_event()))
            run2 = dict(sb.invoke(events.scheduled_event()))
            errors = sb.error_lines
        got = feed.drain()
    inv.check(
        f"ledger-export publishes all {entries} journal entries in one run, then finds none",
        run1.get("exported") == entries
        and run1.get("failed") == 0
        and run1.get("lag_ms") == 0
        and run2.get("exported") == 0,
        f"{run1} then {run2}",
    )
    left = list(r.scan_iter("hb:*:journal", type_="stream"))
    inv.check("every exported journal is deleted", not left, str(left[:3]))
    by_id = {e["detail"]["event_id"]: e for e in got}
    inv.check(
        "the queue holds one event per journal entry (distinct event ids)",
        len(by_id) == entries,
        f"{len(by_id)} distinct of {len(got)} events, {entries} entries",
    )
    kinds = Counter(e["detail-type"] for e in by_id.values())
    sums: dict[str, int] = defaultdict(int)
    for e in by_id.values():
        sums[e["detail"]["user_id"]] += e["detail"]["amount_cents"]
    gaps = {}
    for user, total in sums.items():
        balance = int(r.command("HGET", wallet_key(r, user), "balance") or 0)
        if balance != total:
            gaps[user] = balance - total
    inv.check(
        "reconciliation: every wallet's balance = the sum of its events",
        not gaps,
        str(dict(list(gaps.items())[:5])),
    )
    inv.check("no ERROR log line in the ledger-export sandbox", errors == 0, f"{errors} lines")
    return {
        "events": len(got),
        "distinct": len(by_id),
        "kinds": kinds,
        "users": len(sums),
        "gaps": gaps,
        "run": run1,
    }


def wallet_key(r, user: str) -> str:
    """The wallet hash of `user` (store::keys: `hb:{<tag>}:wallet:<user, percent-encoded>`)."""
    import hashlib

    kept = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    part = "".join(chr(b) if b in kept else f"%{b:02X}" for b in user.encode())
    tag = hashlib.sha1(user.encode()).hexdigest()[:4]
    return f"hb:{{{tag}}}:wallet:{part}"


def report_ledger(f: dict) -> None:
    print("\n== ledger feed (ledger-export -> EventBridge -> SQS)")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(f["kinds"].items()))
    print(f"  events on the queue: {f['events']} ({f['distinct']} distinct): {kinds}")
    print(
        f"  reconciliation: {f['users']} users, balance = sum of their events for "
        f"{f['users'] - len(f['gaps'])} of them"
        + (f"; gaps {f['gaps']}" if f["gaps"] else " (no gap)")
    )


def history_pages(stack: LocalStack, user: str, role: str, limit: int) -> tuple[list[dict], int]:
    """Every item of `user`'s `role` list through `GET /packets`, `limit` per page:
    (items, pages)."""
    items, cursor, pages = [], None, 0
    while True:
        query = {"role": role, "limit": str(limit)} | ({"cursor": cursor} if cursor else {})
        r = stack.invoke("grab", events.http_event("grab-history", sub=user, query=query))
        if r.status != 200:
            raise SystemExit(f"GET /packets?{query} as {user} -> {r.status} {r['body']}")
        items += r["body"]["items"]
        pages += 1
        cursor = r["body"]["next_cursor"]
        if cursor is None:
            return items, pages


def history(stack: LocalStack, inv: Checks, packets, views, claimed, walls) -> dict:
    """Alice's sent list and a winner's received list (paged one item at a time), and
    their yearly summaries, checked against the packets and wallets."""
    year = datetime.fromtimestamp(
        parse_rfc3339(packets["lucky"]["created_at"]), ZoneInfo("Asia/Shanghai")
    ).year
    sent, _ = history_pages(stack, SENDER, "sent", 20)
    want = [packets["fixed"]["packet_id"], packets["lucky"]["packet_id"]]
    inv.check(
        "alice's sent history: the fixed then the lucky packet (newest first)",
        [i["packet_id"] for i in sent] == want,
        str(sent)[:300],
    )
    by_id = {p["packet_id"]: k for k, p in packets.items()}
    inv.check(
        "alice's sent items carry totals and the refunds reclaim-cron made",
        all(
            i["total_cents"] == packets[by_id[i["packet_id"]]]["total_cents"]
            and i.get("refunded_cents") == views[by_id[i["packet_id"]]]["refunded_cents"]
            for i in sent
        ),
        str(sent)[:300],
    )
    paid = {
        u: w["balance_cents"] for u, w in walls.items() if u != SENDER and w["balance_cents"] > 0
    }
    winner = max(paid, key=lambda u: (sum(u in claimed[k] for k in claimed), paid[u], u))
    received, pages = history_pages(stack, winner, "received", 1)
    inv.check(
        f"{winner}'s received history (1 item per page, {pages} pages): one item per claimed share",
        sorted((i["packet_id"], i["amount_cents"]) for i in received)
        == sorted(
            (packets[k]["packet_id"], claimed[k][winner]) for k in claimed if winner in claimed[k]
        )
        and all(i["sender_id"] == SENDER for i in received),
        str(received)[:300],
    )

    def summary(user: str) -> dict:
        r = stack.invoke(
            "grab", events.http_event("grab-summary", sub=user, query={"year": str(year)})
        )
        return r["body"] if r.status == 200 else {"status": r.status, **r["body"]}

    sums = {SENDER: summary(SENDER), winner: summary(winner)}
    inv.check(
        f"alice's {year} summary: sent 2 packets, {money(LUCKY_TOTAL + FIXED_TOTAL)}",
        sums[SENDER].get("sent") == {"count": 2, "total_cents": LUCKY_TOTAL + FIXED_TOTAL}
        and sums[SENDER].get("received") == {"count": 0, "total_cents": 0},
        str(sums[SENDER]),
    )
    inv.check(
        f"{winner}'s {year} summary: received = the items = the wallet balance",
        sums[winner].get("received")
        == {"count": len(received), "total_cents": sum(i["amount_cents"] for i in received)}
        and sums[winner]["received"]["total_cents"] == walls[winner]["balance_cents"],
        str(sums[winner]),
    )
    return {
        "year": year,
        "sent": sent,
        "winner": winner,
        "received": received,
        "pages": pages,
        "summaries": sums,
    }


def report_history(h: dict) -> None:
    print(f"\nHistory (GET /packets, GET /packets/summary?year={h['year']}):")
    print("  alice, role=sent (newest first):")
    for i in h["sent"]:
        print(
            f"    {i['packet_id']}  {i['mode']:<6}{money(i['total_cents']):>8} "
            f"in {i['count']:>3} shares, "
            f"refunded {money(i.get('refunded_cents', 0)):>7}  created {i['created_at']}"
        )
    print(f"  {h['winner']}, role=received ({h['pages']} pages of 1, following next_cursor):")
    for i in h["received"]:
        print(
            f"    {i['packet_id']}  share {i['share_id']:>3}{money(i['amount_cents']):>8} from "
            f"{i['sender_id']}  claimed {i['claimed_at']}"
        )
    for user, s in h["summaries"].items():
        print(
            f"  {user} in {h['year']}: "
            f"sent {s['sent']['count']} ({money(s['sent']['total_cents'])}), "
            f"received {s['received']['count']} ({money(s['received']['total_cents'])})"
        )


def report(
    args,
    packets,
    outcomes,
    shares,
    claimed,
    no_claim,
    views,
    walls,
    summaries,
    colds,
    deposits,
    held,
    redis_n,
    grab_pool,
    served,
    too_late,
) -> None:
    line = "=" * 78
    print(f"\n{line}\nhongbao demo report (every step a Lambda invocation under the RIE)\n{line}")
    lucky, fixed = packets["lucky"], packets["fixed"]
    print(f"sender alice deposited {money(deposits)} and sent:")
    print(
        f"  lucky {lucky['packet_id']}: {money(lucky['total_cents'])} in {lucky['count']} shares "
        f'({lucky["split"]}), greeting "{lucky["greeting"]}", expires_in {args.expires_in} s'
    )
    print(
        f"  fixed {fixed['packet_id']}: {money(fixed['total_cents'])} in {fixed['count']} shares "
        f"of {money(fixed['total_cents'] // fixed['count'])}"
    )

    print(
        f"\nGrabs: {len(shares['lucky']) + outcomes['lucky']['410 sold_out']} people on the "
        "lucky packet, "
        f"{sum(outcomes['fixed'].values())} of them also on the fixed one; "
        f"{len(grab_pool)} grab sandboxes served {served}"
    )
    for k in ("lucky", "fixed"):
        o = outcomes[k]
        others = {c: n for c, n in o.items() if c not in (200, "410 sold_out")}
        print(
            f"  {k}: {o[200]} winners (200), {o['410 sold_out']} losers (410 sold_out)"
            + (f", other {others}" if others else "")
        )

    amounts = [s["amount_cents"] for s in shares["lucky"].values()]
    if amounts:
        mean = sum(amounts) / len(amounts)
        print(
            f"\nLucky amounts: {len(amounts)} shares, min {money(min(amounts))}, "
            f"median {money(sorted(amounts)[len(amounts) // 2])}, mean {mean / 100:.2f}, "
            f"max {money(max(amounts))}, sum {money(sum(amounts))}"
        )
        for row in histogram(amounts):
            print(row)
    best = views["lucky"].get("best_luck")
    if best:
        print(
            f"\nBest luck (GET /packets/{{id}}): {best['user_id']} "
            f"with {money(best['amount_cents'])}"
        )
    else:
        print("\nBest luck: none (the lucky packet was not sold out)")

    print("\nPackets after reclaim-cron:")
    print(
        f"  {'packet':<7}{'status':<9}{'total':>9}{'grabbed':>9}{'claimed':>9}{'unclaimed':>10}"
        f"{'never grabbed':>14}{'refunded':>10}{'held':>7}"
    )
    for k, v in views.items():
        c = claimed_cents(v)
        unclaimed = v["grabbed_cents"] - c
        print(
            f"  {k:<7}{v['status']:<9}{money(v['total_cents']):>9}{money(v['grabbed_cents']):>9}"
            f"{money(c):>9}{money(unclaimed):>10}{money(v['total_cents'] - v['grabbed_cents']):>14}"
            f"{money(v['refunded_cents']):>10}{money(held[k]):>7}"
        )
    print(f"  reclaim-cron runs: {summaries}")

    print("\nWallets touched:")
    a = walls["alice"]
    print(f"  alice: balance {money(a['balance_cents'])}; ledger (newest first):")
    for e in a["entries"]:
        print(f"    {e['kind']:<14}{money(e['amount_cents']):>9}  {e['reference']:<26} {e['at']}")
    grabbers = {u: w for u, w in walls.items() if u != "alice"}
    paid = {u: w["balance_cents"] for u, w in grabbers.items() if w["balance_cents"] > 0}
    unclaimed_users = sorted(no_claim)
    unclaimed_cents = sum(
        shares[k][u]["amount_cents"] for k in shares for u in unclaimed_users if u in shares[k]
    )
    print(
        f"  grabbers: {len(grabbers)} winners; {len(paid)} wallets received money, "
        f"sum {money(sum(paid.values()))}; {len(unclaimed_users)} winners never claimed "
        f"(their {money(unclaimed_cents)} went back to alice)"
        + (f"; {too_late} claims were too late" if too_late else "")
    )
    print("  top 10 grabber wallets:")
    for i, (u, bal) in enumerate(sorted(paid.items(), key=lambda x: (-x[1], x[0]))[:10], 1):
        what = ", ".join(
            f"{k} {money(claimed[k][u])}" for k in ("lucky", "fixed") if u in claimed[k]
        )
        print(f"    {i:>2}. {u:<10}{money(bal):>8}   ({what})")

    wallet_sum = sum(w["balance_cents"] for w in walls.values())
    print("\nMoney conservation:")
    print(f"  deposits                      {money(deposits):>9}")
    print(f"  alice's wallet                {money(walls['alice']['balance_cents']):>9}")
    print(
        f"  grabbers' wallets             {money(wallet_sum - walls['alice']['balance_cents']):>9}"
    )
    print(f"  held by packets               {money(sum(held.values())):>9}")
    print(
        f"  wallets + held                {money(wallet_sum + sum(held.values())):>9}   "
        f"{'= deposits' if wallet_sum + sum(held.values()) == deposits else '!= deposits'}"
        f" (cross-checked against all {redis_n} wallets in Redis)"
    )
    if colds:
        print(
            f"\nCold starts (RIE INIT REPORT): median {percentile(colds, 50):.1f} ms, "
            f"max {max(colds):.1f} ms over {len(colds)} sandboxes"
        )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: sandboxes and redis-server stopped", file=sys.stderr)
        sys.exit(130)
