"""The coupon-drop fixtures (events/coupon-*.json) through the runtime: a campaign of
uploaded codes from its creation to its redemptions, one of generated codes, and the caller's
coupons a page at a time."""

from __future__ import annotations

import json
import re
import time

from .. import events
from ..checks import Checks
from ..report import parse_rfc3339, rfc3339
from ..rie import LocalStack
from .common import OUTSIDER_ARN, RFC3339, State, answered, replayed

# A campaign id: its number (5 characters), then its 80-bit tag (16).
CAMPAIGN_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{21}$")
GENERATED_CODE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{18}$")
CAMPAIGN_FIELDS = {
    "campaign_id",
    "title",
    "status",
    "codes_total",
    "codes_left",
    "per_user",
    "starts_at",
    "ends_at",
    "redeem_by",
}
# Seconds between a campaign's creation and its start: time to add a batch of codes first.
COUPON_START_DELAY = 3


def same_time(answered: object, sent: float) -> bool:
    """Whether an RFC 3339 time the API answered is the Unix time `sent` (to the ms)."""
    return (
        isinstance(answered, str)
        and RFC3339.match(answered) is not None
        and abs(parse_rfc3339(answered) - sent) < 0.001
    )


def coupons(st: LocalStack, c: Checks, s: State) -> None:
    """A campaign of uploaded codes from the merchant's creation (starting in a few seconds, a
    batch added before the start) through a sold-out drop to redemptions at checkout, each step
    an events/coupon-*.json fixture; then the creation fixture as it is (generated codes)."""
    c.section("coupon drops: events/coupon-*.json through the runtime")
    inv = st.invoke
    fixture = json.loads(events.load_event("coupon-create-campaign")["body"])
    batch = json.loads(events.load_event("coupon-add-codes")["body"])
    viewer = events.load_event("coupon-view")["requestContext"]["authorizer"]["jwt"]["claims"][
        "sub"
    ]
    order = json.loads(events.load_event("coupon-redeem")["body"])["order_reference"]
    # Whole seconds, so that the answered times compare exactly.
    now = float(int(time.time()))
    starts, ends, redeem_by = now + COUPON_START_DELAY, now + 3600, now + 86400
    uploaded = ["E2E-CODE-0001", "E2E-CODE-0002"]
    body = {
        "title": fixture["title"],
        "codes": uploaded,
        "starts_at": rfc3339(starts),
        "ends_at": rfc3339(ends),
        "per_user": fixture["per_user"],
        "redeem_by": rfc3339(redeem_by),
        "reference": "e2e-drop-1",
    }

    # POST /campaigns (AWS_IAM): created, the same body again, another body, outsiders.
    r = inv("coupon", events.create_campaign_event(body))
    b = r["body"]
    if not c.status("coupon-create-campaign.json with 2 uploaded codes, starting in 3 s", r, 201):
        return
    cid = b.get("campaign_id", "")
    c.check(
        "campaign body: 5-character id, title, scheduled, 2 of 2 codes left, per_user, the "
        "times as sent, no coupons",
        b.keys() == CAMPAIGN_FIELDS
        and CAMPAIGN_ID.match(cid) is not None
        and b["title"] == fixture["title"]
        and b["status"] == "scheduled"
        and (b["codes_total"], b["codes_left"]) == (2, 2)
        and b["per_user"] == fixture["per_user"]
        and same_time(b["starts_at"], starts)
        and same_time(b["ends_at"], ends)
        and same_time(b["redeem_by"], redeem_by),
        str(b),
    )
    s.campaign_id = cid
    r = inv("coupon", events.create_campaign_event(body))
    if c.status("the same creation again (same reference, same body)", r, 201):
        c.check(
            "it answers the same campaign, Idempotent-Replayed: true",
            r["body"].get("campaign_id") == cid and replayed(r),
            str(r),
        )
    r = inv("coupon", events.create_campaign_event({**body, "title": "another title"}))
    c.status("the same reference with another body", r, 409, "reference_reused")
    r = inv(
        "coupon",
        events.create_campaign_event({**body, "reference": "e2e-drop-x"}, user_arn=OUTSIDER_ARN),
    )
    c.status(
        "coupon-create-campaign.json from a principal not in HONGBAO_COUPON_PRINCIPALS",
        r,
        403,
        "forbidden",
    )
    r = inv("coupon", events.http_event("coupon-create-campaign", auth=False))
    c.status("coupon-create-campaign.json without the IAM authorizer", r, 403, "forbidden")

    # POST /campaigns/{id}/codes (AWS_IAM) before the start: the fixture's batch, then again.
    r = inv("coupon", events.add_codes_event(cid))
    total = len(uploaded) + len(batch["codes"])
    if c.status(f"coupon-add-codes.json ({len(batch['codes'])} codes) before the start", r, 201):
        c.check(
            f"batch body: codes_total {total}, the fixture's reference, repeat false, all added",
            r["body"]
            == {
                "campaign_id": cid,
                "codes_total": total,
                "reference": batch["reference"],
                "repeat": False,
                "codes_added": len(batch["codes"]),
                "released": [],
            },
            str(r["body"]),
        )
    r = inv("coupon", events.add_codes_event(cid))
    c.check(
        "coupon-add-codes.json again -> 201, repeat true, Idempotent-Replayed, nothing added",
        answered(r, 201, repeat=True, codes_total=total) and replayed(r),
        str(r["body"]),
    )
    r = inv("coupon", events.add_codes_event(cid, user_arn=OUTSIDER_ARN))
    c.status("coupon-add-codes.json from an outside principal", r, 403, "forbidden")
    r = inv("coupon", events.add_codes_event(events.NO_SUCH_CAMPAIGN, reference="e2e-none"))
    c.status("codes for an unknown campaign", r, 404, "not_found")

    # Before the start: grabbing is 425 not_started + Retry-After; the view says scheduled.
    r = inv("coupon", events.http_event("coupon-grab", campaign_id=cid))
    retry = {k.lower(): v for k, v in (r.get("headers") or {}).items()}.get("retry-after", "")
    if c.status("coupon-grab.json before the start", r, 425, "not_started"):
        c.check(
            f"Retry-After is 1..{COUPON_START_DELAY} seconds",
            retry.isdigit() and 1 <= int(retry) <= COUPON_START_DELAY,
            repr(retry),
        )
    r = inv("coupon", events.http_event("coupon-view", campaign_id=cid))
    if c.status(f"coupon-view.json ({viewer}) before the start", r, 200):
        c.check(
            f"scheduled, {total} codes left, no coupons",
            answered(r, 200, status="scheduled", codes_left=total, coupons=[]),
            str(r["body"]),
        )

    # The drop: one code for each of `total` users, then sold_out.
    time.sleep(max(0.0, starts - time.time()) + 0.2)
    users = [viewer] + [f"e2e-coupon-{i}" for i in range(1, total)]
    won: dict[str, str] = {}
    for u in users:
        r = inv("coupon", events.coupon_grab_event(cid, u))
        b = r["body"]
        if (
            r.get("statusCode") == 200
            and b.get("campaign_id") == cid
            and same_time(b.get("redeem_by"), redeem_by)
            and RFC3339.match(str(b.get("grabbed_at"))) is not None
        ):
            won[u] = b.get("code")
    c.check(
        f"{total} users grab one code each -> 200 with the campaign, the code, redeem_by, "
        "grabbed_at",
        len(won) == total,
        f"{len(won)} won: {won}",
    )
    c.check(
        f"the {total} codes are the uploaded ones, each issued once",
        sorted(won.values()) == sorted(uploaded + batch["codes"]),
        str(sorted(won.values())),
    )
    mine = won.get(viewer)
    r = inv("coupon", events.http_event("coupon-grab", campaign_id=cid))
    if c.status(f"coupon-grab.json ({viewer}) again", r, 409, "already_grabbed"):
        c.check(
            "409 carries the caller's coupons", r["body"].get("coupons") == [mine], str(r["body"])
        )
    r = inv("coupon", events.coupon_grab_event(cid, "e2e-coupon-late"))
    c.status("a grab once every code is issued", r, 410, "sold_out")
    r = inv("coupon", events.coupon_grab_event(events.NO_SUCH_CAMPAIGN, viewer))
    c.status("a grab of an unknown campaign", r, 404, "not_found")
    r = inv("coupon", events.http_event("coupon-grab", campaign_id=cid, auth=False))
    c.status("a grab without a JWT", r, 401, "unauthorized")
    r = inv("coupon", events.http_event("coupon-view", campaign_id=cid))
    if c.status(f"coupon-view.json ({viewer}) after the drop", r, 200):
        c.check(
            f"sold_out, 0 of {total} codes left, the caller's coupons",
            answered(r, 200, status="sold_out", codes_total=total, codes_left=0, coupons=[mine]),
            str(r["body"]),
        )
    r = inv("coupon", events.add_codes_event(cid, ["E2E-LATE-0001"], "e2e-late"))
    c.status("codes added after the start", r, 409, "campaign_started")

    # POST /coupons/redeem (AWS_IAM): redeemed, the same order again, another order, outsiders.
    if mine is None:
        c.check(f"{viewer} holds a coupon to redeem", False)
        return
    r = inv("coupon", events.redeem_event(mine, viewer, order))
    b = r["body"]
    first = b.get("redeemed_at")
    if c.status(f"coupon-redeem.json: {viewer}'s code for {order}", r, 200):
        c.check(
            "redeem body: the code, the user, the campaign, the order, redeemed_at, repeat false",
            b.keys()
            == {"code", "user_id", "campaign_id", "order_reference", "redeemed_at", "repeat"}
            and (b["code"], b["user_id"], b["campaign_id"], b["order_reference"])
            == (mine, viewer, cid, order)
            and RFC3339.match(str(first)) is not None
            and b["repeat"] is False,
            str(b),
        )
    r = inv("coupon", events.redeem_event(mine, viewer, order))
    c.check(
        "the same order again -> 200, repeat true, the first redeemed_at",
        answered(r, 200, repeat=True, redeemed_at=first),
        str(r["body"]),
    )
    r = inv("coupon", events.redeem_event(mine, viewer, "order-e2e-other"))
    if c.status("another order redeems it", r, 409, "already_redeemed"):
        c.check(
            "409 names the order that redeemed it, and when",
            r["body"].get("order_reference") == order and r["body"].get("redeemed_at") == first,
            str(r["body"]),
        )
    other_user, other_code = next((u, x) for u, x in won.items() if u != viewer)
    r = inv("coupon", events.redeem_event(other_code, viewer, "order-e2e-2"))
    c.status(f"{other_user}'s code redeemed as {viewer}", r, 404, "not_found")
    r = inv(
        "coupon", events.redeem_event(other_code, other_user, "order-e2e-3", user_arn=OUTSIDER_ARN)
    )
    c.status(
        "coupon-redeem.json from a principal not in HONGBAO_COUPON_PRINCIPALS",
        r,
        403,
        "forbidden",
    )

    # POST /coupons/hold and /coupons/release (AWS_IAM): a checkout holds, another order is
    # refused, the payment fails and the hold is released (a repeat answers the same), another
    # order redeems, and its order is refunded: the redemption reversed.
    held = "order-e2e-hold"
    r = inv("coupon", events.hold_event(other_code, other_user, held, 12000, 600))
    if c.status(f"coupon-hold.json: {other_user}'s code for {held}", r, 200):
        c.check(
            "hold body: state held, held_until",
            r["body"].get("state") == "held"
            and RFC3339.match(str(r["body"].get("held_until"))) is not None,
            str(r["body"]),
        )
    r = inv("coupon", events.hold_event(other_code, other_user, "order-e2e-rival", 12000, 600))
    c.status("another order holds the held coupon", r, 409, "held")
    r = inv("coupon", events.release_event(other_code, held))
    c.status(f"coupon-release.json: {held}'s hold released", r, 200)
    r = inv("coupon", events.release_event(other_code, held))
    c.check("the same release again -> 200, repeat true", answered(r, 200, repeat=True), str(r))
    r = inv("coupon", events.redeem_event(other_code, other_user, "order-e2e-rival"))
    c.status("the released coupon redeemed by another order", r, 200)
    r = inv("coupon", events.release_event(other_code, "order-e2e-rival"))
    c.check(
        "that order refunded: its redemption reversed",
        answered(r, 200, released="redemption", repeat=False),
        str(r["body"]),
    )

    # The creation fixture as it is (generated codes, open at once), with fresh times.
    gen = {**fixture, "ends_at": rfc3339(ends), "redeem_by": rfc3339(redeem_by)}
    r = inv("coupon", events.create_campaign_event(gen))
    if not c.status(
        f"coupon-create-campaign.json ({fixture['generate']} generated codes, open now)", r, 201
    ):
        return
    b = r["body"]
    gid = b.get("campaign_id", "")
    c.check(
        f"open, {fixture['generate']} of {fixture['generate']} codes left, another id",
        b.get("status") == "open"
        and b.get("codes_total") == b.get("codes_left") == fixture["generate"]
        and gid != cid
        and CAMPAIGN_ID.match(gid) is not None,
        str(b),
    )
    r = inv("coupon", events.coupon_grab_event(gid, viewer))
    code = r["body"].get("code", "") if r.get("statusCode") == 200 else ""
    c.check(
        "a grab -> 200, an 18-character generated code",
        GENERATED_CODE.match(code) is not None,
        f"{r.get('statusCode')} {r['body']}",
    )
    r = inv("coupon", events.add_codes_event(gid, reference="e2e-gen"))
    c.status("codes added to a campaign of generated codes", r, 409, "codes_generated")
    r = inv("coupon", events.redeem_event(code.lower(), viewer, "order-e2e-gen"))
    c.check(
        "the generated code redeemed as the user types it (lower case) -> 200, its campaign",
        r.get("statusCode") == 200
        and r["body"].get("campaign_id") == gid
        and r["body"].get("repeat") is False,
        f"{r.get('statusCode')} {r['body']}",
    )

    # GET /coupons: the caller's coupons, newest first, a page at a time.
    r = inv("coupon", events.coupons_event(viewer))
    items = r["body"].get("items", []) if r.get("statusCode") == 200 else []
    if c.status(f"GET /coupons ({viewer})", r, 200):
        c.check(
            f"{viewer}'s 2 coupons, newest first, both redeemed, with their campaigns' titles",
            [(i.get("code"), i.get("campaign_id"), i.get("state")) for i in items]
            == [(code, gid, "redeemed"), (mine, cid, "redeemed")]
            and all(i.get("title") == fixture["title"] for i in items)
            and all(RFC3339.match(str(i.get("redeemed_at"))) for i in items)
            and r["body"].get("next_cursor", "") is None,
            str(r["body"])[:500],
        )
    r = inv("coupon", events.coupons_event(viewer, {"limit": "1"}))
    cursor = r["body"].get("next_cursor") if r.get("statusCode") == 200 else None
    r2 = inv("coupon", events.coupons_event(viewer, {"limit": "1", "cursor": cursor or ""}))
    c.check(
        "limit=1: two pages through next_cursor, the same coupons",
        r.get("statusCode") == r2.get("statusCode") == 200
        and cursor is not None
        and [i.get("code") for i in r["body"]["items"] + r2["body"]["items"]]
        == [i.get("code") for i in items]
        and r2["body"].get("next_cursor", "") is None,
        f"{r['body']} {r2['body']}"[:500],
    )
    r = inv("coupon", events.coupons_event(viewer, {"limit": "0"}))
    c.status("GET /coupons with limit=0", r, 400, "invalid_request")
