"""The runbook (docs/operations.md) against the template's alarms and the dashboard.

`check_document()` (once): under `## Alarms`, one `### <LogicalId>` section per
AWS::CloudWatch::Alarm of template.yaml, none for an alarm that does not exist (nor any other
`...Alarm` name in the document), each with its four parts in order:

    **What it means.**  the rule behind the threshold
    **Look first at:**  a numbered list of exactly three things
    **Where:**          the dashboard widgets ("their title", in double quotes) or the support
                        look-ups (`GET /support/...`, AWS_IAM routes of template.yaml) that
                        show them: at least one
    **Recover.**        how to recover (and what not to do)

and a `## Dashboard` section that names every widget of every render.

`check()` (per render): every widget a present alarm's **Where:** names is a widget of this
render's dashboard (or a store widget of another DataStore), and every AlarmDescription ends
with `Runbook: <RunbookUrl>#<anchor>`, the GitHub anchor of the alarm's section, within
CloudWatch's 1024 characters (the matrix renders the longest RunbookUrl the parameter allows:
`longest_url()`).
"""

from __future__ import annotations

import re

from template_checks.stack import ROOT

RUNBOOK = ROOT / "docs/operations.md"
DESCRIPTION_MAX = 1024  # AWS::CloudWatch::Alarm AlarmDescription
PARTS = ("**What it means.**", "**Look first at:**", "**Where:**", "**Recover.**")


def lookups(template: dict) -> set[str]:
    """The support look-ups: the template's `GET /support/...` routes, each signed (AWS_IAM;
    callers in HONGBAO_SUPPORT_PRINCIPALS)."""
    out = set()
    for r in template["Resources"].values():
        if r.get("Type") != "AWS::Serverless::Function":
            continue
        for event in r["Properties"].get("Events", {}).values():
            e = event.get("Properties", {})
            route = f"{e.get('Method', '').upper()} {e.get('Path', '')}"
            signed = e.get("Auth", {}).get("Authorizer") == "AWS_IAM"
            if event.get("Type") == "HttpApi" and route.startswith("GET /support/") and signed:
                out.add(route)
    return out


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces
    to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(text: str, level: str) -> dict[str, str]:
    """Heading -> body of each `level` heading (`## ` or `### `), the body up to the next
    heading of that level or above."""
    out: dict[str, str] = {}
    current = None
    stop = tuple("#" * n + " " for n in range(1, len(level)))
    for line in text.split("\n"):
        if line.startswith(level):
            current = line[len(level) :].strip()
            out[current] = ""
        elif line.startswith(stop):
            current = None
        elif current is not None:
            out[current] += line + "\n"
    return out


def alarm_ids(template: dict) -> list[str]:
    return [
        n for n, r in template["Resources"].items() if r.get("Type") == "AWS::CloudWatch::Alarm"
    ]


def where_widgets(body: str) -> list[str]:
    """The widget titles a section's **Where:** part names (in double quotes)."""
    part = body.split(PARTS[2], 1)[1].split(PARTS[3], 1)[0] if PARTS[2] in body else ""
    return re.findall(r'"([^"]+)"', " ".join(part.split()))  # a title may wrap


def check_document(template: dict, text: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The failures of docs/operations.md as a whole, and each alarm's section."""
    text = RUNBOOK.read_text() if text is None else text
    fail = []
    top = sections(text, "## ")
    if "Alarms" not in top:
        return [f"{RUNBOOK.name}: no '## Alarms' section"], {}
    found = sections(top["Alarms"], "### ")
    alarms = alarm_ids(template)
    routes = lookups(template)
    for a in alarms:
        if a not in found:
            fail.append(f"{RUNBOOK.name}: no '### {a}' section under '## Alarms'")
    for s in found:
        if s not in alarms:
            fail.append(f"{RUNBOOK.name}: section '### {s}' names no alarm of template.yaml")
    for name in sorted(set(re.findall(r"\b[A-Z][A-Za-z0-9]*[a-z0-9]Alarm\b", text)) - set(alarms)):
        fail.append(f"{RUNBOOK.name}: names {name}, which is no alarm of template.yaml")
    for a, body in found.items():
        at = [body.find(p) for p in PARTS]
        if -1 in at or at != sorted(at):
            missing = [p for p, i in zip(PARTS, at, strict=True) if i == -1]
            fail.append(
                f"{RUNBOOK.name} {a}: its parts must be {' '.join(PARTS)} in this order"
                + (f" (missing {' '.join(missing)})" if missing else "")
            )
            continue
        look = body[at[1] : at[2]]
        items = re.findall(r"^\s*(\d+)\. ", look, re.M)
        if items != ["1", "2", "3"]:
            fail.append(f"{RUNBOOK.name} {a}: 'Look first at' lists {len(items)} things, not 3")
        where = body[at[2] : at[3]]
        named = re.findall(r"`(GET /support/[^`]*)`", where)
        for lookup in named:
            if lookup not in routes:
                fail.append(
                    f"{RUNBOOK.name} {a}: `{lookup}` is not a support look-up of template.yaml "
                    f"(AWS_IAM GET /support/ routes: {sorted(routes)})"
                )
        if not named and not where_widgets(body):
            fail.append(f"{RUNBOOK.name} {a}: 'Where' names no widget and no support look-up")
        if len(body[at[3] :].strip()) <= len(PARTS[3]):
            fail.append(f"{RUNBOOK.name} {a}: 'Recover' is empty")
    return fail, found


def dashboard_section(titles: set[str], text: str | None = None) -> list[str]:
    """Every widget title (of any render) appears in the `## Dashboard` section."""
    text = RUNBOOK.read_text() if text is None else text
    board = sections(text, "## ").get("Dashboard")
    if board is None:
        return [f"{RUNBOOK.name}: no '## Dashboard' section"]
    board = " ".join(board.split())
    return [
        f"{RUNBOOK.name}: the Dashboard section does not describe the widget {t!r}"
        for t in sorted(titles)
        if t not in board
    ]


def check(
    stack, values: dict[str, str], found: dict[str, str], titles: set[str], elsewhere: set[str]
) -> list[str]:
    """The failures of one render: descriptions and the widgets the runbook names. A section
    may name the store widgets of every DataStore (`elsewhere`: those of the other stores,
    not on this render's dashboard); any other widget it names must be on it (not checked when
    the dashboard has no titles: its own check has failed)."""
    fail = []
    url = values["RunbookUrl"]
    for a in stack.existing("AWS::CloudWatch::Alarm"):
        description = stack.resource(a).get("AlarmDescription", "")
        suffix = f"Runbook: {url}#{anchor(a)}"
        if not description.endswith(suffix):
            fail.append(f"{a}: AlarmDescription does not end with {suffix!r}")
        if len(description) > DESCRIPTION_MAX:
            fail.append(f"{a}: AlarmDescription has {len(description)} characters (> 1024)")
        for t in where_widgets(found.get(a, "")):
            if titles and t not in titles and t not in elsewhere:
                fail.append(f"{RUNBOOK.name} {a}: names the widget {t!r}, not on this dashboard")
    return fail


def longest_url(template: dict) -> str:
    """A RunbookUrl of the parameter's MaxLength that its AllowedPattern accepts."""
    spec = template["Parameters"]["RunbookUrl"]
    if "MaxLength" not in spec:
        raise SystemExit("RunbookUrl needs a MaxLength: AlarmDescription holds 1024 characters")
    head = "https://runbooks.example.com/"
    url = head + "x" * (int(spec["MaxLength"]) - len(head) - len(".md")) + ".md"
    if not re.fullmatch(spec["AllowedPattern"], url):
        raise SystemExit(f"RunbookUrl's AllowedPattern refuses a {len(url)}-character URL")
    return url
