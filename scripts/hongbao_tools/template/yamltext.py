"""YAML as text: the pieces scripts/template.py composes template.yaml from.

The sources under template/ are YAML files whose top-level keys are either sections of the
template (capitalised: Parameters, Resources...; copied as written, comments included) or
data for the generator (lower case: prototypes and tables). A prototype is YAML text with
placeholders `<Name>` (filled by `fill`) and marker lines `# @generate <what> [args]`
(replaced by generated text at the marker's indentation). Text keeps the comments that
explain a choice; `load` reads the same text as data, CloudFormation's short-form tags
(`!Ref`, `!Sub`, `!If`...) kept as `Tagged` values, and `flow` writes data back as one line
of YAML flow style.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

import yaml

PLACEHOLDER = re.compile(r"<([A-Za-z][A-Za-z0-9_]*)>")
MARKER = re.compile(r"^(\s*)# @generate ([\w-]+)((?: [\w-]+)*)\s*$")
KEY = re.compile(r"^([A-Za-z<][\w<>-]*):(?: |$)")


class TemplateError(Exception):
    """The sources are inconsistent (the message says where)."""


# ------------------------------------------------------------------------ data from YAML
@dataclass(frozen=True)
class Tagged:
    """A value with a CloudFormation short-form tag: `!Ref X` is Tagged("!Ref", "X")."""

    tag: str
    value: Any


class _Loader(yaml.SafeLoader):
    pass


def _tagged(loader: yaml.Loader, suffix: str, node: yaml.Node) -> Tagged:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return Tagged("!" + suffix, value)


_Loader.add_multi_constructor("!", _tagged)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader plus tags as values


_PLAIN = re.compile(r"^[A-Za-z0-9_/$.:-][A-Za-z0-9_/$.:@ -]*$")
_NOT_PLAIN = re.compile(r"^(true|false|yes|no|on|off|null|~|[-+]?[0-9.eE_+-]+)$", re.I)


def scalar(v: Any) -> str:
    """A scalar as YAML flow text: plain when it reads back the same, else double-quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    s = str(v)
    if _PLAIN.match(s) and not _NOT_PLAIN.match(s) and ": " not in s and not s.endswith((" ", ":")):
        return s
    return json.dumps(s)


def flow(v: Any) -> str:
    """Data as one line of YAML flow style (tags kept)."""
    if isinstance(v, Tagged):
        return f"{v.tag} {flow(v.value)}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{scalar(k)}: {flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(flow(x) for x in v) + "]"
    return scalar(v)


def substitute(v: Any, values: dict[str, Any]) -> Any:
    """Placeholders filled in data: a string that is one placeholder takes the value itself."""
    if isinstance(v, Tagged):
        return Tagged(v.tag, substitute(v.value, values))
    if isinstance(v, dict):
        return {substitute(k, values): substitute(x, values) for k, x in v.items()}
    if isinstance(v, list):
        return [substitute(x, values) for x in v]
    if isinstance(v, str):
        m = PLACEHOLDER.fullmatch(v)
        if m and m.group(1) in values:
            value = values[m.group(1)]
            return value if isinstance(value, str) else substitute(value, values)
        return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), v)
    return v


# ------------------------------------------------------------------------------ text
def blocks(text: str) -> list[tuple[str | None, str]]:
    """The top-level entries of a YAML mapping text, in order: (key, its text), the text
    starting with the comments and blank lines above the key. Text after the last entry
    that belongs to none (trailing comments) comes as (None, text)."""
    out: list[tuple[str | None, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        m = KEY.match(line)
        if m:
            out.append((m.group(1), "\n".join([*pending, line])))
            pending = []
        elif (not line.strip() or line.startswith("#")) or not out:
            pending.append(line)
        else:
            if pending:  # comments at column 0 inside an entry stay with it
                key, body = out[-1]
                out[-1] = (key, "\n".join([body, *pending]))
                pending = []
            key, body = out[-1]
            out[-1] = (key, body + "\n" + line)
    if pending:
        out.append((None, "\n".join(pending)))
    return out


def body(entry: str) -> str:
    """An entry's value (the lines below its key), dedented; the key's own line dropped."""
    lines = entry.splitlines()
    i = next(i for i, line in enumerate(lines) if KEY.match(line))
    return textwrap.dedent("\n".join(lines[i + 1 :]))


def without_comments_above(entry: str) -> str:
    lines = entry.splitlines()
    i = next(i for i, line in enumerate(lines) if KEY.match(line))
    return "\n".join(lines[i:])


def indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def fill(text: str, values: dict[str, Any], generate=None) -> str:
    """Placeholders replaced by `values` (a value of several lines continues at the line's
    indentation), and each marker line by `generate(what, args)`'s text at its indentation
    (nothing when it returns "")."""
    out = []
    for line in text.splitlines():
        m = MARKER.match(PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), line))
        if m and generate is not None:
            made = generate(m.group(2), m.group(3).split())
            if made is None:
                out.append(line)
            elif made.strip():
                out.append(indent(made, m.group(1)))
            continue
        lead = line[: len(line) - len(line.lstrip())]

        def one(m: re.Match, lead: str = lead) -> str:
            name = m.group(1)
            if name not in values:
                return m.group(0)
            return str(values[name]).replace("\n", "\n" + lead)

        out.append(PLACEHOLDER.sub(one, line))
    return "\n".join(out)


def folded(text: str, width: int = 86) -> str:
    """Prose as the lines of a folded scalar (`>-`): joined by single spaces it reads back
    as `text`."""
    return "\n".join(textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False))
