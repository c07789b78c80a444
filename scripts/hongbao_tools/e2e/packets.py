"""The red-packet fixtures through the runtime: create (lucky and fixed), grab, view, claim,
the sent and received history, the yearly summary and a reclaim-cron run with nothing due; the
wallet fixtures run around them (`wallet`)."""

from __future__ import annotations

from .. import events
from ..checks import Checks
from ..report import parse_rfc3339
from ..rie import LocalStack
from . import wallet
from .common import RFC3339, State, is_packet_body


def fixtures(st: LocalStack, c: Checks, s: State) -> None:
    c.section("events/ fixtures through the runtime")
    inv = st.invoke

    wallet.movements(st, c, s)

    # POST /packets: the lucky and the fixed fixture, each body against what it asked for.
    for kind, name, want in (
        (
            "lucky",
            "lucky packet body has the contract fields",
            {
                "sender_id": "alice",
                "total_cents": 10000,
                "count": 100,
                "mode": "lucky",
                "split": "double_mean",
                "greeting": None,
            },
        ),
        (
            "fixed",
            "fixed packet body: mode fixed, split null, 10 x 100",
            {"mode": "fixed", "split": None, "total_cents": 1000, "count": 10},
        ),
    ):
        r = inv("create-packet", events.http_event(f"create-packet-{kind}"))
        b = r["body"]
        if not c.status(f"create-packet-{kind}.json", r, 201):
            continue
        c.check(name, is_packet_body(b) and {k: b[k] for k in want} == want, str(b))
        s.packets.append(b["packet_id"])
        if kind == "fixed":
            s.fixed_id = b["packet_id"]
            continue
        s.lucky_id = b["packet_id"]
        span = parse_rfc3339(b["expires_at"]) - parse_rfc3339(b["created_at"])
        c.check("default expiry is one day", abs(span - 86400) < 0.01, f"{span} s")
    r = inv("create-packet", events.http_event("create-packet-bad-amount"))
    c.status("create-packet-bad-amount.json", r, 400, "invalid_request")
    r = inv("create-packet", events.http_event("create-packet-no-auth"))
    c.status("create-packet-no-auth.json", r, 401, "unauthorized")
    r = inv("create-packet", events.create_event("alice", 30000, 10))
    c.status("create above HONGBAO_MAX_TOTAL_CENTS", r, 400, "invalid_request")

    pid = s.lucky_id
    if pid is None:
        c.check("a lucky packet exists for the grab/claim fixtures", False)
        return
    # POST /packets/{id}/grab (bob)
    r = inv("grab", events.http_event("grab-grab", packet_id=pid))
    b = r["body"]
    if c.status("grab-grab.json (bob)", r, 200):
        c.check(
            "grab body {packet_id, share_id 1, amount_cents >= 1, grabbed_at, claim_by}",
            b.get("packet_id") == pid
            and b.get("share_id") == 1
            and b.get("amount_cents", 0) >= 1
            and RFC3339.match(b.get("grabbed_at", "")) is not None
            and RFC3339.match(b.get("claim_by", "")) is not None,
            str(b),
        )
        s.bob_share = b
    r = inv("grab", events.http_event("grab-grab", packet_id=pid))
    if c.status("grab-grab.json again", r, 409, "already_grabbed") and s.bob_share:
        share = r["body"].get("share", {})
        c.check(
            "409 carries the same share",
            share.get("share_id") == s.bob_share["share_id"]
            and share.get("amount_cents") == s.bob_share["amount_cents"]
            and share.get("packet_id") == pid,
            str(r["body"]),
        )
    r = inv("grab", events.grab_event(events.NO_SUCH_PACKET, "bob"))
    c.status("grab of an unknown packet", r, 404, "not_found")
    r = inv("grab", events.http_event("grab-grab", packet_id=pid, auth=False))
    c.status("grab without a JWT", r, 401, "unauthorized")

    # GET /packets/{id}
    r = inv("grab", events.http_event("grab-view", packet_id=pid))
    b = r["body"]
    if c.status("grab-view.json", r, 200) and s.bob_share:
        c.check(
            "view: status open, grabbed_count 1, grabs [bob], best_luck null",
            is_packet_body(b)
            and b.get("status") == "open"
            and b.get("grabbed_count") == 1
            and b.get("grabbed_cents") == s.bob_share["amount_cents"]
            and b.get("refunded_cents") == 0
            and [g["user_id"] for g in b.get("grabs", [])] == ["bob"]
            and b["grabs"][0]["claimed"] is False
            and b.get("best_luck") is None,
            str(b)[:500],
        )

    # POST /packets/{id}/claim (bob)
    r = inv("claim", events.http_event("claim-claim", packet_id=pid))
    b = r["body"]
    amount = s.bob_share["amount_cents"] if s.bob_share else None
    if c.status("claim-claim.json (bob)", r, 200):
        c.check(
            "claim body: repeat false, amount = share, balance = amount",
            b.get("repeat") is False
            and b.get("amount_cents") == amount
            and b.get("balance_cents") == amount
            and b.get("packet_id") == pid
            and RFC3339.match(b.get("claimed_at", "")) is not None,
            str(b),
        )
    r = inv("claim", events.http_event("claim-claim", packet_id=pid))
    if c.status("claim-claim.json again", r, 200):
        c.check(
            "repeat claim: repeat true, balance unchanged",
            r["body"].get("repeat") is True and r["body"].get("balance_cents") == amount,
            str(r["body"]),
        )
    r = inv("claim", events.claim_event(pid, "carol"))
    c.status("claim without a share", r, 404, "no_share")

    # GET /packets (history) and GET /packets/summary, served by grab
    r = inv("grab", events.http_event("grab-history"))
    if c.status("grab-history.json (alice, role=sent)", r, 200):
        items = r["body"].get("items", [])
        c.check(
            "alice's sent history: the fixed then the lucky packet, next_cursor null",
            [i["packet_id"] for i in items] == [s.fixed_id, s.lucky_id]
            and r["body"].get("next_cursor", "") is None
            and [i["total_cents"] for i in items] == [1000, 10000]
            and all("refunded_cents" not in i for i in items),
            str(r["body"])[:500],
        )
    r = inv("grab", events.http_event("grab-history", query={"role": "sent", "limit": "1"}))
    cursor = r["body"].get("next_cursor") if r.status == 200 else None
    r2 = inv(
        "grab",
        events.http_event(
            "grab-history", query={"role": "sent", "limit": "1", "cursor": cursor or ""}
        ),
    )
    c.check(
        "limit=1: two pages through next_cursor, newest first",
        r.status == 200
        and r2.status == 200
        and cursor is not None
        and [i["packet_id"] for i in r["body"]["items"] + r2["body"]["items"]]
        == [s.fixed_id, s.lucky_id]
        and r2["body"]["next_cursor"] is None,
        f"{r['body']} {r2['body']}"[:500],
    )
    r = inv("grab", events.http_event("grab-history", sub="bob", query={"role": "received"}))
    if c.status("grab-history.json as bob, role=received", r, 200):
        items = r["body"].get("items", [])
        c.check(
            "bob's received history: his claimed share of alice's packet",
            len(items) == 1
            and items[0]["packet_id"] == pid
            and items[0]["sender_id"] == "alice"
            and items[0]["amount_cents"] == amount
            and RFC3339.match(items[0].get("claimed_at", "")) is not None,
            str(r["body"]),
        )
    r = inv("grab", events.http_event("grab-history", query={"role": "both"}))
    c.status("grab-history.json with role=both", r, 400, "invalid_request")
    r = inv("grab", events.http_event("grab-summary", query={}))
    if c.status("grab-summary.json (alice, current year)", r, 200):
        c.check(
            "alice's summary: sent 2 packets, 110.00; received none",
            r["body"].get("sent") == {"count": 2, "total_cents": 11000}
            and r["body"].get("received") == {"count": 0, "total_cents": 0},
            str(r["body"]),
        )
    r = inv("grab", events.http_event("grab-summary", query={"year": "26"}))
    c.status("grab-summary.json with year=26", r, 400, "invalid_request")

    wallet.entries(st, c, pid, amount)

    # reclaim-cron (nothing is due yet)
    r = inv("reclaim-cron", events.load_event("reclaim-cron-scheduled"))
    c.check(
        "reclaim-cron-scheduled.json -> summary {settled, refunded_cents, redriven, remaining_due}",
        {"settled", "refunded_cents", "redriven", "remaining_due"} <= set(r.keys())
        and r["settled"] == 0
        and r["refunded_cents"] == 0
        and r["remaining_due"] == 0,
        str(dict(r)),
    )
