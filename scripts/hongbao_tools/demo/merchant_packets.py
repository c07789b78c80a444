"""The demo's merchant scenario (seed 000: "用户分享红包到微信群中。每一个用户只能领取一个红包"):
a merchant's budget funded with 1,000.00; 20 orders each sharing a 20.00 packet of 6 shares to
a group of 8 (every other order's sharer takes the first share at creation; every other order
pays its shares out as coupons, Ele.me's vouchers, the rest into wallets), each create sent
twice as a retrying backend would; the seed's own test, 100 concurrent grabbers for one order's
5 shares; the members' claims (about a fifth never claim); a few coupons redeemed at checkout
(one order failing and releasing its coupon); expiry and reclaim-cron returning the unclaimed
shares to the merchant, never to the sharers, and at the coupons' redeem-by the coupons never
redeemed; then the merchant's books, printed and checked: deposited - withdrawn = balance +
reserved + outstanding coupons + paid out, to the cent."""

from __future__ import annotations

import random
import time
from collections import Counter

from .. import events
from ..checks import Checks
from ..report import cents as money
from ..report import parse_rfc3339
from ..rie import LocalStack

MERCHANT = "shop-1042"  # the merchant of events/merchant-*.json
BUDGET_CENTS = 100_000
ORDERS = 20
ORDER_TOTAL = 2_000
ORDER_SHARES = 6
GROUP = 8  # the sharer and 7 friends
SEED_TOTAL = 2_000
SEED_SHARES = 5
SEED_GRABBERS = 100
COUPON_MIN_ORDER = 3_000  # a share's coupon applies to orders of 30.00 or more
REDEEM_WITHIN_SECS = 3  # the coupons stay redeemable this long after the packet expires
REDEEMED = 6  # coupons redeemed at checkout (one of them released by a failed order)


def order_body(
    order: str, sharer: str, total: int, count: int, expires: int, first: bool, coupon: bool
) -> dict:
    """The body of `POST /merchant-packets` for `order`, paid out as coupons or into wallets."""
    body = {
        "merchant_id": MERCHANT,
        "order_reference": order,
        "sharer_id": sharer,
        "total_cents": total,
        "count": count,
        "payout": "coupon" if coupon else "wallet",
        "sharer_first": first,
        "expires_in_secs": expires,
        "greeting": "谢谢惠顾 · thanks for your order",
    }
    if coupon:
        body["coupon"] = {
            "min_order_cents": COUPON_MIN_ORDER,
            "redeem_within_secs": REDEEM_WITHIN_SECS,
        }
    return body


def merchant_event(fixture: str, body: dict | None = None) -> dict:
    """A merchant fixture (AWS_IAM, the merchant of the fixtures) with `body`."""
    return events.http_event(fixture, body=body) if body else events.http_event(fixture)


def books(stack: LocalStack) -> dict:
    """The merchant's books (`GET /merchants/{merchant_id}`)."""
    return stack.invoke("merchant", merchant_event("merchant-get"))["body"]


def closes(b: dict) -> bool:
    """Whether the books close: deposited - withdrawn = where every cent is now."""
    return b["deposited_cents"] - b["withdrawn_cents"] == (
        b["balance_cents"]
        + b["reserved_cents"]
        + b["outstanding_coupon_cents"]
        + b["paid_cash_cents"]
        + b["paid_coupon_cents"]
    )


def merchant_packets(stack: LocalStack, args, rng: random.Random, inv: Checks) -> dict:
    """Plays the scenario; returns what the report prints."""
    grab_pool, claim_pool = stack["grab"], stack["claim"]
    expires = args.expires_in + 4
    r = stack.invoke(
        "merchant",
        merchant_event(
            "merchant-deposit", {"amount_cents": BUDGET_CENTS, "reference": "demo-budget-1"}
        ),
    )
    inv.check("the merchant's budget funded with 1,000.00 -> 201", r.status == 201, str(r["body"]))

    # 20 orders' packets and the seed's order, each create sent twice (a retry).
    bodies = [
        order_body(
            f"order-{i:04d}",
            f"sharer-{i:02d}",
            ORDER_TOTAL,
            ORDER_SHARES,
            expires,
            i % 2 == 0,
            i % 4 >= 2,
        )
        for i in range(ORDERS)
    ]
    bodies.append(
        order_body("order-seed", "sharer-seed", SEED_TOTAL, SEED_SHARES, expires, False, False)
    )
    coupon_orders = {b["order_reference"] for b in bodies if b["payout"] == "coupon"}
    creates = stack["merchant"].map(
        [merchant_event("merchant-create-packet", b) for b in bodies for _ in range(2)],
        threads=8,
    )
    statuses = Counter((c.status, c.replayed) for c in creates)
    inv.check(
        f"{len(bodies)} orders, each created twice: 201 for both, one of them a replay "
        "(Idempotent-Replayed) per order",
        statuses == Counter({(201, False): len(bodies), (201, True): len(bodies)}),
        str(dict(statuses)),
    )
    packets = {b["order_reference"]: creates[2 * i]["body"] for i, b in enumerate(bodies)}
    inv.check(
        "each order's two answers name the same packet",
        all(
            creates[2 * i]["body"].get("packet_id") == creates[2 * i + 1]["body"].get("packet_id")
            for i in range(len(bodies))
        ),
    )
    debited = ORDERS * ORDER_TOTAL + SEED_TOTAL
    b = books(stack)
    inv.check(
        f"the budget paid {money(debited)} once: reserved {money(debited)}",
        (b["balance_cents"], b["reserved_cents"]) == (BUDGET_CENTS - debited, debited)
        and closes(b),
        str(b)[:300],
    )

    # The seed's test: 100 concurrent grabbers, 5 shares.
    seed_id = packets["order-seed"]["packet_id"]
    crowd = [f"seed-{i:03d}" for i in range(SEED_GRABBERS)]
    seed_grabs = grab_pool.map([events.grab_event(seed_id, u) for u in crowd], threads=args.threads)
    seed_won = {u: g["body"] for u, g in zip(crowd, seed_grabs, strict=True) if g.status == 200}
    inv.check(
        f"the seed's test: {SEED_GRABBERS} concurrent grabbers, exactly {SEED_SHARES} winners, "
        "each once, the shares sum to 20.00",
        len(seed_won) == SEED_SHARES
        and sum(s["amount_cents"] for s in seed_won.values()) == SEED_TOTAL
        and sum(1 for g in seed_grabs if g.status == 410) == SEED_GRABBERS - SEED_SHARES,
        str(Counter(g.status for g in seed_grabs)),
    )

    # Each order's group grabs its packet at once.
    jobs = [
        (f"order-{i:04d}", f"o{i:02d}-friend-{j}") for i in range(ORDERS) for j in range(GROUP - 1)
    ]
    rng.shuffle(jobs)
    grabs = grab_pool.map(
        [events.grab_event(packets[o]["packet_id"], u) for o, u in jobs], threads=args.threads
    )
    won: dict[str, dict[str, int]] = {o: {} for o in packets}
    for (o, u), g in zip(jobs, grabs, strict=True):
        if g.status == 200:
            won[o][u] = g["body"]["amount_cents"]
    for u, s in seed_won.items():
        won["order-seed"][u] = s["amount_cents"]
    for i in range(0, ORDERS, 2):
        o = f"order-{i:04d}"
        v = stack.invoke("grab", events.view_event(packets[o]["packet_id"], f"sharer-{i:02d}"))
        mine = [g for g in v["body"].get("grabs", []) if g.get("user_id") == f"sharer-{i:02d}"]
        if mine:
            won[o][f"sharer-{i:02d}"] = mine[0]["amount_cents"]
    inv.check(
        "every order's 6 shares went to 6 members (the sharer's first where asked), one each",
        all(len(won[f"order-{i:04d}"]) == ORDER_SHARES for i in range(ORDERS))
        and all(sum(won[f"order-{i:04d}"].values()) == ORDER_TOTAL for i in range(ORDERS)),
        str({o: len(w) for o, w in won.items()}),
    )

    # Claims: about a fifth of the winners never claim.
    winners = sorted((o, u) for o in won for u in won[o])
    skip = set(rng.sample(winners, round(len(winners) * args.no_claim)))
    claim_jobs = [w for w in winners if w not in skip]
    claims = claim_pool.map(
        [events.claim_event(packets[o]["packet_id"], u) for o, u in claim_jobs],
        threads=min(args.threads, 16),
    )
    answered = list(zip(claim_jobs, claims, strict=True))
    paid = sum(won[o][u] for (o, u), c in answered if c.status == 200 and o not in coupon_orders)
    coupons = {
        (o, u): c["body"]["coupon"]
        for (o, u), c in answered
        if c.status == 200 and o in coupon_orders
    }
    issued = sum(c["amount_off_cents"] for c in coupons.values())
    inv.check(
        f"{len(claim_jobs)} claims ({len(skip)} never claim): {money(paid)} into the members' "
        f"wallets, {len(coupons)} shares ({money(issued)}) became coupons, no cash",
        all(c.status == 200 for c in claims)
        and all(("coupon" in c["body"]) == (o in coupon_orders) for (o, _), c in answered),
        str(Counter(c.status for c in claims)),
    )
    b = books(stack)
    inv.check(
        f"the claims moved {money(paid)} from reserved to paid out in cash and {money(issued)} "
        "to outstanding coupons; the books close",
        b["paid_cash_cents"] == paid
        and b["outstanding_coupon_cents"] == issued
        and b["reserved_cents"] == debited - paid - issued
        and closes(b),
        str(b)[:300],
    )

    # A few coupons redeemed at checkout; one order fails and releases its coupon.
    redeemed_value = checkout(stack, sorted(coupons.items()), inv)

    # Expiry: reclaim-cron returns the rest to the merchant.
    deadline = max(parse_rfc3339(p["expires_at"]) for p in packets.values())
    time.sleep(max(0.0, deadline - time.time() + 0.3))
    r = stack.invoke("reclaim-cron", events.scheduled_event())
    inv.check(
        f"reclaim-cron settles the {len(packets)} packets and returns "
        f"{money(debited - paid - issued)} (the shares never claimed) to the merchant",
        r.get("settled") == len(packets) and r.get("refunded_cents") == debited - paid - issued,
        str(dict(r)),
    )
    # The coupons' redeem-by: those never redeemed go back to the merchant too.
    time.sleep(REDEEM_WITHIN_SECS + 0.3)
    unredeemed = issued - redeemed_value
    r2 = stack.invoke("reclaim-cron", events.scheduled_event())
    inv.check(
        f"at the coupons' redeem-by reclaim-cron returns the {money(unredeemed)} never redeemed",
        r2.get("refunded_cents") == unredeemed,
        str(dict(r2)),
    )
    final = books(stack)
    inv.check(
        "the merchant's books close: deposited - withdrawn = balance + reserved + outstanding "
        "+ paid out",
        closes(final)
        and final["reserved_cents"] == 0
        and final["outstanding_coupon_cents"] == 0
        and final["balance_cents"] == BUDGET_CENTS - paid - redeemed_value
        and final["paid_cash_cents"] == paid
        and final["paid_coupon_cents"] == redeemed_value,
        str(final)[:300],
    )
    unpaid = [
        (o, u)
        for (o, u) in skip
        if stack.invoke("wallet", events.wallet_event(u))["body"]["balance_cents"] != 0
    ]
    inv.check(
        "no one got cash they did not claim (the sharers' unclaimed shares went to the merchant)",
        not unpaid,
        str(unpaid[:5]),
    )
    return {
        "orders": len(packets),
        "debited": debited,
        "seed_won": seed_won,
        "winners": len(winners),
        "claims": len(claim_jobs),
        "paid": paid,
        "coupons": len(coupons),
        "issued": issued,
        "redeemed": redeemed_value,
        "refunded": r.get("refunded_cents"),
        "coupons_refunded": r2.get("refunded_cents"),
        "books": final,
    }


def checkout(stack: LocalStack, coupons: list, inv: Checks) -> int:
    """Redeems the first REDEEMED of `coupons` ((order, user) -> the claim's coupon) at
    checkout, each for an order of 50.00 sent twice (a retry answers `repeat`); the last
    order fails and releases its coupon, which becomes redeemable again. Returns the cents of
    the coupons left redeemed."""
    chosen = coupons[:REDEEMED]
    results = []
    for i, ((_, user), coupon) in enumerate(chosen):
        order = f"shop-order-{i:03d}"
        ev = events.http_event(
            "coupon-redeem",
            body={
                "code": coupon["code"],
                "user_id": user,
                "order_reference": order,
                "order_total_cents": 5_000,
            },
        )
        first, again = stack.invoke("coupon", ev), stack.invoke("coupon", ev)
        results.append((first, again, coupon))
    inv.check(
        f"{len(chosen)} coupons redeemed at checkout, each taking its share off an order of "
        "50.00; each redeem sent twice answers repeat",
        all(
            f.status == 200
            and f["body"]["discount_cents"] == c["amount_off_cents"]
            and not f["body"]["repeat"]
            and a.status == 200
            and a["body"]["repeat"]
            for f, a, c in results
        ),
        str([(f.status, a.status) for f, a, _ in results]),
    )
    (_, user), failed = chosen[-1]
    r = stack.invoke(
        "coupon", events.release_event(failed["code"], f"shop-order-{len(chosen) - 1:03d}")
    )
    inv.check(
        "the last order failed: its release puts the coupon back, outstanding again",
        r.status == 200 and r["body"]["released"] == "redemption",
        str(r["body"])[:200],
    )
    low = stack.invoke(
        "coupon",
        events.http_event(
            "coupon-redeem",
            body={
                "code": failed["code"],
                "user_id": user,
                "order_reference": "shop-order-small",
                "order_total_cents": COUPON_MIN_ORDER - 1,
            },
        ),
    )
    inv.check(
        "an order below the coupons' minimum (30.00) is refused (422), nothing written",
        low.status == 422,
        str(low["body"])[:200],
    )
    return sum(c["amount_off_cents"] for _, c in chosen[:-1])


def report_merchant(m: dict) -> None:
    """Prints the merchant scenario and the merchant's books."""
    b = m["books"]
    print(f"\nMerchant packets ({MERCHANT}): {m['orders']} orders' packets, {money(m['debited'])}")
    seed = ", ".join(f"{u} {money(a['amount_cents'])}" for u, a in sorted(m["seed_won"].items()))
    print(f"  the seed's test, {SEED_GRABBERS} grabbers for {SEED_SHARES} shares: {seed}")
    print(
        f"  {m['winners']} shares won, {m['claims']} claimed: {money(m['paid'])} in cash, "
        f"{m['coupons']} coupons worth {money(m['issued'])} ({money(m['redeemed'])} redeemed "
        f"at checkout)"
    )
    print(
        f"  returned to the merchant: {money(m['refunded'])} at expiry (shares never claimed), "
        f"{money(m['coupons_refunded'])} at the coupons' redeem-by (never redeemed)"
    )
    print("  the merchant's books:")
    for label, key in (
        ("deposited", "deposited_cents"),
        ("withdrawn", "withdrawn_cents"),
        ("balance", "balance_cents"),
        ("reserved in open packets", "reserved_cents"),
        ("outstanding coupons", "outstanding_coupon_cents"),
        ("paid out in cash", "paid_cash_cents"),
        ("paid out as coupons", "paid_coupon_cents"),
    ):
        print(f"    {label:<26}{money(b[key]):>12}")
    right = (
        b["balance_cents"]
        + b["reserved_cents"]
        + b["outstanding_coupon_cents"]
        + b["paid_cash_cents"]
        + b["paid_coupon_cents"]
    )
    print(
        f"    deposited - withdrawn = {money(b['deposited_cents'] - b['withdrawn_cents'])} = "
        f"balance + reserved + outstanding + paid = {money(right)}"
    )
