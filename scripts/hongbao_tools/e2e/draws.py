"""The draw fixtures through the runtime: a draw packet (create-packet-draw.json) and a draw
campaign (coupon-create-draw-campaign.json), entered by erin and frank (202, the same answer
again), drawn once from `draw_at` by the first grab, each result checked from the public view
with docs/api.md's five lines."""

from __future__ import annotations

import hashlib
import hmac
import time

from .. import events
from ..checks import Checks
from ..report import parse_rfc3339
from ..rie import LocalStack
from .common import State


def draw_holds(view: dict, me: str, won: bool) -> bool:
    """docs/api.md's check of `me`'s result from a drawn view (`GET /packets/{id}` or
    `GET /campaigns/{id}` as `me`)."""
    d = view["draw"]
    ticket = hmac.new(bytes.fromhex(d["seed"]), me.encode(), "sha256").hexdigest()
    committed = hashlib.sha256(("hongbao-draw-v1:" + d["seed"]).encode()).hexdigest()
    return (
        committed == d["commitment"]
        and ticket == view["ticket"]
        and won == ("threshold" in d and ticket <= d["threshold"])
    )


def draws(st: LocalStack, c: Checks, s: State) -> None:
    """The draw fixtures: erin and frank enter a draw packet of 3 shares and a draw campaign of
    3 codes; from `draw_at` both win (fewer entrants than shares), gina (who never entered) is
    told 410 not_drawn, and every result checks out from the view."""
    c.section("draws: a draw packet and a draw campaign (events/ fixtures)")
    inv = st.invoke
    r = inv("create-packet", events.http_event("create-packet-draw"))
    if not c.status("create-packet-draw.json", r, 201):
        return
    pid = r["body"]["packet_id"]
    s.packets.append(pid)
    c.check(
        "the draw packet shows its commitment and draw_at, never its seed",
        {"draw_at", "commitment"} <= r["body"].get("draw", {}).keys()
        and "seed" not in r["body"]["draw"],
        str(r["body"]),
    )
    r = inv("coupon", events.http_event("coupon-create-draw-campaign"))
    if not c.status("coupon-create-draw-campaign.json", r, 201):
        return
    cid = r["body"]["campaign_id"]
    c.check("the draw campaign is entering", r["body"].get("status") == "entering", str(r["body"]))
    draw_at = max(parse_rfc3339(r["body"]["draw"]["draw_at"]), time.time())
    for user in ("erin", "frank", "erin"):
        r = inv("grab", events.grab_event(pid, user))
        c.status(f"{user} enters the draw packet (grab-grab.json)", r, 202)
        draw_at = max(draw_at, parse_rfc3339(r["body"].get("draw_at", "1970-01-01T00:00:00Z")))
        r = inv("coupon", events.coupon_grab_event(cid, user))
        c.status(f"{user} enters the draw campaign (coupon-grab.json)", r, 202)
    time.sleep(max(0.0, draw_at - time.time()) + 0.3)
    for user in ("erin", "frank"):
        r = inv("grab", events.grab_event(pid, user))
        c.status(f"{user}'s grab after draw_at -> 200, a share", r, 200)
        v = inv("grab", events.view_event(pid, user))["body"]
        c.check(f"{user} checks the packet's draw from the view", draw_holds(v, user, True), str(v))
        r = inv("coupon", events.coupon_grab_event(cid, user))
        c.status(f"{user}'s campaign grab after draw_at -> 200, a code", r, 200)
        v = inv("coupon", events.campaign_event(cid, user))["body"]
        c.check(
            f"{user} checks the campaign's draw from the view", draw_holds(v, user, True), str(v)
        )
    r = inv("grab", events.grab_event(pid, "gina"))
    c.status("gina never entered the draw packet -> 410 not_drawn", r, 410, "not_drawn")
    r = inv("coupon", events.coupon_grab_event(cid, "gina"))
    c.status("gina never entered the draw campaign -> 410 not_drawn", r, 410, "not_drawn")
