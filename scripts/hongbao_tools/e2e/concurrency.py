"""One packet grabbed by many distinct users at once over a pool of grab sandboxes: exactly
`shares` winners, the rest `sold_out`, the amounts summing to the total. The storm's latency
samples (client side and RIE's REPORT `Duration`, one per invocation) are left in
`State.grab_storm` for target/bench/e2e_grabs.json (`storm_figures`)."""

from __future__ import annotations

import time
from collections import Counter

from .. import events
from ..checks import Checks
from ..report import percentile
from ..rie import LocalStack
from .common import State


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
    pool.wait_reports()
    durations = [
        r.duration_ms
        for sb, k in zip(pool.sandboxes, before, strict=True)
        for r in sb.reports[k : sb.invocations]
    ]
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
    s.grab_storm = storm_figures(
        results, durations, wall, served, threads, shares, s.cold.get("grab", [])
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


def storm_figures(
    results: list,
    durations: list[float],
    wall: float,
    served: list[int],
    threads: int,
    shares: int,
    cold: list[tuple],
) -> dict:
    """The storm as target/bench/e2e_grabs.json holds it: every invocation's client-side
    latency (`client_ms`, in request order) and RIE's REPORT `Duration` of each (`duration_ms`:
    the handler's own time, so the rest of a client latency is the emulator, the queue for a
    free sandbox and this process), the answers, the spread over sandboxes and the sandboxes'
    cold init (RIE `INIT REPORT`, when the cold-start section ran first)."""
    statuses = Counter(
        f"{r['statusCode']} {(r['body'] or {}).get('error') or 'ok'}" for r in results
    )
    return {
        "grabbers": len(results),
        "shares": shares,
        "threads": threads,
        "sandboxes": len(served),
        "per_sandbox": served,
        "wall_secs": round(wall, 4),
        "invocations_per_sec": round(len(results) / wall, 1),
        "answers": dict(sorted(statuses.items())),
        "client_ms": [round(r.client_ms, 3) for r in results],
        "duration_ms": [round(d, 3) for d in durations],
        "cold_init_ms": [round(x[0], 3) for x in cold if x[0] == x[0]],  # NaN: no INIT REPORT
    }
