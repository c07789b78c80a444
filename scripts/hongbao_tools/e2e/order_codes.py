"""The order-code fixtures (events/next-order-code-*.json) through the runtime: each code's
shape (the business date's yyMMdd and a suffix), the batch, a bad count."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import State

DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)$")
BUSINESS_TZ = "Asia/Shanghai"  # HONGBAO_BUSINESS_TZ default (the sandboxes do not set it)
ORDER_CODE_DIGITS = 5  # HONGBAO_ORDER_CODE_DIGITS default


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
