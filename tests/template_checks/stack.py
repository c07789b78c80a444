"""template.yaml rendered as CloudFormation would for one set of parameter values.

1. The Rules (their assertions) decide first; CloudFormation evaluates nothing else when one
   fails. `rules()` is hand-written: cloud-radar does not read the Rules section at all, and
   cfn-lint's condition solver (cfnlint.conditions) takes a Rule only as a constraint between
   condition scenarios, built of Fn::Equals, And, Or and Not (a Rule with Fn::Contains,
   Fn::EachMemberEquals or Fn::ValueOfAll is left out), with no way to evaluate it for given
   parameter values.
2. The SAM transform: samtranslator, the library `sam deploy` uses.
3. Parameters (AllowedValues, AllowedPattern, MinValue, MaxValue, the AWS-specific types),
   Conditions and the intrinsic functions: cloud-radar (`cloud_radar.cf.unit.Template`), with
   the physical ids and endpoint host names `physical_ids()` gives each resource it creates.
   `Renderer` says what it changes in cloud-radar's Template and why.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import re
import subprocess
from pathlib import Path

from cfnlint.decode import decode_str
from cloud_radar.cf.unit import Template, functions
from samtranslator.translator.transform import transform as sam_transform

from hongbao_tools.deps import require_example
from hongbao_tools.functions import PRINCIPALS, RESOURCES

ROOT = Path(__file__).resolve().parents[2]
# The parameter of each principals variable of functions.json's AWS_IAM operations.
PRINCIPAL_PARAMETERS: tuple[str, ...] = tuple(PRINCIPALS.values())

# samtranslator logs its own usage metrics at WARNING; they say nothing about the template.
logging.getLogger("samtranslator").setLevel(logging.ERROR)

ACCOUNT = "123456789012"
REGION = "us-east-1"
STACK_UUID = "0a1b2c3d-1111-2222-3333-444455556666"
STACK_NAME = "hongbao"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK_NAME}/{STACK_UUID}"
SECRET_VALUE = "secret-from-secrets-manager"
# Subnets the matrix uses and the VPC each belongs to (what Fn::ValueOfAll reads).
SUBNET_VPC = {
    "subnet-0aaa1111": "vpc-0111aaaa",
    "subnet-0bbb2222": "vpc-0111aaaa",
    "subnet-0ccc3333": "vpc-0999bbbb",
}
BASE = {
    "SubnetIds": "subnet-0aaa1111,subnet-0bbb2222",
    "VpcId": "vpc-0111aaaa",
    "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
    "JwtAudience": "client-id-1",
}
# The template's function resources and their binaries, as functions.json declares them.
FUNCTIONS = RESOURCES
# AWS::NoValue as rendered (cloud-radar's own is "", which would also drop empty strings) and
# what a Ref or Fn::GetAtt of a resource whose Condition is false gives (through the resource's
# cloud-radar metadata); `Stack` refuses a render holding it, as CloudFormation would.
NO_VALUE = "<AWS::NoValue>"
ABSENT = "<absent resource>:"


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
    # `sam build` replaces each function's local CodeUri with its uploaded artifact's S3 location.
    for lid, res in t["Resources"].items():
        if res.get("Type") == "AWS::Serverless::Function":
            res["Properties"]["CodeUri"] = f"s3://hongbao-artifacts/{lid}.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # offline: only names the region
    return sam_transform(t, dict(params), _NoManagedPolicies())


def parameter_values(template: dict, overrides: dict) -> dict[str, str]:
    """Every parameter's value as a string: the override or the Default."""
    unknown = set(overrides) - set(template.get("Parameters", {}))
    if unknown:
        raise SystemExit(f"unknown parameters {sorted(unknown)}")
    values = {}
    for name, spec in template.get("Parameters", {}).items():
        if name in overrides:
            values[name] = str(overrides[name])
        elif "Default" in spec:
            values[name] = str(spec["Default"])
        else:
            raise SystemExit(f"parameter {name} has no default and no value")
    return values


# ----------------------------------------------------------------------------------- Rules
def rules(template: dict, values: dict[str, str]) -> list[str]:
    """The AssertDescription of every failing assertion (empty: the Rules accept)."""
    params = {}
    for name, spec in template.get("Parameters", {}).items():
        ptype = spec.get("Type", "String")
        listed = ptype == "CommaDelimitedList" or ptype.startswith("List<")
        params[name] = values[name].split(",") if listed else values[name]

    def fn(v):
        if not (isinstance(v, dict) and len(v) == 1):
            return v
        ((k, arg),) = v.items()
        if k == "Ref":
            return params[arg]
        if k == "Fn::Equals":
            return fn(arg[0]) == fn(arg[1])
        if k == "Fn::Not":
            return not fn(arg[0])
        if k == "Fn::And":
            return all(fn(x) for x in arg)
        if k == "Fn::Or":
            return any(fn(x) for x in arg)
        if k == "Fn::Contains":
            return fn(arg[1]) in fn(arg[0])
        if k == "Fn::EachMemberEquals":
            return all(m == fn(arg[1]) for m in fn(arg[0]))
        if k == "Fn::EachMemberIn":
            return all(m in fn(arg[1]) for m in fn(arg[0]))
        if k == "Fn::ValueOfAll":
            ptype, attr = arg
            assert ptype == "AWS::EC2::Subnet::Id" and attr == "VpcId", arg
            return [
                SUBNET_VPC[s]
                for n, spec in template["Parameters"].items()
                if spec.get("Type") == "List<AWS::EC2::Subnet::Id>"
                for s in params[n]
            ]
        raise SystemExit(f"rule function {k} not supported by this evaluator")

    failed = []
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not fn(rule["RuleCondition"]):
            continue
        for a in rule["Assertions"]:
            if not fn(a["Assert"]):
                failed.append(f"{name}: {' '.join(a.get('AssertDescription', '').split())}")
    return failed


# ------------------------------------------------------------------- physical ids
# The property holding the physical id (what Ref returns) of resources named by the template.
OWN_NAME = {
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
}


def physical_ids(logical: str, rtype: str, props: dict) -> dict:
    """What Ref and Fn::GetAtt give for one created resource (cloud-radar's `Cloud-Radar`
    metadata: `ref` and `attribute-values`), with realistic endpoint host names."""
    if rtype in OWN_NAME:
        ident = props[OWN_NAME[rtype]]
    elif rtype == "AWS::IAM::ManagedPolicy":
        ident = f"arn:aws:iam::{ACCOUNT}:policy/{logical}"
    elif rtype == "AWS::EC2::SecurityGroup":
        ident = f"sg-{logical}"
    else:
        ident = f"{logical}-physical-id"
    attrs = {"Arn": f"arn:aws:{rtype.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{logical}"}
    endpoint = {
        "AWS::ElastiCache::ReplicationGroup": (
            "ConfigurationEndPoint",
            f"clustercfg.{ident}.a1b2c3.use1.cache.amazonaws.com",
        ),
        "AWS::ElastiCache::ServerlessCache": (
            "Endpoint",
            f"{ident}-a1b2c3.serverless.use1.cache.amazonaws.com",
        ),
        "AWS::MemoryDB::Cluster": (
            "ClusterEndpoint",
            f"clustercfg.{ident}.a1b2c3.memorydb.{REGION}.amazonaws.com",
        ),
    }.get(rtype)
    if endpoint:
        attrs[f"{endpoint[0]}.Address"] = endpoint[1]
        attrs[f"{endpoint[0]}.Port"] = "6379"
    if rtype == "AWS::EC2::SecurityGroup":
        attrs["GroupId"] = ident
    if rtype == "AWS::SQS::Queue":
        # A queue CloudFormation names: <stack>-<logical id>-<suffix> (the dashboard's and
        # the alarms' QueueName dimension).
        attrs["QueueName"] = f"{STACK_NAME}-{logical}-1A2B3C4D5E6F"
    if rtype == "AWS::Events::EventBus":
        attrs = {"Name": ident, "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{ident}"}
    return {"ref": ident, "attribute-values": attrs}


# ------------------------------------------------------------------------------- rendering
class _Secrets(dict):
    """Any Secrets Manager dynamic reference resolves, but one without a secret id."""

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        if not key:
            raise Refused("a dynamic reference to an empty secret id")
        return SECRET_VALUE


class Renderer(Template):
    """cloud-radar's Template with three changes, each for a reason cloud-radar 0.17 has:

    - the template is kept as a dict and deep-copied for each render (cloud-radar dumps it to
      YAML in __init__ and parses it back in render with PyYAML's pure-Python loader: seconds
      per render, against a tenth of one for the evaluation itself);
    - Fn::If evaluates only the branch its condition picks (cloud-radar resolves both first, and
      the other branch may not resolve, e.g. Fn::Select of a port from an empty endpoint);
    - AWS::NoValue is NO_VALUE, not "" (which would drop every empty string too)."""

    NoValue = NO_VALUE
    AccountId = ACCOUNT
    StackId = STACK_ID
    StackName = STACK_NAME

    def __init__(self, template: dict):
        with contextlib.redirect_stdout(io.StringIO()):  # cloud-radar prints the template
            super().__init__({}, dynamic_references={"secretsmanager": _Secrets()})
        self.source = template
        self.template = template
        self.transforms = template.get("Transform")
        self.allowed_functions = self.load_allowed_functions()

    def render(self, params: dict) -> dict:
        self.template = copy.deepcopy(self.source)
        self.set_parameters(params)
        # What cloud-radar's own render adds: the region Ref AWS::Region reads.
        self.template.setdefault("Metadata", {}).setdefault("Cloud-Radar", {})["Region"] = REGION
        self.template = self.render_all_sections(self.template)
        self.template = self.remove_conditional_resources(self.template)
        return self.remove_novalue_properties(self.template)

    def resolve_values(self, data):
        if isinstance(data, dict) and len(data) == 1 and "Fn::If" in data:
            name, yes, no = data["Fn::If"]
            return self.resolve_values(yes if functions.condition(self, name) else no)
        return super().resolve_values(data)


def attributes_used(template: dict) -> dict[str, set[str]]:
    """Per resource, the attributes a Fn::GetAtt or a `${Resource.Attribute}` of Fn::Sub reads
    (what a resource whose Condition is false must not give)."""
    text = json.dumps(template)
    found = re.findall(r'"Fn::GetAtt": \["(\w+)", "([\w.]+)"\]', text)
    found += re.findall(r"\$\{(\w+)\.([\w.]+)\}", text)
    out: dict[str, set[str]] = {}
    for logical, attr in found:
        out.setdefault(logical, set()).add(attr)
    return out


def _plain(v, where: str):
    """A rendered value as the old evaluator gave it: NO_VALUE dropped from lists, scalars
    but booleans as strings; a Ref of an absent resource refused."""
    if isinstance(v, list):
        return [_plain(x, where) for x in v if x != NO_VALUE]
    if isinstance(v, dict):
        return {k: _plain(x, where) for k, x in v.items() if x != NO_VALUE}
    if isinstance(v, str) and ABSENT in v:
        name = v.split(ABSENT, 1)[1].split()[0]
        raise Refused(f"{where}: Ref or GetAtt of {name}, whose condition is false")
    return v if v is None or isinstance(v, bool) else str(v)


class Stack:
    """The transformed template rendered for one set of parameter values."""

    def __init__(self, transformed: dict, values: dict[str, str]):
        self.source = copy.deepcopy(transformed)
        self.values = values
        self.source.pop("Rules", None)  # decided by rules() before the transform
        renderer = Renderer(self.source)
        try:
            first = renderer.render(values)
        except ValueError as e:
            if "parameter" in str(e).lower():
                raise SystemExit(f"matrix bug: {e}") from None
            raise
        self.conditions: dict[str, bool] = first.get("Conditions", {})
        self.types = {n: r["Type"] for n, r in self.source["Resources"].items()}
        attributes = attributes_used(self.source)
        self.ids = {}
        for logical, rtype in self.types.items():
            meta = self.source["Resources"][logical].setdefault("Metadata", {})
            if logical in first["Resources"]:
                props = first["Resources"][logical].get("Properties", {})
                self.ids[logical] = physical_ids(logical, rtype, props)
                meta["Cloud-Radar"] = self.ids[logical]
            else:
                poison = {a: f"{ABSENT}{logical}.{a}" for a in attributes.get(logical, ())}
                meta["Cloud-Radar"] = {"ref": f"{ABSENT}{logical}", "attribute-values": poison}
        rendered = Renderer(self.source).render(values)
        self.resources = {
            n: _plain(r, n).get("Properties", {}) for n, r in rendered["Resources"].items()
        }
        self.outputs = {n: _plain(o, n) for n, o in rendered.get("Outputs", {}).items()}

    def condition(self, name: str) -> bool:
        return self.conditions[name]

    def exists(self, logical: str) -> bool:
        return logical in self.resources

    def _created(self, logical: str) -> dict:
        if logical not in self.types:
            raise Refused(f"Ref or GetAtt of unknown {logical}")
        if not self.exists(logical):
            raise Refused(f"Ref or GetAtt of {logical}, whose condition is false")
        return self.ids[logical]

    def ref(self, logical: str) -> str:
        return self._created(logical)["ref"]

    def getatt(self, logical: str, attr: str) -> str:
        return self._created(logical)["attribute-values"].get(attr, f"{logical}.{attr}")

    def resource(self, logical: str) -> dict:
        """The resource's rendered Properties."""
        return self.resources[logical]

    def existing(self, rtype: str) -> list[str]:
        return [n for n in self.resources if self.types[n] == rtype]


# ------------------------------------------------------------------------------ one render
def render(template: dict, overrides: dict) -> dict:
    """What CloudFormation would make of the template with these parameters: the Rules'
    verdict, and per function its environment, security groups, subnets and IAM statements."""
    params = {**BASE, **overrides}
    values = parameter_values(template, params)
    out = {"params": overrides, "rules": rules(template, values), "refused": None, "functions": {}}
    if out["rules"]:
        return out  # CloudFormation stops here; nothing else is evaluated.
    transformed = transform(template, params)
    try:
        stack = Stack(transformed, values)
        out["stack"] = stack
        for logical, binary in FUNCTIONS.items():
            assert stack.types[logical] == "AWS::Lambda::Function", logical
            fn = stack.resource(logical)
            role_logical = transformed["Resources"][logical]["Properties"]["Role"]["Fn::GetAtt"]
            role = stack.resource(role_logical[0])
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
