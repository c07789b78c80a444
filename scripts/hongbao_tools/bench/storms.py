"""The storm sections: a hot packet's or campaign's server CPU per request beside the seed
designs (storm_replay, coupon_drop), the 100,000-grabber storm on one server and on the
3-master cluster (storm), and grabs through the Lambda emulator (e2e_grabs)."""

from __future__ import annotations

import statistics

from . import plots
from .plots import ACCENT, ANCHOR, HONGBAO, Figure, num, ratio
from .schema import BOOL, INT, NULL_NUM, NULL_STR, NUM, STR, Section, arr, obj, top

# --- storm_replay -------------------------------------------------------------------------------

REPLAY_SCENARIO = obj(
    {
        "scenario": STR,
        "requests": INT,
        "usec_cpu_per_request_median": NUM,
        "baseline": NULL_STR,
        "ratio_median": NULL_NUM,
        "ratio_min": NULL_NUM,
        "ratio_max": NULL_NUM,
        "goal": NULL_NUM,
        "rounds": arr(obj({"usec_cpu_per_request": NUM})),
    }
)


def _replay_pairs(d: dict) -> list[tuple[dict, dict]]:
    by_name = {s["scenario"]: s for s in d["scenarios"]}
    return [(s, by_name[s["baseline"]]) for s in d["scenarios"] if s["baseline"]]


def _replay_headlines(d: dict) -> list[str]:
    return [
        f"storm replay: server main-thread CPU per request, hongbao {s['scenario']} vs "
        f"{b['scenario']}: {ratio(s['ratio_median'])} (per round {s['ratio_min']:.2f}–"
        f"{s['ratio_max']:.2f}; goal ≤ {ratio(s['goal'])}: "
        f"{'met' if s['ratio_median'] <= s['goal'] else 'not met'})"
        for s, b in _replay_pairs(d)
    ]


def _replay_figures(d: dict) -> list[Figure]:
    pairs = _replay_pairs(d)
    rows = [
        (
            f"{s['scenario']} ({s['requests']:,} requests)",
            s["usec_cpu_per_request_median"],
            b["scenario"],
            b["usec_cpu_per_request_median"],
            f"(goal ≤ {ratio(s['goal'])})",
            s["ratio_median"],
        )
        for s, b in pairs
    ]
    strips = [
        (
            f"{s['scenario']} / {b['scenario']}",
            [
                x["usec_cpu_per_request"] / y["usec_cpu_per_request"]
                for x, y in zip(s["rounds"], b["rounds"], strict=True)
                if y["usec_cpu_per_request"] > 0
            ],
            s["goal"],
        )
        for s, b in pairs
    ]
    return [
        plots.pairs(
            "Server main-thread CPU per request, median over rounds",
            rows,
            "µs",
            f"A recorded storm replayed saturated on a fresh redis-server, {d['rounds']} rounds; "
            f"CPU = the server's {d['cpu']}; red: hongbao, grey: the seed design (the seed's "
            "grab, chapter 1's vote) recorded and replayed the same way. The bold ratio is the "
            "median of the per-round ratios, so it need not equal the ratio of the two medians "
            "drawn.",
        ),
        plots.strips(
            "Per-round ratio hongbao / seed design",
            strips,
            "Each dot is one round (a scenario and its baseline replayed next to each other); "
            "the spread is this shared machine's noise, the black bar the median.",
        ),
    ]


STORM_REPLAY = Section(
    name="storm_replay",
    title="Storm replay: a hot slot's server CPU per request",
    command="cargo bench -p hongbao-tests --bench storm_replay",
    anchor="the seed's grab script and chapter 1's vote, recorded and replayed the same way",
    schema=top(
        {
            "rounds": INT,
            "sandboxes": INT,
            "cpu": STR,
            "scenarios": arr(REPLAY_SCENARIO, 2),
            "problems": arr(STR, 0),
        }
    ),
    headlines=_replay_headlines,
    figures=_replay_figures,
)

# --- coupon_drop --------------------------------------------------------------------------------

COUPON_STORM = obj(
    {
        "codes": INT,
        "rounds": INT,
        "scenarios": arr(
            obj(
                {
                    "scenario": STR,
                    "users": INT,
                    "designs": arr(
                        obj(
                            {
                                "design": STR,
                                "usec_cpu_per_request_median": NUM,
                                "hongbao_ratio_median": NUM,
                                "hongbao_ratio_min": NUM,
                                "hongbao_ratio_max": NUM,
                            }
                        ),
                        2,
                    ),
                }
            )
        ),
    }
)
COUPON_CLUSTER = obj(
    {
        "codes": INT,
        "pools": INT,
        "users": INT,
        "goal_met": BOOL,
        "masters": arr(obj({"node": STR, "share_of_evalsha_usec": NUM, "share_of_cpu": NUM}), 2),
    }
)
COUPON_MEMORY = obj(
    {
        "uploaded_pool_bytes_per_code": NUM,
        "uploaded_directory_bytes_per_code": NUM,
        "uploaded_records_bytes_per_code": NUM,
        "uploaded_bytes_per_code": NUM,
        "seed_sadd_bytes_per_code": NUM,
        "generated_bytes_per_issued_code": NUM,
        "generated_journal_bytes_per_issued_code": NUM,
    }
)
COUPON_HOT = obj({"phases": arr(obj({"phase": STR, "median_grabs_per_sec": NUM}), 2)})
COUPON_POOLS = arr(
    obj(
        {
            "codes": INT,
            "state": STR,
            "pool_bytes": INT,
            "biggest_key_dump_bytes": INT,
            "biggest_key_migrate_ms": NUM,
            "slot_move_ms": NUM,
        }
    )
)


def _seed(sc: dict) -> tuple[dict, dict]:
    designs = sc["designs"]
    return designs[0], designs[1]  # hongbao, then seed 004 (storm_cpu.rs Design::ALL)


def _coupon_headlines(d: dict) -> list[str]:
    out = []
    for sc in d.get("storm_cpu", {}).get("scenarios", []):
        hb, seed = _seed(sc)
        out.append(
            f"coupon drop ({sc['scenario']}, {sc['users']:,} users): server main-thread CPU per "
            f"grab request, hongbao vs {seed['design']}: {ratio(seed['hongbao_ratio_median'])} "
            f"({num(hb['usec_cpu_per_request_median'])} vs "
            f"{num(seed['usec_cpu_per_request_median'])} µs)"
        )
    if "cluster_spread" in d:
        c = d["cluster_spread"]
        shares = " / ".join(f"{100 * m['share_of_evalsha_usec']:.1f}" for m in c["masters"])
        out.append(
            f"coupon drop on the 3-master cluster: each master's share of the grab script's "
            f"time {shares} % (goal 1/3 ± 5 points: {'met' if c['goal_met'] else 'not met'})"
        )
    if "memory" in d:
        m = d["memory"]
        out.append(
            f"coupon drop: bytes per uploaded code {num(m['uploaded_bytes_per_code'])} B vs a "
            f"SADD set's {num(m['seed_sadd_bytes_per_code'])} B: "
            f"{ratio(m['uploaded_bytes_per_code'] / m['seed_sadd_bytes_per_code'])}"
        )
    return out


def _coupon_figures(d: dict) -> list[Figure]:
    figs = []
    if "storm_cpu" in d:
        s = d["storm_cpu"]
        rows = []
        for sc in s["scenarios"]:
            for design in sc["designs"][1:]:
                rows.append(
                    (
                        f"{sc['scenario']} ({sc['users']:,} users)",
                        sc["designs"][0]["usec_cpu_per_request_median"],
                        design["design"],
                        design["usec_cpu_per_request_median"],
                        f"[{design['hongbao_ratio_min']:.2f}–{design['hongbao_ratio_max']:.2f}]",
                        design["hongbao_ratio_median"],
                    )
                )
        figs.append(
            plots.pairs(
                "Server main-thread CPU per grab request, median of rounds",
                rows,
                "µs",
                f"A {s['codes']:,}-code campaign: the storm (one in ten users pressing twice) and "
                "the wins alone, through store::coupons::grab (red) and seed 004's GET / INCR / "
                "EXPIRE / SPOP, with and without its DEL (grey), on the same redis-server; the "
                "bold ratio is the median of per-round ratios, the bracket their range.",
            )
        )
    if "cluster_spread" in d:
        c = d["cluster_spread"]
        rows = [
            (
                m["node"],
                100 * m["share_of_evalsha_usec"],
                False,
                f"CPU {100 * m['share_of_cpu']:.1f}",
            )
            for m in c["masters"]
        ]
        figs.append(
            plots.bars(
                "Each master's share of the grab script's server time",
                rows,
                "% of EVALSHA µs",
                f"A {c['codes']:,}-code generated campaign ({c['pools']} pools) stormed by "
                f"{c['users']:,} users on the local 3-master cluster; the anchor is an even "
                "third each (goal ± 5 points).",
                line=(100 / len(c["masters"]), "even share"),
            )
        )
    if "memory" in d:
        figs.append(_coupon_memory(d["memory"]))
    if "throughput" in d:
        ph = d["throughput"]["phases"]
        rows = [
            (p["phase"], p["median_grabs_per_sec"], p["phase"].startswith("redis-benchmark"), "")
            for p in ph
        ]
        figs.append(
            plots.bars(
                "One hot campaign on one node: grabs/s (median of rounds)",
                rows,
                "grabs/s",
                "Grey: redis-benchmark sending the same EVALSHA (the server's limit); red: "
                "through the Store.",
            )
        )
    if "pool_size" in d:
        figs.append(_coupon_pools(d["pool_size"]))
    return figs


def _coupon_memory(m: dict) -> Figure:
    fig, ax = plots.plt.subplots(figsize=(plots.WIDTH, 1.9))
    parts = [
        ("pool", m["uploaded_pool_bytes_per_code"]),
        ("directory", m["uploaded_directory_bytes_per_code"]),
        ("records", m["uploaded_records_bytes_per_code"]),
    ]
    left = 0.0
    for k, (name, v) in enumerate(parts):
        ax.barh(1, v, left=left, color=HONGBAO, alpha=1 - 0.25 * k, height=0.6)
        if v > 8:
            ax.text(left + v / 2, 1, name, ha="center", va="center", fontsize=7, color="white")
        left += v
    ax.text(left, 1, f" {num(m['uploaded_bytes_per_code'])} B", va="center", fontsize=7.5)
    seed = m["seed_sadd_bytes_per_code"]
    ax.barh(0, seed, color=ANCHOR, height=0.6)
    ax.text(seed, 0, f" {num(seed)} B", va="center", fontsize=7.5)
    ax.text(
        max(left, seed) * 1.25, 0.5, ratio(m["uploaded_bytes_per_code"] / seed),
        fontweight="bold", color=HONGBAO, va="center",
    )  # fmt: skip
    ax.set_yticks([1, 0], ["hongbao, uploaded code", "seed: a SADD set"])
    ax.set_xlim(0, max(left, seed) * 1.5)
    ax.set_xlabel("bytes per code")
    ax.set_title("Bytes per uploaded code before any grab", loc="left")
    return plots.to_svg(
        fig,
        "MEMORY USAGE of the campaign's keys per code; a generated code costs "
        f"{num(m['generated_bytes_per_issued_code'])} B once issued (+ "
        f"{num(m['generated_journal_bytes_per_issued_code'])} B of journal until exported).",
    )


def _coupon_pools(rows: list[dict]) -> Figure:
    fig, (a, b) = plots.plt.subplots(1, 2, figsize=(plots.WIDTH, 2.5))
    for state, color in (("fresh", ACCENT), ("sold out", HONGBAO)):
        pts = sorted((r["codes"], r) for r in rows if r["state"] == state)
        if not pts:
            continue
        xs = [p[0] for p in pts]
        a.plot(xs, [p[1]["pool_bytes"] / 1e6 for p in pts], "o-", color=color, label=state)
        b.plot(xs, [p[1]["slot_move_ms"] for p in pts], "o-", color=color, label=state)
    for ax, what in ((a, "pool, MB"), (b, "slot move, ms")):
        ax.set_xlabel("codes in one pool")
        ax.set_ylabel(what)
        ax.legend(fontsize=7, frameon=False)
    a.set_title("One pool's size and its slot move", loc="left")
    return plots.to_svg(
        fig,
        "Why a campaign over 50,000 codes is spread over pools: a sold-out pool's keys and "
        "the time its slot's move blocks the master grow with the pool.",
    )


COUPON_DROP = Section(
    name="coupon_drop",
    title="Coupon drop: server CPU per grab, spread, bytes per code",
    command="cargo bench -p hongbao-tests --bench coupon_drop",
    anchor="seed 004's GET / INCR / EXPIRE / SPOP, a SADD set, redis-benchmark, an even share",
    # Its parts run selectively (coupon_drop/main.rs), so each is optional, and no other key is
    # allowed: a renamed part fails instead of passing for a part that did not run.
    schema=top(
        {"problems": arr(STR, 0), "pinned": BOOL},
        {
            "storm_cpu": COUPON_STORM,
            "cluster_spread": COUPON_CLUSTER,
            "memory": COUPON_MEMORY,
            "throughput": COUPON_HOT,
            "pool_size": COUPON_POOLS,
        },
        closed=True,
    ),
    headlines=_coupon_headlines,
    figures=_coupon_figures,
)

# --- storm --------------------------------------------------------------------------------------

STORM_RUN = obj(
    {
        "backend": STR,
        "packets": INT,
        "requests": INT,
        "requests_per_sec": NUM,
        "paths": {"type": "object", "additionalProperties": INT, "minProperties": 1},
        "masters": arr(obj({"node": STR, "share_of_packets": NUM, "share_of_calls": NUM}), 0),
    }
)


def _storm_headlines(d: dict) -> list[str]:
    runs = {r["backend"]: r for r in d["runs"]}
    out = [
        f"storm ({r['backend']}, {r['packets']} packet(s)): {num(r['requests_per_sec'])} requests/s"
        for r in d["runs"]
    ]
    if "standalone" in runs and "cluster" in runs:
        out.append(
            "storm: 3-master cluster vs one server: "
            f"{ratio(runs['cluster']['requests_per_sec'] / runs['standalone']['requests_per_sec'])}"
            f" (on {d['cores']} cores the client and the servers share the CPU)"
        )
    return out


def _holds(master: dict) -> str:
    return f"holds {100 * master['share_of_packets']:.0f} % of the packets"


def _storm_figures(d: dict) -> list[Figure]:
    figs = []
    fig, (a, b) = plots.plt.subplots(1, 2, figsize=(plots.WIDTH, 2.4))
    names = [f"{r['backend']}\n{r['packets']} packet(s)" for r in d["runs"]]
    a.bar(names, [r["requests_per_sec"] for r in d["runs"]], color=HONGBAO)
    for k, r in enumerate(d["runs"]):
        a.text(k, r["requests_per_sec"], num(r["requests_per_sec"]), ha="center", va="bottom")
    a.set_ylabel("requests/s")
    a.set_title("Requests/s through one Store", loc="left")
    colors = {"grabbed": HONGBAO, "sold_out": ANCHOR, "already_grabbed": ACCENT}
    others = ["#e6a817", "#6a3d9a", "#33a02c", "black"]
    keys = sorted({p for r in d["runs"] for p, n in r["paths"].items() if n})
    bottom = [0.0] * len(d["runs"])
    for path in keys:
        shares = [
            100 * r["paths"].get(path, 0) / max(1, sum(r["paths"].values())) for r in d["runs"]
        ]
        color = colors.get(path) or others[len(colors) % len(others)]
        colors.setdefault(path, color)
        b.bar(names, shares, bottom=bottom, color=color, label=path)
        bottom = [x + y for x, y in zip(bottom, shares, strict=True)]
    b.set_ylabel("% of calls")
    b.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1, 0.5))
    b.set_title("What the calls answered", loc="left")
    figs.append(
        plots.to_svg(
            fig,
            f"{d['grabbers']:,} distinct grabbers (1 in {d['repeat_every']} asking twice) over "
            f"{d['tasks']} tasks on one Store; a sold-out packet is answered by one HGET.",
        )
    )
    for r in d["runs"]:
        if len(r["masters"]) > 1:
            rows = [(m["node"], 100 * m["share_of_calls"], False, _holds(m)) for m in r["masters"]]
            figs.append(
                plots.bars(
                    f"{r['backend']}: each master's share of the calls",
                    rows,
                    "% of calls",
                    "A packet lives on its sender's slot, so the calls follow the packets.",
                    line=(100 / len(r["masters"]), "even share"),
                )
            )
    return figs


STORM = Section(
    name="storm",
    title="Storm: 100,000 grabbers on one server and on the 3-master cluster",
    command="cargo bench -p hongbao-tests --bench storm",
    anchor="the standalone server; each master's share against its share of the packets",
    schema=top(
        {
            "grabbers": INT,
            "tasks": INT,
            "repeat_every": INT,
            "cores": INT,
            "runs": arr(STORM_RUN),
        }
    ),
    headlines=_storm_headlines,
    figures=_storm_figures,
)

# --- e2e_grabs ----------------------------------------------------------------------------------


def _e2e_headlines(d: dict) -> list[str]:
    c, r = d["client_ms"], d["duration_ms"]
    return [
        f"grabs through the Lambda emulator ({d['grabbers']:,} over {d['sandboxes']} sandboxes, "
        f"{d['threads']} client threads): client p50 {num(plots.percentile(c, 50))} ms, p99 "
        f"{num(plots.percentile(c, 99))} ms; the handler's own REPORT Duration p50 "
        f"{num(plots.percentile(r, 50))} ms, p99 {num(plots.percentile(r, 99))} ms; "
        f"{num(d['invocations_per_sec'])} invocations/s",
    ]


def _e2e_figures(d: dict) -> list[Figure]:
    figs = [
        plots.distribution(
            "Grab latency through the Lambda emulator",
            [
                ("client round trip", d["client_ms"], HONGBAO),
                ("handler (REPORT Duration)", d["duration_ms"], ANCHOR),
            ],
            "ms",
            f"{d['grabbers']:,} grabs of one {d['shares']}-share packet from {d['threads']} "
            f"client threads over {d['sandboxes']} sandboxes of the release grab bootstrap (make "
            "e2e's storm). The anchor is RIE's REPORT Duration, the handler's own time (Redis "
            "round trips included): the rest of a client latency is the emulator, the wait for "
            "a free sandbox and the client.",
        )
    ]
    if d["cold_init_ms"]:
        rows = [(f"sandbox {k + 1}", v, False, "") for k, v in enumerate(d["cold_init_ms"])]
        med = statistics.median(d["cold_init_ms"])
        figs.append(
            plots.bars(
                "Cold init of each grab sandbox (RIE INIT REPORT)",
                rows,
                "ms",
                "Bootstrap start to its first /next, one sandbox at a time before the storm.",
                line=(med, f"median {num(med)} ms"),
            )
        )
    return figs


E2E_GRABS = Section(
    name="e2e_grabs",
    title="Grabs through the Lambda Runtime Interface Emulator",
    command=(
        "HONGBAO_BOOTSTRAPS=release .venv/bin/python scripts/e2e_rie.py --grab-storm-only"
        " (after make release)"
    ),
    anchor="the handler's own time, RIE's REPORT Duration of the same invocations",
    schema=top(
        {
            "grabbers": INT,
            "shares": INT,
            "threads": INT,
            "sandboxes": INT,
            "invocations_per_sec": NUM,
            "answers": {"type": "object", "additionalProperties": INT},
            "client_ms": arr(NUM, 2),
            "duration_ms": arr(NUM, 2),
            "cold_init_ms": arr(NUM, 0),
        }
    ),
    headlines=_e2e_headlines,
    figures=_e2e_figures,
)
