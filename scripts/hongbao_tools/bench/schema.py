"""What a benchmark section is (`Section`) and the shape its figures file must have, as JSON
Schema checked by the `jsonschema` library: every field a plot reads is required, so a renamed
or missing field fails the report loudly (`ShapeError`) instead of dropping a plot."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jsonschema

from .plots import Figure

NUM = {"type": "number"}
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
NULL_NUM = {"type": ["number", "null"]}
NULL_STR = {"type": ["string", "null"]}

# The run that made the file (tests/benches/support/machine.rs run_info, bench/run.py):
# optional, since a figures file from before it was added has none.
RUN = {
    "type": "object",
    "required": ["finished_at", "commit", "host", "cpus"],
    "properties": {
        "finished_at": STR,
        "commit": NULL_STR,
        "host": NULL_STR,
        "cpus": INT,
        "cpu_model": NULL_STR,
        "loadavg": STR,
    },
}


def obj(required: dict, optional: dict | None = None) -> dict:
    """An object with every key of `required` (and maybe those of `optional`), each of its
    schema; other keys are allowed (a bench may add figures the report does not draw)."""
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }


def arr(items: dict, min_items: int = 1) -> dict:
    """A list of at least `min_items` items of schema `items`."""
    return {"type": "array", "items": items, "minItems": min_items}


def top(required: dict, optional: dict | None = None, *, closed: bool = False) -> dict:
    """A figures file: `bench` (its name), maybe `run`, and its figures; `closed`: no other
    keys (a bench whose parts may be left out, so that a renamed part is not taken for one
    that did not run)."""
    schema = obj({"bench": STR, **required}, {"run": RUN, **(optional or {})})
    if closed:
        schema["additionalProperties"] = False
    return schema


class ShapeError(ValueError):
    """A figures file does not have the shape its section draws."""


@dataclass
class Section:
    """One benchmark: its figures file target/bench/<name>.json, the anchor it is measured
    against, the file's shape, the headlines (ratios in words) and the figures."""

    name: str
    title: str
    command: str
    anchor: str
    schema: dict
    headlines: Callable[[dict], list[str]]
    figures: Callable[[dict], list[Figure]]

    def validate(self, data: object, source: str) -> None:
        """Raises `ShapeError` naming every field of `data` that is not as `schema` says."""
        errors = sorted(
            jsonschema.Draft202012Validator(self.schema).iter_errors(data),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            lines = [
                f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in errors[:12]
            ]
            raise ShapeError(
                f"{source}: not the shape the {self.name} section draws "
                f"({len(errors)} problem(s)):\n" + "\n".join(lines)
            )
