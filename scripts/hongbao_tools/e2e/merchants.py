"""The merchant fixtures through the runtime: a merchant's budget funded and drawn down
(AWS_IAM, repeats, a principal outside HONGBAO_MERCHANT_PRINCIPALS, no IAM at all, a withdrawal
over the balance), then its books (`GET /merchants/{merchant_id}`), which close."""

from __future__ import annotations

import json

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import OUTSIDER_ARN, State


def merchants(st: LocalStack, c: Checks, s: State) -> None:
    c.section("merchant budgets: events/merchant-*.json through the runtime")
    inv = st.invoke
    deposit = json.loads(events.load_event("merchant-deposit")["body"])
    payout = json.loads(events.load_event("merchant-withdrawal")["body"])
    r = inv("merchant", events.http_event("merchant-deposit"))
    if c.status("merchant-deposit.json", r, 201):
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
    c.status("merchant-withdrawal.json", r, 201)
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
