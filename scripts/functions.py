#!/usr/bin/env python3
"""Prints what the Makefile needs from functions.json (hongbao_tools.functions):

functions.py release   the shipped bootstraps' build, as `sam build` builds them (make release)
functions.py local     the local bootstraps' build (make local)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hongbao_tools.functions import local_build_command, release_build_commands  # noqa: E402


def main() -> int:
    commands = {"release": release_build_commands, "local": local_build_command}
    if len(sys.argv) == 2 and sys.argv[1] in commands:
        print(commands[sys.argv[1]]())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
