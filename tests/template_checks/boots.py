"""Whether the functions of one render would boot, and reach nothing they need not.

The checks (a)-(i) of tests/template_matrix.py. Most are hand-written because they ask what a
policy evaluator does not answer: not "is X allowed" but "is nothing but X allowed" (a role's
statements are exactly the Connect, SendMessage and PutEvents the code needs; a queue policy
admits exactly one EventBridge rule) and whether a network path exists between security groups.
No maintained library checks these offline: cfn-lint and checkov lint single resources against
fixed rules (both run in scripts/check-template.sh), cloud-radar only renders, moto's IAM
evaluator answers one action on one resource (used for the EventBridge endpoint policy, in
`policy_allows`), and IAM Access Analyzer's policy checks need an AWS account.
"""

from __future__ import annotations

import json
import re

from moto.iam.access_control import IAMPolicy, PermissionResult

from .stack import ACCOUNT, REGION, SUBNET_VPC, Stack


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
    endpoint_sgs = set()  # security groups of working endpoints (EventBridge, Secrets Manager)
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
        secret = env.get("REDIS_PASSWORD_SECRET_ARN")
        may_read_secret = False
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
            elif secret and actions == ["secretsmanager:GetSecretValue"] and resources == [secret]:
                may_read_secret = True
            else:
                why.append(f"{binary}: statement beyond least privilege: {s}")
        if secret and not may_read_secret:
            why.append(f"{binary}: its role may not secretsmanager:GetSecretValue on {secret}")
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
        # (f) the paths to EventBridge and to the password's secret
        for action, resource in (
            ("events:PutEvents", bus_arn),
            ("secretsmanager:GetSecretValue", secret),
        ):
            if not resource:
                continue
            service = action.split(":")[0]
            problems, sgs = endpoint_path(stack, fsg, vpc, action, resource)
            endpoint_sgs |= sgs
            extra = set(f["security_groups"]) - {fsg}
            if not sgs and not extra:
                why.append(
                    f"{binary}: no path to {service}.{REGION}.amazonaws.com:443: "
                    f"{'; '.join(problems) or f'no {service} endpoint in the VPC'}, and no "
                    "AdditionalSecurityGroupIds"
                )
            elif not sgs and problems:
                why.append(f"{binary}: {service} endpoint unusable: {'; '.join(problems)}")
    # (d) a created store holds every function's user, and admits only through its security group
    env = next(iter(r["functions"].values()))["env"]
    fn_users = sorted({f["env"].get("REDIS_USERNAME") for f in r["functions"].values()})
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
            for user in fn_users:
                if (
                    user not in acl["UserNames"]
                    or users[user]["AuthenticationMode"]["Type"] != "iam"
                ):
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
            iam = {
                u["UserId"]
                for u in members
                if u["UserId"] == u["UserName"] and u["AuthenticationMode"]["Type"] == "iam"
            }
            default = [
                u
                for u in members
                if u["UserName"] == "default" and u["AccessString"].split()[0] == "off"
            ]
            if not set(fn_users) <= iam or not default:
                why.append(
                    f"{logical}'s user group lacks an IAM user of {fn_users} or a disabled "
                    "default user"
                )
    if not created and not env["REDIS_URL"].startswith("rediss://"):
        why.append("an existing store reached without TLS")
    # (g) the functions' security group reaches the store and the endpoints (EventBridge, Secrets
    # Manager), nothing else
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
        to_endpoint = dest in endpoint_sgs and ports == (443, 443)
        if e.get("IpProtocol") != "tcp" or not (to_store or to_endpoint):
            why.append(f"{n}: the functions' egress {e} reaches neither the store nor an endpoint")
    # (h) queues written by EventBridge rules admit exactly those rules
    why += queue_policy_problems(stack)
    # (i) only ledger-export's role may publish on the ledger bus
    why += bus_policy_problems(stack)
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
    the endpoint's default, full access). moto's IAM evaluator matches the actions and resources
    (wildcards, NotAction, an explicit Deny winning); only statements for any principal and
    without a Condition count, since the caller is not named and its context is unknown."""
    if doc is None:
        return True

    def anyone(principal) -> bool:
        return principal == "*" or (isinstance(principal, dict) and principal.get("AWS") == "*")

    statements = [
        st
        for st in as_list(doc.get("Statement", []))
        if anyone(st.get("Principal")) and "Condition" not in st
    ]
    policy = IAMPolicy(json.dumps({"Statement": statements}))
    return policy.is_action_permitted(action, resource) == PermissionResult.PERMITTED


def endpoint_path(
    stack: Stack, fsg: str, vpc: str, action: str, resource: str
) -> tuple[list[str], set[str]]:
    """The interface endpoints of the VPC for `action`'s service (`events:PutEvents`: events)
    the functions can call `action` on `resource` through: what is wrong with each one they
    cannot, and the security groups of those they can."""
    problems, sgs = [], set()
    service = action.split(":")[0]
    for n in stack.existing("AWS::EC2::VPCEndpoint"):
        e = stack.resource(n)
        if e["ServiceName"] != f"com.amazonaws.{REGION}.{service}":
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
        if not policy_allows(e.get("PolicyDocument"), action, resource):
            wrong.append(f"its policy does not allow {action} on {resource}")
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


def bus_policy_problems(stack: Stack) -> list[str]:
    """(i): the ledger event bus has a policy that denies events:PutEvents on it to every
    principal but ledger-export's role (an explicit deny also binds the account's own roles)."""
    bus = stack.getatt("LedgerEventBus", "Arn")
    role = stack.getatt("LedgerExportFunctionRole", "Arn")
    bus_name = stack.ref("LedgerEventBus")
    for n in stack.existing("AWS::Events::EventBusPolicy"):
        pol = stack.resource(n)
        st = pol.get("Statement", {})
        if (
            pol.get("EventBusName") in (bus_name, bus)
            and st.get("Effect") == "Deny"
            and st.get("Principal") == "*"
            and as_list(st.get("Action")) == ["events:PutEvents"]
            and as_list(st.get("Resource")) == [bus]
            and st.get("Condition") == {"ArnNotEquals": {"aws:PrincipalArn": role}}
        ):
            return []
    return [f"LedgerEventBus: no policy denies events:PutEvents to every principal but {role}"]
