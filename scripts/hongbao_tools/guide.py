"""The requests of a task guide (docs/checkout.md), read from the page itself so that the guide
cannot drift from the API: each fenced `sh` block holding `METHOD /path` and a JSON body, with
the answer the text after it promises (its leading status and the `"field": value` pairs it
names, e.g. 200 `{"state": "held", ...}`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

# A fenced sh block: the request line, then the body (JSON over one or more lines).
BLOCK = re.compile(r"```sh\n\s*(GET|POST|PUT|DELETE) (\S+)\n(.*?)```", re.S)
# The promised answer after a block: its status, then a backticked object of fields.
ANSWER = re.compile(r"(\d{3}) `(\{[^`]*\})`")
# A field with a JSON literal value inside that object ("state": "held", "repeat": false).
FIELD = re.compile(r'"(\w+)": ("[^"]*"|true|false|null|-?\d+)')


@dataclass
class GuideRequest:
    """One request of a guide: its method, path and body, and what the guide says it answers."""

    method: str
    path: str
    body: dict
    status: int
    fields: dict = field(default_factory=dict)

    def name(self) -> str:
        promised = ", ".join(f"{k}: {json.dumps(v)}" for k, v in self.fields.items())
        return f"{self.method} {self.path} -> {self.status} {{{promised}}}"


def requests(page: Path) -> list[GuideRequest]:
    """Every request of `page`, in the page's order. Raises ValueError for a block whose body is
    not JSON or that no promised answer follows (a guide must say what each request answers)."""
    text = page.read_text()
    found = []
    for m in BLOCK.finditer(text):
        method, path, raw = m.group(1), m.group(2), " ".join(m.group(3).split())
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"{page.name}: the body of {method} {path} is not JSON: {e}") from e
        answer = ANSWER.search(text, m.end())
        if answer is None:
            raise ValueError(f"{page.name}: no answer follows {method} {path}")
        fields = {k: json.loads(v) for k, v in FIELD.findall(answer.group(2))}
        found.append(GuideRequest(method, path, body, int(answer.group(1)), fields))
    return found


def differences(req: GuideRequest, status: int, body: object) -> list[str]:
    """How an answer (`status`, `body`) differs from what the guide promises for `req`."""
    problems = []
    if status != req.status:
        problems.append(f"status {status}, the guide says {req.status}")
    got = body if isinstance(body, dict) else {}
    for k, v in req.fields.items():
        if got.get(k) != v:
            problems.append(f"{k}: {json.dumps(got.get(k))}, the guide says {json.dumps(v)}")
    return problems
