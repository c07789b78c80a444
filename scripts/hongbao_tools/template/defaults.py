"""The template's rules that the sources leave out, added by the generator: a parameter's Type
(Number), a resource's UpdateReplacePolicy (its DeletionPolicy), an alarm's Metrics entries'
ReturnData and Period, and the long form of its metrics."""

from __future__ import annotations

import itertools
import re

from hongbao_tools.template.yamltext import flow


def metric(short: list) -> tuple[dict, str]:
    """`[Namespace, MetricName, {dimension: value, ...}, statistic]`, an alarm's `Metric` or a
    Metrics entry's, as CloudWatch's Metric (Dimensions a list of Name and Value) and the
    statistic."""
    namespace, name, dimensions, stat = short
    dims = [{"Name": k, "Value": v} for k, v in dimensions.items()]
    return {"Namespace": namespace, "MetricName": name, "Dimensions": dims}, stat


def alarm_metric(short: list) -> str:
    """An alarm's one `Metric` as its Namespace, MetricName, Dimensions and Statistic lines."""
    m, stat = metric(short)
    return "\n".join(f"{k}: {flow(v)}" for k, v in (m | {"Statistic": stat}).items())


def alarm_metrics(entries: list[dict]) -> str:
    """An alarm's Metrics, one entry a line, with what each leaves out: its ReturnData (true for
    the expression, false for a metric) and, for a `Metric`, its MetricStat (Period 300 unless
    the entry gives one)."""
    lines = ["Metrics:"]
    for entry in entries:
        entry = {"Id": entry["Id"], "ReturnData": "Expression" in entry} | entry
        if "Metric" in entry:
            m, stat = metric(entry.pop("Metric"))
            entry["MetricStat"] = {"Period": entry.pop("Period", 300), "Metric": m, "Stat": stat}
        lines.append("  - " + flow(entry))
    return "\n".join(lines)


def number_types(section: str) -> str:
    """The Parameters section with `Type: Number` for each parameter that gives no Type."""
    out: list[str] = []
    lines = section.splitlines()
    for i, line in enumerate(lines):
        out.append(line)
        if re.match(r"^  [A-Za-z]\w*:\s*$", line):
            rest = itertools.takewhile(lambda x: not re.match(r"^  \S", x), lines[i + 1 :])
            if not any(x.startswith("    Type:") for x in rest):
                out.append("    Type: Number")
    return "\n".join(out)


def replace_policies(text: str) -> str:
    """Each resource's UpdateReplacePolicy, unless given, is its DeletionPolicy: what the stack
    keeps when it deletes a resource, it keeps when it replaces it."""
    deletion = re.compile(r"^( +)DeletionPolicy: (\w+)\n(?!\1UpdateReplacePolicy:)", re.M)
    return deletion.sub(r"\g<0>\1UpdateReplacePolicy: \2\n", text)
