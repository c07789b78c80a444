"""The report's plots, drawn with matplotlib as inline SVG: a measure beside its anchor (the
seed design, redis-benchmark, a deadline) as bar pairs labelled with their ratio, plain bars with
the anchor's bars in grey, and latency distributions. SVG text stays text (`svg.fonttype`
none: small files, searchable labels) and ids are salted, not random, so one input gives one
output (the committed example can be checked against its JSON)."""

from __future__ import annotations

import io
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("svg")  # no display, no GUI toolkit
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

plt.rcParams.update(
    {
        "svg.fonttype": "none",
        "svg.hashsalt": "hongbao",
        "font.size": 8.5,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": 9.5,
        "axes.titleweight": "bold",
        "figure.dpi": 100,
    }
)

HONGBAO = "#c0392b"  # red, as the packets
ANCHOR = "#8c959d"  # grey: what a figure is measured against
ACCENT = "#2c7fb8"
WIDTH = 7.2  # inches; a figure is at most the page's width


@dataclass
class Figure:
    """One drawn figure: its SVG and what it shows."""

    svg: str
    caption: str


def ratio(x: float) -> str:
    """`0.904` -> `0.90×`."""
    return f"{x:.2f}×"


def num(x: float) -> str:
    """A figure to three significant digits, thousands separated: `18629.3` -> `18,629`,
    `9.995` -> `10`, `0.8412` -> `0.841`."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:,.0f}" if abs(x) >= 999.5 else f"{x:.3g}"


def to_svg(fig, caption: str) -> Figure:
    """The figure as an `<svg>` element (no XML header, no date), then closed."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text[text.index("<svg") :], flags=re.S)
    # Path coordinates to 0.1 pt (matplotlib writes 6 decimals): a third of the page's bytes.
    text = re.sub(r' d="([^"]*)"', lambda m: f' d="{_coarse(m[1])}"', text)
    return Figure(text, caption)


def _coarse(path: str) -> str:
    return " ".join(
        re.sub(r"-?\d+\.\d+", lambda n: f"{float(n[0]):.1f}".rstrip("0").rstrip("."), path).split()
    )


def _height(rows: int, per: float = 0.32, extra: float = 0.9) -> float:
    return max(1.6, rows * per + extra)


def pairs(
    title: str,
    rows: Sequence[tuple],
    unit: str,
    caption: str,
) -> Figure:
    """One bar pair per row: `(label, hongbao value, anchor name, anchor value, note[, ratio])`,
    the hongbao bar in red above its anchor in grey (named under the row's label), each pair
    labelled on the right with the ratio (`ratio` when the bench gives one, e.g. a median of
    per-round ratios, else hongbao / anchor of the values drawn) and `note`, e.g. the goal."""
    fig, ax = plt.subplots(figsize=(WIDTH, _height(len(rows), 0.62)))
    top = max(max(r[1], r[3]) for r in rows)
    unit_text = f" {unit}" if unit else ""
    for i, (_, value, _, base, note, *given) in enumerate(rows):
        y = -i
        ax.barh(y + 0.18, value, height=0.34, color=HONGBAO)
        ax.barh(y - 0.18, base, height=0.34, color=ANCHOR)
        ax.text(value, y + 0.18, f" {num(value)}{unit_text}", va="center", fontsize=7.5)
        ax.text(base, y - 0.18, f" {num(base)}{unit_text}", va="center", fontsize=7.5)
        r = given[0] if given else (value / base if base else float("nan"))
        ax.text(
            1.01, y, f"{ratio(r)}{'  ' + note if note else ''}", va="center", fontsize=8.5,
            fontweight="bold", color=HONGBAO, transform=ax.get_yaxis_transform(),
        )  # fmt: skip
    ax.set_yticks(
        [-i for i in range(len(rows))], [f"{r[0]}\nvs {r[2]}" for r in rows], fontsize=7.5
    )
    ax.set_xlim(0, top * 1.2)
    ax.set_xlabel(
        f"{unit}; red: hongbao, grey: the anchor" if unit else "red: hongbao, grey: the anchor"
    )
    ax.set_title(title, loc="left")
    return to_svg(fig, caption)


def bars(
    title: str,
    rows: Sequence[tuple[str, float, bool, str]],
    unit: str,
    caption: str,
    *,
    line: tuple[float, str] | None = None,
    log: bool = False,
) -> Figure:
    """Horizontal bars `(label, value, is anchor, note)`: hongbao's in red, the anchors' in grey,
    each with its value and note; `line` = (x, label) marks a goal or deadline."""
    fig, ax = plt.subplots(figsize=(WIDTH, _height(len(rows))))
    ys = [-i for i in range(len(rows))]
    for y, (_, value, is_anchor, note) in zip(ys, rows, strict=True):
        ax.barh(y, value, height=0.62, color=ANCHOR if is_anchor else HONGBAO)
        ax.text(value, y, f" {num(value)}{'  ' + note if note else ''}", va="center", fontsize=7.5)
    top = max(r[1] for r in rows)
    if line:
        ax.axvline(line[0], color=ACCENT, linestyle="--", linewidth=1)
        top = max(top, line[0])
        unit = f"{unit}; dashed: {line[1]}"
    ax.set_yticks(ys, [r[0] for r in rows])
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(r[1] for r in rows if r[1] > 0) / 2, top * 6)
    else:
        ax.set_xlim(0, top * 1.45)
    ax.set_xlabel(unit)
    ax.set_title(title, loc="left")
    return to_svg(fig, caption)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (as hongbao_tools.report.percentile); NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(p * len(s) / 100) - 1))]


def distribution(
    title: str, series: Sequence[tuple[str, Sequence[float], str]], unit: str, caption: str
) -> Figure:
    """Histograms (left, log-spaced bins) and CDFs (right) of each `(name, samples, color)`,
    p50 and p99 marked on both."""
    fig, (h, c) = plt.subplots(1, 2, figsize=(WIDTH, 2.9))
    everything = [x for _, xs, _ in series for x in xs if x > 0]
    lo, hi = min(everything), max(everything)
    edges = [lo * (hi / lo) ** (k / 40) for k in range(41)]
    for j, (name, xs, color) in enumerate(series):
        p50, p99 = percentile(xs, 50), percentile(xs, 99)
        label = f"{name}: p50 {num(p50)}, p99 {num(p99)} {unit}"
        h.hist(xs, bins=edges, color=color, alpha=0.55, label=label, histtype="stepfilled")
        s = sorted(xs)
        # At most ~400 steps: the curve looks the same and the page stays small.
        keep = sorted({min(len(s) - 1, k * len(s) // 400) for k in range(401)})
        c.step([s[k] for k in keep], [(k + 1) / len(s) for k in keep], where="post", color=color)
        for p, v in ((50, p50), (99, p99)):
            for ax in (h, c):
                ax.axvline(v, color=color, linestyle=":" if p == 50 else "--", linewidth=1)
            c.annotate(
                f"p{p} {num(v)}", (v, p / 100), fontsize=7, color=color,
                xytext=(3, -9 - 11 * j), textcoords="offset points",
            )  # fmt: skip
    for ax in (h, c):
        ax.set_xscale("log")
        ax.set_xlabel(unit)
    h.set_ylabel("requests")
    h.set_ylim(0, h.get_ylim()[1] * 1.1)
    c.set_ylabel("share of requests ≤ x")
    fig.legend(fontsize=7.5, frameon=False, loc="upper center", ncol=2, bbox_to_anchor=(0.5, 0.0))
    h.set_title(title, loc="left")
    return to_svg(fig, caption)


def strips(
    title: str, groups: Sequence[tuple[str, Sequence[float], float | None]], caption: str
) -> Figure:
    """Per-round ratios, one row of dots per `(label, ratios, goal)`, their median as a bar and
    the goal as a dashed tick: how much a round moves on this machine."""
    fig, ax = plt.subplots(figsize=(WIDTH, _height(len(groups), 0.5)))
    for i, (_, values, goal) in enumerate(groups):
        y = -i
        n = len(values)
        ax.scatter(
            values, [y + 0.25 * ((k % 5) - 2) / 2 for k in range(n)], s=9, color=HONGBAO, alpha=0.6
        )
        med = statistics.median(values)
        ax.plot([med, med], [y - 0.3, y + 0.3], color="black", linewidth=2)
        ax.text(med, y + 0.32, f"median {ratio(med)}", fontsize=7.5, ha="center")
        if goal is not None:
            ax.plot([goal, goal], [y - 0.35, y + 0.35], color=ACCENT, linestyle="--")
            ax.text(goal, y - 0.45, f"goal ≤ {ratio(goal)}", fontsize=7, color=ACCENT, ha="center")
    ax.axvline(1.0, color=ANCHOR, linewidth=0.8)
    ax.set_yticks([-i for i in range(len(groups))], [g[0] for g in groups])
    ax.set_xlabel("hongbao / anchor, per round (1.0 = the anchor)")
    ax.set_title(title, loc="left")
    return to_svg(fig, caption)


def svg_text(svg: str) -> list[str]:
    """The text labels of an SVG figure (what the check compares: not the geometry)."""
    return [t.strip() for t in re.findall(r">([^<>]+)</text>", svg) if t.strip()]
