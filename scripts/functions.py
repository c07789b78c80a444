#!/usr/bin/env python3
"""Prints what the Makefile needs from functions.json (hongbao_tools.functions):

functions.py shared-build     -p create-packet -p grab ...  (one cargo build)
functions.py separate-build   ledger-export ...             (a cargo build each)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hongbao_tools.functions import SEPARATE_BUILD, SHARED_BUILD, cargo_args  # noqa: E402


def main() -> int:
    what = sys.argv[1:] or ["?"]
    if what == ["shared-build"]:
        print(cargo_args(SHARED_BUILD))
    elif what == ["separate-build"]:
        print(" ".join(SEPARATE_BUILD))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
