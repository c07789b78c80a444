"""A crowd's load on the grab function, first come first served against a draw's entry window:
the same crowd of distinct users arrives at a 300-share packet, everyone within one second
(first come, first served: a flash opening), or spread evenly over a 60-second entry window (a
draw packet), through the grab sandboxes under the Lambda emulator. Each press is one
invocation at its arrival time; what is measured is when the sandboxes answered them: the
busiest second's answers (the peak an API Gateway stage, Lambda's scale-out and the store see)
and the seconds the crowd took. `State.window_storm` keeps the figures for
target/bench/window_storm.json (`make bench`)."""

from __future__ import annotations

import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from .. import events
from ..checks import Checks
from ..rie import LocalStack
from .common import State

SHARES = 300


def paced(st: LocalStack, jobs: list[tuple[float, dict]], threads: int) -> list[tuple[int, float]]:
    """Invokes each `(offset_s, event)` of `jobs` (sorted by offset) on the grab pool no earlier
    than its offset from now; (status, answered_at offset) of each, in order."""
    pool = st["grab"]
    t0 = time.perf_counter()

    def one(job: tuple[float, dict]) -> tuple[int, float]:
        at, ev = job
        time.sleep(max(0.0, at - (time.perf_counter() - t0)))
        r = pool.invoke(ev)
        return r.status, time.perf_counter() - t0

    with ThreadPoolExecutor(max_workers=threads) as ex:
        return list(ex.map(one, jobs))


def figures(answers: list[tuple[int, float]]) -> dict:
    """The busiest second's answers, the seconds until the last answer, the statuses."""
    per_second = Counter(int(at) for _, at in answers)
    return {
        "requests": len(answers),
        "peak_per_second": max(per_second.values()),
        "seconds": round(max(at for _, at in answers), 2),
        "per_second": [per_second.get(i, 0) for i in range(max(per_second) + 1)],
        "statuses": dict(Counter(str(s) for s, _ in answers)),
    }


def window_storm(
    st: LocalStack, c: Checks, s: State, crowd: int, window_secs: int, threads: int
) -> None:
    """The crowd against a first-come packet within one second, then against a draw packet
    over its `window_secs`-second entry window (see the module documentation)."""
    pool = st["grab"]
    c.section(
        f"a crowd of {crowd}: first come within 1 s vs a {window_secs} s draw window "
        f"({threads} client threads, {len(pool)} grab sandboxes)"
    )
    r = st.invoke("wallet", events.deposit_event("alice", 2 * 50 * SHARES, "window-storm"))
    c.status("deposit for both packets", r, 201)
    rng = random.Random(7)
    users = [f"crowd-{i:05d}" for i in range(crowd)]
    results = {}
    # Each packet is made just before its crowd arrives; the draw's crowd arrives within the
    # window's first window_secs - 1 s, so no press meets the draw.
    for name, draw, spread in (("fcfs", None, 1.0), ("draw", window_secs, window_secs - 1.0)):
        r = st.invoke(
            "create-packet",
            events.create_event(
                "alice",
                50 * SHARES,
                SHARES,
                "fixed",
                expires_in_secs=window_secs + 120,
                draw_entry_secs=draw,
            ),
        )
        if not c.status(f"create the {name} packet of {SHARES} shares", r, 201):
            return
        pid = r["body"]["packet_id"]
        jobs = sorted(
            ((rng.uniform(0, spread), events.grab_event(pid, u)) for u in users),
            key=lambda j: j[0],
        )
        results[name] = figures(paced(st, jobs, threads))
        f = results[name]
        print(
            f"      {name}: {f['requests']} requests, busiest second {f['peak_per_second']}, "
            f"last answer after {f['seconds']} s; statuses {f['statuses']}"
        )
    c.check(
        f"first come: {SHARES} winners, the rest sold_out",
        results["fcfs"]["statuses"].get("200") == SHARES
        and results["fcfs"]["statuses"].get("410") == crowd - SHARES,
        str(results["fcfs"]["statuses"]),
    )
    c.check(
        "the draw: every press an entry (202)",
        results["draw"]["statuses"] == {"202": crowd},
        str(results["draw"]["statuses"]),
    )
    c.check(
        "the draw window flattens the busiest second",
        results["draw"]["peak_per_second"] < results["fcfs"]["peak_per_second"],
        f"{results['draw']['peak_per_second']} vs {results['fcfs']['peak_per_second']}",
    )
    s.window_storm = {
        "crowd": crowd,
        "window_secs": window_secs,
        "shares": SHARES,
        "sandboxes": len(pool),
        "threads": threads,
        **results,
    }
