"""Where things are: the repository root, its events/ fixtures, the cargo target dir, the venv."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS_DIR = ROOT / "events"
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
# The functions' bootstraps, as `cargo lambda build` (`make release`, `sam build`) leaves them.
LAMBDA_DIR = TARGET_DIR / "lambda"
EXAMPLES_DIR = TARGET_DIR / "debug" / "examples"
VENV_DIR = Path(os.environ.get("HONGBAO_VENV") or ROOT / ".venv")
INSTALL_DEPS = ROOT / "scripts" / "install-deps.sh"
