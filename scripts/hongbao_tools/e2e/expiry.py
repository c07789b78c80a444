"""A short-lived packet expires: grabs and claims refused after `expires_at`, reclaim-cron
refunds total - claimed once, earlier claims stay claimed."""

from __future__ import annotations

import time

from .. import events
from ..checks import Checks
from ..report import parse_rfc3339
from ..rie import LocalStack
from .common import State


def expiry(st: LocalStack, c: Checks, s: State) -> None:
    c.section("expiry and reclaim-cron")
    inv = st.invoke
    r = inv(
        "create-packet",
        events.create_event("alice", 1000, 10, "lucky", expires_in_secs=2, greeting="short-lived"),
    )
    if not c.status("create 10-share packet of 1000 cents, expires_in_secs 2", r, 201):
        return
    b = r["body"]
    pid = b["packet_id"]
    s.packets.append(pid)
    expires_at = parse_rfc3339(b["expires_at"])
    c.check(
        "expires_at = created_at + 2 s and greeting kept",
        abs(expires_at - parse_rfc3339(b["created_at"]) - 2) < 0.01
        and b["greeting"] == "short-lived",
        str(b),
    )
    grabbers = [f"x{i}" for i in range(6)]
    grabbed = {u: inv("grab", events.grab_event(pid, u)) for u in grabbers}
    c.check(
        "6 grabs before expiry -> 200",
        all(g["statusCode"] == 200 for g in grabbed.values()),
        str([g["statusCode"] for g in grabbed.values()]),
    )
    claimed = 0
    ok = True
    for u in grabbers[:4]:
        cr = inv("claim", events.claim_event(pid, u))
        ok &= cr["statusCode"] == 200 and cr["body"]["repeat"] is False
        claimed += cr["body"].get("amount_cents", 0)
    c.check("4 of them claim -> 200 repeat false", ok)
    r = inv("wallet", events.wallet_event("alice"))
    alice_before = r["body"]["balance_cents"]
    r = inv("reclaim-cron", events.scheduled_event())
    c.check("reclaim-cron before the deadline settles nothing", r.get("settled") == 0, str(dict(r)))
    wait = expires_at - time.time() + 0.3
    if wait > 0:
        time.sleep(wait)
    r = inv("grab", events.grab_event(pid, "x9"))
    c.status("grab after expires_at", r, 410, "expired")
    r = inv("claim", events.claim_event(pid, "x4"))
    c.status("claim after expires_at", r, 410, "expired")
    r = inv("grab", events.view_event(pid))
    c.check(
        "view after expires_at: status expired",
        r["body"].get("status") == "expired",
        str(r["body"])[:300],
    )
    refund = 1000 - claimed
    r = inv("reclaim-cron", events.scheduled_event())
    c.check(
        f"reclaim-cron settles 1 packet, refunded_cents = total - claimed = {refund}",
        r.get("settled") == 1
        and r.get("refunded_cents") == refund
        and r.get("redriven") == 0
        and r.get("remaining_due") == 0
        and r.get("skipped_locked") is False,
        str(dict(r)),
    )
    r = inv("wallet", events.wallet_event("alice"))
    b = r["body"]
    newest = (b.get("entries") or [{}])[0]
    c.check(
        "GET /wallet (alice): balance += refund, newest entry refund_credit of the packet",
        b.get("balance_cents") == alice_before + refund
        and newest.get("kind") == "refund_credit"
        and newest.get("amount_cents") == refund
        and newest.get("reference") == pid,
        f"before {alice_before} now {b.get('balance_cents')} newest {newest}",
    )
    r = inv("grab", events.view_event(pid))
    b = r["body"]
    claimed_view = sum(g["amount_cents"] for g in b.get("grabs", []) if g["claimed"])
    c.check(
        "view: settled, refunded_cents = refund, claimed + refunded = total",
        b.get("status") == "settled"
        and b.get("refunded_cents") == refund
        and claimed_view + refund == 1000,
        str(b)[:300],
    )
    r = inv("reclaim-cron", events.scheduled_event())
    c.check(
        "a second reclaim-cron run refunds nothing",
        r.get("settled") == 0 and r.get("refunded_cents") == 0,
        str(dict(r)),
    )
    r = inv("claim", events.claim_event(pid, "x0"))
    c.check(
        "an earlier claim stays claimed after settlement (200 repeat true)",
        r["statusCode"] == 200 and r["body"].get("repeat") is True,
        str(r["body"]),
    )
