"""`sam local invoke` of the built template's functions against one store (`SamLocal`): each
HTTP fixture sent to the function the template routes it to, its status, error code and body
checked against openapi.json (`OpenApi`); the scheduled functions; a table of invocations."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import referencing

from .. import events
from ..checks import Checks
from ..paths import ROOT
from .sam import (
    BUILT_TEMPLATE,
    SAM,
    Function,
    route_owner,
    sam_env,
)


class OpenApi:
    """Response bodies checked against openapi.json: the schema of an operation's status."""

    def __init__(self) -> None:
        self.doc = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
        resource = referencing.Resource.from_contents(
            self.doc, default_specification=referencing.jsonschema.DRAFT202012
        )
        self.registry = referencing.Registry().with_resource("urn:openapi", resource)

    def problems(self, route_key: str, status: int, body: object) -> str | None:
        """None when `body` matches the documented schema of `route_key` answering `status`,
        else what is wrong (an undocumented status included)."""
        method, path = route_key.split(" ", 1)
        op = self.doc["paths"].get(path, {}).get(method.lower())
        if op is None:
            return f"{route_key} is not in openapi.json"
        resp = op["responses"].get(str(status))
        if resp is None:
            return f"{route_key} does not document {status}"
        if "$ref" in resp:
            name = resp["$ref"].rsplit("/", 1)[1]
            resp = self.doc["components"]["responses"][name]
        schema = resp.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return None if body in (None, "") else f"{status} documents no body"
        schema = json.loads(json.dumps(schema).replace('"#/', '"urn:openapi#/'))
        validator = jsonschema.Draft202012Validator(schema, registry=self.registry)
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            return f"{'/'.join(map(str, e.path)) or '(body)'}: {e.message}"[:300]
        return None


@dataclass
class Invocation:
    fixture: str
    function: str
    status: object
    seconds: float


class SamLocal:
    """`sam local invoke` of the built template's functions against one store."""

    def __init__(
        self,
        label: str,
        functions: dict[str, Function],
        parameters: dict[str, str],
        env_vars: dict,
        openapi: OpenApi,
        checks: Checks,
    ) -> None:
        self.label = label
        self.functions = functions
        self.parameters = parameters
        self.openapi = openapi
        self.c = checks
        self.tmp = Path(tempfile.mkdtemp(prefix="hongbao-sam-local-"))
        self.env_file = self.tmp / "env.json"
        self.env_file.write_text(json.dumps(env_vars, indent=2), encoding="utf-8")
        self.invocations: list[Invocation] = []
        self.seq = 0
        self.last_stderr = ""

    def invoke_function(self, logical_id: str, event: dict, name: str) -> tuple[dict | None, str]:
        """Runs `sam local invoke LOGICAL_ID -e <event>`: (its JSON payload or None, stderr)."""
        self.seq += 1
        ev_file = self.tmp / f"{self.seq:03d}-{name.split()[0]}"
        ev_file.write_text(json.dumps(event), encoding="utf-8")
        cmd = [
            str(SAM), "local", "invoke", logical_id,
            "--template", str(BUILT_TEMPLATE),
            "--event", str(ev_file),
            "--env-vars", str(self.env_file),
            "--parameter-overrides", " ".join(f"{k}={v}" for k, v in self.parameters.items()),
            "--skip-pull-image",
        ]  # fmt: skip
        t0 = time.perf_counter()
        r = subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=sam_env(), timeout=180
        )
        took = time.perf_counter() - t0
        payload = None
        for line in reversed(r.stdout.strip().splitlines()):
            try:
                payload = json.loads(line)
                break
            except ValueError:
                continue
        status = payload.get("statusCode") if isinstance(payload, dict) else None
        self.invocations.append(
            Invocation(name, logical_id, status if status is not None else "-", took)
        )
        return payload, r.stderr

    def http(
        self,
        name: str,
        event: dict,
        status: int,
        error: str | None = None,
    ) -> dict | None:
        """Invokes the function the template routes `event`'s routeKey to; checks the status,
        the error code and the body's schema. Returns the parsed body (None on failure)."""
        route_key = event["routeKey"]
        owner = route_owner(self.functions, route_key)
        if not self.c.check(
            f"[{self.label}] the template routes {route_key} to one function",
            owner is not None,
            f"owners: {[f.logical_id for f in self.functions.values() if route_key in f.routes]}",
        ):
            return None
        payload, stderr = self.invoke_function(owner, event, name)
        if not isinstance(payload, dict) or "statusCode" not in payload:
            self.c.check(
                f"[{self.label}] {name} -> {owner} answers an HTTP response",
                False,
                f"payload {payload!r}\n      {stderr[-1500:]}",
            )
            return None
        try:
            body = json.loads(payload.get("body") or "null")
        except ValueError:
            body = payload.get("body")
        want = f"{status}" + (f" {error}" if error else "")
        ok = payload["statusCode"] == status and (
            error is None or (isinstance(body, dict) and body.get("error") == error)
        )
        self.c.check(
            f"[{self.label}] {name} -> {owner}: {want}",
            ok,
            f"got {payload['statusCode']} {str(body)[:300]}"
            + ("" if ok else f"\n      {stderr[-800:]}"),
        )
        problem = self.openapi.problems(route_key, payload["statusCode"], body)
        self.c.check(
            f"[{self.label}] {name}: the body matches openapi.json ({route_key}, "
            f"{payload['statusCode']})",
            problem is None,
            problem or "",
        )
        return body if ok else None

    def fixture(
        self, stem: str, status: int, error: str | None = None, **placeholders: object
    ) -> dict | None:
        """`http` of the fixture events/<stem>.json as it is, its path placeholders filled
        from `placeholders` (`packet_id=...`, or a `body=`), the check named after its file."""
        return self.http(f"{stem}.json", events.http_event(stem, **placeholders), status, error)

    def scheduled(self, name: str, logical_id: str, event: dict) -> dict | None:
        """Invokes a scheduled function (it must have a Schedule event in the template)."""
        f = self.functions.get(logical_id)
        if not self.c.check(
            f"[{self.label}] {logical_id} has a Schedule event in the template",
            f is not None and f.scheduled,
        ):
            return None
        payload, stderr = self.invoke_function(logical_id, event, name)
        self.c.check(
            f"[{self.label}] {name} -> {logical_id} answers a summary",
            isinstance(payload, dict) and "errorType" not in payload,
            f"{payload!r}\n      {stderr[-1500:]}",
        )
        self.last_stderr = stderr
        return payload if isinstance(payload, dict) else None
