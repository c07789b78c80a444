"""Cold starts (every sandbox's first invocation, one at a time), warm latency (sequential
invocations of a cheap request per function) and the table printed at the end."""

from __future__ import annotations

from .. import events
from ..checks import Checks
from ..deps import FUNCTIONS
from ..functions import DECLARED
from ..report import percentile
from ..rie import LocalStack
from .common import State

# A scheduled function's cheap request: its tick, answered by the run's summary (a JSON object,
# no statusCode).
SCHEDULED = {f["name"] for f in DECLARED if f["trigger"] == "schedule"}


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
        "next-order-code": (lambda: events.order_codes_event("coldstart"), 201, None),
        "vote": (lambda: events.list_articles_event(sub="coldstart"), 200, None),
        "coupon": (
            lambda: events.campaign_event(events.NO_SUCH_CAMPAIGN, "coldstart"),
            404,
            "not_found",
        ),
        "merchant": (lambda: events.http_event("merchant-get"), 200, None),
    }
    cheap |= {fn: (events.scheduled_event, None, None) for fn in SCHEDULED}
    for fn, pool in st.pools.items():
        make, status, error = cheap[fn]
        statuses = []
        for sb in pool.sandboxes:
            r = sb.invoke(make())
            statuses.append(r.get("statusCode") if status else ("statusCode" not in r))
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
        "next-order-code": (lambda: events.order_codes_event("bob"), 201),
        "vote": (lambda: events.list_articles_event(), 200),
        "coupon": (
            lambda: events.campaign_event(s.campaign_id or events.NO_SUCH_CAMPAIGN, "bob"),
            200 if s.campaign_id else 404,
        ),
        "merchant": (lambda: events.http_event("merchant-get"), 200),
    }
    cheap |= {fn: (events.scheduled_event, None) for fn in SCHEDULED if fn in st.pools}
    for fn, (make, status) in cheap.items():
        sb = st[fn].sandboxes[0]
        batch = [make() for _ in range(n)]
        k = sb.invocations
        ok = True
        client = []
        for ev in batch:
            r = sb.invoke(ev)
            client.append(r.client_ms)
            ok &= (r.get("statusCode") == status) if status else ("statusCode" not in r)
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
        "next-order-code": "POST /order-codes (1 code)",
        "vote": "GET /articles",
        "coupon": "GET /campaigns/{id}",
        "merchant": "GET /merchants/{merchant_id}",
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
            f"  {percentile(dur, 50):>12.2f}  {percentile(dur, 99):>12.2f}"
            f"  {what.get(fn, 'scheduled event')}"
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
