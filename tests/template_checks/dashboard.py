"""The stack's CloudWatch dashboard, as one render gives it.

For every rendered parameter set, `check()` parses the dashboard's DashboardBody as JSON and
walks every widget; it fails unless:

- every metric in the MetricsNamespace namespace is one the code emits (`emitted()`: the
  `X = "Name";` entries of shared/src/api/metrics.rs's `metrics!` declaration that the code uses
  beyond declaring and describing them), with the one dimension `Function` = a function of
  this render;
- every AWS/* metric is in `AWS_METRICS` (its namespace, its dimensions, its name: each entry
  says which AWS page lists it) and its dimension values name a resource this render creates;
- no other namespace, no SEARCH or Metrics Insights query (they name metrics the check cannot
  see), and every alarm of the alarm widget is an alarm of this render, all of them listed;
- the store's widgets are those of the render's store (`STORE_WIDGETS`), none of another;
- every metric the code emits is on the dashboard (a new metric needs a widget).

A widget's title is its `title`, or for a text widget the text of its first `## ` line: the
titles docs/operations.md names widgets by (template_checks/runbook.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from template_checks.stack import REGION, ROOT

METRICS_RS = ROOT / "shared/src/api/metrics.rs"
SHARED_SRC = ROOT / "shared/src"
DASHBOARD_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")  # CloudWatch's PutDashboard rule

# One entry of the `metrics! { ... }` declaration: `NAME = "Name";` on its own line.
_CONST = re.compile(r'^\s+([A-Z][A-Z0-9_]*) = "([^"]+)";', re.M)
_FN = re.compile(r"^(?:pub(?:\(crate\))? )?fn (\w+)", re.M)
_COMMENT = re.compile(r"(^|\s)//.*$", re.M)


def _code(path: Path) -> str:
    return _COMMENT.sub(r"\1", path.read_text())


def emitted(src: Path = SHARED_SRC) -> tuple[dict[str, str], list[str]]:
    """The metric names the code emits (name -> its constant), and the constants declared in
    api/metrics.rs that nothing emits.

    A constant counts when code outside api/metrics.rs names it, or when a function of
    api/metrics.rs other than `describe` (which only declares units) names it and code
    outside calls that function (`latency_ms` records `LATENCY_MS`). Comments do not count."""
    metrics_rs = src / "api/metrics.rs"
    text = _code(metrics_rs)
    consts = dict(_CONST.findall(text))
    others = "\n".join(_code(p) for p in sorted(src.rglob("*.rs")) if p != metrics_rs)
    bodies = {}  # each top-level function: from `fn` to its closing `}` at column 0
    for m in _FN.finditer(text):
        end = text.find("\n}", m.start())
        bodies[m.group(1)] = text[m.start() : len(text) if end < 0 else end]
    called = {n for n in bodies if n != "describe" and re.search(rf"\b{n}\s*\(", others)}
    out, unused = {}, []
    for const, name in consts.items():
        word = re.compile(rf"\b{const}\b")
        if word.search(others) or any(word.search(bodies[f]) for f in called):
            out[name] = const
        else:
            unused.append(const)
    return out, unused


# --------------------------------------------------------------------------- AWS metrics
# (namespace, dimension names) -> (metric names, what the dimension values name, where AWS
# lists them). Only metrics the dashboard or the alarms use; a name not here fails the check.
AWS_METRICS: dict[tuple[str, tuple[str, ...]], tuple[set[str], str, str]] = {
    ("AWS/ApiGateway", ("ApiId",)): (
        {"Count", "4xx", "5xx", "Latency", "IntegrationLatency", "DataProcessed"},
        "http_api",
        "https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-metrics.html",
    ),
    ("AWS/Lambda", ("FunctionName",)): (
        {
            "Invocations",
            "Errors",
            "Throttles",
            "Duration",
            "ConcurrentExecutions",
            "AsyncEventsReceived",
            "AsyncEventsDropped",
            "AsyncEventAge",
        },
        "function",
        "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html",
    ),
    ("AWS/SQS", ("QueueName",)): (
        {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"},
        "queue",
        "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html",
    ),
    # Node-based ElastiCache (a replication group's nodes: <group>-<shard 000N>-<node 00M>).
    ("AWS/ElastiCache", ("CacheClusterId",)): (
        {
            "EngineCPUUtilization",
            "DatabaseMemoryUsagePercentage",
            "ReplicationLag",
            "TrafficManagementActive",
        },
        "cache_node",
        "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/CacheMetrics.Redis.html and "
        "Durability.Monitoring.html (TrafficManagementActive)",
    ),
    ("AWS/ElastiCache", ("clusterId",)): (
        {"BytesUsedForCache", "ElastiCacheProcessingUnits", "ThrottledCmds"},
        "serverless_cache",
        "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/serverless-metrics-events-redis.html",
    ),
    ("AWS/MemoryDB", ("ClusterName", "NodeName")): (
        {"EngineCPUUtilization", "DatabaseMemoryUsagePercentage", "ReplicationLag"},
        "memorydb_node",
        "https://docs.aws.amazon.com/memorydb/latest/devguide/metrics.memorydb.html",
    ),
}

# The store widgets per kind of store: a created one by DataStore, or an existing one.
STORE_WIDGETS = {
    "elasticache-durable": {
        "ElastiCache: engine CPU per node (%)",
        "ElastiCache: memory per node (%)",
        "ElastiCache: replication lag per replica (s)",
        "ElastiCache: throttled writes (TrafficManagementActive)",
    },
    "memorydb": {
        "MemoryDB: engine CPU per node (%)",
        "MemoryDB: memory per node (%)",
        "MemoryDB: replication lag per replica (s)",
        "MemoryDB: throttling",
    },
    "elasticache-serverless": {
        "ElastiCache Serverless: ECPU/s, % of the limit",
        "ElastiCache Serverless: data, % of the limit",
        "ElastiCache Serverless: throttled commands",
        "ElastiCache Serverless: replication lag",
    },
    "existing": {"Existing store"},
}
NODES = [f"{s:04d}-{n:03d}" for s in (1, 2, 3) for n in (1, 2, 3)]  # up to 3 shards x 3 nodes


def store_kind(stack) -> str:
    for logical, kind in (
        ("DurableCache", "elasticache-durable"),
        ("MemoryDbCluster", "memorydb"),
        ("Cache", "elasticache-serverless"),
    ):
        if stack.exists(logical):
            return kind
    return "existing"


def names_of(stack) -> dict[str, set[tuple[str, ...]]]:
    """Per kind of dimension, the dimension values that name a resource of this render."""

    def refs(rtype):
        return [stack.ref(n) for n in stack.existing(rtype)]

    return {
        "function": {(r,) for r in refs("AWS::Lambda::Function")},
        "http_api": {(r,) for r in refs("AWS::ApiGatewayV2::Api")},
        "queue": {(stack.getatt(n, "QueueName"),) for n in stack.existing("AWS::SQS::Queue")},
        "cache_node": {
            (f"{g}-{node}",) for g in refs("AWS::ElastiCache::ReplicationGroup") for node in NODES
        },
        "serverless_cache": {(r,) for r in refs("AWS::ElastiCache::ServerlessCache")},
        "memorydb_node": {
            (c, f"{c}-{node}") for c in refs("AWS::MemoryDB::Cluster") for node in NODES
        },
    }


def title(widget: dict) -> str | None:
    props = widget.get("properties", {})
    if widget.get("type") == "text":
        first = props.get("markdown", "").split("\n", 1)[0]
        return first[3:].strip() if first.startswith("## ") else None
    return props.get("title")


def metric_rows(rows: list) -> list[tuple]:
    """Each row as ("expression", text), ("metric", namespace, name, ((dim, value), ...)) or
    ("malformed", row), with CloudWatch's "." (the value of the row above at that position)
    resolved."""
    out, previous = [], []
    for row in rows:
        items = [x for x in row if not isinstance(x, dict)]
        opts = [x for x in row if isinstance(x, dict)]
        if not items:
            out.append(("expression", opts[0].get("expression", "") if opts else ""))
            continue
        items = [previous[k] if x == "." and k < len(previous) else x for k, x in enumerate(items)]
        previous = items
        if len(items) < 2 or len(items) % 2:
            out.append(("malformed", json.dumps(row)))
            continue
        dims = tuple(zip(items[2::2], items[3::2], strict=True))
        out.append(("metric", items[0], items[1], dims))
    return out


def check(stack, values: dict[str, str], emitted_names: dict[str, str]) -> tuple[list[str], set]:
    """The failures of one render's dashboard, and its widget titles."""
    boards = stack.existing("AWS::CloudWatch::Dashboard")
    if len(boards) != 1:
        return [f"{len(boards)} AWS::CloudWatch::Dashboard resources, not 1"], set()
    props = stack.resource(boards[0])
    fail = []
    name = props.get("DashboardName", "")
    if not DASHBOARD_NAME.fullmatch(name):
        fail.append(f"DashboardName {name!r}: 1 to 255 of A-Z a-z 0-9 - _")
    try:
        body = json.loads(props["DashboardBody"])
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        return fail + [f"DashboardBody is not JSON: {e}"], set()
    namespace = values["MetricsNamespace"]
    known = names_of(stack)
    alarms = {stack.getatt(n, "Arn"): n for n in stack.existing("AWS::CloudWatch::Alarm")}
    titles, shown, listed = [], set(), set()
    for k, widget in enumerate(body.get("widgets", [])):
        t = title(widget)
        where = f"widget {k} ({t!r})"
        if not t:
            fail.append(f"widget {k} ({widget.get('type')}) has no title (nor a '## ' first line)")
        titles.append(t)
        p = widget.get("properties", {})
        kind = widget.get("type")
        if kind == "alarm":
            for arn in p.get("alarms", []):
                if arn not in alarms:
                    fail.append(f"{where}: alarm {arn} is not an alarm of this render")
                listed.add(arn)
            continue
        if kind == "text":
            continue
        if kind != "metric":
            fail.append(f"{where}: widget type {kind!r} is not checked here (metric, text, alarm)")
            continue
        if p.get("region") != REGION:
            fail.append(f"{where}: region {p.get('region')!r}, not the stack's ({REGION})")
        for row in metric_rows(p.get("metrics", [])):
            if row[0] == "malformed":
                fail.append(f"{where}: {row[1]} is not [namespace, name, dimension, value...]")
                continue
            if row[0] == "expression":
                if re.search(r"\b(SEARCH|SELECT)\b", row[1], re.I):
                    fail.append(f"{where}: {row[1]!r} names metrics the check cannot see")
                continue
            _, ns, metric, dims = row
            dim_names = tuple(d for d, _ in dims)
            dim_values = tuple(v for _, v in dims)
            if ns == namespace:
                shown.add(metric)
                if metric not in emitted_names:
                    fail.append(
                        f"{where}: {ns}/{metric} is not a metric the code emits "
                        f"(shared/src/api/metrics.rs, used in shared/src)"
                    )
                if dim_names != ("Function",) or dim_values not in known["function"]:
                    fail.append(f"{where}: {metric} {dims} is not Function = a function here")
            elif (ns, dim_names) in AWS_METRICS:
                metrics, what, _ = AWS_METRICS[(ns, dim_names)]
                if metric not in metrics:
                    fail.append(f"{where}: {ns} {metric} ({dim_names}) is not in AWS_METRICS")
                if dim_values not in known[what]:
                    fail.append(f"{where}: {ns} {metric} {dims} names no {what} of this render")
            else:
                fail.append(f"{where}: namespace {ns!r} with dimensions {dim_names} is unknown")
    dupes = sorted({t for t in titles if t and titles.count(t) > 1})
    if dupes:
        fail.append(f"widget titles used twice: {dupes}")
    if set(alarms) - listed:
        missing = sorted(alarms[a] for a in set(alarms) - listed)
        fail.append(f"the alarm widget lacks {missing}")
    store = store_kind(stack)
    present = set(titles)
    if STORE_WIDGETS[store] - present:
        fail.append(f"store {store}: no widget {sorted(STORE_WIDGETS[store] - present)}")
    for other, ts in STORE_WIDGETS.items():
        if other != store and ts & present:
            fail.append(f"store {store}: widgets of {other}: {sorted(ts & present)}")
    if set(emitted_names) - shown:
        fail.append(f"emitted metrics on no widget: {sorted(set(emitted_names) - shown)}")
    return list(dict.fromkeys(fail)), {t for t in titles if t}
