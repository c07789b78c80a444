#!/usr/bin/env python3
"""Prints what the Makefile needs from functions.json (hongbao_tools.functions):

functions.py build     every function's release build, as `sam build` runs it
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hongbao_tools.functions import build_commands  # noqa: E402


def main() -> int:
    if sys.argv[1:] == ["build"]:
        print(build_commands())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
