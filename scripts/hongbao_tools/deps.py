"""Finding what the scripts run: the Lambda Runtime Interface Emulator, `redis-server`,
Chromium, the functions' bootstraps (local or shipped) and the `hongbao` examples. What an
install provides (RIE, `redis-server`, Chromium) is installed by scripts/install-deps.sh when
missing; what cargo builds is named with the command that builds it."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from . import functions
from .paths import BOOTSTRAPS, EXAMPLES_DIR, INSTALL_DEPS, LAMBDA_DIR, LOCAL_DIR, ROOT, VENV_DIR
from .procs import log

# The red-packet functions (the default stack: what demo.py plays): those reading only the
# packets', reclaim's and wallet's settings ...
PACKET_FUNCTIONS = functions.with_features("packets", "reclaim", "wallet")
# ... and ledger-export (the demo's event feed, against moto's EventBridge) ...
LEDGER_EXPORT = "ledger-export"
# ... and every other function (e2e_rie.py runs them all).
FUNCTIONS = tuple(n for n in functions.NAMES if n != LEDGER_EXPORT)
# What builds the bootstraps the emulator runs (paths.BOOTSTRAPS): `make local`
# (functions.local_build_command) or `make release` (functions.release_build_commands).
BUILD_COMMAND = f"make {BOOTSTRAPS}"


def _rie_arch() -> str:
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def _glob_rie(venv: Path) -> Path | None:
    name = f"aws-lambda-rie-{_rie_arch()}"
    found = sorted(venv.glob(f"lib/python*/site-packages/samcli/local/rapid/{name}"))
    return found[0] if found else None


def install_deps(*args: str) -> None:
    """Runs scripts/install-deps.sh ARGS, the project's one installer (redis-server from apt,
    the pinned Python packages of scripts/requirements.txt into the venv); it installs only what
    is missing. Its output goes to stderr. A failure is logged, not raised: the caller's lookup
    then reports what is still missing."""
    cmd = ["bash", str(INSTALL_DEPS), *args]
    log(f"hongbao_tools: running {' '.join(['scripts/install-deps.sh', *args])}")
    r = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=2, check=False)
    if r.returncode != 0:
        log(f"hongbao_tools: scripts/install-deps.sh failed with exit code {r.returncode}")


def find_rie(install: bool = True) -> Path:
    """The RIE binary: `$HONGBAO_RIE`, else the one in `.venv`'s aws-sam-cli; runs
    scripts/install-deps.sh when it is missing (and `install` is true)."""
    env = os.environ.get("HONGBAO_RIE")
    if env:
        p = Path(env)
        if not p.is_file():
            raise FileNotFoundError(f"HONGBAO_RIE={env} does not exist")
        return p
    rie = _glob_rie(VENV_DIR)
    if rie is None and install:
        install_deps()
        rie = _glob_rie(VENV_DIR)
    if rie is None:
        raise FileNotFoundError(
            f"aws-lambda-rie-{_rie_arch()} not found in {VENV_DIR} (run scripts/install-deps.sh)"
        )
    if not os.access(rie, os.X_OK):
        rie.chmod(rie.stat().st_mode | 0o111)
    return rie


def _lookup_redis_server() -> str | None:
    fallback = ("/usr/bin/redis-server", "/usr/local/bin/redis-server")
    return shutil.which("redis-server") or next(
        (p for p in fallback if os.access(p, os.X_OK)), None
    )


def find_redis_server(install: bool = True) -> str:
    """`redis-server` on PATH (or /usr/bin, /usr/local/bin); runs `scripts/install-deps.sh
    --redis-only` when it is missing (and `install` is true)."""
    exe = _lookup_redis_server()
    if exe is None and install:
        install_deps("--redis-only")
        exe = _lookup_redis_server()
    if exe is None:
        raise FileNotFoundError("redis-server not found (run scripts/install-deps.sh)")
    return exe


# Debian's chromium package (`scripts/install-deps.sh --with-chromium`), the browser of
# `make docs-check`.
CHROMIUM = Path("/usr/bin/chromium")


def find_chromium(install: bool = True) -> Path:
    """Debian's /usr/bin/chromium; runs `scripts/install-deps.sh --with-chromium` when it is
    missing (and `install` is true)."""
    if not os.access(CHROMIUM, os.X_OK) and install:
        install_deps("--with-chromium")
    if not os.access(CHROMIUM, os.X_OK):
        raise FileNotFoundError(
            f"{CHROMIUM} not found (run scripts/install-deps.sh --with-chromium)"
        )
    return CHROMIUM


def binary_path(function: str) -> Path:
    """The bootstrap of `function` the emulator runs: `target/local/<function>` (`make local`)
    or, with HONGBAO_BOOTSTRAPS=release, the shipped `target/lambda/<function>/bootstrap`."""
    if BOOTSTRAPS == "release":
        return LAMBDA_DIR / function / "bootstrap"
    return LOCAL_DIR / function


def missing_binaries(functions: Iterable[str] = PACKET_FUNCTIONS) -> list[Path]:
    """The bootstraps (`binary_path`) of `functions` that are not built."""
    return [binary_path(f) for f in functions if not os.access(binary_path(f), os.X_OK)]


def require_binaries(functions: Iterable[str] = PACKET_FUNCTIONS) -> None:
    """Raises with the build command when a bootstrap (`binary_path`) is missing."""
    missing = missing_binaries(functions)
    if missing:
        raise FileNotFoundError(
            "missing bootstraps: "
            + ", ".join(str(m) for m in missing)
            + f"\nbuild them first:  (cd {ROOT} && {BUILD_COMMAND})"
        )


def example_path(name: str) -> Path:
    """The debug build of the `hongbao` example `name` (`target/debug/examples/<name>`)."""
    return EXAMPLES_DIR / name


def require_example(name: str) -> Path:
    """The `hongbao` example `name`; exits with the build command when it is not built."""
    exe = example_path(name)
    if not os.access(exe, os.X_OK):
        raise SystemExit(
            f"{exe} is missing; build it: cargo build --locked -p hongbao --example {name}"
        )
    return exe
