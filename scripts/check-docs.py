#!/usr/bin/env python3
"""Check that the README and the pages of docs/ point at things that exist.

    python3 scripts/check-docs.py    # run by `make layers`

For README.md and every docs/*.md:
- every repository path it names exists: a path from the top (`shared/src/...`, `lua/...`,
  `tests/...`, `scripts/...`, `functions/...`, `events/...`, `docs/...`, `template.yaml`,
  `openapi.json`, ...), in prose or in a code block, with `<name>` and `*` as wildcards and
  `{a,b}` as alternatives; and, in backticks, a shorter file path (`store/connect.rs`,
  `history/entries.rs`, `grab.lua`), which some file of the repository must end with;
- every relative link resolves: the file, and the heading its `#anchor` names;
- every docs page is linked from README.md and links back to it;
- the README names every function of functions.json and their number;
- docs/api.md's table of routes is functions.json's, between its `<!-- routes -->` markers.

Prints each problem as `page:line: ...`; exits 1 if there is any. `--write` rewrites the table
of routes from functions.json first.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_DIRS = ("shared", "lua", "tests", "scripts", "functions", "events", "docs")
TOP_FILES = (
    "template.yaml",
    "openapi.json",
    "env.json",
    "samconfig.toml",
    "ruff.toml",
    "Cargo.toml",
    "Cargo.lock",
    "Makefile",
)
# Paths that name something outside this repository or made while running.
NOT_HERE = {"python/ch01_listing_source.py", "local-api.json", "events.jsonl"}
FILE_EXT = r"\.(?:rs|lua|py|json|yaml|yml|sh|toml|ts|txt|md)"

TOP_PATH = re.compile(
    r"(?<![\w./<>{}*-])"
    rf"((?:{'|'.join(TOP_DIRS)})/[\w./*{{}},<>-]*|(?:{'|'.join(re.escape(f) for f in TOP_FILES)}))"
    r"(?![\w-])"
)
BACKTICK = re.compile(r"`([^`\s]+)`")
SHORT_PATH = re.compile(rf"^[\w.-][\w./{{}},-]*{FILE_EXT}$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def repo_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.splitlines() if (ROOT / f).exists()]


def expand(path: str) -> list[str]:
    """`a/{b,c}/d` → `a/b/d`, `a/c/d`; `<name>` → `*`."""
    path = re.sub(r"<[^>]*>", "*", path)
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [
        p
        for alt in m.group(1).split(",")
        for p in expand(path[: m.start()] + alt + path[m.end() :])
    ]


def exists_from_top(path: str) -> bool:
    path = path.rstrip(".,;:")
    return all(any(ROOT.glob(p.rstrip("/"))) for p in expand(path))


def exists_as_suffix(path: str, files: list[str]) -> bool:
    return all(any(f == p or f.endswith("/" + p) for f in files) for p in expand(path))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"#{1,6}\s+(.*)", line)):
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_page(page: Path, files: list[str]) -> list[str]:
    rel = page.relative_to(ROOT)
    problems = []
    in_fence = False
    for no, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        named = {m.group(1) for m in TOP_PATH.finditer(line)}
        for path in sorted(named):
            if path not in NOT_HERE and not exists_from_top(path):
                problems.append(f"{rel}:{no}: missing path {path}")
        if in_fence:
            continue
        for m in BACKTICK.finditer(line):
            token = m.group(1)
            if token in named or token in NOT_HERE or TOP_PATH.fullmatch(token):
                continue
            if SHORT_PATH.match(token) and not exists_as_suffix(token, files):
                problems.append(f"{rel}:{no}: no file ends with {token}")
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                problems.append(f"{rel}:{no}: broken link {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{rel}:{no}: no heading for #{anchor} in {target}")
    return problems


ROUTES_PAGE = ROOT / "docs/api.md"
ROUTES = re.compile(r"(<!-- routes: .*? -->\n)(.*?)(<!-- /routes -->)", re.S)


def routes_table(functions: list[dict]) -> str:
    """docs/api.md's table of routes: each operation of functions.json, with its function and
    who may call it, then each scheduled function."""
    rows = ["| Route | Function | Caller |", "| --- | --- | --- |"]
    for f in functions:
        for op in f["operations"]:
            who = "JWT (the user)"
            if op["auth"] == "iam":
                who = f"AWS_IAM, `{op['principals']}`"
                who += ", its merchants only" if op.get("tenant") == "merchant" else ""
            rows.append(f"| `{op['method']} {op['path']}` | {f['name']} | {who} |")
    rows += [
        f"| EventBridge schedule | {f['name']} | - |" for f in functions if f["trigger"] != "http"
    ]
    return "\n".join(rows) + "\n"


def check_routes(functions: list[dict], write: bool) -> list[str]:
    text = ROUTES_PAGE.read_text()
    m = ROUTES.search(text)
    if not m:
        return ["docs/api.md: no `<!-- routes: ... -->` ... `<!-- /routes -->` block"]
    table = routes_table(functions)
    if m.group(2) == table:
        return []
    if write:
        ROUTES_PAGE.write_text(text[: m.start(2)] + table + text[m.end(2) :])
        return []
    return [
        "docs/api.md: the table of routes is not functions.json's (scripts/check-docs.py --write)"
    ]


def main() -> int:
    files = repo_files()
    functions = json.loads((ROOT / "functions.json").read_text())["functions"]
    problems = check_routes(functions, "--write" in sys.argv[1:])
    readme = ROOT / "README.md"
    pages = sorted((ROOT / "docs").glob("*.md"))
    for page in [readme, *pages]:
        problems += check_page(page, files)
    readme_text = readme.read_text()
    # The README's diagram names every function of functions.json (the declarations' list).
    for f in functions:
        if f"{f['name']}" not in readme_text:
            problems.append(f"README.md: the architecture does not name the function {f['name']}")
    if f"{len(functions)} functions" not in readme_text:
        problems.append(f"README.md: does not say there are {len(functions)} functions")
    for page in pages:
        name = f"docs/{page.name}"
        if f"]({name}" not in readme_text:
            problems.append(f"README.md: does not link {name}")
        if "](../README.md" not in page.read_text():
            problems.append(f"{name}: does not link back to README.md")
    for p in problems:
        print(p)
    print(f"check-docs: {1 + len(pages)} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
