#!/usr/bin/env python3
"""Every parameter combination template.yaml accepts boots; every one its Rules refuse would not.

`make lint` runs this (scripts/check-template.sh). For each combination of the matrix below it:

1. applies the SAM transform (samtranslator, the library `sam deploy` uses) to template.yaml;
2. evaluates the result as CloudFormation would for those parameter values: Rules (their
   assertions), Conditions, and the intrinsic functions (Ref, Fn::If, Fn::Sub, Fn::Join,
   Fn::Select, Fn::Split, Fn::GetAtt, Fn::FindInMap, dynamic references), with realistic
   physical ids and endpoint host names for the resources it creates. A Ref or GetAtt of a
   resource whose Condition is false fails the combination (CloudFormation would refuse it);
3. takes each function's resolved Environment.Variables, VPC security groups and its role's
   IAM statements, and decides whether the functions boot:
   (a) the cold-start settings check of every function (`hongbao::lambda::settings`, the
       code path Init runs, through `target/debug/examples/check_settings`) accepts its
       environment, and its caller comes from the JWT authorizer (`HONGBAO_AUTH_MODE=jwt`, no
       `AWS_SAM_LOCAL`: a header identity is for `sam local` only);
   (b) with IAM auth, the role may `<service>:Connect` exactly on the store and the user the
       functions sign tokens for (service, resource type, cache and user as the code derives
       them); without, on nothing;
   (c) the functions' security group may reach the store's port on the store's security group,
       which admits it; the subnets are in the VPC of that group;
   (d) a created store's user group / ACL holds that IAM user (and, for ElastiCache, a disabled
       `default` user);
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
4. checks that the Rules refuse the combination exactly when the functions would not boot.

A function the `check_settings` example does not know yet (the Rust side has not got it) fails
the run with one message naming it; its other checks still run, with the Init verdict of a
function that has the same REDIS_* settings.

It also boots every value of every parameter alone (AllowedValues, MinValue, MaxValue, sample
strings of each AllowedPattern), lints the transformed template with cfn-lint, and runs the
README's curl session (`scripts/serve.py --check`) on a real redis-server as a user with the
store users' exact access string, which must also be refused FLUSHALL, FLUSHDB, KEYS, CONFIG
and keys outside the prefix.

    .venv/bin/python tests/template_matrix.py [--template PATH] [--report]

`--report` prints each combination's rendered environment. Exit status 0 when all hold.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import redis
from cfnlint.decode import decode_str
from samtranslator.translator.transform import transform as sam_transform

ROOT = Path(__file__).resolve().parent.parent
# hongbao_tools lives in scripts/ (the scripts there find it as their own directory).
sys.path.insert(0, str(ROOT / "scripts"))
from hongbao_tools.deps import require_example  # noqa: E402 (needs the line above)
from hongbao_tools.redis_server import RedisServer  # noqa: E402 (needs the line above)

# samtranslator logs its own usage metrics at WARNING; they say nothing about the template.
logging.getLogger("samtranslator").setLevel(logging.ERROR)

ACCOUNT = "123456789012"
REGION = "us-east-1"
STACK_UUID = "0a1b2c3d-1111-2222-3333-444455556666"
PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::Partition": "aws",
    "AWS::StackName": "hongbao",
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/hongbao/{STACK_UUID}",
    "AWS::URLSuffix": "amazonaws.com",
}
NO_VALUE = object()
SECRET_VALUE = "secret-from-secrets-manager"
# Subnets the matrix uses and the VPC each belongs to (what Fn::ValueOfAll reads).
SUBNET_VPC = {
    "subnet-0aaa1111": "vpc-0111",
    "subnet-0bbb2222": "vpc-0111",
    "subnet-0ccc3333": "vpc-0999",
}
BASE = {
    "SubnetIds": "subnet-0aaa1111,subnet-0bbb2222",
    "VpcId": "vpc-0111",
    "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
    "JwtAudience": "client-id-1",
}
SERVERLESS_HOST = "shop-cache-x1y2z3.serverless.use1.cache.amazonaws.com:6379"
NODE_BASED_HOST = "clustercfg.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379"
MEMORYDB_HOST = "clustercfg.shop-mdb.x1y2z3.memorydb.us-east-1.amazonaws.com:6379"
NODE_LIST = (
    "shop-rg-0001-001.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379,"
    "shop-rg-0002-001.shop-rg.x1y2z3.use1.cache.amazonaws.com:6379"
)
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hongbao/redis-AbCdEf"


class Refused(Exception):
    """CloudFormation would refuse the template for these parameters (not a Rule)."""


# ------------------------------------------------------------------ loading and transforming
def load(path: Path) -> dict:
    template, matches = decode_str(path.read_text())
    if matches or template is None:
        raise SystemExit(f"{path}: cannot parse: {matches}")
    return json.loads(json.dumps(template))  # plain dicts and lists


class _NoManagedPolicies:
    def load(self) -> dict:
        return {}


def transform(template: dict, params: dict) -> dict:
    t = copy.deepcopy(template)
    # `sam build` replaces the local CodeUri with the uploaded artifact's S3 location.
    t["Globals"]["Function"]["CodeUri"] = "s3://hongbao-artifacts/bootstrap.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # offline: only names the region
    return sam_transform(t, dict(params), _NoManagedPolicies())


# ------------------------------------------------------------------------------ evaluation
class Stack:
    """One template evaluated for one set of parameter values."""

    def __init__(self, template: dict, overrides: dict):
        self.t = template
        self.params = {}
        for name, spec in template.get("Parameters", {}).items():
            if name in overrides:
                value = str(overrides[name])
            elif "Default" in spec:
                value = str(spec["Default"])
            else:
                raise SystemExit(f"parameter {name} has no default and no value")
            self.check_parameter(name, spec, value)
            ptype = spec.get("Type", "String")
            if ptype == "CommaDelimitedList" or ptype.startswith("List<"):
                self.params[name] = value.split(",")
            else:
                self.params[name] = value
        unknown = set(overrides) - set(template.get("Parameters", {}))
        if unknown:
            raise SystemExit(f"unknown parameters {sorted(unknown)}")
        self.conditions: dict[str, bool] = {}
        self.resources = template["Resources"]

    @staticmethod
    def check_parameter(name: str, spec: dict, value: str) -> None:
        """CloudFormation's own parameter constraints (not Rules): a value outside them never
        reaches a stack, so the matrix must not use one."""
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            raise SystemExit(f"matrix bug: {name}={value!r} not in AllowedValues")
        pattern = spec.get("AllowedPattern")
        if pattern is not None and not re.fullmatch(pattern, value):
            raise SystemExit(f"matrix bug: {name}={value!r} does not match {pattern}")
        if spec.get("Type") == "Number":
            n = float(value)
            if "MinValue" in spec and n < float(spec["MinValue"]):
                raise SystemExit(f"matrix bug: {name}={value} below MinValue")
            if "MaxValue" in spec and n > float(spec["MaxValue"]):
                raise SystemExit(f"matrix bug: {name}={value} above MaxValue")

    # -- Rules -------------------------------------------------------------------------------
    def rules(self) -> list[str]:
        """The AssertDescription of every failing assertion (empty: the Rules accept)."""
        failed = []
        for name, rule in self.t.get("Rules", {}).items():
            if "RuleCondition" in rule and not self.rule_fn(rule["RuleCondition"]):
                continue
            for a in rule["Assertions"]:
                if not self.rule_fn(a["Assert"]):
                    failed.append(f"{name}: {' '.join(a.get('AssertDescription', '').split())}")
        return failed

    def rule_fn(self, v):
        if isinstance(v, dict) and len(v) == 1:
            ((k, arg),) = v.items()
            if k == "Ref":
                return self.params[arg]
            if k == "Fn::Equals":
                return self.rule_fn(arg[0]) == self.rule_fn(arg[1])
            if k == "Fn::Not":
                return not self.rule_fn(arg[0])
            if k == "Fn::And":
                return all(self.rule_fn(x) for x in arg)
            if k == "Fn::Or":
                return any(self.rule_fn(x) for x in arg)
            if k == "Fn::Contains":
                return self.rule_fn(arg[1]) in self.rule_fn(arg[0])
            if k == "Fn::EachMemberEquals":
                return all(m == self.rule_fn(arg[1]) for m in self.rule_fn(arg[0]))
            if k == "Fn::EachMemberIn":
                return all(m in self.rule_fn(arg[1]) for m in self.rule_fn(arg[0]))
            if k == "Fn::ValueOfAll":
                ptype, attr = arg
                assert ptype == "AWS::EC2::Subnet::Id" and attr == "VpcId", arg
                return [
                    SUBNET_VPC[s]
                    for n, spec in self.t["Parameters"].items()
                    if spec.get("Type") == "List<AWS::EC2::Subnet::Id>"
                    for s in self.params[n]
                ]
            raise SystemExit(f"rule function {k} not supported by this evaluator")
        return v

    # -- Conditions --------------------------------------------------------------------------
    def condition(self, name: str) -> bool:
        if name not in self.conditions:
            self.conditions[name] = bool(self.cond_fn(self.t["Conditions"][name]))
        return self.conditions[name]

    def cond_fn(self, v):
        if isinstance(v, dict) and len(v) == 1:
            ((k, arg),) = v.items()
            if k == "Condition":
                return self.condition(arg)
            if k == "Fn::Equals":
                return self.resolve(arg[0]) == self.resolve(arg[1])
            if k == "Fn::Not":
                return not self.cond_fn(arg[0])
            if k == "Fn::And":
                return all(self.cond_fn(x) for x in arg)
            if k == "Fn::Or":
                return any(self.cond_fn(x) for x in arg)
        return self.resolve(v)

    def exists(self, logical: str) -> bool:
        c = self.resources[logical].get("Condition")
        return c is None or self.condition(c)

    # -- intrinsic functions -----------------------------------------------------------------
    def ref(self, name: str):
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self.params:
            return self.params[name]
        if name not in self.resources:
            raise Refused(f"Ref to unknown {name}")
        if not self.exists(name):
            raise Refused(f"Ref to {name}, whose condition is false")
        r = self.resources[name]
        props = r.get("Properties", {})
        own = {
            "AWS::ElastiCache::ReplicationGroup": "ReplicationGroupId",
            "AWS::ElastiCache::ServerlessCache": "ServerlessCacheName",
            "AWS::ElastiCache::User": "UserId",
            "AWS::ElastiCache::UserGroup": "UserGroupId",
            "AWS::ElastiCache::SubnetGroup": "CacheSubnetGroupName",
            "AWS::MemoryDB::Cluster": "ClusterName",
            "AWS::MemoryDB::User": "UserName",
            "AWS::MemoryDB::ACL": "ACLName",
            "AWS::MemoryDB::SubnetGroup": "SubnetGroupName",
            "AWS::Events::EventBus": "Name",
        }.get(r["Type"])
        if own:
            return self.resolve(props[own])
        if r["Type"] == "AWS::IAM::ManagedPolicy":
            return f"arn:aws:iam::{ACCOUNT}:policy/{name}"
        if r["Type"] == "AWS::EC2::SecurityGroup":
            return f"sg-{name}"
        return f"{name}-physical-id"

    def getatt(self, logical: str, attr: str):
        if logical not in self.resources:
            raise Refused(f"GetAtt of unknown {logical}")
        if not self.exists(logical):
            raise Refused(f"GetAtt of {logical}, whose condition is false")
        rtype = self.resources[logical]["Type"]
        ident = lambda: self.ref(logical)  # noqa: E731
        if rtype == "AWS::ElastiCache::ReplicationGroup" and attr.startswith(
            "ConfigurationEndPoint"
        ):
            return (
                f"clustercfg.{ident()}.a1b2c3.use1.cache.amazonaws.com"
                if attr.endswith("Address")
                else "6379"
            )
        if rtype == "AWS::ElastiCache::ServerlessCache" and attr.startswith("Endpoint"):
            return (
                f"{ident()}-a1b2c3.serverless.use1.cache.amazonaws.com"
                if attr.endswith("Address")
                else "6379"
            )
        if rtype == "AWS::MemoryDB::Cluster" and attr.startswith("ClusterEndpoint"):
            return (
                f"clustercfg.{ident()}.a1b2c3.memorydb.{REGION}.amazonaws.com"
                if attr.endswith("Address")
                else "6379"
            )
        if rtype == "AWS::EC2::SecurityGroup" and attr == "GroupId":
            return f"sg-{logical}"
        if rtype == "AWS::Events::EventBus":
            return {
                "Name": ident(),
                "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{ident()}",
            }[attr]
        if attr == "Arn":
            return f"arn:aws:{rtype.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{logical}"
        return f"{logical}.{attr}"

    def sub(self, text: str, variables: dict) -> str:
        def one(m: re.Match) -> str:
            name = m.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                value = variables[name]
            elif "." in name and name.split(".", 1)[0] in self.resources:
                logical, attr = name.split(".", 1)
                value = self.getatt(logical, attr)
            else:
                value = self.ref(name)
            if not isinstance(value, str):
                raise Refused(f"Fn::Sub of a non-string ${{{name}}}: {value!r}")
            return value

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def resolve(self, v):
        if isinstance(v, list):
            out = [self.resolve(x) for x in v]
            return [x for x in out if x is not NO_VALUE]
        if isinstance(v, str):
            if "{{resolve:secretsmanager:}}" in v:
                raise Refused("a dynamic reference to an empty secret id")
            return re.sub(r"\{\{resolve:secretsmanager:[^}]+\}\}", SECRET_VALUE, v)
        if not isinstance(v, dict):
            return v if v is None or isinstance(v, bool) else str(v)
        if len(v) == 1:
            ((k, arg),) = v.items()
            if k == "Ref":
                return self.ref(arg)
            if k == "Fn::If":
                name, yes, no = arg
                return self.resolve(yes if self.condition(name) else no)
            if k == "Fn::Sub":
                if isinstance(arg, str):
                    return self.resolve(self.sub(arg, {}))
                text, variables = arg
                return self.resolve(
                    self.sub(text, {n: self.resolve(x) for n, x in variables.items()})
                )
            if k == "Fn::Join":
                sep, items = arg
                items = self.resolve(items)
                if not all(isinstance(i, str) for i in items):
                    raise Refused(f"Fn::Join of non-strings {items!r}")
                return sep.join(items)
            if k == "Fn::Split":
                sep, text = arg
                return self.resolve(text).split(sep)
            if k == "Fn::Select":
                index, items = arg
                items = self.resolve(items)
                i = int(self.resolve(index))
                if not 0 <= i < len(items):
                    raise Refused(f"Fn::Select index {i} out of {items!r}")
                return items[i]
            if k == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.getatt(logical, attr)
            if k == "Fn::FindInMap":
                m, a, b = (self.resolve(x) for x in arg)
                return self.t["Mappings"][m][a][b]
            if k == "Fn::GetAZs":
                return [f"{REGION}a", f"{REGION}b"]
            if k == "Fn::ToJsonString":
                return json.dumps(self.resolve(arg))
            if k.startswith("Fn::") or k == "Condition":
                raise SystemExit(f"intrinsic {k} not supported by this evaluator")
        out = {}
        for key, x in v.items():
            r = self.resolve(x)
            if r is not NO_VALUE:
                out[key] = r
        return out

    def resource(self, logical: str) -> dict:
        return self.resolve(self.resources[logical].get("Properties", {}))

    def existing(self, rtype: str) -> list[str]:
        return [n for n, r in self.resources.items() if r["Type"] == rtype and self.exists(n)]


# ------------------------------------------------------------------------------ one render
FUNCTIONS = {
    "CreatePacketFunction": "create-packet",
    "GrabFunction": "grab",
    "ClaimFunction": "claim",
    "WalletFunction": "wallet",
    "ReclaimCronFunction": "reclaim-cron",
    "NextOrderCodeFunction": "next-order-code",
    "VoteFunction": "vote",
    "LedgerExportFunction": "ledger-export",
    "CouponFunction": "coupon",
}


def render(template: dict, overrides: dict) -> dict:
    """What CloudFormation would make of the template with these parameters: the Rules'
    verdict, and per function its environment, security groups, subnets and IAM statements."""
    params = {**BASE, **overrides}
    stack = Stack(template, params)
    out = {"params": overrides, "rules": stack.rules(), "refused": None, "functions": {}}
    if out["rules"]:
        return out  # CloudFormation stops here; nothing else is evaluated.
    transformed = transform(template, params)
    stack = Stack(transformed, params)
    out["stack"] = stack
    try:
        for logical, binary in FUNCTIONS.items():
            fn = stack.resource(logical)
            assert stack.resources[logical]["Type"] == "AWS::Lambda::Function", logical
            role_logical = stack.resources[logical]["Properties"]["Role"]["Fn::GetAtt"][0]
            role = stack.resource(role_logical)
            statements = []
            for arn in role.get("ManagedPolicyArns", []):
                m = re.fullmatch(rf"arn:aws:iam::{ACCOUNT}:policy/(\w+)", arn)
                if m:
                    statements += stack.resource(m.group(1))["PolicyDocument"]["Statement"]
            for pol in role.get("Policies", []):
                statements += pol["PolicyDocument"]["Statement"]
            out["functions"][binary] = {
                "logical": logical,
                "env": fn.get("Environment", {}).get("Variables", {}),
                "security_groups": fn.get("VpcConfig", {}).get("SecurityGroupIds", []),
                "subnets": fn.get("VpcConfig", {}).get("SubnetIds", []),
                "statements": statements,
            }
        # Every alarm, output and other resource that exists must resolve too.
        for logical in stack.resources:
            if stack.exists(logical):
                stack.resource(logical)
        for o in transformed.get("Outputs", {}).values():
            if "Condition" not in o or stack.condition(o["Condition"]):
                stack.resolve(o["Value"])
    except Refused as e:
        out["refused"] = str(e)
    return out


# Functions the `check_settings` example answered "unknown function" for (a binary built before
# the Rust side had them); main() fails the run once with their names.
UNKNOWN_FUNCTIONS: set[str] = set()
UNKNOWN_RE = re.compile(r'check_settings: unknown function "((?:[^"\\]|\\.)*)"')


def check_settings(cases: list[dict]) -> list[dict]:
    """The cold-start settings check of each case's function on its environment (the
    `check_settings` example reads the cases as JSON and answers one verdict per case).

    The example stops the whole batch (exit 2) at the first function it does not know. Such a
    function is recorded in UNKNOWN_FUNCTIONS, its cases are answered `{"ok": False,
    "unknown": True}` and the others are checked without it; any other failure stops the run
    with the example's own message."""
    exe = require_example("check_settings")
    while True:
        known = [c for c in cases if c["function"] not in UNKNOWN_FUNCTIONS]
        p = subprocess.run([str(exe)], input=json.dumps(known), capture_output=True, text=True)
        m = UNKNOWN_RE.search(p.stderr)
        if p.returncode == 2 and m and m.group(1) not in UNKNOWN_FUNCTIONS:
            UNKNOWN_FUNCTIONS.add(m.group(1))
            continue
        if p.returncode != 0:
            raise SystemExit(
                f"{exe} failed (exit {p.returncode}) on {len(known)} cases: {p.stderr.strip()}"
            )
        break
    verdicts = iter(json.loads(p.stdout))
    return [
        {
            "function": c["function"],
            "ok": False,
            "unknown": True,
            "error": f"{exe.name} does not know the function {c['function']!r}",
        }
        if c["function"] in UNKNOWN_FUNCTIONS
        else next(verdicts)
        for c in cases
    ]


def as_list(x) -> list:
    return x if isinstance(x, list) else [x]


def boots(r: dict, verdicts: dict[str, dict]) -> list[str]:
    """Why the functions of render `r` would not boot (empty: they boot)."""
    if r["refused"]:
        return [f"CloudFormation refuses the template: {r['refused']}"]
    why = []
    stack: Stack = r["stack"]
    fsg = stack.getatt("FunctionSecurityGroup", "GroupId")
    vpc = stack.resource("FunctionSecurityGroup")["VpcId"]
    events_sgs = set()  # security groups of working EventBridge endpoints
    for binary, f in r["functions"].items():
        v = verdicts[binary]
        env = f["env"]
        if v.get("unknown"):
            # Reported once by main(); the auth fields below come only from REDIS_* settings,
            # so a function with the same ones stands in for the rest of the checks.
            v = next(
                (
                    verdicts[b]
                    for b, g in r["functions"].items()
                    if verdicts[b]["ok"] and redis_env(g["env"]) == redis_env(env)
                ),
                None,
            )
            if v is None:
                why.append(f"{binary}: Init not checked (unknown to check_settings)")
                continue
        if not v["ok"]:
            why.append(f"{binary}: Init fails: {v['error']}")
            continue
        # (a') the caller comes from the JWT authorizer: a header identity is for `sam local`
        # only (its containers set AWS_SAM_LOCAL=true; Init refuses `header` without it), so no
        # parameter set may give a deployed function either.
        if env.get("HONGBAO_AUTH_MODE", "jwt") != "jwt" or "AWS_SAM_LOCAL" in env:
            why.append(
                f"{binary}: HONGBAO_AUTH_MODE={env.get('HONGBAO_AUTH_MODE')!r}, "
                f"AWS_SAM_LOCAL={env.get('AWS_SAM_LOCAL')!r}: a deployed function must take "
                "its caller from the JWT authorizer"
            )
            continue
        # (b) the connect policy
        connects = [
            s
            for s in f["statements"]
            if any(a.endswith(":Connect") for a in as_list(s.get("Action", [])))
        ]
        if v["auth"] == "iam":
            svc, cache, user = v["iam_service"], v["iam_cache_name"], v["username"]
            prefix = f"arn:aws:{svc}:{REGION}:{ACCOUNT}:"
            if svc == "elasticache":
                kind = (
                    "serverlesscache"
                    if v["iam_resource_type"] == "ServerlessCache"
                    else "replicationgroup"
                )
                want = {f"{prefix}{kind}:{cache}", f"{prefix}user:{user}"}
            else:
                want = {f"{prefix}cluster/{cache}", f"{prefix}user/{user}"}
            got = {
                res
                for s in connects
                for res in as_list(s["Resource"])
                if s.get("Effect") == "Allow" and f"{svc}:Connect" in as_list(s["Action"])
            }
            others = [s for s in connects if f"{svc}:Connect" not in as_list(s["Action"])]
            if got != want or others:
                why.append(
                    f"{binary}: the role may {svc}:Connect on {sorted(got)} (and "
                    f"{len(others)} other Connect statements), the token needs {sorted(want)}"
                )
        elif connects:
            why.append(f"{binary}: Connect statements without IAM auth: {connects}")
        # (e) nothing beyond least privilege
        bus = env.get("HONGBAO_EVENT_BUS_NAME")
        bus_arn = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{bus}" if bus else None
        own_queues = failure_destinations(stack, f["logical"])
        may_put = False
        for s in f["statements"]:
            actions = as_list(s.get("Action", []))
            resources = as_list(s.get("Resource", []))
            if s.get("Effect") != "Allow" or {"NotAction", "NotResource", "Condition"} & set(s):
                why.append(f"{binary}: unexpected statement {s}")
            elif actions and all(a.endswith(":Connect") for a in actions):
                pass  # (b)
            elif actions == ["sqs:SendMessage"] and resources and set(resources) <= own_queues:
                pass  # its OnFailure destination
            elif bus_arn and actions == ["events:PutEvents"] and resources == [bus_arn]:
                may_put = True
            else:
                why.append(f"{binary}: statement beyond least privilege: {s}")
        if bus:
            buses = [stack.ref(n) for n in stack.existing("AWS::Events::EventBus")]
            if bus not in buses:
                why.append(f"{binary}: HONGBAO_EVENT_BUS_NAME {bus!r} is none of the buses {buses}")
            if not may_put:
                why.append(f"{binary}: its role may not events:PutEvents on {bus_arn}")
        # (c) the network path
        host_port = env["REDIS_URL"].split(",")[0].split("://", 1)[1]
        port = int(host_port.rsplit(":", 1)[1])
        if fsg not in f["security_groups"]:
            why.append(f"{binary}: not in the functions' security group")
        if any(SUBNET_VPC[s] != vpc for s in f["subnets"]):
            why.append(f"{binary}: a subnet is outside the security group's VPC {vpc}")
        store_sgs = egress_to(stack, fsg, port)
        admitted = ingress_from(stack, fsg, port)
        if not store_sgs & admitted:
            why.append(
                f"{binary}: no path to port {port}: egress to {sorted(store_sgs)}, "
                f"ingress from the functions on {sorted(admitted)}"
            )
        # (f) the path to EventBridge
        if bus:
            problems, sgs = events_path(stack, fsg, vpc, bus_arn)
            events_sgs |= sgs
            extra = set(f["security_groups"]) - {fsg}
            if not sgs and not extra:
                why.append(
                    f"{binary}: no path to EventBridge (events.{REGION}.amazonaws.com:443): "
                    f"{'; '.join(problems) or 'no events endpoint in the VPC'}, and no "
                    "AdditionalSecurityGroupIds"
                )
            elif not sgs and problems:
                why.append(f"{binary}: EventBridge endpoint unusable: {'; '.join(problems)}")
    # (d) a created store holds the functions' user, and admits only through its security group
    env = next(iter(r["functions"].values()))["env"]
    user = env.get("REDIS_USERNAME")
    stores = {
        t: stack.existing(t)
        for t in (
            "AWS::ElastiCache::ReplicationGroup",
            "AWS::ElastiCache::ServerlessCache",
            "AWS::MemoryDB::Cluster",
        )
    }
    created = [(t, n) for t, ns in stores.items() for n in ns]
    if len(created) > 1:
        why.append(f"more than one store created: {created}")
    for rtype, logical in created:
        props = stack.resource(logical)
        host = env["REDIS_URL"].split("://", 1)[1].rsplit(":", 1)[0]
        endpoint = {
            "AWS::ElastiCache::ReplicationGroup": "ConfigurationEndPoint.Address",
            "AWS::ElastiCache::ServerlessCache": "Endpoint.Address",
            "AWS::MemoryDB::Cluster": "ClusterEndpoint.Address",
        }[rtype]
        if host != stack.getatt(logical, endpoint):
            why.append(f"REDIS_URL {env['REDIS_URL']} is not {logical}'s endpoint")
        if stack.getatt("CacheSecurityGroup", "GroupId") not in props["SecurityGroupIds"]:
            why.append(f"{logical} is not in CacheSecurityGroup")
        if rtype == "AWS::MemoryDB::Cluster":
            acl = next(
                stack.resource(n)
                for n in stack.existing("AWS::MemoryDB::ACL")
                if stack.ref(n) == props["ACLName"]
            )
            users = {
                stack.resource(n)["UserName"]: stack.resource(n)
                for n in stack.existing("AWS::MemoryDB::User")
            }
            if user not in acl["UserNames"] or users[user]["AuthenticationMode"]["Type"] != "iam":
                why.append(f"{logical}'s ACL does not hold the IAM user {user}")
        else:
            groups = as_list(props.get("UserGroupIds", props.get("UserGroupId", [])))
            members = [
                stack.resource(n)
                for g in stack.existing("AWS::ElastiCache::UserGroup")
                if stack.ref(g) in groups
                for n in stack.existing("AWS::ElastiCache::User")
                if stack.ref(n) in stack.resource(g)["UserIds"]
            ]
            app = [
                u
                for u in members
                if u["UserId"] == user == u["UserName"] and u["AuthenticationMode"]["Type"] == "iam"
            ]
            default = [
                u
                for u in members
                if u["UserName"] == "default" and u["AccessString"].split()[0] == "off"
            ]
            if not app or not default:
                why.append(
                    f"{logical}'s user group lacks the IAM user {user} or a disabled default user"
                )
    if not created and not env["REDIS_URL"].startswith("rediss://"):
        why.append("an existing store reached without TLS")
    # (g) the functions' security group reaches the store and the EventBridge endpoint, nothing else
    port = int(env["REDIS_URL"].split(",")[0].rsplit(":", 1)[1])
    store_sgs = egress_to(stack, fsg, port) & ingress_from(stack, fsg, port)
    for rule in stack.resource("FunctionSecurityGroup").get("SecurityGroupEgress", []):
        if rule != {
            "IpProtocol": "icmp",
            "FromPort": "-1",
            "ToPort": "-1",
            "CidrIp": "127.0.0.1/32",
            "Description": rule.get("Description"),
        }:
            why.append(f"FunctionSecurityGroup has an inline egress rule {rule}")
    for n in stack.existing("AWS::EC2::SecurityGroupEgress"):
        e = stack.resource(n)
        if e["GroupId"] != fsg:
            continue
        dest = e.get("DestinationSecurityGroupId")
        ports = (int(e.get("FromPort", -1)), int(e.get("ToPort", -1)))
        to_store = dest in store_sgs and ports[0] <= port <= ports[1]
        to_events = dest in events_sgs and ports == (443, 443)
        if e.get("IpProtocol") != "tcp" or not (to_store or to_events):
            why.append(f"{n}: the functions' egress {e} reaches neither the store nor EventBridge")
    # (h) queues written by EventBridge rules admit exactly those rules
    why += queue_policy_problems(stack)
    return why


def redis_env(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith("REDIS_")}


def egress_to(stack: Stack, fsg: str, port: int) -> set[str]:
    """Security groups the functions' group has a tcp egress rule to, covering `port`."""
    out = set()
    for n in stack.existing("AWS::EC2::SecurityGroupEgress"):
        e = stack.resource(n)
        if (
            e["GroupId"] == fsg
            and e["IpProtocol"] == "tcp"
            and re.fullmatch(r"sg-\w+", e.get("DestinationSecurityGroupId", ""))
            and int(e["FromPort"]) <= port <= int(e["ToPort"])
        ):
            out.add(e["DestinationSecurityGroupId"])
    return out


def ingress_from(stack: Stack, fsg: str, port: int) -> set[str]:
    """Security groups with a tcp ingress rule from the functions' group, covering `port`."""
    out = set()
    for n in stack.existing("AWS::EC2::SecurityGroupIngress"):
        i = stack.resource(n)
        if (
            i.get("SourceSecurityGroupId") == fsg
            and i["IpProtocol"] == "tcp"
            and re.fullmatch(r"sg-\w+", i["GroupId"])
            and int(i["FromPort"]) <= port <= int(i["ToPort"])
        ):
            out.add(i["GroupId"])
    return out


def failure_destinations(stack: Stack, logical: str) -> set[str]:
    """The OnFailure destinations of the function's EventInvokeConfig."""
    out = set()
    for n in stack.existing("AWS::Lambda::EventInvokeConfig"):
        c = stack.resource(n)
        if c["FunctionName"] == stack.ref(logical):
            dest = c.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
            if dest:
                out.add(dest)
    return out


def policy_allows(doc: dict | None, action: str, resource: str) -> bool:
    """Whether a VPC endpoint policy lets any principal do `action` on `resource` (no policy:
    the endpoint's default, full access)."""
    if doc is None:
        return True

    def covers(patterns, value: str) -> bool:
        return any(
            re.fullmatch(re.escape(p).replace(r"\*", ".*"), value) for p in as_list(patterns)
        )

    def anyone(principal) -> bool:
        return principal == "*" or (isinstance(principal, dict) and principal.get("AWS") == "*")

    matching = [
        st
        for st in as_list(doc.get("Statement", []))
        if anyone(st.get("Principal"))
        and covers(st.get("Action", []), action)
        and covers(st.get("Resource", []), resource)
        and "Condition" not in st
    ]
    return any(st["Effect"] == "Allow" for st in matching) and not any(
        st["Effect"] == "Deny" for st in matching
    )


def events_path(stack: Stack, fsg: str, vpc: str, bus_arn: str) -> tuple[list[str], set[str]]:
    """The EventBridge interface endpoints of the VPC the functions can publish through: what is
    wrong with each one they cannot, and the security groups of those they can."""
    problems, sgs = [], set()
    for n in stack.existing("AWS::EC2::VPCEndpoint"):
        e = stack.resource(n)
        if e["ServiceName"] != f"com.amazonaws.{REGION}.events":
            continue
        wrong = []
        if (
            e.get("VpcEndpointType") != "Interface"
            or str(e.get("PrivateDnsEnabled")).lower() != "true"
        ):
            wrong.append("not an interface endpoint with private DNS")
        if e["VpcId"] != vpc or any(SUBNET_VPC[s] != vpc for s in e.get("SubnetIds", [])):
            wrong.append(f"not in the functions' VPC {vpc}")
        own = set(e.get("SecurityGroupIds", []))
        reach = own & egress_to(stack, fsg, 443) & ingress_from(stack, fsg, 443)
        if not reach:
            wrong.append(f"443 on its groups {sorted(own)} not open from the functions' group")
        if not policy_allows(e.get("PolicyDocument"), "events:PutEvents", bus_arn):
            wrong.append(f"its policy does not allow events:PutEvents on {bus_arn}")
        if wrong:
            problems.append(f"{n}: {', '.join(wrong)}")
        else:
            sgs |= reach
    return problems, sgs


def queue_policy_problems(stack: Stack) -> list[str]:
    """(h): every SQS queue an EventBridge rule sends to (target or dead-letter queue) admits
    that rule, and every queue policy statement is limited to one rule by aws:SourceArn."""
    why = []
    arn_of_url = {stack.ref(q): stack.getatt(q, "Arn") for q in stack.existing("AWS::SQS::Queue")}
    admitted: dict[str, set[str]] = {}  # queue ARN -> rule ARNs allowed to send
    for n in stack.existing("AWS::SQS::QueuePolicy"):
        pol = stack.resource(n)
        arns = {arn_of_url.get(u, u) for u in pol["Queues"]}
        for st in as_list(pol["PolicyDocument"]["Statement"]):
            source = st.get("Condition", {}).get("ArnEquals", {}).get("aws:SourceArn")
            if (
                st.get("Effect") != "Allow"
                or st.get("Principal") != {"Service": "events.amazonaws.com"}
                or as_list(st.get("Action")) != ["sqs:SendMessage"]
                or not isinstance(source, str)
                or set(st.get("Condition", {})) != {"ArnEquals"}
                or not set(as_list(st.get("Resource"))) <= arns
            ):
                why.append(f"{n}: a statement not limited to one EventBridge rule: {st}")
                continue
            for a in as_list(st["Resource"]):
                admitted.setdefault(a, set()).add(source)
    for n in stack.existing("AWS::Events::Rule"):
        rule_arn = stack.getatt(n, "Arn")
        for t in stack.resource(n).get("Targets", []):
            for arn in (t["Arn"], t.get("DeadLetterConfig", {}).get("Arn")):
                if arn and arn.startswith("arn:aws:sqs:") and rule_arn not in admitted.get(arn, ()):
                    why.append(f"{n} sends to {arn}, whose queue policy does not admit it")
    return why


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
    "DepositPrincipals": [
        "arn:aws:iam::123456789012:role/payments",
        "arn:aws:sts::123456789012:assumed-role/payments/*,arn:aws:iam::123456789012:user/ops",
    ],
    "WithdrawalPrincipals": [
        "arn:aws:iam::123456789012:role/payouts",
        "arn:aws:sts::123456789012:assumed-role/payouts/*",
    ],
    "CouponPrincipals": [
        "arn:aws:iam::123456789012:role/merchant",
        "arn:aws:sts::123456789012:assumed-role/merchant/*,arn:aws:iam::123456789012:user/ops",
    ],
    "Covers": ["", "gold", "red-2027, lantern_2.v1,x"],
    "ReclaimReservedConcurrency": ["", "1", "5"],
    "LedgerExportReservedConcurrency": ["", "1", "5"],
    "LedgerExportScheduleExpression": ["rate(1 minute)", "rate(2 minutes)", "rate(5 minutes)"],
    "GrabReservedConcurrency": ["", "1", "1000"],
    "CacheNodeType": ["cache.r7g.large", "cache.m7g.xlarge", "cache.c7gn.large"],
    "MemoryDbNodeType": ["db.r7g.large", "db.r6gd.xlarge", "db.x2g.2xlarge"],
    "CacheEngineVersion": ["9.0", "9.1"],
    "ServerlessMajorEngineVersion": ["7", "8"],
    "MemoryDbEngineVersion": ["7.2", "7.3"],
    "AlarmTopicArn": ["", "arn:aws:sns:us-east-1:123456789012:alerts"],
    "CorsAllowOrigins": ["", "https://app.example.com,https://admin.example.com"],
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
        elif name in PATTERN_SAMPLES:
            values = PATTERN_SAMPLES[name]
        elif "AllowedPattern" in spec:
            raise SystemExit(
                f"add sample values of {name} ({spec['AllowedPattern']}) to PATTERN_SAMPLES"
            )
        cases += [(f"{name}={v!r}", {name: v}) for v in values]
    return cases


# ------------------------------------------------------------------- access string, live
def access_string(template: dict) -> str:
    """The store users' access string for KeyPrefix `hb`; ElastiCache's and MemoryDB's must be
    the same."""
    strings = set()
    for n in ("ElastiCacheAppUser", "MemoryDbUser"):
        value = template["Resources"][n]["Properties"]["AccessString"]
        text = value["Fn::Sub"] if isinstance(value, dict) else value
        strings.add(text.replace("${KeyPrefix}", "hb"))
    if len(strings) != 1:
        raise SystemExit(f"the store users' access strings differ: {strings}")
    return strings.pop()


def live_access_string(acl: str) -> list[str]:
    """The README's curl session as a user with `acl` on a real redis-server (default user
    off), then the commands that user must be refused. Returns the failures."""
    failures = []
    server = RedisServer().start()
    try:
        server.command("ACL", "SETUSER", "hongbao-app", "reset", *acl.split(), ">app-password")
        server.command("ACL", "SETUSER", "default", "off")
        env = dict(
            os.environ,
            REDIS_URL=server.url,
            REDIS_AUTH="password",
            REDIS_USERNAME="hongbao-app",
            REDIS_PASSWORD="app-password",
        )
        p = subprocess.run(
            [str(ROOT / ".venv/bin/python"), str(ROOT / "scripts/serve.py"), "--check"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if p.returncode != 0:
            failures.append(
                f"serve.py --check as the store user failed:\n{p.stdout[-3000:]}{p.stderr[-2000:]}"
            )
        else:
            print(
                f"live: README curl session as a user with {acl!r}: "
                f"{p.stdout.count('PASS')} checks passed"
            )
        c = redis.Redis(
            port=server.port, username="hongbao-app", password="app-password", decode_responses=True
        )
        for cmd in (
            ["FLUSHALL"],
            ["FLUSHDB"],
            ["KEYS", "hb:*"],
            ["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
            ["SET", "other:key", "1"],
            ["GET", "other:key"],
            ["SHUTDOWN"],
            ["ACL", "LIST"],
            ["SWAPDB", "0", "1"],
        ):
            try:
                c.execute_command(*cmd)
                failures.append(f"the store user may run {' '.join(cmd)}")
            except redis.exceptions.NoPermissionError:
                pass
            except redis.exceptions.ResponseError as e:
                if "NOPERM" not in str(e) and "no permissions" not in str(e):
                    failures.append(f"{' '.join(cmd)}: {e}")
        for cmd in (
            ["SET", "hb:probe", "1"],
            ["INFO", "memory"],
            ["TIME"],
            ["EVAL", "return 1", "0"],
        ):
            try:
                c.execute_command(*cmd)
            except redis.exceptions.ResponseError as e:
                failures.append(f"the store user may not run {' '.join(cmd)}: {e}")
        if server.command("DBSIZE") == 0:
            failures.append("the session wrote nothing")
    finally:
        server.stop()
    return failures


# ------------------------------------------------------------------------------------ main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    ap.add_argument("--report", action="store_true", help="print each rendered environment")
    ap.add_argument("--no-live", action="store_true", help="skip the live access-string test")
    args = ap.parse_args()
    template = load(args.template)
    failures: list[str] = []

    cases = [("matrix", label, p) for label, p in matrix()] + [
        ("sweep", label, p) for label, p in sweep(template)
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
        failures += live_access_string(access_string(template))

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
