#!/usr/bin/env python3
"""`make contract`: openapi.json linted, and clients generated from it proven against the API.

1. redocly lint (`recommended`, tests/clients/redocly.yaml) and spectral lint (`spectral:oas`,
   tests/clients/.spectral.yaml): no error (warnings are printed; the configs list and justify
   every rule they change and every known warning);
2. TypeScript: openapi-typescript types (tests/clients/gen/ts/api.d.ts), `tsc --strict --noEmit`
   over tests/clients/ts/session.ts, compiled (gen/ts-out/) and run with node;
3. Python: openapi-python-client's client (tests/clients/gen/py/hongbao_client), then
   tests/clients/py/session.py run through it;
both sessions against the `serve` example on a free port with a private redis-server, started
as scripts/serve.py does (`hongbao_tools.serve_api.start_api`; the example is built only when
missing: `make contract` builds it).
Every step runs even after a failure (those needing a failed one are skipped); a summary at
the end; exit status 1 when a step failed.

    .venv/bin/python scripts/contract.py [--spec PATH]

The tools come from scripts/install-deps.sh (tests/clients/node_modules, .venv).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from hongbao_tools.deps import example_path
from hongbao_tools.paths import ROOT
from hongbao_tools.procs import free_port, install_signal_handlers, kill_tree
from hongbao_tools.redis_server import RedisServer
from hongbao_tools.serve_api import start_api

CLIENTS = ROOT / "tests" / "clients"
BIN = CLIENTS / "node_modules" / ".bin"
GEN = CLIENTS / "gen"
VENV_BIN = Path(sys.executable).parent
NODE_ENV = {
    "REDOCLY_TELEMETRY": "off",
    "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    "SCARF_ANALYTICS": "false",
    "NO_UPDATE_NOTIFIER": "1",
}
# Redocly CLI's boxed "future releases require Node.js 22" banner: noise on Node 20.
BANNER = re.compile(r"[║╔╚═]")

results: list[tuple[str, str, float]] = []  # (step, PASS/FAIL/SKIP, seconds)


def step(
    name: str, cmd: list[str], *, cwd: Path = ROOT, env: dict | None = None, timeout: float = 300
) -> bool:
    """Runs `cmd`, prints its output, records PASS when it exits 0."""
    print(f"\n== {name}\n$ {' '.join(str(c) for c in cmd)}", flush=True)
    started = time.monotonic()
    full_env = dict(os.environ, **NODE_ENV, **(env or {}))
    try:
        proc = subprocess.run(
            [str(c) for c in cmd],
            cwd=cwd,
            env=full_env,
            timeout=timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out, ok = proc.stdout, proc.returncode == 0
        if not ok:
            out += f"\n(exit status {proc.returncode})"
    except subprocess.TimeoutExpired as e:
        out, ok = f"{e.output or ''}\n(timed out after {timeout:.0f}s)", False
    except OSError as e:
        out, ok = f"{e}", False
    lines = [ln for ln in out.splitlines() if not BANNER.search(ln)]
    while lines and not lines[0].strip():
        lines.pop(0)
    print("\n".join(lines), flush=True)
    results.append((name, "PASS" if ok else "FAIL", time.monotonic() - started))
    return ok


def skip(name: str, why: str) -> None:
    print(f"\n== {name}\nskipped: {why}", flush=True)
    results.append((name, "SKIP", 0.0))


def no_any(path: Path) -> bool:
    """session.ts reads everything through the generated types: no `any` in its code."""
    name = "ts: no `any` in session.ts"
    hits = [
        f"{path.name}:{i}: {ln.strip()}"
        for i, ln in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bany\b", ln.split("//", 1)[0]) or "@ts-" in ln
    ]
    print(f"\n== {name}\n" + ("\n".join(hits) if hits else "none"), flush=True)
    results.append((name, "FAIL" if hits else "PASS", 0.0))
    return not hits


def missing_tools() -> list[str]:
    tools = [BIN / t for t in ("redocly", "spectral", "openapi-typescript", "tsc")]
    tools.append(VENV_BIN / "openapi-python-client")
    missing = [str(t.relative_to(ROOT)) for t in tools if not os.access(t, os.X_OK)]
    if shutil.which("node") is None:
        missing.append("node")
    return missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--spec",
        type=Path,
        default=ROOT / "openapi.json",
        help="the OpenAPI document (default: the repository's openapi.json)",
    )
    args = ap.parse_args()
    spec = args.spec.resolve()
    if not spec.is_file():
        print(f"contract: no such file {spec}", file=sys.stderr)
        return 2
    missing = missing_tools()
    if missing:
        print(
            f"contract: missing {', '.join(missing)}; run scripts/install-deps.sh", file=sys.stderr
        )
        return 2
    install_signal_handlers()
    started = time.monotonic()
    print(f"contract: {spec}")

    # 1. Lints.
    step(
        "redocly lint (recommended)",
        [BIN / "redocly", "lint", "--config", CLIENTS / "redocly.yaml", "--format=stylish", spec],
    )
    step(
        "spectral lint (spectral:oas)",
        [BIN / "spectral", "lint", "-r", CLIENTS / ".spectral.yaml", "--fail-severity=error", spec],
    )

    # 2-3. Generation and compilation (nothing of the last run's output kept).
    shutil.rmtree(GEN, ignore_errors=True)
    (GEN / "ts").mkdir(parents=True)
    ts_ready = (
        step(
            "ts: openapi-typescript",
            [BIN / "openapi-typescript", spec, "-o", GEN / "ts" / "api.d.ts"],
        )
        and step("ts: tsc --strict --noEmit", [BIN / "tsc", "-p", CLIENTS, "--strict", "--noEmit"])
        and step("ts: tsc (compile)", [BIN / "tsc", "-p", CLIENTS])
    )
    no_any(CLIENTS / "ts" / "session.ts")
    py_ready = step(
        "py: openapi-python-client generate",
        [
            VENV_BIN / "openapi-python-client",
            "generate",
            "--path",
            spec,
            "--meta",
            "none",
            "--output-path",
            GEN / "py" / "hongbao_client",
            "--config",
            CLIENTS / "py" / "openapi-python-client.yaml",
            "--overwrite",
            "--fail-on-warning",
        ],
        env={"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )

    # 4. Both sessions against the API.
    if ts_ready or py_ready:
        redis = api = None
        try:
            if not os.access(example_path("serve"), os.X_OK):
                step(
                    "cargo build --example serve",
                    ["cargo", "build", "--locked", "-p", "hongbao", "--example", "serve"],
                )
            redis = RedisServer().start()
            addr = f"127.0.0.1:{free_port()}"
            api = start_api(redis.url, addr)
            env = {"HONGBAO_BASE_URL": f"http://{addr}"}
            print(f"\ncontract: API on http://{addr} (Redis {redis.url})", flush=True)
            if ts_ready:
                step(
                    "ts: session.ts (openapi-fetch)",
                    ["node", GEN / "ts-out" / "ts" / "session.js"],
                    env=env,
                    timeout=120,
                )
            else:
                skip("ts: session.ts (openapi-fetch)", "the TypeScript steps failed")
            if py_ready:
                step(
                    "py: session.py (generated client)",
                    [sys.executable, CLIENTS / "py" / "session.py", GEN / "py"],
                    env=env,
                    timeout=120,
                )
            else:
                skip("py: session.py (generated client)", "the generation failed")
        finally:
            if api is not None:
                kill_tree(api)
            if redis is not None:
                redis.stop()
    else:
        skip("sessions", "no client was generated")

    failed = [r for r in results if r[1] == "FAIL"]
    print(f"\n== contract summary ({spec.name}, {time.monotonic() - started:.1f}s)")
    for name, status, secs in results:
        print(f"{status}  {name}" + (f"  ({secs:.1f}s)" if secs >= 0.05 else ""))
    print(
        "contract: "
        + (
            "all steps passed"
            if not failed
            else f"{len(failed)} step(s) failed: {', '.join(r[0] for r in failed)}"
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
