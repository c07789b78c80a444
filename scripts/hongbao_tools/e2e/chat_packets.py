"""The chat-packet fixtures through the runtime: a password packet (create-packet-password,
grab-grab-password), cancelled by its sender (create-packet-cancel), its receipt checked, and a
packet scheduled to open in an hour."""

from __future__ import annotations

import hashlib
import json
import re

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import RFC3339, State


def chat_packets(st: LocalStack, c: Checks, s: State) -> None:
    """The chat-packet fixtures through the runtime: a password packet (create-packet-password,
    grab-grab-password), cancelled by its sender (create-packet-cancel), and a scheduled one."""
    c.section("chat packets: password, cancel, scheduled (events/ fixtures)")
    inv = st.invoke
    r = inv("create-packet", events.http_event("create-packet-password"))
    b = r["body"]
    if not c.status("create-packet-password.json", r, 201):
        return
    pid = b["packet_id"]
    s.packets.append(pid)
    c.check(
        "password packet body: password_protected, cover, a commitment, no password",
        b.get("password_protected") is True
        and b.get("cover") == "lantern-2027"
        and re.fullmatch(r"[0-9a-f]{64}", b.get("commitment", "")) is not None
        and "芝麻开门" not in json.dumps(b, ensure_ascii=False),
        str(b),
    )
    r = inv("grab", events.grab_event(pid, "bob"))
    c.status("grab of a password packet without the password", r, 403, "wrong_password")
    r = inv("grab", events.grab_event(pid, "bob", password="芝麻开"))
    c.status("grab with a wrong password", r, 403, "wrong_password")
    r = inv("grab", events.http_event("grab-grab-password", packet_id=pid))
    won = r["body"].get("amount_cents", 0)
    if c.status("grab-grab-password.json (bob)", r, 200):
        c.check("bob's share is share 1", r["body"].get("share_id") == 1, str(r["body"]))
    r = inv("create-packet", events.cancel_event(pid, "bob"))
    c.status("create-packet-cancel.json as bob (not the sender)", r, 403, "forbidden")
    r = inv("create-packet", events.http_event("create-packet-cancel", packet_id=pid))
    if c.status("create-packet-cancel.json (alice)", r, 200):
        c.check(
            "cancel body: status cancelled, the two un-grabbed shares refunded",
            {k: r["body"].get(k) for k in ("packet_id", "status", "refunded_cents")}
            == {"packet_id": pid, "status": "cancelled", "refunded_cents": 600 - won}
            and RFC3339.match(r["body"].get("cancelled_at", "")) is not None,
            str(r["body"]),
        )
    r2 = inv("create-packet", events.http_event("create-packet-cancel", packet_id=pid))
    c.check(
        "create-packet-cancel.json again -> 200, the same figures",
        r2.get("statusCode") == 200 and r2["body"] == r["body"],
        str(r2["body"]),
    )
    r = inv("grab", events.grab_event(pid, "carol", password="芝麻开门"))
    c.status("grab after the cancel", r, 410, "cancelled")
    r = inv("claim", events.claim_event(pid, "bob"))
    if c.status("bob claims his share of the cancelled packet", r, 200):
        c.check("the claim credits his share", r["body"].get("amount_cents") == won, str(r["body"]))
    r = inv("grab", events.view_event(pid, "bob"))
    v = r["body"]
    if c.status("view of the cancelled packet", r, 200):
        reveal = v.get("reveal") or {}
        shares = reveal.get("shares_cents", [])
        text = f"hongbao-shares-v1:{reveal.get('salt')}:{','.join(map(str, shares))}"
        c.check(
            "its receipt holds: commitment, sum, bob's share 1",
            v.get("status") == "cancelled"
            and hashlib.sha256(text.encode()).hexdigest() == v.get("commitment")
            and sum(shares) == v.get("total_cents")
            and shares[:1] == [won],
            str(v)[:500],
        )
    r = inv("create-packet", events.create_event("alice", 100, 1, opens_in_secs=3600))
    if c.status("a packet scheduled to open in an hour", r, 201):
        later = r["body"]["packet_id"]
        s.packets.append(later)
        r = inv("grab", events.grab_event(later, "bob"))
        retry = int(r.get("headers", {}).get("retry-after", "0") or 0)
        if c.status("grab before the opening", r, 425, "not_open_yet"):
            c.check("Retry-After is the hour, rounded up", 3590 <= retry <= 3600, str(retry))
        r = inv("create-packet", events.cancel_event(later, "alice"))
        c.status("cancel of the scheduled packet (nothing grabbed)", r, 200)
