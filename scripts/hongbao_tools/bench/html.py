"""The report: every benchmark's figures file drawn into one self-contained HTML page (inline
SVG and CSS, nothing fetched), one section per benchmark with its anchor, its ratios in words
and its figures; a missing file is shown as not run, a file of another shape fails
(`ShapeError`). `check` renders the committed example's figures files and compares the result
with the committed page."""

from __future__ import annotations

import copy
import difflib
import html
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import ROOT
from . import draws, rates, storms
from .plots import Figure, svg_text
from .schema import Section, ShapeError

# In the order a reader wants them: the storms against the seed designs, the emulator's
# latency, reclaim and export, the draw, then the throughput and cost tables.
SECTIONS: tuple[Section, ...] = (
    storms.STORM_REPLAY,
    storms.COUPON_DROP,
    storms.E2E_GRABS,
    rates.RECLAIM_BACKLOG,
    rates.LEDGER_EXPORT,
    draws.DRAW_SCALE,
    storms.STORM,
    rates.GRAB_THROUGHPUT,
    rates.VOTING,
    rates.ORDER_CODES,
    rates.SCRIPT_COSTS,
    rates.PACKET_MEMORY,
)

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 1.5rem auto;
       padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2.2rem;
     border-top: 1px solid #ddd; padding-top: 1rem; }
.meta { color: #555; font-size: 0.9em; } .notrun { color: #a33; }
.headline { font-weight: 600; } figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; } figcaption { color: #444; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border-bottom: 1px solid #eee; padding: 0.25rem 0.5rem; text-align: left;
         vertical-align: top; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""


@dataclass
class Drawn:
    """A section as drawn from one directory: its figures file's data (None: not run)."""

    section: Section
    source: Path
    data: dict | None = None
    headlines: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def load(section: Section, directory: Path) -> dict | None:
    """`<directory>/<section>.json`, checked against the section's shape; None when absent."""
    path = directory / f"{section.name}.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as e:
        raise ShapeError(f"{path}: not JSON: {e}") from e
    section.validate(data, str(path))
    return data


def draw(section: Section, directory: Path) -> Drawn:
    """The section's headlines and figures from `directory` (nothing when not run)."""
    d = Drawn(section, directory / f"{section.name}.json", load(section, directory))
    if d.data is not None:
        d.headlines = section.headlines(d.data)
        d.figures = section.figures(d.data)
    return d


def problems(data: object, depth: int = 3) -> list[str]:
    """The checks that did not hold in the run, as the bench wrote them (every `problems` list
    of strings down to `depth` levels): shown above the figures, which that run may skew."""
    out: list[str] = []
    if depth < 0:
        return out
    if isinstance(data, dict):
        for k, v in data.items():
            if k == "problems" and isinstance(v, list):
                out += [p for p in v if isinstance(p, str)]
            else:
                out += problems(v, depth - 1)
    elif isinstance(data, list):
        for v in data:
            out += problems(v, depth - 1)
    return list(dict.fromkeys(out))


def _run_line(run: dict | None) -> str:
    if not run:
        return "run: not recorded (a figures file from before runs were recorded)"
    model = f" ({run['cpu_model']})" if run.get("cpu_model") else ""
    return (
        f"run finished {run['finished_at']} · commit {run['commit'] or '?'} · host "
        f"{run['host'] or '?'}, {run['cpus']} CPUs{model} · load average {run.get('loadavg', '?')}"
    )


def page(drawn: list[Drawn], source: str) -> str:
    """The whole HTML page."""
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>hongbao benchmarks</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>hongbao benchmarks</h1>",
        f'<p class="meta">Drawn by scripts/bench_report.py from {e(source)}/*.json (make bench '
        "writes them). Each benchmark stands beside its anchor: the seed design, redis-benchmark "
        "on the same server, a deadline. The machine is shared and noisy: read the ratios, "
        "not the absolute figures, and each section's run line says which run and machine "
        "made it.</p>",
        "<table><tr><th>benchmark</th><th>run</th><th>in a line</th></tr>",
    ]
    for d in drawn:
        s = d.section
        run = (d.data or {}).get("run") or {}
        when = f"{run.get('finished_at', '?')}, {run.get('commit', '?')}" if d.data else ""
        first = d.headlines[0] if d.headlines else ("not run" if d.data is None else "")
        out.append(
            f'<tr><td><a href="#{s.name}">{e(s.name)}</a></td><td>{e(when)}</td>'
            f"<td>{e(first)}</td></tr>"
        )
    out.append("</table>")
    for d in drawn:
        s = d.section
        out.append(f'<section id="{s.name}"><h2>{e(s.title)}</h2>')
        out.append(f'<p class="meta">Anchor: {e(s.anchor)}. Command: <code>{e(s.command)}</code>')
        if d.data is None:
            out.append(
                f'</p><p class="notrun">Not run: no {e(s.name)}.json in {e(source)}.</p></section>'
            )
            continue
        out.append(f"<br>{e(_run_line(d.data.get('run')))}</p>")
        failed = problems(d.data)
        if failed:
            out.append(
                f'<p class="notrun">{len(failed)} check(s) of this run did not hold (the bench '
                "failed; its figures may be skewed): "
                + "; ".join(e(p) for p in failed[:5])
                + ("; …" if len(failed) > 5 else "")
                + "</p>"
            )
        out.append("<ul>" + "".join(f'<li class="headline">{e(h)}</li>' for h in d.headlines))
        out.append("</ul>")
        for f in d.figures:
            out.append(f"<figure>{f.svg}<figcaption>{e(f.caption)}</figcaption></figure>")
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


def shown(path: Path) -> str:
    """`path` as the page names it: from the repository's root when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def render(directory: Path, out: Path) -> list[Drawn]:
    """Draws every section from `directory` into `out`; returns what was drawn."""
    drawn = [draw(s, directory) for s in SECTIONS]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(drawn, shown(directory)))
    return drawn


def readable(page_html: str) -> list[str]:
    """A page as what a reader reads, line by line: its text, each figure's labels in place of
    its drawing (geometry may move by a pixel between library builds; words and figures may
    not)."""
    text = re.sub(r"<svg.*?</svg>", lambda m: "\n[figure] " + " | ".join(svg_text(m[0])) + "\n",
                  page_html, flags=re.S)  # fmt: skip
    text = re.sub(r"<style>.*?</style>", "", text, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "\n", text))
    return [line.strip() for line in text.splitlines() if line.strip()]


def _required_paths(schema: dict, data: object, at: tuple = ()) -> list[tuple]:
    """Every key of `data` a renaming of which must be refused (a required key, or any key of
    an object that allows no others), as a path of keys and list indexes (first items only)."""
    out: list[tuple] = []
    if schema.get("type") == "object" and isinstance(data, dict):
        closed = schema.get("additionalProperties") is False
        for k, sub in schema.get("properties", {}).items():
            if k not in data:
                continue
            if closed or k in schema.get("required", []):
                out.append((*at, k))
            out += _required_paths(sub, data[k], (*at, k))
    elif schema.get("type") == "array" and isinstance(data, list) and data:
        out += _required_paths(schema["items"], data[0], (*at, 0))
    return out


def renamed(data: dict, path: tuple) -> dict:
    """A copy of `data` with the key at `path` renamed (`<key>_renamed`)."""
    bad = copy.deepcopy(data)
    node = bad
    for k in path[:-1]:
        node = node[k]
    node[f"{path[-1]}_renamed"] = node.pop(path[-1])
    return bad


def check(example: Path, committed: Path) -> list[str]:
    """The example's figures files render every section with its figures, match the
    committed page, and each fails when any field a plot reads is renamed or the file is not
    JSON. Returns the problems (empty: the check passed)."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        drawn = render(example, Path(tmp) / "report.html")
        fresh = (Path(tmp) / "report.html").read_text()
        (Path(tmp) / "bad").mkdir()
        (Path(tmp) / "bad" / "storm.json").write_text('{"bench": "storm", "runs": [')
        try:
            load(storms.STORM, Path(tmp) / "bad")
            problems.append("a figures file that is not JSON was accepted")
        except ShapeError:
            pass
    for d in drawn:
        name = d.section.name
        if d.data is None:
            problems.append(f"{name}: no {name}.json in {shown(example)}")
            continue
        if not d.headlines or not d.figures:
            problems.append(f"{name}: {len(d.headlines)} headlines, {len(d.figures)} figures")
        for f in d.figures:
            if not f.svg.startswith("<svg") or not svg_text(f.svg):
                problems.append(f"{name}: a figure without an SVG drawing or labels")
        paths = _required_paths(d.section.schema, d.data)
        for path in paths:
            try:
                d.section.validate(renamed(d.data, path), name)
                problems.append(f"{name}: renaming {'/'.join(map(str, path))} went unnoticed")
            except ShapeError:
                pass
        print(
            f"  {name}: {len(d.figures)} figure(s), {len(d.headlines)} headline(s); "
            f"each of {len(paths)} required fields renamed in turn: refused"
        )
    if not committed.exists():
        problems.append(f"{shown(committed)} is missing")
    else:
        want, got = readable(committed.read_text()), readable(fresh)
        if want != got:
            diff = list(
                difflib.unified_diff(want, got, shown(committed), "rendered now", n=1, lineterm="")
            )
            problems.append(
                f"{shown(committed)} differs from what its figures files render now; regenerate it "
                "(scripts/bench_report.py --example):\n" + "\n".join(diff[:30])
            )
    return problems
