"""The throughput and cost sections: grabs, votes and order codes per second beside
redis-benchmark, each hot script's server time beside its bare baseline, a packet's bytes beside
the seed's layout, and reclaim and ledger-export throughput beside what one run must do."""

from __future__ import annotations

from . import plots
from .plots import Figure, num, ratio
from .schema import BOOL, INT, NULL_NUM, NUM, STR, Section, arr, obj, top

# --- grab_throughput, voting --------------------------------------------------------------------


def _grab_headlines(d: dict) -> list[str]:
    g = d["goal"]
    return [
        f"grab throughput: hongbao {g['phase']} makes {g['pct_of_rb_p16_paired']:.0f} % of "
        f"redis-benchmark -P 16 and {g['pct_of_rb_p1_paired']:.0f} % of -P 1 on the same "
        f"server (median of per-round ratios; goal ≥ 90 %: {'met' if g['met'] else 'not met'})"
    ]


def _grab_figures(d: dict) -> list[Figure]:
    rows = [
        (
            f"{p['mode']} {p['concurrency']}",
            p["grabs_per_sec_median"],
            p["mode"] == "redis-benchmark",
            "" if p["mode"] == "redis-benchmark" else f"{p['pct_of_rb_p16_paired']:.0f} % of -P 16",
        )
        for p in d["phases"]
    ]
    return [
        plots.bars(
            "Grabs/s, median of rounds",
            rows,
            "grabs/s",
            f"Every call a win of grab.lua; {d['rounds']} interleaved rounds. Grey: "
            "redis-benchmark sending the same EVALSHA (the physical limit of one Redis); red: "
            "through store::packets::grab, labelled with the median of per-round ratios to -P 16.",
        )
    ]


GRAB_THROUGHPUT = Section(
    name="grab_throughput",
    title="Grab throughput beside redis-benchmark",
    command="cargo bench -p hongbao-tests --bench grab_throughput",
    anchor="redis-benchmark sending the same EVALSHA to the same server in the same run",
    schema=top(
        {
            "rounds": INT,
            "phases": arr(
                obj(
                    {
                        "mode": STR,
                        "concurrency": STR,
                        "grabs_per_sec_median": NUM,
                        "pct_of_rb_p16_paired": NUM,
                    }
                ),
                2,
            ),
            "goal": obj(
                {"phase": STR, "pct_of_rb_p16_paired": NUM, "pct_of_rb_p1_paired": NUM, "met": BOOL}
            ),
        }
    ),
    headlines=_grab_headlines,
    figures=_grab_figures,
)


def _best_hongbao(d: dict) -> dict:
    return max((p for p in d["phases"] if p["mode"] == "hongbao"), key=lambda p: p["votes_per_sec"])


VOTING = Section(
    name="voting",
    title="Vote throughput beside redis-benchmark",
    command="cargo bench -p hongbao-tests --bench voting",
    anchor="redis-benchmark sending the same EVALSHA of vote.lua",
    schema=top(
        {
            "phases": arr(
                obj(
                    {
                        "mode": STR,
                        "concurrency": STR,
                        "votes_per_sec": NUM,
                        "pct_of_rb_p1": NUM,
                        "pct_of_rb_p16": NUM,
                    }
                ),
                2,
            )
        }
    ),
    headlines=lambda d: [
        f"votes: hongbao {_best_hongbao(d)['concurrency']} {num(_best_hongbao(d)['votes_per_sec'])}"
        f" votes/s, {_best_hongbao(d)['pct_of_rb_p1']:.0f} % of redis-benchmark's best -P 1 and "
        f"{_best_hongbao(d)['pct_of_rb_p16']:.0f} % of -P 16"
    ],
    figures=lambda d: [
        plots.bars(
            "Votes/s",
            [
                (
                    f"{p['mode']} {p['concurrency']}",
                    p["votes_per_sec"],
                    p["mode"] == "redis-benchmark",
                    ""
                    if p["mode"] == "redis-benchmark"
                    else f"{p['pct_of_rb_p16']:.0f} % of -P 16",
                )
                for p in d["phases"]
            ],
            "votes/s",
            "Distinct up-votes of one fresh article per phase. Grey: redis-benchmark; red: "
            "through voting::vote, labelled with its share of redis-benchmark -P 16.",
        )
    ],
)

# --- order_codes --------------------------------------------------------------------------------


def _order_headlines(d: dict) -> list[str]:
    single = [p for p in d["phases"] if p["mode"] == "hongbao" and p["single_client"]]
    out = [
        f"order codes: one code per call through hongbao {num(p['usec_per_call'])} µs, "
        f"{ratio(p['x_redis_rs_incr'])} a redis-rs INCR round trip from the same process"
        for p in single
        if p["x_redis_rs_incr"] is not None
    ]
    many = [p for p in d["phases"] if p["mode"] == "hongbao" and not p["single_client"]]
    if many:
        best = max(many, key=lambda p: p["codes_per_sec"])
        out.append(f"order codes: up to {num(best['codes_per_sec'])} codes/s ({best['call']}, "
                   f"{best['concurrency']})")  # fmt: skip
    return out


def _order_figures(d: dict) -> list[Figure]:
    single = [p for p in d["phases"] if p["single_client"]]
    many = [p for p in d["phases"] if not p["single_client"]]
    figs = [
        plots.bars(
            "One client, one call at a time: µs per call",
            [
                (
                    f"{p['mode']} {p['call']}",
                    p["usec_per_call"],
                    p["mode"] != "hongbao",
                    f"{ratio(p['x_rb_incr'])} rb INCR" if p["x_rb_incr"] is not None else "",
                )
                for p in single
            ],
            "µs per call (wall)",
            "The latency of one code: grey the anchors (an INCR round trip through "
            "redis-benchmark and through redis-rs, the bare EVALSHA one code sends), red one "
            "code through store::order_codes; the fastest of three interleaved rounds each.",
        )
    ]
    if many:
        figs.append(
            plots.bars(
                "Many clients: codes (or INCRs) per second",
                [
                    (
                        f"{p['mode']} {p['call']} {p['concurrency']}",
                        p["codes_per_sec"] or p["calls_per_sec"],
                        p["mode"] != "hongbao",
                        "",
                    )
                    for p in many
                ],
                "per second (log)",
                "Grey: redis-benchmark (INCR calls/s, EVALSHA codes/s); red: hongbao's codes/s.",
                log=True,
            )
        )
    return figs


ORDER_CODES = Section(
    name="order_codes",
    title="Order codes beside an INCR round trip",
    command="cargo bench -p hongbao-tests --bench order_codes",
    anchor="INCR through redis-benchmark and redis-rs (one round trip, the cheapest write)",
    schema=top(
        {
            "phases": arr(
                obj(
                    {
                        "mode": STR,
                        "call": STR,
                        "concurrency": STR,
                        "single_client": BOOL,
                        "usec_per_call": NUM,
                        "calls_per_sec": NUM,
                        "codes_per_sec": NUM,
                        "x_rb_incr": NULL_NUM,
                        "x_redis_rs_incr": NULL_NUM,
                    }
                ),
                2,
            )
        }
    ),
    headlines=_order_headlines,
    figures=_order_figures,
)

# --- script_costs -------------------------------------------------------------------------------

SCRIPT_COSTS = Section(
    name="script_costs",
    title="Each hot script's server time beside its bare baseline",
    command="cargo bench -p hongbao-tests --bench script_costs",
    anchor="seed 000's grab, chapter 1's vote, an INCR round trip, in the same round",
    schema=top(
        {
            "rounds": INT,
            "rows": arr(
                obj(
                    {
                        "path": STR,
                        "usec_per_call": NUM,
                        "baseline": STR,
                        "baseline_usec_per_call": NUM,
                        "ratio": NUM,
                        "ratio_min": NUM,
                        "ratio_max": NUM,
                        "goal": NULL_NUM,
                    }
                ),
                2,
            ),
        }
    ),
    headlines=lambda d: [
        f"script costs: {r['path']} {ratio(r['ratio'])} {r['baseline']}"
        + (f" (goal ≤ {ratio(r['goal'])})" if r["goal"] is not None else "")
        for r in d["rows"]
        if r["goal"] is not None
    ],
    figures=lambda d: [
        plots.pairs(
            "Server µs per call (INFO commandstats), median of rounds",
            [
                (
                    r["path"],
                    r["usec_per_call"],
                    r["baseline"],
                    r["baseline_usec_per_call"],
                    f"[{r['ratio_min']:.2f}–{r['ratio_max']:.2f}]",
                    r["ratio"],
                )
                for r in d["rows"]
            ],
            "µs",
            f"Each path and its baseline within seconds of each other in each of {d['rounds']} "
            "rounds; the bold figure is the median of the per-round ratios hongbao / baseline, "
            "the bracket their range.",
        )
    ],
)

# --- packet_memory ------------------------------------------------------------------------------

PACKET_MEMORY = Section(
    name="packet_memory",
    title="A grabbed packet's bytes beside the seed's layout",
    command="cargo bench -p hongbao-tests --bench packet_memory",
    anchor="seed 000's layout holding the same grabbers",
    schema=top(
        {
            "rows": arr(obj({"shares": INT, "hongbao_packet_bytes": INT, "seed_bytes": INT})),
            "history": arr(
                obj({"entries": INT, "sent_bytes": INT, "received_bytes": INT, "totals_bytes": INT})
            ),
        }
    ),
    headlines=lambda d: [
        f"packet memory: a fully grabbed {r['shares']:,}-share packet "
        f"{num(r['hongbao_packet_bytes'] / 1000)} KB, "
        f"{ratio(r['hongbao_packet_bytes'] / r['seed_bytes'])} seed 000's layout"
        for r in d["rows"]
    ],
    figures=lambda d: [
        plots.pairs(
            "Bytes of a fully grabbed packet's keys",
            [
                (
                    f"{r['shares']:,} shares",
                    r["hongbao_packet_bytes"] / 1000,
                    "seed 000",
                    r["seed_bytes"] / 1000,
                    "",
                )
                for r in d["rows"]
            ],
            "KB",
            "MEMORY USAGE summed over the packet's keys after every share is grabbed (no "
            "claims yet); the rate-limit counters, which expire with their window, not counted.",
        ),
        plots.bars(
            "History: bytes per entry",
            [
                (f"{h['entries']:,} entries: {kind}", h[f"{kind}_bytes"] / h["entries"], False, "")
                for h in d["history"]
                for kind in ("sent", "received")
            ],
            "bytes per entry",
            "One sender's packets, each claimed by one grabber.",
        ),
    ],
)

# --- reclaim_backlog, ledger_export -------------------------------------------------------------


def _reclaim_headlines(d: dict) -> list[str]:
    need = d["packets"] / d["deadline_secs"]
    return [
        f"reclaim: {d['packets']:,} due packets drained by one run in {num(d['run_secs'])} s "
        f"({ratio(d['run_secs'] / d['deadline_secs'])} its {d['deadline_secs']} s deadline), "
        f"{num(d['packets_per_sec'])} packets/s, {ratio(d['packets_per_sec'] / need)} the rate "
        f"one run needs; whole backlog in one run: {'yes' if d['drained_in_one_run'] else 'NO'}"
    ]


def _reclaim_figures(d: dict) -> list[Figure]:
    need = d["packets"] / d["deadline_secs"]
    backlog = (
        f"A {d['packets']:,}-packet due backlog (1 in 10 with a share claimed, 1 in 100 with a "
        f"claim to re-drive: {d['redriven']:,} re-driven) drained through "
        f"store::reclaim::run_until in {d['batches']} batches"
    )
    return [
        plots.bars(
            "One reclaim run against its Lambda deadline",
            [
                (
                    "the run",
                    d["run_secs"],
                    False,
                    f"{ratio(d['run_secs'] / d['deadline_secs'])} the deadline",
                )
            ],
            "seconds",
            f"{backlog}; the goal is the whole backlog within one run's {d['deadline_secs']} s.",
            line=(d["deadline_secs"], f"deadline {d['deadline_secs']} s"),
        ),
        plots.pairs(
            "Packets settled per second",
            [("one run", d["packets_per_sec"], "the rate one run needs", need, "")],
            "packets/s",
            f"{backlog}; the anchor is the backlog over the deadline: the slowest rate that "
            "still drains it in one run.",
        ),
    ]


RECLAIM_BACKLOG = Section(
    name="reclaim_backlog",
    title="Reclaim throughput: a due backlog drained by one run",
    command="cargo bench -p hongbao-tests --bench reclaim_backlog",
    anchor="the run's 60 s Lambda deadline",
    schema=top(
        {
            "packets": INT,
            "deadline_secs": INT,
            "run_secs": NUM,
            "packets_per_sec": NUM,
            "redriven": INT,
            "batches": INT,
            "drained_in_one_run": BOOL,
        }
    ),
    headlines=_reclaim_headlines,
    figures=_reclaim_figures,
)


def _export_headlines(d: dict) -> list[str]:
    b, idle = d["backlog"], d["idle_pass_cluster"]
    made = b["entries"] / b["made_secs"]
    return [
        f"ledger export: {b['entries']:,} journal entries exported at "
        f"{num(b['entries_per_sec'])} entries/s through moto, {ratio(b['entries_per_sec'] / made)} "
        f"the rate the deposits wrote them ({num(made)}/s)",
        f"ledger export idle pass on {idle['masters']} masters: {num(idle['exists_per_pass'])} "
        f"EXISTS, {num(idle['server_ms_per_pass'])} ms of server time, "
        f"{num(idle['wall_ms_median'])} ms wall",
    ]


LEDGER_EXPORT = Section(
    name="ledger_export",
    title="Ledger export throughput",
    command="cargo bench -p hongbao-tests --bench ledger_export",
    anchor="the rate the deposits wrote the journal entries",
    schema=top(
        {
            "backlog": obj(
                {
                    "entries": INT,
                    "made_secs": NUM,
                    "runs": INT,
                    "export_secs": NUM,
                    "entries_per_sec": NUM,
                    "refused": INT,
                }
            ),
            "idle_pass_cluster": obj(
                {
                    "masters": INT,
                    "exists_per_pass": NUM,
                    "server_ms_per_pass": NUM,
                    "wall_ms_median": NUM,
                }
            ),
        }
    ),
    headlines=_export_headlines,
    figures=lambda d: [
        plots.pairs(
            "Journal entries per second",
            [
                (
                    f"exported ({d['backlog']['runs']} run(s))",
                    d["backlog"]["entries_per_sec"],
                    "written by the deposits",
                    d["backlog"]["entries"] / d["backlog"]["made_secs"],
                    "",
                )
            ],
            "entries/s",
            f"{d['backlog']['entries']:,} deposits' journal entries exported by "
            "ledger_export::run_until through the real EventBridge client to moto (a Python "
            "server on the same cores: a floor), beside the rate 64 tasks wrote them.",
        )
    ],
)
