"""What template.yaml takes from the docs: the settings' defaults and meanings
(docs/configuration.md's table) and each alarm's description (its runbook section,
docs/operations.md)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

# The functions' settings, each with its default and meaning (a Rust unit test checks that
# this table is exactly the settings the code declares).
SETTINGS_DOC = "docs/configuration.md"
SETTINGS_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*) \|$")
# The runbook: under `## Alarms`, a `### <alarm>` section per alarm, whose "What it means."
# paragraph begins with the alarm's description.
RUNBOOK = "docs/operations.md"
MEANS = "**What it means.**"


def settings_table(path: Path) -> dict[str, tuple[str, str]]:
    """variable -> (default, meaning) of the settings table, Markdown code spans as plain text;
    a default "(none)" is empty."""
    out = {}
    for line in path.read_text().splitlines():
        m = SETTINGS_ROW.match(line)
        if m:
            default, meaning = (x.replace("`", "") for x in m.group(2, 3))
            out[m.group(1)] = ("" if default == "(none)" else default, meaning)
    return out


def alarm_meanings(path: Path) -> dict[str, str]:
    """alarm -> the first sentence of its runbook section's "What it means." paragraph, Markdown
    as plain text."""
    out: dict[str, str] = {}
    alarm, in_alarms = None, False
    lines = path.read_text().splitlines()
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
