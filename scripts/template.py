#!/usr/bin/env python3
"""Compare template.yaml with another revision's, rendered for every parameter set.

template.yaml is written by hand; `make lint` holds it to functions.json and the docs
(tests/template_checks/declared.py). After a change that should leave the stack as it is (a
restructuring, comments, a different spelling of the same thing):

    scripts/template.py --compare REV   # render it and REV's template.yaml for every parameter
                                        # set of tests/template_matrix.py: must be equal
        [--ignore-descriptions]         # ... but for the parameters' Descriptions

Exit status 1 when they differ (each difference printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hongbao_tools.template.compare import compare

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", metavar="REV", required=True, help="the revision to compare with")
    ap.add_argument(
        "--ignore-descriptions",
        action="store_true",
        help="leave the parameters' Descriptions out (only counted)",
    )
    args = ap.parse_args()
    found, summary = compare(ROOT, args.compare, TEMPLATE, args.ignore_descriptions)
    for line in found:
        print("DIFFERENT  " + line)
    print(f"template: compared with {args.compare}'s template.yaml: {summary}")
    print(f"template: {len(found)} differences" if found else "template: equal")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
