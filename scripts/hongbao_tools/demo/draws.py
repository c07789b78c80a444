"""The demo's draws: a draw packet and a draw campaign, each entered by the demo's people in
its entry window, drawn once, and every entrant's result checked from the public view alone
with the five lines of docs/api.md (`my_draw_holds`); its report."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import Counter

from .. import events
from ..checks import Checks
from ..report import cents as money
from ..report import parse_rfc3339, rfc3339
from ..rie import LocalStack

DRAW_SENDER = "dora"
DRAW_SHARES = 100  # shares of 1.00 in the draw packet, and codes in the draw campaign
# The entry window: long enough for the demo's 1,000 people to enter both draws through the
# emulator's sandboxes on a loaded machine.
ENTRY_SECS = 20


def my_draw_holds(view, me, won):  # view: GET /packets/{id} or /campaigns/{id} as `me`
    d = view["draw"]
    ticket = hmac.new(bytes.fromhex(d["seed"]), me.encode(), "sha256").hexdigest()
    committed = hashlib.sha256(("hongbao-draw-v1:" + d["seed"]).encode()).hexdigest()
    return (
        committed == d["commitment"]
        and ticket == view["ticket"]
        and won == ("threshold" in d and ticket <= d["threshold"])
    )


def draws(stack: LocalStack, args, inv: Checks, users: list[str]) -> dict:
    """A draw packet of DRAW_SHARES shares of 1.00 and a draw campaign of DRAW_SHARES codes
    over 24 pools, both entered by every user inside ENTRY_SECS (202, nothing won yet); from
    `draw_at` everyone grabs again: the DRAW_SHARES smallest tickets win (200), the rest get
    410 not_drawn; every entrant checks their result from the public view; the packet's
    winners claim their shares."""
    r = stack.invoke("wallet", events.deposit_event(DRAW_SENDER, DRAW_SHARES * 100, "demo-draw"))
    inv.check("deposit 100.00 to dora -> 201", r.status == 201, str(r["body"]))
    made = stack.invoke(
        "create-packet",
        events.create_event(
            DRAW_SENDER,
            DRAW_SHARES * 100,
            DRAW_SHARES,
            "fixed",
            expires_in_secs=ENTRY_SECS + 60,
            draw_entry_secs=ENTRY_SECS,
        ),
    )
    inv.check(
        "dora creates a draw packet -> 201, its seed committed, not shown",
        made.status == 201
        and "commitment" in made["body"].get("draw", {})
        and "seed" not in made["body"]["draw"],
        str(made["body"]),
    )
    pid = made["body"]["packet_id"]
    codes = [f"DRAW20-{i:03d}" for i in range(DRAW_SHARES)]
    body = {
        "title": "the draw: 20 off 100",
        "codes": codes,
        "codes_planned": 60_000,
        "ends_at": rfc3339(time.time() + ENTRY_SECS + 120),
        "reference": "demo-draw-campaign",
        "draw": {"entry_secs": ENTRY_SECS},
    }
    r = stack.invoke("coupon", events.create_campaign_event(body))
    inv.check(
        "the merchant creates a draw campaign of 100 codes over 24 pools -> 201, entering",
        r.status == 201 and r["body"].get("status") == "entering",
        str(r["body"]),
    )
    cid = r["body"]["campaign_id"]

    # Everyone enters both draws, all at once.
    jobs = [events.grab_event(pid, u) for u in users]
    entered = stack["grab"].map(jobs, threads=args.threads)
    entered_c = stack["coupon"].map(
        [events.coupon_grab_event(cid, u) for u in users], threads=args.threads
    )
    inv.check(
        f"{len(users)} people enter each draw -> 202 every time, nothing won yet",
        all(x.status == 202 and x["body"].get("entered") for x in entered + entered_c),
        str(Counter(x.status for x in entered + entered_c)),
    )
    draw_at = max(
        parse_rfc3339(made["body"]["draw"]["draw_at"]), parse_rfc3339(r["body"]["draw"]["draw_at"])
    )
    time.sleep(max(0.0, draw_at - time.time()) + 0.5)

    # From draw_at everyone grabs again: the first grabs run each draw, once.
    again = [events.grab_event(pid, u) for u in users]
    packet = outcome(stack["grab"].map(again, threads=args.threads), users)
    campaign = outcome(
        stack["coupon"].map(
            [events.coupon_grab_event(cid, u) for u in users], threads=args.threads
        ),
        users,
    )
    for what, got in (("packet", packet), ("campaign", campaign)):
        inv.check(
            f"the draw {what}: {DRAW_SHARES} winners (200), everyone else 410 not_drawn",
            len(got["won"]) == DRAW_SHARES
            and got["counts"].get("410 not_drawn") == len(users) - DRAW_SHARES,
            str(dict(got["counts"])),
        )
    inv.check(
        "the campaign's winners hold 100 distinct codes, all from the upload",
        sorted(b["code"] for b in campaign["won"].values()) == codes,
    )
    checked = {"packet": 0, "campaign": 0}
    for u in users:
        v = stack.invoke("grab", events.view_event(pid, u))["body"]
        checked["packet"] += my_draw_holds(v, u, u in packet["won"])
        v = stack.invoke("coupon", events.campaign_event(cid, u))["body"]
        checked["campaign"] += my_draw_holds(v, u, u in campaign["won"])
    for what, n in checked.items():
        inv.check(
            f"every entrant's result checks out from the {what}'s view ({n} of {len(users)})",
            n == len(users),
        )
    claims = stack["claim"].map(
        [events.claim_event(pid, u) for u in sorted(packet["won"])], threads=16
    )
    claimed = sum(c["body"].get("amount_cents", 0) for c in claims if c.status == 200)
    inv.check(
        "the packet's winners claim 100.00 between them; dora's wallet holds 0",
        claimed == DRAW_SHARES * 100
        and stack.invoke("wallet", events.wallet_event(DRAW_SENDER))["body"]["balance_cents"] == 0,
        f"claimed {claimed}",
    )
    view = stack.invoke("grab", events.view_event(pid, users[0]))["body"]["draw"]
    return {
        "packet_id": pid,
        "campaign_id": cid,
        "entrants": view.get("entrants"),
        "winners": view.get("winners"),
        "threshold": view.get("threshold"),
        "checked": checked,
        "claimed": claimed,
    }


def outcome(results, users: list[str]) -> dict:
    """The answers of a grab by each of `users`: who won (their body) and the counts."""
    won, counts = {}, Counter()
    for u, r in zip(users, results, strict=True):
        counts[r.status if r.status == 200 else f"{r.status} {r['body'].get('error')}"] += 1
        if r.status == 200:
            won[u] = r["body"]
    return {"won": won, "counts": counts}


def report_draws(d: dict) -> None:
    print("\nDraws (speed gives no edge; everyone checks their own result):")
    print(f"  draw packet {d['packet_id']}: {d['winners']} winners of {d['entrants']} entrants")
    print(f"    threshold (the largest winning ticket) {d['threshold']}")
    print(f"    the winners claimed {money(d['claimed'])}")
    print(f"  draw campaign {d['campaign_id']}: {DRAW_SHARES} codes drawn")
    for what, n in d["checked"].items():
        print(f"  entrants who verified their {what} result from the public view: {n}")
