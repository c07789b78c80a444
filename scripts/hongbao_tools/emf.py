"""CloudWatch Embedded Metric Format lines as the functions print them (hongbao::api::metrics:
one JSON document per invocation, namespace and dimension `Function` in `_aws`), and their
totals per function and metric: what the stack's CloudWatch dashboard plots for a run."""

from __future__ import annotations

import json
import statistics
import threading
from collections import defaultdict

# Metrics the code sets as gauges (the last value of a run), not counters.
GAUGES = {"ReclaimRemainingDue", "LedgerExportLagMs"}


def parse_line(line: str) -> dict | None:
    """The EMF document a function's output line holds, or None."""
    if '"_aws"' not in line:
        return None
    try:
        doc = json.loads(line[line.index("{") :])
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and "_aws" in doc else None


def emf_lines(lines) -> list[dict]:
    """The EMF documents among a sandbox's output lines."""
    return [d for d in map(parse_line, lines) if d is not None]


def values(v) -> list[float]:
    """A metric's value in an EMF document as a list of samples (a number, a list, or the
    `{"Values", "Counts"}` form of a distribution)."""
    if isinstance(v, bool):
        return []
    if isinstance(v, int | float):
        return [float(v)]
    if isinstance(v, list):
        return [float(x) for x in v]
    if isinstance(v, dict) and "Values" in v:
        counts = v.get("Counts") or [1] * len(v["Values"])
        return [float(x) for x, n in zip(v["Values"], counts, strict=True) for _ in range(int(n))]
    return []


class EmfTotals:
    """Every EMF document a process printed, added up per (function, metric): counters summed,
    gauges kept as their largest value, `LatencyMs` kept as samples. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.samples: dict[tuple[str, str], list[float]] = defaultdict(list)

    def add(self, doc: dict, function: str | None = None) -> None:
        """Adds one document, under `function` (default: its `Function` dimension; a local
        sandbox's dimension is the sandbox's name, so RIE sandboxes pass their function's)."""
        meta = doc["_aws"]["CloudWatchMetrics"][0]
        function = function or str(doc.get("Function", "?"))
        with self._lock:
            for m in meta["Metrics"]:
                self.samples[(function, m["Name"])].extend(values(doc.get(m["Name"])))

    def merge(self, other: EmfTotals) -> None:
        with self._lock, other._lock:
            for k, v in other.samples.items():
                self.samples[k].extend(v)

    def figure(self, function: str, name: str) -> str:
        """What the dashboard shows for one metric of one function over the run: the sum of a
        counter, the largest value of a gauge, p50 / p99 of `LatencyMs`."""
        xs = sorted(self.samples.get((function, name), []))
        if not xs:
            return "-"
        if name == "LatencyMs":
            p99 = xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]
            return f"p50 {statistics.median(xs):.2f} ms, p99 {p99:.2f} ms ({len(xs)} requests)"
        if name in GAUGES:
            return f"max {max(xs):g}"
        return f"{sum(xs):g}"

    def rows(self) -> list[tuple[str, str, str]]:
        """(function, metric, figure) for every metric seen, sorted."""
        return [(f, n, self.figure(f, n)) for f, n in sorted(self.samples)]


def report(totals: EmfTotals) -> None:
    """Prints the run's metrics as the dashboard's widgets read them."""
    rows = totals.rows()
    print("\nDashboard (the EMF metrics this run printed: dimension Function, summed over the run)")
    if not rows:
        print("  (no EMF line was printed)")
        return
    width = max(len(f) for f, _, _ in rows)
    last = None
    for f, n, fig in rows:
        print(f"  {f if f != last else '':<{width}}  {n:<22} {fig}")
        last = f
