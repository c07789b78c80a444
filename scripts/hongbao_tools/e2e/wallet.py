"""The wallet fixtures through the runtime: deposits and withdrawals (AWS_IAM, repeats,
principals outside HONGBAO_DEPOSIT_PRINCIPALS, a withdrawal over the balance), then `GET /wallet`
once the red-packet fixtures have moved money (`packets.fixtures` calls both)."""

from __future__ import annotations

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import OUTSIDER_ARN, RFC3339, State


def movements(st: LocalStack, c: Checks, s: State) -> None:
    inv = st.invoke
    # POST /wallet/deposits (AWS_IAM): applied, then a repeat.
    r = inv("wallet", events.http_event("wallet-deposit"))
    b = r["body"]
    if c.status("wallet-deposit.json", r, 201):
        c.check(
            "deposit body {user_id alice, balance_cents 100000, reference dep-1, repeat false}",
            b
            == {"user_id": "alice", "balance_cents": 100000, "reference": "dep-1", "repeat": False},
            str(b),
        )
        s.deposits += 100000
    r = inv("wallet", events.http_event("wallet-deposit"))
    c.status("wallet-deposit.json again", r, 201)
    c.check(
        "repeat deposit: repeat true, balance unchanged",
        r["body"].get("repeat") is True and r["body"].get("balance_cents") == 100000,
        str(r["body"]),
    )
    r = inv("wallet", events.http_event("wallet-deposit-no-iam"))
    c.status("wallet-deposit-no-iam.json", r, 403, "forbidden")
    # An IAM caller outside HONGBAO_DEPOSIT_PRINCIPALS (the sandboxes allow the fixture's role).
    outsider = events.http_event("wallet-deposit")
    outsider["requestContext"]["authorizer"]["iam"]["userArn"] = OUTSIDER_ARN
    r = inv("wallet", outsider)
    c.status(
        "wallet-deposit.json from a principal not in HONGBAO_DEPOSIT_PRINCIPALS",
        r,
        403,
        "forbidden",
    )

    # POST /wallet/withdrawals (AWS_IAM): applied, a repeat, more than the balance, no IAM.
    r = inv("wallet", events.http_event("wallet-withdrawal"))
    if c.status("wallet-withdrawal.json", r, 201):
        c.check(
            "withdrawal body {user_id alice, balance_cents 97500, reference wd-1, repeat false}",
            r["body"]
            == {"user_id": "alice", "balance_cents": 97500, "reference": "wd-1", "repeat": False},
            str(r["body"]),
        )
        s.withdrawals += 2500
    r = inv("wallet", events.http_event("wallet-withdrawal"))
    c.check(
        "wallet-withdrawal.json again -> 201, repeat true, balance unchanged",
        r.get("statusCode") == 201
        and r["body"].get("repeat") is True
        and r["body"].get("balance_cents") == 97500,
        str(r["body"]),
    )
    too_much = events.http_event(
        "wallet-withdrawal",
        body={"user_id": "alice", "amount_cents": 10**9, "reference": "wd-too-much"},
    )
    r = inv("wallet", too_much)
    if c.status("a withdrawal over the balance", r, 402, "insufficient_funds"):
        c.check(
            "402 names the balance (97500)", r["body"].get("balance_cents") == 97500, str(r["body"])
        )
    r = inv("wallet", events.http_event("wallet-withdrawal", auth=False))
    c.status("wallet-withdrawal.json without the IAM authorizer", r, 403, "forbidden")


def entries(st: LocalStack, c: Checks, pid: str, amount: int | None) -> None:
    inv = st.invoke
    # GET /wallet
    r = inv("wallet", events.http_event("wallet-get"))
    b = r["body"]
    if c.status("wallet-get.json (alice)", r, 200):
        kinds = [(e["kind"], e["amount_cents"]) for e in b.get("entries", [])]
        c.check(
            "alice: balance 86500, entries newest first: 2 packet debits, 1 withdrawal, 1 deposit",
            b.get("user_id") == "alice"
            and b.get("balance_cents") == 86500
            and kinds
            == [
                ("packet_debit", -1000),
                ("packet_debit", -10000),
                ("withdrawal", -2500),
                ("deposit", 100000),
            ]
            and all(RFC3339.match(e["at"]) for e in b["entries"]),
            str(b)[:500],
        )
    r = inv("wallet", events.wallet_event("bob"))
    if c.status("wallet-get.json as bob", r, 200):
        e = r["body"].get("entries", [])
        c.check(
            "bob: one claim_credit entry referencing the packet",
            r["body"].get("balance_cents") == amount
            and len(e) == 1
            and e[0]["kind"] == "claim_credit"
            and e[0]["amount_cents"] == amount
            and e[0]["reference"] == pid,
            str(r["body"]),
        )
