"""The demo's chat-packet step: a password packet, one scheduled to open later and one its
sender cancels, every grabber's fairness receipt checked from the public view; its report."""

from __future__ import annotations

import hashlib
import time

from .. import events
from ..checks import Checks
from ..report import cents as money
from ..report import parse_rfc3339
from ..rie import LocalStack
from .common import (
    SENDER,
)


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
    five lines of docs/api.md (`receipt_holds`), for every grabber's share."""
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
