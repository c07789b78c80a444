#!/usr/bin/env python3
"""End-to-end tests of the hongbao functions through the real Lambda runtime path.

The release `bootstrap` binaries (target/release/<name>) run under the AWS Lambda Runtime
Interface Emulator (what `sam local invoke` runs inside its container), one RIE process per
sandbox, against a private redis-server on a free port. The script:

1. invokes every events/ fixture and checks status codes and bodies against the contract
   (red packets, wallets, deposits and withdrawals; order codes: next-order-code-*.json;
   voting: vote-*.json; coupon drops: coupon-*.json, a campaign of uploaded codes from its
   creation to its redemptions, one of generated codes, and the caller's coupons; chat
   packets: create-packet-password.json, grab-grab-password.json, create-packet-cancel.json,
   a scheduled packet);
   then checks that a function reads only its own settings (a broken HONGBAO_VOTE_SITE fails
   the vote function's Init, naming the variable, while grab answers; so does a broken
   HONGBAO_COUPON_VISIT_WINDOW_MS the coupon function's);
2. grabs one 100-share packet with 1,000 distinct users from 32 client threads over 8 grab
   sandboxes: exactly 100 winners, 900 `sold_out`, amounts summing to the total;
3. lets a short-lived packet expire and checks reclaim-cron refunds total - claimed;
4. checks money conservation over every wallet in Redis;
5. prints cold start (RIE INIT REPORT) and warm latency (client side and RIE `Duration`)
   per function.

It builds nothing: run `cargo build --release -p create-packet -p grab -p claim -p reclaim-cron
-p wallet -p next-order-code -p vote -p coupon` first (`make release` does). Prints PASS/FAIL per
check; exit code 0 only if all pass.

    .venv/bin/python scripts/e2e_rie.py [--grab-sandboxes 8] [--grabbers 1000] [--threads 32]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
import traceback
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from hongbao_tools import events
from hongbao_tools.checks import Checks, check_conservation
from hongbao_tools.deps import BUILD_COMMAND, FUNCTIONS, find_rie, missing_binaries
from hongbao_tools.paths import ROOT
from hongbao_tools.procs import install_signal_handlers
from hongbao_tools.report import parse_rfc3339, percentile
from hongbao_tools.rie import InvocationError, LocalStack, Sandbox

PACKET_FIELDS = {
    "packet_id",
    "sender_id",
    "total_cents",
    "count",
    "mode",
    "split",
    "greeting",
    "created_at",
    "expires_at",
}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PACKET_ID = re.compile(r"^[0-9a-f]{24}$")
DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)$")
BUSINESS_TZ = "Asia/Shanghai"  # HONGBAO_BUSINESS_TZ default (the sandboxes do not set it)
ORDER_CODE_DIGITS = 5  # HONGBAO_ORDER_CODE_DIGITS default
VOTE_SCORE = 432  # score = posted Unix s + 432 x votes
CAMPAIGN_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{5}$")
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
# An IAM caller outside HONGBAO_COUPON_PRINCIPALS (the sandboxes allow the fixtures' role).
OUTSIDER_ARN = "arn:aws:sts::123456789012:assumed-role/some-other-role/x"


def is_packet_body(b: dict) -> bool:
    return (
        isinstance(b, dict)
        and b.keys() >= PACKET_FIELDS
        and bool(PACKET_ID.match(b["packet_id"]))
        and bool(RFC3339.match(b["created_at"]))
        and bool(RFC3339.match(b["expires_at"]))
    )


class State:
    """What the sections share."""

    def __init__(self) -> None:
        self.deposits = 0
        self.withdrawals = 0
        self.packets: list[str] = []
        self.lucky_id: str | None = None
        self.fixed_id: str | None = None
        self.bob_share: dict | None = None
        self.order_codes: list[str] = []  # every order code handed out in this run
        self.article_id: str | None = None
        self.campaign_id: str | None = None
        self.cold: dict[str, list[tuple[float, float | None, float]]] = {}
        self.latency: dict[str, tuple[list[float], list[float]]] = {}


# --------------------------------------------------------------------------------------------


def cold_starts(st: LocalStack, c: Checks, s: State) -> None:
    """Invokes every fresh sandbox once, one at a time, with a cheap request: its cold start."""
    c.section("cold start of every sandbox (one at a time)")
    cheap = {
        "wallet": (lambda: events.wallet_event("coldstart"), 200, None),
        "create-packet": (
            lambda: events.create_event("coldstart", 100, 1),
            402,
            "insufficient_funds",
        ),
        "grab": (lambda: events.view_event(events.NO_SUCH_PACKET, "coldstart"), 404, "not_found"),
        "claim": (lambda: events.claim_event(events.NO_SUCH_PACKET, "coldstart"), 404, "not_found"),
        "reclaim-cron": (events.scheduled_event, None, None),
        "next-order-code": (lambda: events.order_codes_event("coldstart"), 201, None),
        "vote": (lambda: events.list_articles_event(sub="coldstart"), 200, None),
        "coupon": (
            lambda: events.campaign_event(events.NO_SUCH_CAMPAIGN, "coldstart"),
            404,
            "not_found",
        ),
    }
    for fn, pool in st.pools.items():
        make, status, error = cheap[fn]
        statuses = []
        for sb in pool.sandboxes:
            r = sb.invoke(make())
            statuses.append(r.get("statusCode") if status else ("settled" in r))
            if fn == "next-order-code" and r.get("statusCode") == 201:
                s.order_codes += r["body"].get("codes", [])
            sb.wait_reports()
            first = sb.reports[0].duration_ms if sb.reports else float("nan")
            s.cold.setdefault(fn, []).append(
                (sb.cold_start_ms or float("nan"), sb.report_init_duration_ms, r.client_ms, first)
            )
        want = status if status else True
        c.check(
            f"{fn}: {len(pool)} sandbox(es) cold-started, first invoke answers "
            f"{status or 'a summary'}{' ' + error if error else ''}",
            all(x == want for x in statuses),
            f"got {statuses}",
        )


def fixtures(st: LocalStack, c: Checks, s: State) -> None:
    c.section("events/ fixtures through the runtime")
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
    outsider["requestContext"]["authorizer"]["iam"]["userArn"] = (
        "arn:aws:sts::123456789012:assumed-role/some-other-role/x"
    )
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

    # POST /packets
    r = inv("create-packet", events.http_event("create-packet-lucky"))
    b = r["body"]
    if c.status("create-packet-lucky.json", r, 201):
        c.check(
            "lucky packet body has the contract fields",
            is_packet_body(b)
            and b["sender_id"] == "alice"
            and b["total_cents"] == 10000
            and b["count"] == 100
            and b["mode"] == "lucky"
            and b["split"] == "double_mean"
            and b["greeting"] is None,
            str(b),
        )
        s.lucky_id = b["packet_id"]
        s.packets.append(b["packet_id"])
        span = parse_rfc3339(b["expires_at"]) - parse_rfc3339(b["created_at"])
        c.check("default expiry is one day", abs(span - 86400) < 0.01, f"{span} s")
    r = inv("create-packet", events.http_event("create-packet-fixed"))
    b = r["body"]
    if c.status("create-packet-fixed.json", r, 201):
        c.check(
            "fixed packet body: mode fixed, split null, 10 x 100",
            is_packet_body(b)
            and b["mode"] == "fixed"
            and b["split"] is None
            and b["total_cents"] == 1000
            and b["count"] == 10,
            str(b),
        )
        s.fixed_id = b["packet_id"]
        s.packets.append(b["packet_id"])
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


def chat_packets(st: LocalStack, c: Checks, s: State) -> None:
    """The chat-packet fixtures through the runtime: a password packet (create-packet-password,
    grab-grab-password), cancelled by its sender (create-packet-cancel), and a scheduled one."""
    c.section("chat packets: password, cancel, scheduled (events/ fixtures)")
    inv = st.invoke
    r = inv("create-packet", events.http_event("create-packet-password"))
    b = r["body"]
    if not c.status("create-packet-password.json", r, 201):
        return
    pid = b["packet_id"]
    s.packets.append(pid)
    c.check(
        "password packet body: password_protected, cover, a commitment, no password",
        b.get("password_protected") is True
        and b.get("cover") == "lantern-2027"
        and re.fullmatch(r"[0-9a-f]{64}", b.get("commitment", "")) is not None
        and "芝麻开门" not in json.dumps(b, ensure_ascii=False),
        str(b),
    )
    r = inv("grab", events.grab_event(pid, "bob"))
    c.status("grab of a password packet without the password", r, 403, "wrong_password")
    r = inv("grab", events.grab_event(pid, "bob", password="芝麻开"))
    c.status("grab with a wrong password", r, 403, "wrong_password")
    r = inv("grab", events.http_event("grab-grab-password", packet_id=pid))
    won = r["body"].get("amount_cents", 0)
    if c.status("grab-grab-password.json (bob)", r, 200):
        c.check("bob's share is share 1", r["body"].get("share_id") == 1, str(r["body"]))
    r = inv("create-packet", events.cancel_event(pid, "bob"))
    c.status("create-packet-cancel.json as bob (not the sender)", r, 403, "forbidden")
    r = inv("create-packet", events.http_event("create-packet-cancel", packet_id=pid))
    if c.status("create-packet-cancel.json (alice)", r, 200):
        c.check(
            "cancel body: status cancelled, the two un-grabbed shares refunded",
            {k: r["body"].get(k) for k in ("packet_id", "status", "refunded_cents")}
            == {"packet_id": pid, "status": "cancelled", "refunded_cents": 600 - won}
            and RFC3339.match(r["body"].get("cancelled_at", "")) is not None,
            str(r["body"]),
        )
    r2 = inv("create-packet", events.http_event("create-packet-cancel", packet_id=pid))
    c.check(
        "create-packet-cancel.json again -> 200, the same figures",
        r2.get("statusCode") == 200 and r2["body"] == r["body"],
        str(r2["body"]),
    )
    r = inv("grab", events.grab_event(pid, "carol", password="芝麻开门"))
    c.status("grab after the cancel", r, 410, "cancelled")
    r = inv("claim", events.claim_event(pid, "bob"))
    if c.status("bob claims his share of the cancelled packet", r, 200):
        c.check("the claim credits his share", r["body"].get("amount_cents") == won, str(r["body"]))
    r = inv("grab", events.view_event(pid, "bob"))
    v = r["body"]
    if c.status("view of the cancelled packet", r, 200):
        reveal = v.get("reveal") or {}
        shares = reveal.get("shares_cents", [])
        text = f"hongbao-shares-v1:{reveal.get('salt')}:{','.join(map(str, shares))}"
        c.check(
            "its receipt holds: commitment, sum, bob's share 1",
            v.get("status") == "cancelled"
            and hashlib.sha256(text.encode()).hexdigest() == v.get("commitment")
            and sum(shares) == v.get("total_cents")
            and shares[:1] == [won],
            str(v)[:500],
        )
    r = inv("create-packet", events.create_event("alice", 100, 1, opens_in_secs=3600))
    if c.status("a packet scheduled to open in an hour", r, 201):
        later = r["body"]["packet_id"]
        s.packets.append(later)
        r = inv("grab", events.grab_event(later, "bob"))
        retry = int(r.get("headers", {}).get("retry-after", "0") or 0)
        if c.status("grab before the opening", r, 425, "not_open_yet"):
            c.check("Retry-After is the hour, rounded up", 3590 <= retry <= 3600, str(retry))
        r = inv("create-packet", events.cancel_event(later, "alice"))
        c.status("cancel of the scheduled packet (nothing grabbed)", r, 200)


def business_dates() -> set[str]:
    """Today in HONGBAO_BUSINESS_TZ (both dates when that zone's midnight is close)."""
    try:
        tz = ZoneInfo(BUSINESS_TZ)
    except Exception:  # noqa: BLE001 — no tz database: say nothing about the day
        return set()
    now = datetime.now(tz)
    return {(now + timedelta(seconds=d)).date().isoformat() for d in (-5, 0, 5)}


def code_problems(body: dict, count: int) -> list[str]:
    """What is wrong with a 201 body of POST /order-codes asking for `count` codes."""
    out = []
    date, codes = body.get("date"), body.get("codes")
    m = DATE.match(date) if isinstance(date, str) else None
    if m is None:
        return [f"date {date!r} is not yyyy-mm-dd"]
    yymmdd = m[1][2:] + m[2] + m[3]
    if not isinstance(codes, list) or len(codes) != count:
        return [f"want {count} codes, got {codes!r}"[:300]]
    width = 6 + ORDER_CODE_DIGITS
    bad = [x for x in codes if not (isinstance(x, str) and len(x) == width and x.isdigit())]
    if bad:
        out.append(f"not {width} digits: {bad[:5]}")
    bad = [x for x in codes if isinstance(x, str) and not x.startswith(yymmdd)]
    if bad:
        out.append(f"do not start with the date's yyMMdd {yymmdd}: {bad[:5]}")
    bad = [x for x in codes if isinstance(x, str) and x[6:7] == "0"]
    if bad:
        out.append(f"suffix starts with 0: {bad[:5]}")
    if len(set(codes)) != len(codes):
        out.append(f"{len(codes) - len(set(codes))} duplicate codes")
    return out


def order_codes(st: LocalStack, c: Checks, s: State) -> None:
    c.section("order codes: events/next-order-code-*.json through the runtime")
    inv = st.invoke
    days = business_dates()

    r = inv("next-order-code", events.http_event("next-order-code-single"))
    b = r["body"]
    if c.status("next-order-code-single.json", r, 201):
        bad = code_problems(b, 1)
        c.check(
            f"single: date yyyy-mm-dd, 1 code of {6 + ORDER_CODE_DIGITS} digits = the date's "
            "yyMMdd + a suffix not starting with 0",
            not bad,
            f"{b} {bad}",
        )
        if days:
            c.check(
                f"date is today in {BUSINESS_TZ}",
                b.get("date") in days,
                f"{b.get('date')} not in {sorted(days)}",
            )
        s.order_codes += b.get("codes") or []
        single_date = b.get("date")
    else:
        single_date = None

    batch = events.load_event("next-order-code-batch")
    want = json.loads(batch["body"])["count"]
    r = inv("next-order-code", events.http_event("next-order-code-batch"))
    b = r["body"]
    if c.status(f"next-order-code-batch.json (count {want})", r, 201):
        bad = code_problems(b, want)
        c.check(
            f"batch: {want} distinct codes of the date, same business day as the single one",
            not bad and (single_date is None or b.get("date") == single_date),
            f"{str(b)[:300]} {bad}",
        )
        s.order_codes += b.get("codes") or []
    c.check(
        "no code handed out twice so far",
        len(set(s.order_codes)) == len(s.order_codes),
        f"{len(s.order_codes) - len(set(s.order_codes))} repeats",
    )

    r = inv("next-order-code", events.http_event("next-order-code-bad-count"))
    c.status("next-order-code-bad-count.json", r, 400, "invalid_request")


def voting(st: LocalStack, c: Checks, s: State) -> None:
    c.section("voting: events/vote-*.json through the runtime")
    inv = st.invoke
    fixture = events.load_event("vote-post-article")
    poster = fixture["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    sent = json.loads(fixture["body"])

    # POST /articles (alice)
    r = inv("vote", events.http_event("vote-post-article"))
    b = r["body"]
    if not c.status(f"vote-post-article.json ({poster})", r, 201):
        return
    aid = str(b.get("article_id", ""))
    posted = parse_rfc3339(b["posted_at"]) if RFC3339.match(str(b.get("posted_at"))) else None
    c.check(
        f"article body: decimal article_id, poster {poster}, title and link as sent, votes 1, "
        f"score = posted + {VOTE_SCORE}",
        aid.isdigit()
        and b.get("poster") == poster
        and b.get("title") == sent["title"]
        and b.get("link") == sent["link"]
        and b.get("votes") == 1
        and posted is not None
        and b.get("score") == int(posted) + VOTE_SCORE,
        str(b),
    )
    c.check(
        "posted_at is now",
        posted is not None and abs(posted - time.time()) < 30,
        str(b.get("posted_at")),
    )
    s.article_id = aid
    base = int(posted) if posted is not None else 0

    # POST /articles/{id}/vote (bob), then again
    voter = events.load_event("vote-vote")["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    r = inv("vote", events.http_event("vote-vote", article_id=aid))
    b = r["body"]
    if c.status(f"vote-vote.json ({voter}, up)", r, 200):
        c.check(
            f"vote body: votes 2, score = posted + {2 * VOTE_SCORE}, direction up, changed true",
            b
            == {
                "article_id": aid,
                "votes": 2,
                "score": base + 2 * VOTE_SCORE,
                "direction": "up",
                "changed": True,
            },
            str(b),
        )
    r = inv("vote", events.http_event("vote-vote", article_id=aid))
    b = r["body"]
    if c.status("vote-vote.json again", r, 200):
        c.check(
            "repeat vote: changed false, votes and score unchanged",
            b.get("changed") is False
            and b.get("votes") == 2
            and b.get("score") == base + 2 * VOTE_SCORE,
            str(b),
        )
    r = inv("vote", events.vote_event("999999999999", voter))
    c.status("vote on an unknown article", r, 404, "not_found")

    # GET /articles
    r = inv("vote", events.http_event("vote-list"))
    b = r["body"]
    if c.status("vote-list.json", r, 200):
        mine = [a for a in b.get("articles", []) if a.get("article_id") == aid]
        c.check(
            "list: order score, page 1, contains the article with votes 2",
            b.get("order") == "score"
            and b.get("page") == 1
            and len(mine) == 1
            and mine[0].get("votes") == 2
            and mine[0].get("score") == base + 2 * VOTE_SCORE,
            str(b)[:400],
        )

    # PUT /articles/{id}/groups: the poster, then someone else
    groups_fixture = events.load_event("vote-groups")
    change = json.loads(groups_fixture["body"])
    group = change["add"][0]
    r = inv("vote", events.http_event("vote-groups", article_id=aid))
    if c.status(f"vote-groups.json ({poster}, the poster)", r, 200):
        c.check(
            f"groups body: article_id, groups [{group}]",
            r["body"] == {"article_id": aid, "groups": sorted(change["add"])},
            str(r["body"]),
        )
    r = inv("vote", events.http_event("vote-groups", article_id=aid, sub=voter))
    c.status(f"vote-groups.json as {voter} (not the poster)", r, 403, "forbidden")

    # GET /groups/{group}/articles
    r = inv("vote", events.http_event("vote-group-articles"))
    b = r["body"]
    if c.status(f"vote-group-articles.json ({group})", r, 200):
        c.check(
            f"group page: group {group}, order score, page 1, lists the article",
            b.get("group") == group
            and b.get("order") == "score"
            and b.get("page") == 1
            and [a.get("article_id") for a in b.get("articles", [])] == [aid],
            str(b)[:400],
        )


def rfc3339(t: float) -> str:
    """Unix seconds as RFC 3339 UTC with milliseconds (what the API answers)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


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
    if c.status("the same creation again (same reference, same body)", r, 200):
        c.check("it answers the same campaign", r["body"].get("campaign_id") == cid, str(r["body"]))
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
            f"batch body: codes_total {total}, the fixture's reference, repeat false",
            r["body"]
            == {
                "campaign_id": cid,
                "codes_total": total,
                "reference": batch["reference"],
                "repeat": False,
            },
            str(r["body"]),
        )
    r = inv("coupon", events.add_codes_event(cid))
    c.check(
        "coupon-add-codes.json again -> 200, repeat true, nothing added",
        r.get("statusCode") == 200
        and r["body"].get("repeat") is True
        and r["body"].get("codes_total") == total,
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
            r["body"].get("status") == "scheduled"
            and r["body"].get("codes_left") == total
            and r["body"].get("coupons") == [],
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
            r["body"].get("status") == "sold_out"
            and r["body"].get("codes_total") == total
            and r["body"].get("codes_left") == 0
            and r["body"].get("coupons") == [mine],
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
        r.get("statusCode") == 200
        and r["body"].get("repeat") is True
        and r["body"].get("redeemed_at") == first,
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


def concurrency(
    st: LocalStack, c: Checks, s: State, grabbers: int, shares: int, threads: int
) -> None:
    pool = st["grab"]
    c.section(
        f"{grabbers} grabs of a {shares}-share packet: {threads} client threads, "
        f"{len(pool)} grab sandboxes"
    )
    total = 100 * shares
    r = st.invoke("create-packet", events.create_event("alice", total, shares, "lucky"))
    if not c.status(f"create {shares}-share packet of {total} cents", r, 201):
        return
    pid = r["body"]["packet_id"]
    s.packets.append(pid)
    users = [f"e2e-u{i:04d}" for i in range(grabbers)]
    grabs = [events.grab_event(pid, u) for u in users]
    before = pool.invocations()
    t0 = time.perf_counter()
    results = pool.map(grabs, threads=threads)
    wall = time.perf_counter() - t0
    served = [a - b for a, b in zip(pool.invocations(), before, strict=True)]
    statuses = Counter((r["statusCode"], (r["body"] or {}).get("error")) for r in results)
    winners = [
        (u, r["body"]) for u, r in zip(users, results, strict=True) if r["statusCode"] == 200
    ]
    lat = sorted(r.client_ms for r in results)
    print(
        f"      {grabbers} invocations in {wall:.2f} s = {grabbers / wall:.0f}/s; client latency "
        f"p50 {percentile(lat, 50):.1f} ms, p99 {percentile(lat, 99):.1f} ms; "
        f"per sandbox {served}"
    )
    losers = grabbers - shares
    c.check(f"exactly {shares} winners (200)", statuses[(200, None)] == shares, str(statuses))
    c.check(
        f"exactly {losers} sold_out (410)", statuses[(410, "sold_out")] == losers, str(statuses)
    )
    c.check(
        "no other answers",
        sum(statuses.values()) == statuses[(200, None)] + statuses[(410, "sold_out")],
        str(statuses),
    )
    amounts = [b["amount_cents"] for _, b in winners]
    c.check(f"sum of amounts = total ({total})", sum(amounts) == total, f"sum {sum(amounts)}")
    c.check("every amount >= 1 cent", all(a >= 1 for a in amounts), str(sorted(amounts)[:5]))
    c.check(
        f"share ids are exactly 1..{shares}",
        sorted(b["share_id"] for _, b in winners) == list(range(1, shares + 1)),
    )
    c.check(
        f"every one of the {len(pool)} grab sandboxes served invocations",
        all(n > 0 for n in served) and sum(served) == grabbers,
        str(served),
    )
    r = st.invoke("grab", events.view_event(pid))
    b = r["body"]
    if c.status("view of the sold-out packet", r, 200):
        best = max(amounts)
        first_best = min((bb["share_id"], u) for u, bb in winners if bb["amount_cents"] == best)[1]
        c.check(
            "view: sold_out, 100 grabs, grabbed_cents = total, "
            "best_luck = largest (earliest on ties)",
            b.get("status") == "sold_out"
            and b.get("grabbed_count") == shares
            and b.get("grabbed_cents") == total
            and len(b.get("grabs", [])) == shares
            and b.get("best_luck") == {"user_id": first_best, "amount_cents": best},
            f"status {b.get('status')} best_luck {b.get('best_luck')} want {first_best} {best}",
        )
    if winners:
        u, share = winners[0]
        r = st.invoke("grab", events.grab_event(pid, u))
        c.check(
            "a winner grabbing again gets 409 already_grabbed with the same share",
            r["statusCode"] == 409
            and r["body"].get("share", {}).get("share_id") == share["share_id"],
            str(r["body"]),
        )


def expiry(st: LocalStack, c: Checks, s: State) -> None:
    c.section("expiry and reclaim-cron")
    inv = st.invoke
    r = inv(
        "create-packet",
        events.create_event("alice", 1000, 10, "lucky", expires_in_secs=2, greeting="short-lived"),
    )
    if not c.status("create 10-share packet of 1000 cents, expires_in_secs 2", r, 201):
        return
    b = r["body"]
    pid = b["packet_id"]
    s.packets.append(pid)
    expires_at = parse_rfc3339(b["expires_at"])
    c.check(
        "expires_at = created_at + 2 s and greeting kept",
        abs(expires_at - parse_rfc3339(b["created_at"]) - 2) < 0.01
        and b["greeting"] == "short-lived",
        str(b),
    )
    grabbers = [f"x{i}" for i in range(6)]
    grabbed = {u: inv("grab", events.grab_event(pid, u)) for u in grabbers}
    c.check(
        "6 grabs before expiry -> 200",
        all(g["statusCode"] == 200 for g in grabbed.values()),
        str([g["statusCode"] for g in grabbed.values()]),
    )
    claimed = 0
    ok = True
    for u in grabbers[:4]:
        cr = inv("claim", events.claim_event(pid, u))
        ok &= cr["statusCode"] == 200 and cr["body"]["repeat"] is False
        claimed += cr["body"].get("amount_cents", 0)
    c.check("4 of them claim -> 200 repeat false", ok)
    r = inv("wallet", events.wallet_event("alice"))
    alice_before = r["body"]["balance_cents"]
    r = inv("reclaim-cron", events.scheduled_event())
    c.check("reclaim-cron before the deadline settles nothing", r.get("settled") == 0, str(dict(r)))
    wait = expires_at - time.time() + 0.3
    if wait > 0:
        time.sleep(wait)
    r = inv("grab", events.grab_event(pid, "x9"))
    c.status("grab after expires_at", r, 410, "expired")
    r = inv("claim", events.claim_event(pid, "x4"))
    c.status("claim after expires_at", r, 410, "expired")
    r = inv("grab", events.view_event(pid))
    c.check(
        "view after expires_at: status expired",
        r["body"].get("status") == "expired",
        str(r["body"])[:300],
    )
    refund = 1000 - claimed
    r = inv("reclaim-cron", events.scheduled_event())
    c.check(
        f"reclaim-cron settles 1 packet, refunded_cents = total - claimed = {refund}",
        r.get("settled") == 1
        and r.get("refunded_cents") == refund
        and r.get("redriven") == 0
        and r.get("remaining_due") == 0
        and r.get("skipped_locked") is False,
        str(dict(r)),
    )
    r = inv("wallet", events.wallet_event("alice"))
    b = r["body"]
    newest = (b.get("entries") or [{}])[0]
    c.check(
        "GET /wallet (alice): balance += refund, newest entry refund_credit of the packet",
        b.get("balance_cents") == alice_before + refund
        and newest.get("kind") == "refund_credit"
        and newest.get("amount_cents") == refund
        and newest.get("reference") == pid,
        f"before {alice_before} now {b.get('balance_cents')} newest {newest}",
    )
    r = inv("grab", events.view_event(pid))
    b = r["body"]
    claimed_view = sum(g["amount_cents"] for g in b.get("grabs", []) if g["claimed"])
    c.check(
        "view: settled, refunded_cents = refund, claimed + refunded = total",
        b.get("status") == "settled"
        and b.get("refunded_cents") == refund
        and claimed_view + refund == 1000,
        str(b)[:300],
    )
    r = inv("reclaim-cron", events.scheduled_event())
    c.check(
        "a second reclaim-cron run refunds nothing",
        r.get("settled") == 0 and r.get("refunded_cents") == 0,
        str(dict(r)),
    )
    r = inv("claim", events.claim_event(pid, "x0"))
    c.check(
        "an earlier claim stays claimed after settlement (200 repeat true)",
        r["statusCode"] == 200 and r["body"].get("repeat") is True,
        str(r["body"]),
    )


def latency(st: LocalStack, c: Checks, s: State, n: int) -> None:
    c.section(f"warm latency: {n} sequential invocations per function (one sandbox each)")
    # A create with an Idempotency-Key, repeated: 201 with the same packet, debited once.
    first = st.invoke(
        "create-packet", events.create_event("alice", 100, 2, idempotency_key="latency-1")
    )
    if c.status("create with Idempotency-Key", first, 201):
        s.packets.append(first["body"]["packet_id"])
    alice = st.invoke("wallet", events.wallet_event("alice"))["body"]["balance_cents"]
    pid = s.fixed_id or events.NO_SUCH_PACKET
    cheap = {
        "create-packet": (
            lambda: events.create_event("alice", 100, 2, idempotency_key="latency-1"),
            201,
        ),
        "grab": (lambda: events.view_event(pid), 200 if s.fixed_id else 404),
        "claim": (
            lambda: events.claim_event(s.lucky_id or events.NO_SUCH_PACKET, "bob"),
            200 if s.lucky_id else 404,
        ),
        "wallet": (lambda: events.wallet_event("bob"), 200),
        "reclaim-cron": (events.scheduled_event, None),
        "next-order-code": (lambda: events.order_codes_event("bob"), 201),
        "vote": (lambda: events.list_articles_event(), 200),
        "coupon": (
            lambda: events.campaign_event(s.campaign_id or events.NO_SUCH_CAMPAIGN, "bob"),
            200 if s.campaign_id else 404,
        ),
    }
    for fn, (make, status) in cheap.items():
        sb = st[fn].sandboxes[0]
        batch = [make() for _ in range(n)]
        k = sb.invocations
        ok = True
        client = []
        for ev in batch:
            r = sb.invoke(ev)
            client.append(r.client_ms)
            ok &= (r.get("statusCode") == status) if status else ("settled" in r)
            if fn == "next-order-code" and r.get("statusCode") == 201:
                s.order_codes += r["body"].get("codes", [])
        reports = sb.wait_reports()[k:]
        s.latency[fn] = (client, [x.duration_ms for x in reports])
        c.check(
            f"{fn}: {n} warm invocations all answer {status or 'a summary'}, "
            f"{len(reports)} REPORT lines",
            ok and len(reports) == n,
        )
    if first["statusCode"] == 201:
        again = st.invoke(
            "create-packet", events.create_event("alice", 100, 2, idempotency_key="latency-1")
        )
        now = st.invoke("wallet", events.wallet_event("alice"))["body"]["balance_cents"]
        c.check(
            f"{n + 1} repeats of one Idempotency-Key: same packet, debited once",
            again["body"].get("packet_id") == first["body"]["packet_id"] and now == alice,
            f"balance {alice} -> {now}",
        )
    dup = len(s.order_codes) - len(set(s.order_codes))
    c.check(
        f"all {len(s.order_codes)} order codes handed out in this run are distinct",
        dup == 0,
        f"{dup} repeats",
    )


def conservation(st: LocalStack, c: Checks, s: State) -> None:
    c.section(
        "money conservation (every wallet in Redis + money held by packets"
        " = deposits - withdrawals)"
    )
    audit = check_conservation(
        st,
        c,
        "every wallet in Redis",
        s.deposits - s.withdrawals,
        {pid: pid for pid in s.packets},
    )
    for line in audit.lines():
        print(f"      {line}")
    errors = sum(sb.error_lines for sb in st.all_sandboxes())
    c.check("no ERROR log line in any sandbox", errors == 0, f"{errors} ERROR lines")
    dead = [sb.name for sb in st.all_sandboxes() if not sb.alive()]
    c.check("every RIE sandbox is still running", not dead, str(dead))


def print_table(st: LocalStack, s: State, n: int) -> None:
    print("\n== cold start and warm latency per function (ms)")
    print(
        "cold init = RIE 'INIT REPORT durationMs' (bootstrap start to its first /next);"
        " RIE's REPORT 'Init Duration' field is shown as printed;\n"
        "1st invoke = client-side time of the cold invocation"
        " (init + handler, incl. Redis connect);"
        f"\nwarm = {n} sequential invocations of a cheap request on one warm sandbox:"
        " client-side round trip and RIE's REPORT 'Duration'."
    )
    hdr = (
        f"{'function':<16}{'sandboxes':>9}  {'cold init':>9}  {'REPORT Init':>11}"
        f"  {'1st invoke':>10}"
        f"  {'warm p50':>8}  {'warm p99':>8}  {'Duration p50':>12}  {'Duration p99':>12}  request"
    )
    print(hdr)
    print("-" * len(hdr))
    what = {
        "create-packet": "POST /packets (Idempotency-Key repeat)",
        "grab": "GET /packets/{id}",
        "claim": "POST /packets/{id}/claim (repeat)",
        "wallet": "GET /wallet",
        "reclaim-cron": "scheduled event (nothing due)",
        "next-order-code": "POST /order-codes (1 code)",
        "vote": "GET /articles",
        "coupon": "GET /campaigns/{id}",
    }
    for fn in FUNCTIONS:
        colds = s.cold.get(fn, [])
        client, dur = s.latency.get(fn, ([], []))
        med = lambda xs: percentile(xs, 50)  # noqa: E731
        init = med([x[0] for x in colds])
        rinit = [x[1] for x in colds if x[1] is not None]
        first = med([x[2] for x in colds])
        print(
            f"{fn:<16}{len(colds):>9}  {init:>9.2f}"
            f"  {(med(rinit) if rinit else float('nan')):>11.2f}"
            f"  {first:>10.2f}  {percentile(client, 50):>8.2f}  {percentile(client, 99):>8.2f}"
            f"  {percentile(dur, 50):>12.2f}  {percentile(dur, 99):>12.2f}  {what[fn]}"
        )
    if any(len(v) > 1 for v in s.cold.values()):
        print(
            "(cold columns: median over the function's sandboxes; "
            + "; ".join(
                f"{fn} init range {min(x[0] for x in v):.1f}-{max(x[0] for x in v):.1f}"
                for fn, v in s.cold.items()
                if len(v) > 1
            )
            + ")"
        )


def settings_per_function(st: LocalStack, c: Checks, s: State) -> None:
    """A function reads only its own feature's settings: broken voting, order-code and coupon
    settings stop the vote and coupon functions at Init (naming the variable) and leave grab
    running."""
    c.section(
        "settings per function (a broken HONGBAO_VOTE_SITE stops vote, a broken "
        "HONGBAO_COUPON_VISIT_WINDOW_MS coupon, neither grab)"
    )
    env = {
        "HONGBAO_VOTE_SITE": "Not A Site",
        "HONGBAO_ORDER_CODE_DIGITS": "9",
        "HONGBAO_COUPON_VISIT_WINDOW_MS": "0",
    }
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-bad-vote-env") as sb:
        r = sb.invoke(events.view_event(events.NO_SUCH_PACKET, "settings"))
        c.status("grab with broken vote/order-code/coupon settings answers", r, 404, "not_found")
    with Sandbox("coupon", env, redis_url=st.redis.url, name="coupon-bad-env") as sb:
        try:
            sb.invoke(events.campaign_event(events.NO_SUCH_CAMPAIGN, "settings"))
            c.check("coupon with HONGBAO_COUPON_VISIT_WINDOW_MS=0 fails Init", False, "it answered")
        except InvocationError as e:
            c.check(
                "coupon with HONGBAO_COUPON_VISIT_WINDOW_MS=0 fails Init, naming the variable",
                "HONGBAO_COUPON_VISIT_WINDOW_MS" in str(e) + sb.tail(),
                str(e)[:300],
            )
    with Sandbox("vote", env, redis_url=st.redis.url, name="vote-bad-env") as sb:
        try:
            sb.invoke(events.list_articles_event(sub="settings"))
            c.check("vote with HONGBAO_VOTE_SITE='Not A Site' fails Init", False, "it answered")
        except InvocationError as e:
            c.check(
                "vote with HONGBAO_VOTE_SITE='Not A Site' fails Init, naming the variable",
                "HONGBAO_VOTE_SITE" in str(e) + sb.tail(),
                str(e)[:300],
            )


def emf_lines(lines) -> list[dict]:
    """The CloudWatch Embedded Metric Format documents among a sandbox's output lines."""
    docs = []
    for line in lines:
        if '"_aws"' not in line:
            continue
        try:
            doc = json.loads(line[line.index("{") :])
        except ValueError:
            continue
        if isinstance(doc, dict) and "_aws" in doc:
            docs.append(doc)
    return docs


def metrics(st: LocalStack, c: Checks, s: State) -> None:
    """The functions print one EMF line per invocation (hongbao::api::metrics): a won, a
    sold-out and a repeated grab in a fresh sandbox, and reclaim-cron's backlog gauge."""
    c.section("CloudWatch Embedded Metric Format lines")
    r = st.invoke("create-packet", events.create_event("alice", 100, 1))
    if not c.status("create a 1-share packet", r, 201):
        return
    pid = r["body"]["packet_id"]
    s.packets.append(pid)
    env = {"HONGBAO_METRICS_NAMESPACE": "hb-e2e"}
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-emf") as sb:
        answers = [
            sb.invoke(events.grab_event(pid, u))["statusCode"] for u in ("emf1", "emf2", "emf1")
        ]
        sb.wait_reports()
        docs = emf_lines(sb.lines)
    c.check(
        "grabs answer 200, 410 sold_out, 409 already_grabbed",
        answers == [200, 410, 409],
        str(answers),
    )
    c.check("one EMF line per invocation", len(docs) == 3, f"{len(docs)} lines: {docs}")
    if len(docs) != 3:
        return
    meta = [d["_aws"]["CloudWatchMetrics"][0] for d in docs]
    c.check(
        "namespace hb-e2e, dimension Function = the function name",
        all(m["Namespace"] == "hb-e2e" and m["Dimensions"] == [["Function"]] for m in meta)
        and all(d.get("Function") == "grab-emf" for d in docs),
        str(meta[0]),
    )
    names = [{x["Name"] for x in m["Metrics"]} for m in meta]
    c.check(
        "GrabWon 1, then GrabSoldOut 1, then GrabAlreadyGrabbed 1",
        [docs[0].get("GrabWon"), docs[1].get("GrabSoldOut"), docs[2].get("GrabAlreadyGrabbed")]
        == [1, 1, 1]
        and "GrabWon" not in names[1],
        str(docs),
    )
    c.check(
        "every line has LatencyMs (Milliseconds) and the Lambda RequestId",
        all("LatencyMs" in n for n in names)
        and all(d.get("RequestId") for d in docs)
        and any(
            x.get("Unit") == "Milliseconds" for x in meta[0]["Metrics"] if x["Name"] == "LatencyMs"
        ),
        str(meta[0]),
    )
    reclaim = [d for sb in st["reclaim-cron"].sandboxes for d in emf_lines(sb.lines)]
    c.check(
        "reclaim-cron prints ReclaimRemainingDue on every run (0 included)",
        bool(reclaim) and all("ReclaimRemainingDue" in d for d in reclaim),
        f"{len(reclaim)} lines: {reclaim[:2]}",
    )


def no_credentials_in_logs(st: LocalStack, c: Checks, s: State) -> None:
    """At the most verbose level (RUST_LOG=trace, as the template's LogLevel=trace sets it) a
    function's output carries no Authorization header, cookie or security token of the event:
    lambda_runtime logs every raw event at trace, which hongbao's tracing caps away
    (hongbao::lambda::init_tracing)."""
    c.section("logs at trace level carry no credentials")
    secrets = {
        "authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.TRACE-JWT-SECRET.sig",
        "cookie": "session=TRACE-COOKIE-SECRET",
        "x-amz-security-token": "IQoJb3JpZ2luX2VjTRACE-STS-SECRET",
    }
    env = {"RUST_LOG": "trace", "LOG_LEVEL": "debug"}
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-trace") as sb:
        ev = events.view_event(events.NO_SUCH_PACKET, "tracer")
        ev.setdefault("headers", {}).update(secrets)
        ev["cookies"] = [secrets["cookie"]]
        r = sb.invoke(ev)
        c.status("a view at RUST_LOG=trace answers", r, 404, "not_found")
        sb.wait_reports()
        out = "\n".join(sb.lines)
        leaked = [
            m for m in ("TRACE-JWT-SECRET", "TRACE-COOKIE-SECRET", "TRACE-STS-SECRET") if m in out
        ]
        c.check(
            "the sandbox logged at debug or trace level (the check can see a leak)",
            '"level":"DEBUG"' in out or '"level":"TRACE"' in out,
            f"{len(sb.lines)} lines, none at debug/trace",
        )
        c.check(
            "no Authorization, cookie or x-amz-security-token value in the output",
            not leaked,
            f"leaked: {leaked}",
        )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--grab-sandboxes", type=int, default=8)
    ap.add_argument("--claim-sandboxes", type=int, default=2)
    ap.add_argument("--grabbers", type=int, default=1000)
    ap.add_argument("--shares", type=int, default=100)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--latency-invocations", type=int, default=200)
    ap.add_argument(
        "--log-dir", type=Path, help="write every sandbox's output to DIR/<sandbox>.log"
    )
    args = ap.parse_args()
    install_signal_handlers()
    t0 = time.perf_counter()
    c = Checks()
    missing = missing_binaries(FUNCTIONS)
    if missing:
        c.check(
            "release binaries exist",
            False,
            "missing: "
            + ", ".join(map(str, missing))
            + f"\n      build them: cd {ROOT} && {BUILD_COMMAND}",
        )
        return 1
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    s = State()
    stack = LocalStack(
        pools={"grab": args.grab_sandboxes, "claim": args.claim_sandboxes},
        functions=FUNCTIONS,
        log_dir=args.log_dir,
    )
    try:
        stack.start()
        print(
            f"redis-server {stack.redis.url}; RIE {find_rie()}; sandboxes: "
            + ", ".join(f"{f} x{len(p)}" for f, p in stack.pools.items())
        )
        for name, fn in (
            ("cold starts", lambda: cold_starts(stack, c, s)),
            ("fixtures", lambda: fixtures(stack, c, s)),
            ("chat packets", lambda: chat_packets(stack, c, s)),
            ("order codes", lambda: order_codes(stack, c, s)),
            ("voting", lambda: voting(stack, c, s)),
            ("coupons", lambda: coupons(stack, c, s)),
            ("settings", lambda: settings_per_function(stack, c, s)),
            ("credentials", lambda: no_credentials_in_logs(stack, c, s)),
            (
                "concurrency",
                lambda: concurrency(stack, c, s, args.grabbers, args.shares, args.threads),
            ),
            ("expiry", lambda: expiry(stack, c, s)),
            ("metrics", lambda: metrics(stack, c, s)),
            ("latency", lambda: latency(stack, c, s, args.latency_invocations)),
            ("conservation", lambda: conservation(stack, c, s)),
        ):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 — a crashed section is a failed check
                c.check(
                    f"{name} section ran without an exception",
                    False,
                    "".join(traceback.format_exception(e)).rstrip().replace("\n", "\n      "),
                )
        print_table(stack, s, args.latency_invocations)
    finally:
        stack.close()
    took = time.perf_counter() - t0
    print(f"\n{c.passed} passed, {len(c.failed)} failed in {took:.1f} s")
    c.print_failed()
    return 0 if not c.failed else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: sandboxes and redis-server stopped", file=sys.stderr)
        sys.exit(130)
