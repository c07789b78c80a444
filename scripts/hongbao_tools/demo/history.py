"""The demo's history step: alice's sent list and a winner's received list (`GET /packets`,
following `next_cursor`) and their yearly summaries, against the packets and wallets; its
report."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from .. import events
from ..checks import Checks
from ..report import cents as money
from ..report import parse_rfc3339
from ..rie import LocalStack
from .common import (
    FIXED_TOTAL,
    LUCKY_TOTAL,
    SENDER,
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
