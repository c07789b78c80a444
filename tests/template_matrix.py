#!/usr/bin/env python3
"""Every parameter combination template.yaml accepts boots; every one its Rules refuse would not.

`make lint` runs this (scripts/check-template.sh). For each combination of the matrix below it:

1. applies the SAM transform (samtranslator, the library `sam deploy` uses) to template.yaml;
2. evaluates the result as CloudFormation would for those parameter values: Rules (their
   assertions, by hand: no library evaluates them), then parameters, Conditions and the
   intrinsic functions through cloud-radar, with realistic physical ids and endpoint host names
   for the resources it creates (template_checks/stack.py). A Ref or GetAtt of a resource whose
   Condition is false fails the combination (CloudFormation would refuse it; cfn-lint's W1001
   finds the same for every combination at once);
3. takes each function's resolved Environment.Variables, VPC security groups and its role's
   IAM statements, and decides whether the functions boot:
   (a) the cold-start settings check of every function (`hongbao::lambda::settings`, the
       code path Init runs, through `target/debug/examples/check_settings`) accepts its
       environment, and its caller comes from the JWT authorizer (`HONGBAO_AUTH_MODE=jwt`, no
       `AWS_SAM_LOCAL`: a header identity is for `sam local` only);
   (b) with IAM auth, the role may `<service>:Connect` exactly on the store and the user the
       function signs tokens for (service, resource type, cache and user as the code derives
       them: each function its own Redis user); without, on nothing;
   (c) the functions' security group may reach the store's port on the store's security group,
       which admits it; the subnets are in the VPC of that group;
   (d) a created store's user group / ACL holds every function's IAM user (and, for
       ElastiCache, a disabled `default` user);
   (e) least privilege: a role holds nothing but those Connect statements, `sqs:SendMessage` on
       its function's own OnFailure queue, and (a function with `HONGBAO_EVENT_BUS_NAME`,
       ledger-export) `events:PutEvents` on exactly that bus, which the stack creates and which
       the function must be allowed;
   (f) a function with `HONGBAO_EVENT_BUS_NAME` reaches EventBridge: an interface endpoint of
       `com.amazonaws.<region>.events` with private DNS in the VPC, whose security group admits
       the functions' group on 443, which has the matching egress, and whose endpoint policy
       allows `events:PutEvents` on the bus; without one, only through
       AdditionalSecurityGroupIds (the operator's groups, taken on trust);
   (g) the functions' security group reaches nothing else: its egress goes only to the store's
       port on a group that admits it, or to 443 on the EventBridge endpoint's group;
   (h) every SQS queue an EventBridge rule targets (or uses as its dead-letter queue) has a
       queue policy letting events.amazonaws.com send to it only with aws:SourceArn = that
       rule, and no queue policy statement lacks that condition;
   (i) the ledger event bus's policy denies events:PutEvents to every principal but
       ledger-export's role;
4. checks that the Rules refuse the combination exactly when the functions would not boot.

A function the `check_settings` example does not know yet (the Rust side has not got it) fails
the run with one message naming it; its other checks still run, with the Init verdict of a
function that has the same REDIS_* settings.

First, template_checks/declared.py holds the hand-written template to what is declared
elsewhere: functions.json's functions, routes and principals variables, docs/configuration.md's
settings, docs/operations.md's alarm sections.

Every render that creates a stack also goes through template_checks/dashboard.py (its
dashboard: each metric one the code emits, or an AWS metric of a resource of that render; the
widgets of its store) and template_checks/runbook.py (each alarm's description links its
section of docs/operations.md within 1024 characters, for the longest RunbookUrl too; the
widgets a section names exist), and docs/operations.md once (a section per alarm, four parts).

It also boots every value of every parameter alone (AllowedValues, MinValue, MaxValue, sample
strings of each AllowedPattern), lints the transformed template with cfn-lint, and runs the
README's curl session (`scripts/serve.py --check`) on a real redis-server as a user with the
store users' exact access string, which must also be refused FLUSHALL, FLUSHDB, KEYS, CONFIG
and keys outside the prefix.

    .venv/bin/python tests/template_matrix.py [--template PATH] [--report] [--no-live] [--no-sweep]

`--report` prints each combination's rendered environment. Exit status 0 when all hold.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from template_checks import dashboard, declared, runbook
from template_checks.boots import boots
from template_checks.live import access_strings, live_access_strings
from template_checks.stack import (
    ACCOUNT,
    BASE,
    PRINCIPAL_PARAMETERS,
    REGION,
    ROOT,
    UNKNOWN_FUNCTIONS,
    check_settings,
    load,
    render,
    transform,
)

SERVERLESS_HOST = "shop-cache-x1y2z3.serverless.use1.cache.amazonaws.com:6379"
NODE_BASED_HOST = "clustercfg.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379"
MEMORYDB_HOST = "clustercfg.shop-mdb.x1y2z3.memorydb.us-east-1.amazonaws.com:6379"
NODE_LIST = (
    "shop-rg-0001-001.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379,"
    "shop-rg-0002-001.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379"
)
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hongbao/redis-AbCdEf"


# ------------------------------------------------------------------------------- the matrix
def matrix() -> list[tuple[str, dict]]:
    m = []
    for store in ("elasticache-durable", "memorydb", "elasticache-serverless"):
        for auth in ("iam", "password", "none"):
            m.append(
                (
                    f"created {store}, RedisAuth={auth} (ignored)",
                    {"DataStore": store, "RedisAuth": auth},
                )
            )
    m.append(
        (
            "created default, subnets of another VPC",
            {"SubnetIds": "subnet-0aaa1111,subnet-0ccc3333"},
        )
    )
    m.append(
        (
            "created memorydb, 3 shards x 2 replicas, extra security groups",
            {
                "DataStore": "memorydb",
                "MemoryDbShards": "3",
                "MemoryDbReplicasPerShard": "2",
                "AdditionalSecurityGroupIds": "sg-0123456789abcdef0,sg-0fedcba9876543210",
            },
        )
    )
    m += [
        (
            "created default, no EventBridge endpoint, no extra security groups",
            {"CreateEventsVpcEndpoint": "false"},
        ),
        (
            "created default, no EventBridge endpoint, extra security groups",
            {
                "CreateEventsVpcEndpoint": "false",
                "AdditionalSecurityGroupIds": "sg-0123456789abcdef0",
            },
        ),
    ]
    endpoints = {
        "ElastiCache Serverless": SERVERLESS_HOST,
        "node-based ElastiCache": NODE_BASED_HOST,
        "MemoryDB": MEMORYDB_HOST,
        "node list": NODE_LIST,
    }
    sg = {"ExistingCacheSecurityGroupId": "sg-0123456789abcdef0"}
    for label, ep in endpoints.items():
        e = {"ExistingCacheEndpoint": ep, **sg}
        cache = {"ElastiCache Serverless": "shop-cache", "MemoryDB": "shop-mdb"}.get(
            label, "shop-rg"
        )
        m += [
            (
                f"existing {label}, iam",
                {**e, "RedisAuth": "iam", "RedisUser": "shop-app", "IamCacheName": cache},
            ),
            (
                f"existing {label}, iam without RedisUser",
                {**e, "RedisAuth": "iam", "IamCacheName": cache},
            ),
            (
                f"existing {label}, iam without IamCacheName",
                {**e, "RedisAuth": "iam", "RedisUser": "shop-app"},
            ),
            (
                f"existing {label}, password",
                {**e, "RedisAuth": "password", "RedisPasswordSecretArn": SECRET_ARN},
            ),
            (
                f"existing {label}, password as an ACL user",
                {
                    **e,
                    "RedisAuth": "password",
                    "RedisUser": "shop-app",
                    "RedisPasswordSecretArn": SECRET_ARN,
                },
            ),
            (f"existing {label}, password without a secret", {**e, "RedisAuth": "password"}),
            (f"existing {label}, none", {**e, "RedisAuth": "none"}),
            (
                f"existing {label}, none, no security group",
                {"ExistingCacheEndpoint": ep, "RedisAuth": "none"},
            ),
        ]
    m.append(
        (
            "existing node-based ElastiCache, WAIT 1, RedisCluster true",
            {
                "ExistingCacheEndpoint": NODE_BASED_HOST,
                **sg,
                "RedisAuth": "iam",
                "RedisUser": "shop-app",
                "IamCacheName": "shop-rg",
                "RedisWaitReplicas": "1",
                "RedisCluster": "true",
            },
        )
    )
    return m


# Sample values for parameters constrained only by an AllowedPattern (each must match it).
PATTERN_SAMPLES = {
    "KeyPrefix": ["a", "Stage_2-hb", "x" * 32],
    "VoteSite": ["a", "my-site-2", "z" * 32],
    "MetricsNamespace": ["hongbao/prod", "A.b_c#d:e-f"],
    # Every principals parameter (one per principals variable of functions.json's operations).
    **dict.fromkeys(
        PRINCIPAL_PARAMETERS,
        [
            "",
            "arn:aws:iam::123456789012:role/payments",
            "arn:aws:sts::123456789012:assumed-role/payments/* , arn:aws:iam::1:user/ops",
        ],
    ),
    "Covers": ["", "gold", "red-2027, lantern_2.v1,x"],
    "LedgerExportScheduleExpression": ["rate(1 minute)", "rate(2 minutes)", "rate(5 minutes)"],
    "GrabReservedConcurrency": ["", "1", "1000"],
    "CacheNodeType": ["cache.r7g.large", "cache.m7g.xlarge", "cache.c7gn.large"],
    "MemoryDbNodeType": ["db.r7g.large", "db.r6gd.xlarge", "db.x2g.2xlarge"],
    "CacheEngineVersion": ["9.0", "9.1"],
    "ServerlessMajorEngineVersion": ["7", "8"],
    "MemoryDbEngineVersion": ["7.2", "7.3"],
    "AlarmTopicArn": ["", "arn:aws:sns:us-east-1:123456789012:alerts"],
    "CorsAllowOrigins": ["", "https://app.example.com,https://admin.example.com"],
    # and the longest the parameter allows (sweep(): runbook.longest_url)
    "RunbookUrl": [
        "docs/operations.md",
        "https://github.com/example/hongbao/blob/v1.2.0/docs/operations.md",
    ],
}
# Every other reserved concurrency (a scheduled job's `<Job>ReservedConcurrency`, ^[0-9]*$)
# takes these.
RESERVED_SAMPLES = ["", "1", "5"]


def pattern_samples(name: str) -> list[str] | None:
    """The sample values of a parameter constrained only by an AllowedPattern, if known."""
    if name in PATTERN_SAMPLES:
        return PATTERN_SAMPLES[name]
    return RESERVED_SAMPLES if name.endswith("ReservedConcurrency") else None


# Values each AllowedPattern must refuse because Init would refuse them (an IAM principal list
# with an empty entry, a bare `*`, or a `*` inside an entry: IamPrincipals::parse).
PATTERN_REFUSALS = {
    name: ["a,,b", ",a", "a,", "*", "arn:aws:iam::1:role/a*b", " , "]
    for name in PRINCIPAL_PARAMETERS
}
# Parameters whose values need another parameter to mean anything (covered by the matrix).
SWEEP_SKIP = {
    "SubnetIds",
    "VpcId",
    "JwtIssuer",
    "JwtAudience",
    "ExistingCacheEndpoint",
    "ExistingCacheSecurityGroupId",
    "RedisUser",
    "IamCacheName",
    "RedisPasswordSecretArn",
    "AdditionalSecurityGroupIds",
    "RedisAuth",
    "ReclaimScheduleExpression",
    "CreateEventsVpcEndpoint",  # "false" needs AdditionalSecurityGroupIds (the matrix has both)
}


def sweep(template: dict) -> list[tuple[str, dict]]:
    """Every parameter alone at each of its allowed values, bounds and pattern samples."""
    cases = []
    for name, spec in template["Parameters"].items():
        if name in SWEEP_SKIP:
            continue
        values = []
        if "AllowedValues" in spec:
            values = [str(v) for v in spec["AllowedValues"]]
        elif spec.get("Type") == "Number":
            for bound in ("MinValue", "MaxValue"):
                if bound in spec:
                    values.append(str(spec[bound]))
            if "MaxValue" not in spec:
                values.append(str(int(float(spec.get("Default", 1))) * 1000 + 7))
        elif pattern_samples(name) is not None:
            values = pattern_samples(name)
            for bad in PATTERN_REFUSALS.get(name, []):
                if re.fullmatch(spec.get("AllowedPattern", ".*"), bad):
                    raise SystemExit(f"{name}'s AllowedPattern accepts {bad!r}, which Init refuses")
            if name == "RunbookUrl":
                values = values + [runbook.longest_url(template)]
        elif "AllowedPattern" in spec:
            raise SystemExit(
                f"add sample values of {name} ({spec['AllowedPattern']}) to PATTERN_SAMPLES"
            )
        cases += [(f"{name}={v!r}", {name: v}) for v in values]
    return cases


# ------------------------------------------------------------------- dashboard and runbook
def dashboard_and_runbook(template: dict, table: list) -> list[str]:
    """The dashboard of every render that creates a stack (template_checks/dashboard.py), the
    runbook's sections and each render's alarm descriptions (template_checks/runbook.py)."""
    names, unused = dashboard.emitted()
    failures = [
        f"shared/src/api/metrics.rs declares {c}, which no code emits (it does not count)"
        for c in unused
    ]
    doc_failures, found = runbook.check_document(template)
    failures += doc_failures
    titles: set[str] = set()
    per_render: dict[str, list[str]] = {}  # failure -> the renders that have it
    checked = 0
    longest = runbook.longest_url(template)
    longest_seen = False
    for kind, label, accepted, *_, r in table:
        if not accepted or "stack" not in r or r.get("refused"):
            continue
        checked += 1
        values = r["stack"].values
        longest_seen |= values["RunbookUrl"] == longest
        fails, ts = dashboard.check(r["stack"], values, names)
        titles |= ts
        store = dashboard.store_kind(r["stack"])
        elsewhere = set().union(*(w for k, w in dashboard.STORE_WIDGETS.items() if k != store))
        fails += runbook.check(r["stack"], values, found, ts, elsewhere)
        for f in fails:
            per_render.setdefault(f, []).append(f"{kind} {label}")
    for f, where in per_render.items():
        also = f" and {len(where) - 1} more renders" if len(where) > 1 else ""
        failures.append(f"{where[0]}{also}: {f}")
    failures += runbook.dashboard_section(titles)
    swept = any(t[0] == "sweep" for t in table)  # --no-sweep renders defaults only
    if swept and not longest_seen:
        failures.append(f"no render had the longest RunbookUrl ({len(longest)} characters)")
    print(
        f"dashboard and runbook: {checked} renders, {len(names)} emitted metrics, "
        f"{len(titles)} widget titles, {len(found)} alarm sections"
    )
    return failures


# ------------------------------------------------------------------------------------ main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    ap.add_argument("--report", action="store_true", help="print each rendered environment")
    ap.add_argument("--no-live", action="store_true", help="skip the live access-string test")
    ap.add_argument(
        "--no-sweep", action="store_true", help="skip the single-parameter sweep (a quick run)"
    )
    args = ap.parse_args()
    template = load(args.template)
    failures: list[str] = list(declared.problems(template))
    print(f"declared: template.yaml against functions.json and the docs: {len(failures)} problems")

    cases = [("matrix", label, p) for label, p in matrix()] + [
        ("sweep", label, p) for label, p in ([] if args.no_sweep else sweep(template))
    ]
    renders = [(kind, label, render(template, p)) for kind, label, p in cases]
    inputs = [
        {"function": b, "env": f["env"]} for _, _, r in renders for b, f in r["functions"].items()
    ]
    verdicts = iter(check_settings(inputs))

    table = []
    for kind, label, r in renders:
        v = {b: next(verdicts) for b in r["functions"]}
        refused = r["rules"]
        why = boots(r, v) if not refused else None
        if refused:
            # What the functions would do without the Rules: render with the Rules removed.
            bare = copy.deepcopy(template)
            bare.pop("Rules", None)
            r2 = render(bare, r["params"])
            v2 = {
                x["function"]: x
                for x in check_settings(
                    [{"function": b, "env": f["env"]} for b, f in r2["functions"].items()]
                )
            }
            why = boots(r2, v2)
            r = r2
        booted = not why
        accepted = not refused
        verdict = "ok" if accepted == booted else "MISMATCH"
        if kind == "sweep" and not (accepted and booted):
            verdict = "MISMATCH"
        table.append((kind, label, accepted, booted, verdict, refused, why, r))
        if verdict != "ok":
            failures.append(
                f"{kind} {label}: Rules {'accept' if accepted else 'refuse'} "
                f"({'; '.join(refused)}), functions {'boot' if booted else 'do not boot'}"
                f"{': ' + '; '.join(why) if why else ''}"
            )

    for kind, label, accepted, booted, verdict, refused, why, r in table:
        if kind != "matrix":
            continue
        print(
            f"{verdict:8} rules {'accept' if accepted else 'REFUSE'}  functions "
            f"{'boot' if booted else 'DO NOT BOOT'}  {label}"
        )
        for line in refused:
            print(f"           rule: {line}")
        for line in (why or [])[:3]:
            print(f"           why:  {line}")
        if args.report and r["functions"]:
            env = r["functions"]["grab"]["env"]
            keys = [k for k in env if k.startswith("REDIS_")]
            print("           env:  " + " ".join(f"{k}={env[k]}" for k in keys))
    failures += dashboard_and_runbook(template, table)
    sweeps = [t for t in table if t[0] == "sweep"]
    sweeps_ok = sum(1 for t in sweeps if t[4] == "ok")
    print(f"sweep: {sweeps_ok} of {len(sweeps)} single-parameter values boot")

    # cfn-lint on the transformed template (the SAM transform's output, default parameters).
    out = transform(template, BASE)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(out, f)
    lint = subprocess.run(
        [str(ROOT / ".venv/bin/cfn-lint"), "--format", "parseable", "--", f.name],
        capture_output=True,
        text=True,
    )
    os.unlink(f.name)
    if lint.returncode != 0:
        failures.append(f"cfn-lint on the transformed template:\n{lint.stdout}{lint.stderr}")
    else:
        print("cfn-lint: the transformed template is clean")

    if not args.no_live:
        failures += live_access_strings(access_strings(template))

    if UNKNOWN_FUNCTIONS:
        failures.append(
            f"check_settings does not know {sorted(UNKNOWN_FUNCTIONS)}: the cold-start settings "
            "check (a) of that function did not run in any render (its other checks did). "
            "target/debug/examples/check_settings predates the function in "
            "hongbao::lambda::Function; rebuild it with `cargo build --locked -p hongbao "
            "--features ops --example check_settings` once the Rust side has it"
        )
    for f in failures:
        print("FAIL  " + f)
    print(f"template_matrix: {'FAILED' if failures else 'OK'} ({len(table)} renders)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
