"""The merchant fixtures through the runtime: a merchant's budget funded and drawn down
(AWS_IAM, repeats, a principal outside HONGBAO_MERCHANT_PRINCIPALS, no IAM at all, a withdrawal
over the balance), then its books (`GET /merchants/{merchant_id}`), which close."""

from __future__ import annotations

import json

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import OUTSIDER_ARN, State, replayed


def merchants(st: LocalStack, c: Checks, s: State) -> None:
    c.section("merchant budgets: events/merchant-*.json through the runtime")
    inv = st.invoke
    deposit = json.loads(events.load_event("merchant-deposit")["body"])
    payout = json.loads(events.load_event("merchant-withdrawal")["body"])
    r = inv("merchant", events.http_event("merchant-deposit"))
    if c.status("merchant-deposit.json", r, 201):
        s.merchants.add(r["body"]["merchant_id"])
        s.merchant_net += deposit["amount_cents"]
        c.check(
            "deposit body {merchant_id shop-1042, balance = the deposit, repeat false}",
            r["body"]
            == {
                "merchant_id": "shop-1042",
                "balance_cents": deposit["amount_cents"],
                "reference": deposit["reference"],
                "repeat": False,
            },
            str(r["body"]),
        )
    r = inv("merchant", events.http_event("merchant-deposit"))
    c.check(
        "merchant-deposit.json again -> 201, repeat true, balance unchanged",
        r.get("statusCode") == 201
        and r["body"].get("repeat") is True
        and r["body"].get("balance_cents") == deposit["amount_cents"],
        str(r["body"]),
    )
    outsider = events.http_event("merchant-deposit", user_arn=OUTSIDER_ARN)
    r = inv("merchant", outsider)
    c.status(
        "merchant-deposit.json from a principal not in HONGBAO_MERCHANT_PRINCIPALS",
        r,
        403,
        "forbidden",
    )
    r = inv("merchant", events.http_event("merchant-deposit", auth=False))
    c.status("merchant-deposit.json without the IAM authorizer", r, 403, "forbidden")
    left = deposit["amount_cents"] - payout["amount_cents"]
    r = inv("merchant", events.http_event("merchant-withdrawal"))
    if c.status("merchant-withdrawal.json", r, 201):
        s.merchant_net -= payout["amount_cents"]
    c.check(f"withdrawal leaves {left} cents", r["body"].get("balance_cents") == left, str(r))
    too_much = events.http_event(
        "merchant-withdrawal", body={"amount_cents": 10**9, "reference": "payout-too-much"}
    )
    r = inv("merchant", too_much)
    if c.status("a merchant withdrawal over the balance", r, 402, "insufficient_funds"):
        c.check(f"402 names the balance ({left})", r["body"].get("balance_cents") == left)
    r = inv("merchant", events.http_event("merchant-get"))
    if c.status("merchant-get.json", r, 200):
        b = r["body"]
        c.check(
            "the books: deposited - withdrawn = balance, two ledger entries",
            b.get("deposited_cents") - b.get("withdrawn_cents") == b.get("balance_cents") == left
            and [e.get("kind") for e in b.get("ledger", [])] == ["withdrawal", "deposit"],
            str(b)[:300],
        )
    merchant_packets(st, c, s, left)


def merchant_packets(st: LocalStack, c: Checks, s: State, balance: int) -> None:
    """events/merchant-create-packet.json through the merchant function: an order's packet paid
    from the budget (the sharer's share taken at creation), the same body again (201, the same
    packet, debited once), another body under the order (409); then a member grabs and claims it
    through the grab and claim functions, and the view names the merchant."""
    c.section("merchant packets: events/merchant-create-packet.json through the runtime")
    inv = st.invoke
    order = json.loads(events.load_event("merchant-create-packet")["body"])
    r = inv("merchant", events.http_event("merchant-create-packet"))
    if not c.status("merchant-create-packet.json", r, 201):
        return
    packet = r["body"]
    pid = packet["packet_id"]
    s.packets.append(pid)
    c.check(
        "the packet names the merchant, the sharer (its sender) and the payout; not a repeat",
        (packet.get("merchant_id"), packet.get("sharer_id"), packet.get("sender_id"))
        == (order["merchant_id"], order["sharer_id"], order["sharer_id"])
        and packet.get("payout") == order["payout"]
        and packet.get("repeat") is False,
        str(packet)[:300],
    )
    r = inv("merchant", events.http_event("merchant-create-packet"))
    c.check(
        "merchant-create-packet.json again -> 201, repeat true, replayed, the same packet",
        r.get("statusCode") == 201
        and replayed(r)
        and r["body"].get("repeat") is True
        and r["body"].get("packet_id") == pid,
        str(r.get("body"))[:300],
    )
    other = events.http_event("merchant-create-packet", body={**order, "count": 5})
    r = inv("merchant", other)
    if c.status("another body under the order", r, 409, "order_reference_reused"):
        c.check("409 names the order's packet", r["body"].get("packet_id") == pid)
    r = inv("merchant", events.http_event("merchant-get"))
    if c.status("merchant-get.json after the packet", r, 200):
        b = r["body"]
        c.check(
            f"the budget paid once: balance {balance - order['total_cents']}, "
            f"reserved {order['total_cents']}",
            (b.get("balance_cents"), b.get("reserved_cents"))
            == (balance - order["total_cents"], order["total_cents"]),
            str(b)[:300],
        )
    r = inv("merchant", events.http_event("merchant-list-packets"))
    if c.status("merchant-list-packets.json", r, 200):
        items = r["body"].get("items", [])
        c.check(
            "the merchant's packets: the order's packet, open, the sharer's share grabbed",
            [(i.get("packet_id"), i.get("order_reference"), i.get("status")) for i in items]
            == [(pid, order["order_reference"], "open")]
            and items[0].get("grabbed_count") == 1,
            str(r["body"])[:300],
        )
    r = inv("grab", events.http_event("grab-grab", packet_id=pid, sub="member-1"))
    c.status("a group member grabs the merchant packet", r, 200)
    r = inv("grab", events.http_event("grab-grab", packet_id=pid, sub=order["sharer_id"]))
    c.status("the sharer's share was taken at creation", r, 409, "already_grabbed")
    r = inv("claim", events.http_event("claim-claim", packet_id=pid, sub="member-1"))
    c.status("the member claims it into their wallet", r, 200)
    r = inv("merchant", events.http_event("merchant-get"))
    if c.status("merchant-get.json after the claim", r, 200):
        b = r["body"]
        c.check(
            "the claim moved its share from reserved to paid_cash; the books close",
            b.get("paid_cash_cents", 0) > 0
            and b.get("reserved_cents") + b.get("paid_cash_cents") == order["total_cents"]
            and b.get("deposited_cents") - b.get("withdrawn_cents")
            == b.get("balance_cents") + b.get("reserved_cents") + b.get("paid_cash_cents"),
            str(b)[:300],
        )
    coupon_packet(st, c, s, order)
    low_balance(st, c, s)


def coupon_packet(st: LocalStack, c: Checks, s: State, order: dict) -> None:
    """Another order's packet paid out as coupons: a member's claim becomes their coupon (in
    `GET /coupons`, no cash), redeemed at checkout through the coupon function; the books move
    it from reserved to outstanding to paid_coupons, and close."""
    inv = st.invoke
    body = {
        **order,
        "order_reference": order["order_reference"] + "-coupon",
        "sharer_first": False,
        "payout": "coupon",
        "coupon": {"min_order_cents": 1_000, "redeem_within_secs": 86_400},
    }
    r = inv("merchant", events.http_event("merchant-create-packet", body=body))
    if not c.status("a merchant packet paid out as coupons", r, 201):
        return
    pid = r["body"]["packet_id"]
    s.packets.append(pid)
    c.check(
        "the packet shows its coupon terms",
        r["body"].get("payout") == "coupon"
        and r["body"].get("coupon", {}).get("min_order_cents") == 1_000,
        str(r["body"])[:300],
    )
    r = inv("grab", events.http_event("grab-grab", packet_id=pid, sub="member-2"))
    c.status("a group member grabs the coupon packet", r, 200)
    r = inv("claim", events.http_event("claim-claim", packet_id=pid, sub="member-2"))
    if not c.status("the member claims the share as a coupon", r, 200):
        return
    coupon = r["body"].get("coupon") or {}
    c.check(
        "the claim answers the coupon (code <packet_id>.<share_id>, worth the share), no cash",
        coupon.get("code") == f"{pid}.{r['body']['share_id']}"
        and coupon.get("amount_off_cents") == r["body"]["amount_cents"]
        and r["body"].get("balance_cents") == 0,
        str(r["body"])[:300],
    )
    r = inv("coupon", events.coupons_event("member-2"))
    c.check(
        "GET /coupons lists the member's coupon, issued",
        r.get("statusCode") == 200
        and [(i.get("code"), i.get("state")) for i in r["body"].get("items", [])]
        == [(coupon.get("code"), "issued")],
        str(r.get("body"))[:300],
    )
    redeem = events.http_event(
        "coupon-redeem",
        body={
            "code": coupon.get("code"),
            "user_id": "member-2",
            "order_reference": "shop-order-e2e",
            "order_total_cents": 5_000,
        },
    )
    r = inv("coupon", redeem)
    if c.status("the coupon redeemed at checkout", r, 200):
        c.check(
            "the order's discount is the share",
            r["body"].get("discount_cents") == coupon.get("amount_off_cents"),
            str(r["body"])[:300],
        )
    r = inv("merchant", events.http_event("merchant-get"))
    if c.status("merchant-get.json after the redemption", r, 200):
        b = r["body"]
        c.check(
            "the redemption moved the share to paid_coupons; the books close",
            b.get("paid_coupon_cents") == coupon.get("amount_off_cents")
            and b.get("deposited_cents") - b.get("withdrawn_cents")
            == sum(
                b.get(k, 0)
                for k in (
                    "balance_cents",
                    "reserved_cents",
                    "outstanding_coupon_cents",
                    "paid_cash_cents",
                    "paid_coupon_cents",
                )
            ),
            str(b)[:300],
        )


def low_balance(st: LocalStack, c: Checks, s: State) -> None:
    """A withdrawal that leaves the budget below HONGBAO_MERCHANT_LOW_BALANCE_CENTS (10,000 by
    default) counts MerchantLowBalance (the low-balance alarm's metric) in the merchant's EMF."""
    pool = st["merchant"]

    def counted() -> float:
        pool.wait_reports()
        key = ("merchant", "MerchantLowBalance")
        return sum(sum(sb.emf.samples.get(key, [])) for sb in pool.sandboxes)

    before = counted()
    balance = st.invoke("merchant", events.http_event("merchant-get"))["body"]["balance_cents"]
    out = balance - 100
    r = st.invoke(
        "merchant",
        events.http_event(
            "merchant-withdrawal", body={"amount_cents": out, "reference": "payout-low"}
        ),
    )
    if c.status("a withdrawal leaving 1.00 in the budget", r, 201):
        s.merchant_net -= out
    c.check(
        "it counts MerchantLowBalance once (the merchant's EMF line)",
        counted() - before == 1,
        f"{counted() - before}",
    )
