"""template.yaml against what is declared elsewhere, once (template.yaml is written by hand;
these checks keep it equal to its sources):

- functions.json (from the Rust declarations): each function's `<L>Function` (its binary,
  CodeUri and log group), its `<L>LogGroup`, its ARN output; an HTTP function's events are
  exactly its operations (method, path, `Auth: AWS_IAM` exactly for an `iam` one), with its
  Errors and Throttles alarms; a scheduled one has Schedule events only; no other function;
  each principals variable has its parameter `<X>Principals` (merchant entries allowed exactly
  where the operation's tenant is a merchant); every throttled route is an operation;
- docs/configuration.md: a parameter whose Description starts `VARIABLE - ` sets a variable of
  the table, described by the table's meaning (and a note after it), with the table's default,
  and sets it in Globals or a function's Environment (`VARIABLE: !Ref Parameter`, or a value
  built from it);
- docs/operations.md: an alarm's AlarmDescription begins with the first sentence of its
  section's "What it means." (runbook.py checks the rest);
- the template's own rules: a resource's UpdateReplacePolicy is its DeletionPolicy; the
  dashboard shows every function and lists every alarm.

`problems(template)` lists what differs; tests/template_matrix.py runs it (`make lint`).
"""

from __future__ import annotations

import itertools
import json
import re

from template_checks.stack import ROOT

SETTINGS_DOC = ROOT / "docs/configuration.md"
SETTINGS_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*) \|$")
RUNBOOK = ROOT / "docs/operations.md"
MEANS = "**What it means.**"
# A principals list as the function parses it (`hongbao::wallet::rules::IamPrincipals`: an
# entry, a * only at its end, no `=`), so no accepted value stops Init; where an entry may
# name the merchants it acts for, `<principal>=<m>[|<m>...]`, each merchant id 1 to 64 of
# A-Z a-z 0-9 _ . : -.
PRINCIPALS_PATTERN = r"^$|^ *[^ ,*=]+\*? *(, *[^ ,*=]+\*? *)*$"
_MERCHANT = r"[A-Za-z0-9_.:-]{1,64}"
_BOUND_ENTRY = rf"[^ ,*=]+\*?( *= *{_MERCHANT}( *\| *{_MERCHANT})*)?"
BOUND_PATTERN = rf"^$|^ *{_BOUND_ENTRY} *(, *{_BOUND_ENTRY} *)*$"
IAM = {"Authorizer": "AWS_IAM"}


def settings_table() -> dict[str, tuple[str, str]]:
    """variable -> (default, meaning) of docs/configuration.md's settings table, Markdown code
    spans as plain text; a default "(none)" is empty."""
    out = {}
    for line in SETTINGS_DOC.read_text().splitlines():
        m = SETTINGS_ROW.match(line)
        if m:
            default, meaning = (x.replace("`", "") for x in m.group(2, 3))
            out[m.group(1)] = ("" if default == "(none)" else default, meaning)
    return out


def alarm_meanings() -> dict[str, str]:
    """alarm -> the first sentence of its runbook section's "What it means." paragraph, as
    plain text."""
    out: dict[str, str] = {}
    alarm, in_alarms = None, False
    lines = RUNBOOK.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## "):
            in_alarms = line.strip() == "## Alarms"
        elif in_alarms and line.startswith("### "):
            alarm = line[4:].strip()
        elif alarm and line.startswith(MEANS):
            paragraph = " ".join(itertools.takewhile(str.strip, lines[i:]))[len(MEANS) :]
            text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", " ".join(paragraph.split()))
            text = text.replace("**", "").replace("`", "")
            out[alarm] = re.match(r".+?\.(?=\s+[A-Z]|$)", text).group(0)
            alarm = None
    return out


def declared() -> list[dict]:
    return json.loads((ROOT / "functions.json").read_text())["functions"]


def function_problems(t: dict, f: dict) -> list[str]:
    """What `f` (an entry of functions.json) lacks in the template `t`."""
    res, logical, name = t["Resources"], f["logical_id"], f["name"]
    fn = res.get(f"{logical}Function", {})
    if fn.get("Type") != "AWS::Serverless::Function":
        return [f"{name}: no AWS::Serverless::Function {logical}Function"]
    p, out = fn.get("Properties", {}), []
    if fn.get("Metadata", {}).get("BuildProperties", {}).get("Binary") != name:
        out.append(f"{logical}Function: Metadata.BuildProperties.Binary is not {name}")
    if p.get("CodeUri") != f"functions/{name}":
        out.append(f"{logical}Function: CodeUri is not functions/{name}")
    if p.get("LoggingConfig") != {"LogGroup": {"Ref": f"{logical}LogGroup"}}:
        out.append(f"{logical}Function: LoggingConfig is not its {logical}LogGroup")
    group = res.get(f"{logical}LogGroup", {}).get("Properties", {}).get("LogGroupName")
    if group != {"Fn::Sub": f"/aws/lambda/${{AWS::StackName}}/{name}"}:
        out.append(f"{logical}LogGroup: missing, or not named /aws/lambda/<stack>/{name}")
    if f"{logical}FunctionArn" not in t.get("Outputs", {}):
        out.append(f"{logical}Function: no output {logical}FunctionArn")
    events = p.get("Events", {})
    if f["trigger"] != "http":
        if not events or any(e.get("Type") != "Schedule" for e in events.values()):
            out.append(f"{logical}Function: a scheduled function has Schedule events only")
        return out
    want = {
        op["event"]: ("HttpApi", op["method"], op["path"], op["auth"] == "iam")
        for op in f["operations"]
    }
    got = {
        k: (e.get("Type"), e["Properties"].get("Method"), e["Properties"].get("Path"))
        + (e["Properties"].get("Auth") == IAM,)
        for k, e in events.items()
    }
    for k in sorted(want.keys() | got.keys()):
        if want.get(k) != got.get(k):
            out.append(
                f"{logical}Function event {k}: {got.get(k)} where functions.json has "
                f"{want.get(k)} (type, method, path, AWS_IAM)"
            )
    for k, e in events.items():
        api, payload = (e["Properties"].get(x) for x in ("ApiId", "PayloadFormatVersion"))
        if api != {"Ref": "HttpApi"} or payload != "2.0":
            out.append(f"{logical}Function event {k}: not ApiId HttpApi, payload 2.0")
    out += [
        f"{logical}Function: no {logical}{a}Alarm"
        for a in ("Errors", "Throttles")
        if res.get(f"{logical}{a}Alarm", {}).get("Type") != "AWS::CloudWatch::Alarm"
    ]
    return out


def functions_problems(t: dict, spec: list[dict]) -> list[str]:
    out = [p for f in spec for p in function_problems(t, f)]
    known = {f"{f['logical_id']}Function" for f in spec}
    out += [
        f"{k}: a function that functions.json does not declare"
        for k, r in t["Resources"].items()
        if r.get("Type") == "AWS::Serverless::Function" and k not in known
    ]
    routes = {f"{op['method']} {op['path']}" for f in spec for op in f["operations"]}
    throttled = t["Resources"]["HttpApi"]["Properties"].get("RouteSettings", {})
    out += [
        f"RouteSettings {r}: no operation of functions.json" for r in throttled if r not in routes
    ]
    for s in throttled.values():
        for ref in s.values():
            if ref.get("Ref") not in t["Parameters"]:
                out.append(f"RouteSettings: no parameter {ref.get('Ref')}")
    return out


def principals_problems(t: dict, spec: list[dict]) -> list[str]:
    out = []
    iam = [op for f in spec for op in f["operations"] if op["auth"] == "iam"]
    bound = {op["principals"] for op in iam if op.get("tenant") == "merchant"}
    for var in dict.fromkeys(op["principals"] for op in iam):
        name = "".join(w.title() for w in var.split("_")[1:])
        p = t["Parameters"].get(name)
        if p is None or not p.get("Description", "").startswith(f"{var} - "):
            out.append(f"{var}: no parameter {name} described '{var} - ...'")
            continue
        pattern = BOUND_PATTERN if var in bound else PRINCIPALS_PATTERN
        if p.get("AllowedPattern") != pattern:
            out.append(
                f"{name}: AllowedPattern is not the {'merchant-bound ' * (var in bound)}"
                "principals list's"
            )
    return out


def settings_problems(t: dict) -> list[str]:
    table, out = settings_table(), []
    envs = [t.get("Globals", {}).get("Function", {}).get("Environment", {})]
    envs += [
        r["Properties"].get("Environment", {})
        for r in t["Resources"].values()
        if r.get("Type") == "AWS::Serverless::Function"
    ]
    values = [(k, json.dumps(v)) for e in envs for k, v in e.get("Variables", {}).items()]
    for name, p in t["Parameters"].items():
        m = re.match(r"([A-Z][A-Z0-9_]+) - ", p.get("Description", ""))
        if not m:
            continue
        var = m.group(1)
        if var not in table:
            out.append(f"{name}: {var} is not in the table of {SETTINGS_DOC.name}")
            continue
        default, meaning = table[var]
        described = f"{var} - {meaning}"
        if not (p["Description"] == described or p["Description"].startswith(described + ". ")):
            out.append(f"{name}: Description is not '{described}' (and a note after it)")
        if str(p.get("Default", "")) != default:
            out.append(f"{name}: Default {p.get('Default')!r} is not the table's {default!r}")
        if not any(k == var and json.dumps({"Ref": name})[1:-1] in v for k, v in values):
            out.append(f"{name}: sets {var} in no Environment (a value with !Ref {name})")
    return out


def resource_problems(t: dict) -> list[str]:
    out, meanings = [], alarm_meanings()
    body = json.dumps(t["Resources"].get("Dashboard", {}))
    for k, r in t["Resources"].items():
        if r.get("DeletionPolicy") != r.get("UpdateReplacePolicy"):
            out.append(f"{k}: UpdateReplacePolicy is not its DeletionPolicy")
        if r.get("Type") == "AWS::Serverless::Function" and f"${{{k}}}" not in body:
            out.append(f"{k}: not on the dashboard")
        if r.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        if f"${{{k}.Arn}}" not in body:
            out.append(f"{k}: not in the dashboard's alarms")
        text = r["Properties"].get("AlarmDescription", {}).get("Fn::Sub", "")
        if k not in meanings or not text.startswith(meanings[k].replace("${", "${!")):
            out.append(
                f"{k}: AlarmDescription does not begin with its runbook section's first sentence"
            )
    return out


def problems(t: dict) -> list[str]:
    spec = declared()
    return (
        functions_problems(t, spec)
        + principals_problems(t, spec)
        + settings_problems(t)
        + resource_problems(t)
    )
