"""template.yaml against the one of another git revision, rendered as tests/template_matrix.py
renders it (`scripts/template.py --compare REV`).

For every parameter set template_matrix renders (its matrix, and its sweep of each template's
parameters), both templates go through the same functions (tests/template_checks/stack.py):
the Rules' verdict, the SAM transform, then cloud-radar's evaluation of Conditions and
intrinsic functions with realistic physical ids. They must give the same verdict, the same
transformed template (every resource with its logical id, type, condition, policies and
properties; the dashboard's body aside), the same rendered resources, conditions and outputs,
and a dashboard body that, substituted, is the same JSON. Parameters, Rules, Conditions,
Mappings, Globals and Outputs must also be equal as written.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SECTIONS = ("Parameters", "Rules", "Conditions", "Mappings", "Globals", "Outputs")


def _differences(a: Any, b: Any, where: str, out: list[str], limit: int = 20) -> None:
    if len(out) >= limit:
        return
    if type(a) is not type(b):
        out.append(f"{where}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")
    elif isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                out.append(f"{where}/{k}: only in the old template")
            elif k not in a:
                out.append(f"{where}/{k}: only in the new template")
            else:
                _differences(a[k], b[k], f"{where}/{k}", out, limit)
    elif isinstance(a, list) and len(a) != len(b):
        out.append(f"{where}: {len(a)} items -> {len(b)}")
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _differences(x, y, f"{where}[{i}]", out, limit)
    elif a != b:
        out.append(f"{where}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    out: list[str] = []
    _differences(a, b, where, out)
    return out


def _without_dashboard_body(t: dict) -> dict:
    t = copy.deepcopy(t)
    for r in t.get("Resources", {}).values():
        if r.get("Type") == "AWS::CloudWatch::Dashboard":
            r["Properties"]["DashboardBody"] = "<compared as JSON after rendering>"
    return t


def _render(st, template: dict, overrides: dict) -> dict:
    """One parameter set as template_matrix's render() sees it; one the Rules refuse also as
    template_matrix renders it then, without the Rules."""
    params = {**st.BASE, **overrides}
    values = st.parameter_values(template, params)
    out: dict[str, Any] = {"rules": st.rules(template, values)}
    if out["rules"]:
        bare = {k: v for k, v in template.items() if k != "Rules"}
        out["without the Rules"] = _render(st, bare, overrides)
        return out
    transformed = st.transform(template, params)
    out["transformed"] = _without_dashboard_body(transformed)
    try:
        stack = st.Stack(transformed, values)
    except st.Refused as e:
        out["refused"] = str(e)
        return out
    resources = copy.deepcopy(stack.resources)
    for logical, props in resources.items():
        if stack.types[logical] == "AWS::CloudWatch::Dashboard":
            props["DashboardBody"] = json.loads(props["DashboardBody"])
    out |= {"resources": resources, "outputs": stack.outputs, "conditions": stack.conditions}
    return out


def _without_descriptions(t: dict) -> dict:
    t = copy.deepcopy(t)
    for p in t.get("Parameters", {}).values():
        p.pop("Description", None)
    return t


def compare(
    root: Path, rev: str, new_path: Path, ignore_descriptions: bool = False
) -> tuple[list[str], str]:
    """(the differences found, what was compared). With `ignore_descriptions`, the
    parameters' Descriptions (what the console shows, nothing the stack uses) are left out
    of the comparison, and the summary says how many differ."""
    sys.path.insert(0, str(root / "tests"))
    import template_matrix  # noqa: PLC0415 - tests/ is on the path only here
    from template_checks import stack as st  # noqa: PLC0415

    old_text = subprocess.run(
        ["git", "-C", str(root), "show", f"{rev}:template.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(old_text)
    old = st.load(Path(f.name))
    Path(f.name).unlink()
    new = st.load(new_path)
    described = ""
    if ignore_descriptions:
        olds, news = old.get("Parameters", {}), new.get("Parameters", {})
        changed = [
            k for k in news if olds.get(k, {}).get("Description") != news[k].get("Description")
        ]
        described = f"; {len(changed)} parameter Descriptions differ (not compared)"
        old, new = _without_descriptions(old), _without_descriptions(new)

    found: list[str] = []
    for section in SECTIONS:
        found += differences(old.get(section), new.get(section), section)
    found += differences(
        _without_dashboard_body(old)["Resources"],
        _without_dashboard_body(new)["Resources"],
        "Resources",
    )
    cases = {label: p for label, p in template_matrix.matrix()}
    for t in (old, new):
        cases |= {f"sweep {label}": p for label, p in template_matrix.sweep(t)}
    kinds = {"rendered": 0, "refused by the Rules (also rendered without)": 0}
    kinds["refused by CloudFormation"] = 0
    for label, params in cases.items():
        a, b = _render(st, old, params), _render(st, new, params)
        found += [f"{label}: {d}" for d in differences(a, b)]
        if a["rules"]:
            kinds["refused by the Rules (also rendered without)"] += 1
        else:
            kinds["rendered" if "resources" in a else "refused by CloudFormation"] += 1
    summary = (
        f"{', '.join(SECTIONS)} and {len(new['Resources'])} resources as written; "
        f"{len(cases)} parameter sets ({', '.join(f'{n} {k}' for k, n in kinds.items())}): "
        "the Rules' verdict, the transformed template, the rendered resources, conditions "
        "and outputs, the dashboard body as JSON" + described
    )
    return found, summary
