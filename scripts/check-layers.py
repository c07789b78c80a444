#!/usr/bin/env python3
"""Checks the layering of the `hongbao` crate (shared/src) by each file's role, and that its
modules form no cycle.

A file's role:

* **rules**: under `domain/` or a feature's `rules/` (e.g. `order_codes/rules/day.rs`): pure
  rules; it may not name `redis`, `lambda_http`, `lambda_runtime`, `aws_lambda_events`,
  `axum`, `tower`, `crate::store`, `crate::api` or `crate::lambda`.
* **http**: under `api/`, a file named `http.rs`, or a feature's root (its `mod.rs`, which
  holds the feature's router): it may not name `crate::lambda`, `lambda_runtime` or
  `aws_lambda_events` (scheduled events and a sandbox's Init are the `lambda` layer's).
* **lambda**: under `lambda/`.
* **store**: under `store/`, and every other file of a feature (its `store.rs`, its keys,
  its operation folders' `mod.rs`): it may not name `crate::api`, `crate::lambda`, `axum`,
  `tower`, `lambda_http`, `lambda_runtime` or `aws_lambda_events`.

Dependencies point one way, lambda -> http -> store -> rules: an edge a -> b for every
`crate::x::y` path or `super::y` path in a's code (comments and doc comments ignored) whose
target has a higher role is a violation, and the edges form no cycle.

Exit code 0 when all hold; otherwise every violation is printed and the exit code is 1.

    python3 scripts/check-layers.py [path/to/shared/src]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FORBIDDEN = {
    "rules": [
        "redis",
        "lambda_http",
        "lambda_runtime",
        "aws_lambda_events",
        "axum",
        "tower",
        "crate::store",
        "crate::api",
        "crate::lambda",
    ],
    "store": [
        "crate::api",
        "crate::lambda",
        "axum",
        "tower",
        "lambda_http",
        "lambda_runtime",
        "aws_lambda_events",
    ],
    "http": ["crate::lambda", "lambda_runtime", "aws_lambda_events"],
}

# The layers of the shared machinery; every other top module is a feature.
LAYERS = {"domain": "rules", "store": "store", "api": "http", "lambda": "lambda"}
RANK = {"rules": 0, "store": 1, "http": 2, "lambda": 3}


def role_of(mod: str) -> str:
    """The role of module `mod` (see the module docs); `` (lib.rs) is the crate's root."""
    segs = mod.split("::")
    if segs[0] in LAYERS:
        return LAYERS[segs[0]]
    if "rules" in segs:
        return "rules"
    if segs[-1] == "http" or len(segs) == 1:
        return "http"
    return "store"


# One pass from left to right, so that a `/*` inside a doc comment or a string (a route
# `/packets/*`) never starts a block comment, and a `//` inside a string (a URL) never starts
# a line comment: raw strings, strings, char literals, line comments, block comments.
TOKENS = re.compile(
    r'r(#*)".*?"\1|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'|//[^\n]*|/\*.*?\*/',
    flags=re.S,
)


def code_of(text: str) -> str:
    """The text without comments (line, doc and block comments) and string literals (a
    block comment's lines kept as empty lines)."""

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return "\n" * s.count("\n")
        return "''" if s.startswith("'") else '""'

    return TOKENS.sub(blank, text)


def module_of(root: Path, path: Path) -> str:
    """`domain::packets` for domain/packets.rs, `store` for store/mod.rs, `` for lib.rs."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def resolve(modules: set[str], path: str) -> str | None:
    """The longest known module that `path` (a::b::c) starts with."""
    segs = path.split("::")
    for n in range(len(segs), 0, -1):
        cand = "::".join(segs[:n])
        if cand in modules:
            return cand
    return None


def main() -> int:
    root = Path(
        sys.argv[1]
        if len(sys.argv) > 1
        else Path(__file__).resolve().parent.parent / "shared" / "src"
    )
    files = sorted(root.rglob("*.rs"))
    modules = {module_of(root, f): f for f in files}
    names = set(modules)
    problems: list[str] = []
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for mod, f in modules.items():
        code = code_of(f.read_text())
        # Unit tests may use anything the crate offers.
        code = code.split("#[cfg(test)]", 1)[0]
        role = role_of(mod)
        for bad in FORBIDDEN.get(role, []):
            pattern = r"\b" + re.escape(bad) + (r"\b" if "::" in bad else r"::")
            if re.search(pattern, code):
                problems.append(f"{f.relative_to(root)}: a {role} file names `{bad}`")
        parent = mod.rsplit("::", 1)[0] if "::" in mod else ""
        is_dir_module = f.name == "mod.rs"
        base = mod if is_dir_module else parent
        # `use a::{b, c::d}` is `a::b` and `a::c::d`.
        paths = [
            (m.group(1), m.group(2)[2:])
            for m in re.finditer(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", code)
        ]
        for m in re.finditer(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^{}]*)\}", code):
            for item in m.group(3).split(","):
                item = item.strip().split(" as ")[0].strip()
                if (
                    re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*", item)
                    and item != "self"
                ):
                    prefix = m.group(2)[2:]
                    paths.append((m.group(1), f"{prefix}::{item}" if prefix else item))
        for head, rest in paths:
            if not rest:
                continue
            if head == "crate":
                target = resolve(names, rest)
            else:
                above = (
                    base.rsplit("::", 1)[0]
                    if is_dir_module and "::" in base
                    else ("" if is_dir_module else base)
                )
                full = f"{above}::{rest}" if above else rest
                target = resolve(names, full)
            if (
                target is not None
                and target != mod
                and not mod.startswith(target + "::")
                and target != ""
            ):
                edges[mod].add(target)
    # Cycles: depth-first search over the module graph.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n) :] + [n]
                problems.append("module cycle: " + " -> ".join(cycle))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    # Direction: rules -> nothing above, store -> rules only, http -> store and rules.
    for a, targets in edges.items():
        for b in targets:
            ra, rb = role_of(a), role_of(b)
            if a and b and RANK[rb] > RANK[ra]:
                problems.append(f"{a} -> {b}: a {ra} module depends on a {rb} module")
    for p in problems:
        print(f"layers: {p}")
    if not problems:
        print(
            f"layers: OK ({len(modules)} modules, {sum(map(len, edges.values()))} edges, "
            "lambda -> http -> store -> rules, no cycles)"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
