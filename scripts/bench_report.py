#!/usr/bin/env python3
"""`make bench`'s figures as pictures: reads target/bench/<bench>.json (what each benchmark and
the emulator's grab storm write) and writes target/bench/report.html, one self-contained page
(inline SVG plots drawn by matplotlib, works offline) with each benchmark beside its anchor.

    .venv/bin/python scripts/bench_report.py            # target/bench -> target/bench/report.html
    .venv/bin/python scripts/bench_report.py --example  # target/bench/*.json -> docs/bench/ and
                                                        # docs/bench/report.html (README's example)
    .venv/bin/python scripts/bench_report.py --check    # what `make lint` runs (docs/testing.md)

A missing figures file is drawn as "not run" (one may run a single bench); a file of another
shape (a field renamed, missing or of another type) fails with every such field named. --check
renders docs/bench/*.json: every section must draw its figures, the page must read as the
committed docs/bench/report.html does (its words, figures' labels and ratios), and renaming
any field a plot reads, in turn, must be refused.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from hongbao_tools.bench import html
from hongbao_tools.bench.run import BENCH_DIR
from hongbao_tools.bench.schema import ShapeError
from hongbao_tools.paths import ROOT

EXAMPLE_DIR = ROOT / "docs" / "bench"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", type=Path, default=BENCH_DIR, help="the figures files' directory")
    ap.add_argument("--out", type=Path, help="the page (default: DIR/report.html)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--example", action="store_true", help="refresh docs/bench from DIR")
    mode.add_argument("--check", action="store_true", help="check docs/bench (make lint)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    try:
        if args.check:
            print(f"bench report check: {EXAMPLE_DIR.relative_to(ROOT)}")
            problems = html.check(EXAMPLE_DIR, EXAMPLE_DIR / "report.html")
            for p in problems:
                print(f"FAILED: {p}")
            print(f"{'failed' if problems else 'passed'} in {time.perf_counter() - t0:.1f} s")
            return 1 if problems else 0
        directory, out = args.dir, args.out or args.dir / "report.html"
        if args.example:
            for s in html.SECTIONS:
                html.load(s, directory)  # refuse a file of another shape before copying
            EXAMPLE_DIR.mkdir(parents=True, exist_ok=True)
            for s in html.SECTIONS:
                src = directory / f"{s.name}.json"
                if src.exists():
                    shutil.copyfile(src, EXAMPLE_DIR / src.name)
            directory, out = EXAMPLE_DIR, EXAMPLE_DIR / "report.html"
        drawn = html.render(directory, out)
    except ShapeError as e:
        print(f"bench report: {e}", file=sys.stderr)
        return 1
    for d in drawn:
        state = f"{len(d.figures)} figure(s)" if d.data is not None else "not run"
        print(f"  {d.section.name}: {state}")
    print(f"bench report: {out} ({out.stat().st_size:,} bytes, {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
