"""The demo's ledger feed: ledger-export under RIE against moto's EventBridge, every journal
entry on the feed's queue, reconciled with every wallet and merchant budget in Redis; its
report."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from .. import events, functions
from ..checks import Checks
from ..deps import LEDGER_EXPORT
from ..moto import LedgerFeed, MotoServer
from ..rie import LocalStack, Sandbox


def ledger(stack: LocalStack, inv: Checks) -> dict:
    """Runs ledger-export under RIE against moto's EventBridge: every movement of the scenario
    reaches the feed's queue, and the events reconcile with every wallet."""
    r = stack.redis
    journals = list(r.scan_iter("hb:*:journal", type_="stream"))
    entries = sum(r.command("XLEN", k) for k in journals)
    with MotoServer() as moto:
        feed = LedgerFeed(moto, "hongbao-demo-ledger")
        env = {**moto.lambda_env(), "HONGBAO_EVENT_BUS_NAME": feed.bus_name}
        # As its own Redis user (hongbao::store::acl), as deployed.
        env |= functions.redis_user_env(LEDGER_EXPORT)
        with Sandbox(LEDGER_EXPORT, env, redis_url=r.url) as sb:
            run1 = dict(sb.invoke(events.scheduled_event()))
            run2 = dict(sb.invoke(events.scheduled_event()))
            sb.wait_reports()
            errors = sb.error_lines
            emf = sb.emf
        got = feed.drain()
    refused = [e for e in r.command("ACL", "LOG") if "hongbao-ledger-export" in e]
    inv.check(
        "ledger-export, as its Redis user, was refused nothing", not refused, str(refused[:2])
    )
    inv.check(
        f"ledger-export publishes all {entries} journal entries in one run, then finds none",
        run1.get("exported") == entries
        and run1.get("failed") == 0
        and run1.get("lag_ms") == 0
        and run2.get("exported") == 0,
        f"{run1} then {run2}",
    )
    # An emptied journal is kept a minute with its last stream id (lua/journal_ack.lua), so the
    # next entry's id is past it.
    left = [
        k
        for k in r.scan_iter("hb:*:journal", type_="stream")
        if r.command("XLEN", k) or not 0 < r.command("PTTL", k) <= 60_000
    ]
    inv.check(
        "every exported journal is emptied and expires within a minute", not left, str(left[:3])
    )
    by_id = {e["detail"]["event_id"]: e for e in got}
    inv.check(
        "the queue holds one event per journal entry (distinct event ids)",
        len(by_id) == entries,
        f"{len(by_id)} distinct of {len(got)} events, {entries} entries",
    )
    kinds = Counter(e["detail-type"] for e in by_id.values())
    # A wallet's events carry `user_id`, a merchant budget's only `merchant_id` (a share's
    # `CouponIssued` carries both, amount 0: the user's coupon, the merchant's books).
    sums: dict[str, int] = defaultdict(int)
    budgets: dict[str, int] = defaultdict(int)
    for e in by_id.values():
        d = e["detail"]
        if "user_id" in d:
            sums[d["user_id"]] += d["amount_cents"]
        else:
            budgets[d["merchant_id"]] += d["amount_cents"]
    gaps = {}
    for user, total in sums.items():
        balance = int(r.command("HGET", account_key(user, "wallet"), "balance") or 0)
        if balance != total:
            gaps[user] = balance - total
    for merchant, total in budgets.items():
        balance = int(r.command("HGET", account_key(merchant, "merchant"), "balance") or 0)
        if balance != total:
            gaps[f"merchant {merchant}"] = balance - total
    inv.check(
        "reconciliation: every wallet's and merchant budget's balance = the sum of its events",
        not gaps,
        str(dict(list(gaps.items())[:5])),
    )
    inv.check("no ERROR log line in the ledger-export sandbox", errors == 0, f"{errors} lines")
    return {
        "events": len(got),
        "distinct": len(by_id),
        "kinds": kinds,
        "users": len(sums),
        "merchants": len(budgets),
        "gaps": gaps,
        "run": run1,
        "emf": emf,
    }


def account_key(owner: str, kind: str) -> str:
    """The wallet hash of user `owner` (`kind` "wallet") or the budget hash of merchant `owner`
    (`kind` "merchant") (store::keys: `hb:{<tag>}:<kind>:<owner, percent-encoded>`)."""
    kept = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    part = "".join(chr(b) if b in kept else f"%{b:02X}" for b in owner.encode())
    tag = hashlib.sha1(owner.encode()).hexdigest()[:4]
    return f"hb:{{{tag}}}:{kind}:{part}"


def report_ledger(f: dict) -> None:
    print("\n== ledger feed (ledger-export -> EventBridge -> SQS)")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(f["kinds"].items()))
    print(f"  events on the queue: {f['events']} ({f['distinct']} distinct): {kinds}")
    n = f["users"] + f["merchants"]
    print(
        f"  reconciliation: {f['users']} users and {f['merchants']} merchant, balance = sum of "
        f"their events for {n - len(f['gaps'])} of them"
        + (f"; gaps {f['gaps']}" if f["gaps"] else " (no gap)")
    )
