"""Where figures files live (target/bench/<bench>.json, as tests/benches/support/mod.rs writes
them) and what each says about the run that made it: the same `run` object the Rust benches add
(finished_at, commit, host, cpus, cpu_model, loadavg), so a reader of the report knows which run
and machine a figure is from."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from ..paths import ROOT, TARGET_DIR

BENCH_DIR = TARGET_DIR / "bench"


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def run_info() -> dict:
    """The run: when it finished (UTC), the commit (`-dirty` with tracked changes), the host,
    its CPUs and load averages."""
    commit = _git("rev-parse", "--short=12", "HEAD")
    if commit and _git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = ""
    return {
        "finished_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "loadavg": load,
    }


def write_json(name: str, figures: dict, directory: Path = BENCH_DIR) -> Path:
    """Writes `figures` plus `bench` and `run` to `<directory>/<name>.json`; returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps({**figures, "bench": name, "run": run_info()}, indent=2) + "\n")
    return path
