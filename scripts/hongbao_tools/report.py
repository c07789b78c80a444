"""Numbers and text for the scripts' reports: money in cents, percentiles, RFC 3339 times,
histograms of amounts, timed phases."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


def cents(n: int) -> str:
    """An amount in cents as money: `12345` -> `123.45`, `-5` -> `-0.05`."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // 100}.{n % 100:02d}"


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def parse_rfc3339(s: str) -> float:
    """`2026-01-01T00:00:00.000Z` -> Unix seconds."""
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def rfc3339(t: float) -> str:
    """Unix seconds as RFC 3339 UTC with milliseconds (what the API answers):
    `1767225600.0` -> `2026-01-01T00:00:00.000Z`."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def histogram(amounts: list[int], rows: int = 12) -> list[str]:
    """A text histogram of amounts in cents: at most about `rows` buckets of a round width,
    bars of at most 50 `#`."""
    if not amounts:
        return ["  (no shares grabbed)"]
    hi = max(amounts)
    width = 1
    for w in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        width = w
        if -(-hi // w) <= rows:
            break
    counts = Counter((a - 1) // width for a in amounts)
    top = max(counts.values())
    scale = max(1, -(-top // 50))
    out = []
    for b in range(0, (hi - 1) // width + 1):
        lo_c, hi_c = b * width + 1, (b + 1) * width
        n = counts.get(b, 0)
        label = f"{cents(lo_c)}-{cents(hi_c)}" if width > 1 else cents(lo_c)
        out.append(f"  {label:>13} | {'#' * (-(-n // scale)):<50} {n}")
    if scale > 1:
        out.append(f"  (each # = up to {scale} shares)")
    return out


class Phases:
    """Named, timed steps of a run: `run` prints the step's name, times it and keeps a note
    about its result; `print` lists them all with the total."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []
        self.t0 = time.perf_counter()

    def run(self, name: str, fn: Callable[[], Any], note: Callable[[Any], str] = lambda r: ""):
        """Runs `fn()`, records its duration and `note(result)`; returns the result."""
        print(f"-- {name} ...", flush=True)
        t = time.perf_counter()
        result = fn()
        took = time.perf_counter() - t
        self.rows.append((name, took, note(result) or ""))
        return result

    def set_note(self, note: str) -> None:
        """Replaces the note of the last step."""
        name, took, _ = self.rows[-1]
        self.rows[-1] = (name, took, note)

    def print(self, total_note: str = "") -> None:
        """The table of steps, then the total since this object was made."""
        total = time.perf_counter() - self.t0
        print("\nPhases")
        for name, took, note in self.rows:
            print(f"  {name:<62} {took:6.2f} s   {note}")
        print(f"  {'total':<62} {total:6.2f} s   {total_note}")
