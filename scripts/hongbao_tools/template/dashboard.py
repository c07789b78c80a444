"""The CloudWatch dashboard of template.yaml, built from data: its DashboardBody is JSON in a
`!Sub` (a `!Join` of `!Sub` fragments, those of a conditional widget or alarm in a `!If`).

Widgets flow left to right in the order below (no x/y: CloudWatch places them); each has the
title docs/operations.md names it by. The per-function widgets list every function of
functions.json (an HTTP function's request widgets, every function's Lambda widgets), each
scheduled job gets its failed-ticks widget, and the alarm widget lists every alarm of the
template (the store's under their Conditions). Metrics: the functions' EMF metrics (namespace
MetricsNamespace, dimension Function; the list in shared/src/api/metrics.rs) and the AWS metrics
the alarms use, 5 minutes per point as the alarms. The store's widgets follow DataStore through
the same Conditions as its alarms; an ExistingCacheEndpoint gets a note instead (this stack knows
no metrics of a store it did not create). tests/template_checks/dashboard.py checks each render's
body: every metric one the code emits or an AWS metric of a created resource.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

NS = "${MetricsNamespace}"
REGION = "${AWS::Region}"


@dataclass
class Cond:
    """Items of a list that exist only under a template Condition."""

    condition: str
    items: list


def raw(sub: str) -> str:
    """A number from the template: `${Param}` written without quotes."""
    return f"\0RAW({sub})"


def fn(logical: str) -> str:
    return "${" + logical + "Function}"


def emf(metric: str, logical: str, label: str, **opts: Any) -> list:
    return [NS, metric, "Function", fn(logical), {"label": label, **opts}]


def lam(metric: str, logical: str, label: str) -> list:
    return ["AWS/Lambda", metric, "FunctionName", fn(logical), {"label": label}]


def queue(name: str) -> list:
    label = {"label": f"{name} (max)", "stat": "Maximum"}
    return [
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "QueueName",
        f"${{{name}.QueueName}}",
        label,
    ]


def metric(title: str, metrics: list, stat: str = "Sum", annotation: tuple | None = None) -> dict:
    props: dict[str, Any] = {"title": title, "region": REGION, "stat": stat, "period": 300}
    if annotation:
        props["annotations"] = {"horizontal": [{"label": annotation[0], "value": annotation[1]}]}
    props["metrics"] = metrics
    return {"type": "metric", "width": 8, "height": 6, "properties": props}


def text(markdown: str, width: int = 8, height: int = 6) -> dict:
    return {"type": "text", "width": width, "height": height, "properties": {"markdown": markdown}}


# ------------------------------------------------------------------------------ the data
ABOUT = (
    "## About this dashboard\nhongbao stack ${AWS::StackName}. Requests, answers and latency "
    "per function, then the store, the money and each feature, then the scheduled jobs. "
    "Periods of 5 minutes, as the alarms use. What an alarm means and what to do: the runbook, "
    "[${RunbookUrl}](${RunbookUrl}), one section per alarm, named as the alarm."
)
API = [
    metric(
        "API: requests, 4xx, 5xx",
        [
            ["AWS/ApiGateway", m, "ApiId", "${HttpApi}", {"label": label}]
            for m, label in (("Count", "requests"), ("4xx", "4xx"), ("5xx", "5xx"))
        ],
    ),
    metric(
        "API: latency p50 and p99 (ms)",
        [
            ["AWS/ApiGateway", "Latency", "ApiId", "${HttpApi}", {"label": p, "stat": p}]
            for p in ("p50", "p99")
        ],
        stat="p50",
    ),
]
# (title, metric, which functions, stat, annotation): EMF metrics of the functions that
# answer requests, then AWS/Lambda's of every function.
PER_FUNCTION = [
    ("Requests per function", "Requests", "http", "Sum", None),
    ("4xx answers per function", "Answered4xx", "http", "Sum", None),
    ("5xx answers per function", "Answered5xx", "http", "Sum", None),
    (
        "503 Unavailable per function",
        "Unavailable",
        "unavailable",
        "Sum",
        ("StoreUnavailableAlarm (sum of all, 2 periods)", raw("${UnavailableAlarmThreshold}")),
    ),
    ("500 Internal per function", "Internal", "http", "Sum", None),
    ("Latency p50 per function (ms)", "LatencyMs", "http", "p50", None),
    ("Latency p99 per function (ms)", "LatencyMs", "http", "p99", None),
    ("Cold starts per function", "ColdStart", "all", "Sum", None),
]
LAMBDA = [
    ("Lambda errors per function", "Errors", "Sum"),
    ("Lambda throttles per function", "Throttles", "Sum"),
    ("Lambda concurrency per function (max)", "ConcurrentExecutions", "Maximum"),
]
# The node-based stores: (title suffix, metric, annotation) per widget, each node of up to
# 3 shards x 3 nodes (the alarms' nodes).
CPU = ("StoreCpuAlarmPercent", raw("${StoreCpuAlarmPercent}"))
MEMORY = ("StoreMemoryAlarmPercent", raw("${StoreMemoryAlarmPercent}"))
NODE_WIDGETS = {
    "DurableCache": [
        ("engine CPU per node (%)", "EngineCPUUtilization", CPU),
        ("memory per node (%)", "DatabaseMemoryUsagePercentage", MEMORY),
        (
            "replication lag per replica (s)",
            "ReplicationLag",
            ("DurableCacheReplicationLagAlarm", 10),
        ),
        ("throttled writes (TrafficManagementActive)", "TrafficManagementActive", None),
    ],
    "MemoryDb": [
        ("engine CPU per node (%)", "EngineCPUUtilization", CPU),
        ("memory per node (%)", "DatabaseMemoryUsagePercentage", MEMORY),
        ("replication lag per replica (s)", "ReplicationLag", None),
    ],
}
NODES = [(s, n) for s in (1, 2, 3) for n in (1, 2, 3)]


def node_row(store: str, metric_name: str, s: int, n: int) -> list:
    node = f"-{s:04d}-{n:03d}"
    label = {"label": f"{s}-{n}"}
    if store == "DurableCache":
        return ["AWS/ElastiCache", metric_name, "CacheClusterId", "${DurableCache}" + node, label]
    cluster = "${MemoryDbCluster}"
    return ["AWS/MemoryDB", metric_name, "ClusterName", cluster, "NodeName", cluster + node, label]


def store_widgets() -> list:
    def nodes(store: str, prefix: str) -> list:
        return [
            metric(f"{prefix}: {title}", [node_row(store, m, s, n) for s, n in NODES], "Maximum", a)
            for title, m, a in NODE_WIDGETS[store]
        ]

    serverless = [
        metric(
            "ElastiCache Serverless: ECPU/s, % of the limit",
            [
                [
                    "AWS/ElastiCache",
                    "ElastiCacheProcessingUnits",
                    "clusterId",
                    "${Cache}",
                    {"id": "ecpu", "visible": False, "stat": "Sum", "period": 60},
                ],
                [
                    {
                        "expression": "100 * ecpu / 60 / ${ServerlessMaxEcpuPerSecond}",
                        "label": "ECPU/s, % of ServerlessMaxEcpuPerSecond",
                        "id": "percent",
                    }
                ],
            ],
            annotation=CPU,
        ),
        metric(
            "ElastiCache Serverless: data, % of the limit",
            [
                [
                    "AWS/ElastiCache",
                    "BytesUsedForCache",
                    "clusterId",
                    "${Cache}",
                    {"id": "bytes", "visible": False, "stat": "Maximum"},
                ],
                [
                    {
                        "expression": "100 * bytes / (${ServerlessMaxDataStorageGb} * 1000000000)",
                        "label": "data, % of ServerlessMaxDataStorageGb",
                        "id": "percent",
                    }
                ],
            ],
            annotation=MEMORY,
        ),
        metric(
            "ElastiCache Serverless: throttled commands",
            [
                [
                    "AWS/ElastiCache",
                    "ThrottledCmds",
                    "clusterId",
                    "${Cache}",
                    {"label": "ThrottledCmds"},
                ]
            ],
        ),
        text(
            "## ElastiCache Serverless: replication lag\nA serverless cache publishes no "
            "replication metric: AWS replicates it across zones and fails over on its own. It is "
            "not durable: an acknowledged write can be lost in a failover (docs/deployment.md)."
        ),
    ]
    memorydb_throttling = text(
        "## MemoryDB: throttling\nMemoryDB publishes no throttling metric. A store that cannot "
        "keep up shows as engine CPU near 100 % and as 503 answers (widget *503 Unavailable per "
        "function*)."
    )
    existing = text(
        "## Existing store\nThis stack uses the store of ExistingCacheEndpoint "
        "(${ExistingCacheEndpoint}) and creates none, so it knows no store metrics: see that "
        "store's own CloudWatch metrics (AWS/ElastiCache or AWS/MemoryDB: engine CPU, memory, "
        "replication lag, throttling). Seen from the functions: *503 Unavailable per function*."
    )
    return [
        Cond("CreateDurableCache", nodes("DurableCache", "ElastiCache")),
        Cond("CreateMemoryDb", [*nodes("MemoryDb", "MemoryDB"), memorydb_throttling]),
        Cond("CreateServerlessCache", serverless),
        Cond("ExistingAny", [existing]),
    ]


GRABS = [
    ("GrabWon", "won"),
    ("GrabSoldOut", "sold out"),
    ("GrabAlreadyGrabbed", "already grabbed"),
    ("GrabNotOpenYet", "not open yet"),
    ("GrabWrongPassword", "wrong password"),
    ("GrabRateLimited", "rate limited"),
    ("GrabExpired", "expired"),
    ("DrawEntered", "entered a draw"),
]
COUPON_GRABS = [
    g for g in GRABS if g[0] in ("GrabWon", "GrabSoldOut", "GrabAlreadyGrabbed", "DrawEntered")
]
# Each feature's widgets: its EMF metrics, by the function that emits them.
FEATURES = [
    metric(
        "Packets created and cancelled",
        [
            emf("PacketCreated", "CreatePacket", "created"),
            emf("PacketCancelled", "CreatePacket", "cancelled"),
        ],
    ),
    metric("Red-packet grabs", [emf(m, "Grab", label) for m, label in GRABS]),
    metric(
        "Draws run (packets and campaigns)",
        [emf("DrawRun", "LedgerExport", "draws completed (as ledger-export publishes them)")],
    ),
    metric(
        "Claims and re-drives",
        [
            emf("Claimed", "Claim", "claimed (claim)"),
            emf("ClaimRedriven", "ReclaimCron", "re-driven (reclaim-cron)"),
        ],
    ),
    metric(
        "Refunds",
        [
            emf("ReclaimSettled", "ReclaimCron", "packets settled"),
            emf("RefundedCents", "ReclaimCron", "cents refunded", yAxis="right"),
        ],
    ),
    metric(
        "Money moved (cents)",
        [
            emf("PacketCreatedCents", "CreatePacket", "into packets"),
            emf("PacketCreatedCents", "Merchant", "into merchant packets"),
            emf("ClaimedCents", "Claim", "claimed"),
            emf("RefundedCents", "ReclaimCron", "refunded"),
            emf("DepositedCents", "Wallet", "deposited"),
            emf("WithdrawnCents", "Wallet", "withdrawn"),
            emf("DepositedCents", "Merchant", "merchants deposited"),
            emf("WithdrawnCents", "Merchant", "merchants withdrew"),
        ],
    ),
    metric(
        "Deposits and withdrawals",
        [
            emf("Deposited", "Wallet", "deposits"),
            emf("Withdrawn", "Wallet", "withdrawals"),
            emf("Deposited", "Merchant", "merchant deposits"),
            emf("Withdrawn", "Merchant", "merchant withdrawals"),
            emf("PacketCreated", "Merchant", "merchant packets"),
            emf("MerchantLowBalance", "Merchant", "merchant budgets low"),
        ],
    ),
    metric("Order codes taken", [emf("OrderCodesTaken", "NextOrderCode", "codes")]),
    metric(
        "Votes and articles",
        [emf("Voted", "Vote", "votes"), emf("ArticlePosted", "Vote", "articles posted")],
    ),
    metric(
        "Coupon grabs, holds and redemptions",
        [
            emf(m, "Coupon", label)
            for m, label in [*COUPON_GRABS, ("GrabRateLimited", "rate limited")]
        ]
        + [
            emf("CouponRedeemed", "Coupon", "redeemed"),
            emf("CouponHeld", "Coupon", "held"),
            emf("CouponReleased", "Coupon", "released"),
        ],
    ),
]


def opts(row: list) -> dict:
    """The options of a widget row `[metric, label, {options}]` (none without them)."""
    return row[2] if len(row) > 2 else {}


def job_widgets(fn) -> list:
    """A scheduled job's own widgets (its job's `widgets` in template/functions.yaml), before
    its failed-ticks widget: each a title, its rows and at most one alarm threshold
    (`annotation`, a parameter drawn as a dashed line). A row is `[metric, label]` or
    `[metric, label, {options}]` (an EMF metric of the job's function), or a mapping (a
    metric-math row: `expression`, `label`, `id`)."""
    out = []
    for w in fn.job.get("widgets", []):
        rows = [
            [row] if isinstance(row, dict) else emf(row[0], fn.logical, *row[1:2], **opts(row))
            for row in w["metrics"]
        ]
        line = w.get("annotation")
        annotation = (line, raw("${" + line + "}")) if line else None
        out.append(metric(w["title"], rows, annotation=annotation))
    return out


def ticks(fn) -> dict:
    """A scheduled job's failed ticks: Lambda's side and both of its queues."""
    job, logical = fn.job, fn.logical
    rows = [
        lam("AsyncEventsDropped", logical, "ticks dropped by Lambda"),
        lam("Errors", logical, "runs failed"),
        lam("Throttles", logical, "ticks throttled"),
        queue(f"{job['prefix']}DeadLetterQueue"),
        queue(f"{job['prefix']}FailedTickQueue"),
    ]
    rows += [queue(q) for q in job.get("ticks_widget_queues", [])]
    return metric(job["ticks_widget"], rows)


def body(b) -> dict:
    """The dashboard as data (a Cond where a Condition decides)."""
    which = {
        "http": [f for f in b.functions if f.http],
        "unavailable": [f for f in b.ordered() if f.settings.get("unavailable", True)],
        "all": b.ordered(),
    }
    widgets: list = [text(ABOUT, 24, 2)]
    alarms: list = []
    for name, condition in b.alarms:
        arn = "${" + name + ".Arn}"
        if condition is None:
            alarms.append(arn)
        elif alarms and isinstance(alarms[-1], Cond) and alarms[-1].condition == condition:
            alarms[-1].items.append(arn)
        else:
            alarms.append(Cond(condition, [arn]))
    unconditional = [a for a in alarms if not isinstance(a, Cond)]
    alarms = unconditional + [a for a in alarms if isinstance(a, Cond)]
    alarm_widget = {"type": "alarm", "width": 24, "height": 4}
    widgets.append(alarm_widget | {"properties": {"title": "Alarms", "alarms": alarms}})
    widgets += API
    for title, m, fns, stat, annotation in PER_FUNCTION:
        rows = [emf(m, f.logical, f.name) for f in which[fns]]
        widgets.append(metric(title, rows, stat, annotation))
    for title, m, stat in LAMBDA:
        widgets.append(metric(title, [lam(m, f.logical, f.name) for f in which["all"]], stat))
    widgets += store_widgets()
    widgets += FEATURES
    for f in b.jobs:
        widgets += [*job_widgets(f), ticks(f)]
    return {"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets}


# ----------------------------------------------------------------------------- as text
def _json(v: Any) -> str:
    s = json.dumps(v, separators=(", ", ": "), ensure_ascii=False)
    return re.sub(r'"\\u0000RAW\((.*?)\)"', r"\1", s)


def _list(items: list, lead: str) -> list[tuple[str | None, str]]:
    """A list one item a line, each line after the first starting with its comma (a
    conditional item's comma is inside its fragment, so every render is valid JSON)."""
    out: list[tuple[str | None, str]] = []
    first = True
    for item in items:
        group = item.items if isinstance(item, Cond) else [item]
        cond = item.condition if isinstance(item, Cond) else None
        for x in group:
            if isinstance(x, dict) and x.get("type") in ("metric", "alarm"):
                parts = _widget(x)
            else:
                parts = [(None, _json(x))]
            sep = "" if first else ","
            first = False
            out.append((cond, f"{lead}{sep}"))
            out += [(c if c is not None else cond, t) for c, t in parts]
            out.append((cond, "\n"))
    return out


def _widget(w: dict) -> list[tuple[str | None, str]]:
    props = dict(w["properties"])
    key = "metrics" if "metrics" in props else "alarms"
    items = props.pop(key)
    head = _json({**w, "properties": props})[:-2]  # without the closing "}}"
    return [
        (None, head + f', "{key}": [\n'),
        *_list(items, "  " if key == "metrics" else ""),
        (None, "]}}"),
    ]


def fragments(b) -> list[tuple[str | None, str]]:
    """The body's text as (Condition or None, text) fragments, neighbours of one kind joined."""
    data = body(b)
    head = _json({k: v for k, v in data.items() if k != "widgets"})[:-1]
    parts = [(None, head + ', "widgets": [\n'), *_list(data["widgets"], ""), (None, "]}\n")]
    merged: list[tuple[str | None, str]] = []
    for cond, t in parts:
        if merged and merged[-1][0] == cond:
            merged[-1] = (cond, merged[-1][1] + t)
        else:
            merged.append((cond, t))
    return merged


def resource(b) -> str:
    lines = [
        "Dashboard:",
        "  Type: AWS::CloudWatch::Dashboard",
        "  Properties:",
        "    DashboardName: !Sub ${AWS::StackName}-${AWS::Region}",
        "    DashboardBody: !Join",
        '      - ""',
        "      -",
    ]
    for cond, t in fragments(b):
        block = "\n".join(" " * 14 + x if x else "" for x in t.rstrip("\n").split("\n"))
        if cond is None:
            lines += ["        - !Sub |", block]
        else:
            block = "\n".join("  " + x if x else "" for x in block.split("\n"))
            lines += ["        - !If", f"          - {cond}", "          - !Sub |", block]
            lines.append('          - ""')
    return "\n".join(lines)
