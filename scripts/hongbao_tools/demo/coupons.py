"""The demo's coupon drop: a merchant's campaign of uploaded codes, the demo's people racing
for them, redemptions at checkout, the campaign closed by reclaim-cron; its report."""

from __future__ import annotations

import random
import time
from collections import Counter

from .. import events
from ..checks import Checks
from ..report import rfc3339
from ..rie import LocalStack
from .common import (
    DROP_CODES,
    DROP_REDEEMED,
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
        "discount": {"amount_off_cents": 2000, "min_order_cents": 10000},
    }
    r = stack.invoke("coupon", events.create_campaign_event(body))
    if not inv.check(
        "the merchant creates a campaign of 100 codes -> 201", r.status == 201, str(r["body"])
    ):
        raise SystemExit(1)
    cid = r["body"]["campaign_id"]
    again = stack.invoke("coupon", events.create_campaign_event(body))
    inv.check(
        "the same creation sent again -> 201 Idempotent-Replayed, the same campaign",
        again.status == 201 and again.replayed and again["body"]["campaign_id"] == cid,
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
        first = stack.invoke(
            "coupon", events.redeem_event(won[u], u, order, order_total_cents=12000)
        )
        repeat = stack.invoke(
            "coupon", events.redeem_event(won[u], u, order, order_total_cents=12000)
        )
        other = stack.invoke(
            "coupon", events.redeem_event(won[u], u, order + "-b", order_total_cents=12000)
        )
        inv.check(
            f"{u}'s coupon redeemed once (the same order again: repeat; another: 409)",
            first.status == 200
            and first["body"]["repeat"] is False
            and repeat.status == 200
            and repeat.replayed
            and repeat["body"]["repeat"] is True
            and other.status == 409
            and other["body"].get("order_reference") == order,
            f"{first['body']} {repeat['body']} {other['body']}",
        )
    checkouts = checkout(stack, inv, won, sorted(won)[DROP_REDEEMED : DROP_REDEEMED + 3])
    loser = next(u for u in users if u not in won)
    stranger = stack.invoke(
        "coupon", events.redeem_event(won[redeemers[0]], loser, "order-x", order_total_cents=12000)
    )
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
    lapsed(stack, inv, won, checkouts)
    return {
        "campaign_id": cid,
        "outcomes": dict(outcomes),
        "winners": len(won),
        "redeemed": len(redeemers),
        "never_issued": DROP_CODES - len(won),
        "closed": closed,
        "checkouts": checkouts,
    }


def checkout(stack: LocalStack, inv: Checks, won: dict[str, str], buyers: list[str]) -> dict:
    """Three checkouts of 120.00 with a coupon worth 20.00 off an order of at least 100.00:
    one paid (held, then redeemed), one whose payment failed (held, then released: the coupon
    is the user's to use again), one held for 30 s and abandoned (it lapses)."""
    paid, failed, abandoned = buyers
    below = stack.invoke("coupon", events.hold_event(won[paid], paid, f"order-{paid}", 9000))
    inv.check(
        "a hold for an order below the minimum -> 422 below_minimum, nothing held",
        below.status == 422 and below["body"].get("min_order_cents") == 10000,
        str(below["body"]),
    )
    held = {}
    for u in buyers:
        r = stack.invoke("coupon", events.hold_event(won[u], u, f"order-{u}", 12000))
        held[u] = r["body"]
        inv.check(
            f"{u}'s checkout holds the coupon: 20.00 off 120.00",
            r.status == 200
            and r["body"].get("state") == "held"
            and r["body"].get("discount_cents") == 2000,
            str(r["body"]),
        )
    other = stack.invoke("coupon", events.hold_event(won[failed], failed, "order-other", 12000))
    inv.check(
        "another order of the held coupon -> 409 held",
        other.status == 409 and other["body"].get("error") == "held",
        str(other["body"]),
    )
    r = stack.invoke(
        "coupon", events.redeem_event(won[paid], paid, f"order-{paid}", order_total_cents=12000)
    )
    inv.check(
        f"{paid} pays: the hold is redeemed, 20.00 off",
        r.status == 200 and r["body"].get("discount_cents") == 2000,
        str(r["body"]),
    )
    r = stack.invoke("coupon", events.release_event(won[failed], f"order-{failed}"))
    again = stack.invoke("coupon", events.release_event(won[failed], f"order-{failed}"))
    inv.check(
        f"{failed}'s payment fails: the hold released (a repeat answers the same)",
        r.status == 200 and again.status == 200 and again["body"].get("repeat") is True,
        f"{r['body']} {again['body']}",
    )
    mine = stack.invoke("coupon", events.coupons_event(failed))["body"]
    inv.check(
        f"{failed}'s coupon is issued again, theirs to use",
        [(i["code"], i["state"]) for i in mine.get("items", [])] == [(won[failed], "issued")],
        str(mine),
    )
    return {"paid": paid, "failed": failed, "abandoned": abandoned, "held": held}


def lapsed(stack: LocalStack, inv: Checks, won: dict[str, str], checkouts: dict) -> None:
    """The abandoned checkout's hold lapses by itself: the coupon is free for another order."""
    u = checkouts["abandoned"]
    until = checkouts["held"][u].get("held_until", "")
    wait = iso_seconds(until) - time.time() + 0.2 if until else 0
    time.sleep(max(0.0, wait))
    r = stack.invoke("coupon", events.hold_event(won[u], u, f"order-{u}-later", 12000))
    inv.check(
        f"{u}'s abandoned hold lapsed: a later order holds the coupon",
        r.status == 200 and r["body"].get("order_reference") == f"order-{u}-later",
        str(r["body"]),
    )
    checkouts["lapsed_after_s"] = round(max(0.0, wait), 1)


def iso_seconds(text: str) -> float:
    """Unix seconds of an RFC 3339 time."""
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def report_drop(d: dict) -> None:
    c = d["checkouts"]
    print("\n== coupon drop")
    print(f"  campaign {d['campaign_id']}: {DROP_CODES} uploaded codes")
    print("  grabs: " + ", ".join(f"{k}: {n}" for k, n in sorted(d["outcomes"].items(), key=str)))
    print(
        f"  issued {d['winners']}, redeemed {d['redeemed']}, never issued {d['never_issued']}; "
        f"closed by reclaim-cron: {d['closed'].get('campaigns_closed')} campaign"
    )
    print(
        f"  checkouts (20.00 off an order of 120.00): {c['paid']} paid, {c['failed']}'s payment "
        f"failed and the hold released, {c['abandoned']}'s hold lapsed after "
        f"{c.get('lapsed_after_s', 0)} s"
    )
