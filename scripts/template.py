#!/usr/bin/env python3
"""Write template.yaml from template/*.yaml and functions.json (`make template`).

template.yaml is generated and committed. Its sources:
- functions.json: every Lambda function, its trigger and its operations (each an HttpApi event:
  Method, Path, AWS_IAM when its auth is iam);
- template/*.yaml: what is one of a kind (parameters, rules, conditions, globals, the HTTP API,
  the store, the network, the ledger feed...), one prototype of each repeated block (a
  function's resources, a job's queues and alarms, the store nodes' alarms...) and the data
  tables they are made from; template/alarms.yaml says what every alarm gets;
- scripts/hongbao_tools/template/dashboard.py: the dashboard.

    scripts/template.py                 # rewrite template.yaml
    scripts/template.py --check         # exit 1, naming the difference, when it is not current
    scripts/template.py --compare REV   # render it and REV's template.yaml for every parameter
                                        # set of tests/template_matrix.py: must be equal
        [--ignore-descriptions]         # ... but for the parameters' Descriptions
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from hongbao_tools.template.build import TemplateError, build

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when template.yaml is not current")
    ap.add_argument("--compare", metavar="REV", help="compare renders with REV's template.yaml")
    ap.add_argument(
        "--ignore-descriptions",
        action="store_true",
        help="with --compare: leave the parameters' Descriptions out (only counted)",
    )
    args = ap.parse_args()
    try:
        text = build(ROOT)
    except TemplateError as e:
        print(f"template: {e}", file=sys.stderr)
        return 2
    current = TEMPLATE.read_text() if TEMPLATE.exists() else ""
    if args.compare:
        from hongbao_tools.template.compare import compare

        if current != text:
            print(
                "template: template.yaml is not current; run `make template` first", file=sys.stderr
            )
            return 1
        found, summary = compare(ROOT, args.compare, TEMPLATE, args.ignore_descriptions)
        for line in found:
            print("DIFFERENT  " + line)
        print(f"template: compared with {args.compare}'s template.yaml: {summary}")
        print(f"template: {len(found)} differences" if found else "template: equal")
        return 1 if found else 0
    if args.check:
        if current == text:
            print("template: template.yaml is current")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(),
            text.splitlines(),
            "template.yaml (committed)",
            "template.yaml (generated)",
            lineterm="",
            n=1,
        )
        shown = list(diff)
        print("\n".join(shown[:60]) + ("\n..." if len(shown) > 60 else ""))
        print(
            "template: template.yaml differs from what scripts/template.py writes from "
            "template/ and functions.json; run `make template`",
            file=sys.stderr,
        )
        return 1
    TEMPLATE.write_text(text)
    print(f"template: wrote {TEMPLATE.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
