"""Where things are: the repository root, its events/ fixtures, the cargo target dir, the venv."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS_DIR = ROOT / "events"
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
# The shipped bootstraps, as `cargo lambda build` (`make release`, `sam build`) leaves them:
# LAMBDA_DIR/<name>/bootstrap.
LAMBDA_DIR = TARGET_DIR / "lambda"
# The local bootstraps, as `make local` (Cargo.toml's `[profile.local]`) leaves them:
# LOCAL_DIR/<name>.
LOCAL_DIR = TARGET_DIR / "local"
# Which bootstraps the Lambda emulator runs (hongbao_tools.rie): "local" (the default: `make
# demo`, `make e2e`) or "release", the shipped ones (`make bench`, and the demo's cold start of
# what ships: HONGBAO_BOOTSTRAPS=release .venv/bin/python scripts/demo.py).
BOOTSTRAPS = os.environ.get("HONGBAO_BOOTSTRAPS") or "local"
if BOOTSTRAPS not in ("local", "release"):
    raise SystemExit(f"HONGBAO_BOOTSTRAPS={BOOTSTRAPS}: expected local or release")
EXAMPLES_DIR = TARGET_DIR / "debug" / "examples"
VENV_DIR = Path(os.environ.get("HONGBAO_VENV") or ROOT / ".venv")
INSTALL_DEPS = ROOT / "scripts" / "install-deps.sh"
