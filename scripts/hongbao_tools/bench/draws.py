"""The draw section: a draw of 10,000 winners among 1,000,000 entrants against the 5 ms a
command may hold the server, an entry's server time as the entrants grow, and what dropping the
entrants' set holds the server for."""

from __future__ import annotations

from . import plots
from .plots import Figure, num, ratio
from .schema import INT, NUM, STR, Section, arr, obj, top

HELD = obj({"max_command_usec": INT, "latency_latest": arr(obj({"event": STR, "max_ms": INT}), 0)})


def _limit_ms(d: dict) -> float:
    return d["limit_usec"] / 1000


def _drop_hold_ms(x: dict) -> float:
    return x["max_hold_usec"] / 1000


def _headlines(d: dict) -> list[str]:
    draw, w = d["draw"], d["entry"]["windows"]
    longest = draw["held"]["max_command_usec"] / 1000
    first, last = w[0], w[-1]
    met = "met" if longest < _limit_ms(d) else "MISSED"
    return [
        f"draw: {d['winners']:,} winners among {d['entrants']:,} entrants in {draw['calls']} "
        f"draw_run calls, {num(draw['wall_ms'])} ms in all; the longest command held the "
        f"server {num(longest)} ms (limit {num(_limit_ms(d))} ms: {met})",
        f"draw entries: {num(first['evalsha_usec_per_call'])} µs per entry at "
        f"{first['entrants']:,} entrants, {num(last['evalsha_usec_per_call'])} µs at "
        f"{last['entrants']:,} "
        f"({ratio(last['evalsha_usec_per_call'] / first['evalsha_usec_per_call'])})",
        "dropping the entrants: "
        + ", ".join(f"{x['how']} {num(_drop_hold_ms(x))} ms" for x in d["drop"])
        + " (the longest hold)",
    ]


def _figures(d: dict) -> list[Figure]:
    draw, limit = d["draw"], _limit_ms(d)
    return [
        plots.bars(
            "Each draw_run.lua call's server time",
            [(f"call {i + 1}", us / 1000, False, "") for i, us in enumerate(draw["call_usec"])],
            "ms",
            f"{d['winners']:,} winners among {d['entrants']:,} entrants, up to "
            f"{draw['chunk']:,} winners per call (SLOWLOG).",
            line=(limit, "the limit"),
        ),
        plots.bars(
            "draw_enter.lua's server time as the entrants grow",
            [
                (f"{x['entrants']:,} entrants", x["evalsha_usec_per_call"], False, "")
                for x in d["entry"]["windows"]
            ],
            "µs per entry",
            "INFO commandstats usec_per_call of the last 10,000 entries before each count.",
        ),
        plots.bars(
            "Dropping the entrants' set: the longest hold",
            [(x["how"], max(_drop_hold_ms(x), 0.001), False, "") for x in d["drop"]],
            "ms",
            "A copy of the set dropped each way: the longest command (SLOWLOG) or expiry step "
            "(LATENCY LATEST, whole ms).",
            line=(limit, "the limit"),
            log=True,
        ),
    ]


DRAW_SCALE = Section(
    name="draw_scale",
    title="A draw of 10,000 winners among 1,000,000 entrants",
    command="cargo bench -p hongbao-tests --bench draw_scale",
    anchor="the 5 ms one command may hold the server",
    schema=top(
        {
            "entrants": INT,
            "winners": INT,
            "limit_usec": INT,
            "entry": obj(
                {
                    "windows": arr(obj({"entrants": INT, "evalsha_usec_per_call": NUM})),
                    "wall_secs": NUM,
                }
            ),
            "memory": obj({"tickets_bytes": INT, "tickets_bytes_per_entrant": NUM}),
            "draw": obj(
                {
                    "chunk": INT,
                    "wall_ms": NUM,
                    "calls": INT,
                    "call_usec": arr(INT),
                    "held": HELD,
                }
            ),
            "drop": arr(obj({"how": STR, "gone_ms": NUM, "max_hold_usec": INT})),
        }
    ),
    headlines=_headlines,
    figures=_figures,
)
