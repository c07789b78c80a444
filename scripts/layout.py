#!/usr/bin/env python3
"""The house's size rules, measured: `make layers` runs this with `--check`.

Rules (a newcomer reads a file or a test in one sitting):
- no test or benchmark function over 150 lines (a `#[test]`/`#[tokio::test]` function, or any
  function in `tests/`),
- no Rust file under `tests/` over 800 lines,
- no Python file of the project's tools over 600 lines,
- README.md at most 150 lines of at most 110 characters (the rest lives in `docs/`).

Without `--check` it prints the figures: the largest file of each folder, the longest test
functions, README.md's lines, and what breaks a rule.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_TEST_FN = 150
MAX_TEST_FILE = 800
MAX_PY_FILE = 600
MAX_README = 150
MAX_README_LINE = 110
SKIP = {"target", ".git", ".venv", "node_modules", ".aws-sam", "generated"}

FN = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?(?:async\s+)?fn\s+([a-z_0-9]+)")
TEST_ATTR = re.compile(r"^\s*#\[(?:tokio::)?test\b")


def files(suffix: str) -> list[Path]:
    out = []
    for p in ROOT.rglob(f"*{suffix}"):
        rel = p.relative_to(ROOT)
        if any(part in SKIP for part in rel.parts):
            continue
        out.append(p)
    return sorted(out)


def functions(path: Path) -> list[tuple[str, int, int, bool]]:
    """(name, first line, lines, is a test) of each Rust function, by brace matching outside
    string and char literals and line comments (a raw string or a block comment with braces
    would be misread; none is in braces' way here)."""
    lines = path.read_text().splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i - 1
        while j >= 0 and lines[j].strip().startswith(("#[", "///", "//")):
            j -= 1
        is_test = any(TEST_ATTR.match(lines[k]) for k in range(j + 1, i))
        depth, k, opened = 0, i, False
        while k < len(lines):
            code = re.sub(r"'(?:\\.|[^'\\])'", "' '", lines[k])
            code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code).split("//", 1)[0]
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            if not opened and code.rstrip().endswith(";"):
                break
            k += 1
        out.append((m.group(1), i + 1, k - i + 1, is_test))
        i += 1
    return out


def measure() -> dict:
    rust = files(".rs")
    python = [p for p in files(".py") if "tests/clients/py/generated" not in str(p)]
    largest: dict[str, tuple[int, str]] = defaultdict(lambda: (0, ""))
    for p in rust + python + files(".lua"):
        n = len(p.read_text().splitlines())
        folder = str(p.parent.relative_to(ROOT))
        if n > largest[folder][0]:
            largest[folder] = (n, p.name)
    tests = []
    for p in rust:
        rel = p.relative_to(ROOT)
        in_tests = rel.parts[0] == "tests"
        for name, line, n, is_test in functions(p):
            if is_test or in_tests:
                tests.append((n, f"{rel}:{line} {name}"))
    tests.sort(reverse=True)
    return {
        "largest": dict(sorted(largest.items())),
        "tests": tests,
        "test_files": sorted(
            (len(p.read_text().splitlines()), str(p.relative_to(ROOT)))
            for p in rust
            if p.relative_to(ROOT).parts[0] == "tests"
        )[::-1],
        "python": sorted(
            (len(p.read_text().splitlines()), str(p.relative_to(ROOT))) for p in python
        )[::-1],
        "readme": len((ROOT / "README.md").read_text().splitlines()),
        "readme_long": [
            n
            for n, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1)
            if len(line) > MAX_README_LINE
        ],
    }


def breaks(m: dict) -> list[str]:
    """Every rule broken, one line each."""
    out = [
        f"test function {w}: {n} lines > {MAX_TEST_FN}" for n, w in m["tests"] if n > MAX_TEST_FN
    ]
    out += [f"{w}: {n} lines > {MAX_TEST_FILE}" for n, w in m["test_files"] if n > MAX_TEST_FILE]
    out += [f"{w}: {n} lines > {MAX_PY_FILE}" for n, w in m["python"] if n > MAX_PY_FILE]
    if m["readme"] > MAX_README:
        out.append(f"README.md: {m['readme']} lines > {MAX_README}")
    out += [
        f"README.md:{n}: a line of more than {MAX_README_LINE} characters" for n in m["readme_long"]
    ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a rule is broken")
    args = ap.parse_args()
    m = measure()
    broken = breaks(m)
    if args.check:
        for b in broken:
            print(f"layout: {b}", file=sys.stderr)
        return 1 if broken else 0
    print("largest file per folder:")
    for folder, (n, name) in m["largest"].items():
        print(f"  {n:5} {folder}/{name}")
    print("longest test functions:")
    for n, where in m["tests"][:10]:
        print(f"  {n:5} {where}")
    print(f"README.md: {m['readme']} lines")
    print(f"rules broken: {len(broken)}")
    for b in broken:
        print(f"  {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
