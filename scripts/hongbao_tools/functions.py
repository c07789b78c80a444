"""hongbao's Lambda functions as functions.json declares them: the one list every tool reads.

functions.json is written from the Rust declarations (`hongbao::lambda::Function`, `make
functions`; a unit test fails while it is stale), so a function added there reaches the
Makefile's builds, the template, env.json and these tools without another edit."""

from __future__ import annotations

import json
from pathlib import Path

FUNCTIONS_JSON = Path(__file__).resolve().parents[2] / "functions.json"

# Every function's declaration: {"name", "logical_id", "trigger": "http" | "schedule",
# "features", "operations": [{"event", "method", "path", "auth",
# "principals"}]}, in the declared order.
DECLARED: list[dict] = json.loads(FUNCTIONS_JSON.read_text())["functions"]

NAMES: tuple[str, ...] = tuple(f["name"] for f in DECLARED)
# The template's resource of each function (`CreatePacketFunction`) and its name.
RESOURCES: dict[str, str] = {f"{f['logical_id']}Function": f["name"] for f in DECLARED}
# A scheduled function's timeout, as the template gives every scheduled job (seconds); an
# HTTP function's is the template's Globals' 5 s.
SCHEDULED_TIMEOUT_SECS = 60
HTTP_TIMEOUT_SECS = 5


def principals(declared: list[dict]) -> dict[str, str]:
    """The principals variable of each AWS_IAM operation of `declared` (functions.json's
    functions), once, in declared order, with its template parameter:
    HONGBAO_DEPOSIT_PRINCIPALS is set by DepositPrincipals."""
    return {
        op["principals"]: "".join(w.title() for w in op["principals"].split("_")[1:])
        for f in declared
        for op in f["operations"]
        if op["auth"] == "iam"
    }


# Every principals variable and its parameter (`principals` of DECLARED).
PRINCIPALS: dict[str, str] = principals(DECLARED)


def with_features(*features: str) -> tuple[str, ...]:
    """The functions that read no feature's settings but `features` (e.g. the red-packet
    stack: packets, reclaim, wallet)."""
    allowed = set(features)
    return tuple(f["name"] for f in DECLARED if set(f["features"]) <= allowed)


def timeout_secs(name: str) -> int:
    """The template's Timeout of function `name` (seconds)."""
    f = next(f for f in DECLARED if f["name"] == name)
    return SCHEDULED_TIMEOUT_SECS if f["trigger"] == "schedule" else HTTP_TIMEOUT_SECS


def build_command(name: str) -> str:
    """The release build of function `name`, the command `sam build` runs for it (the
    template's `BuildMethod: rust-cargolambda`, `CodeUri: functions/<name>`), with `--locked`:
    run in the function's own crate, cargo resolves that crate's features alone, so only
    ledger-export's bootstrap links the AWS SDK (hongbao's `eventbridge` feature). Built the
    same way, `make release`'s artifacts are the ones `sam build` then finds current.
    The bootstrap lands in target/lambda/<name>/bootstrap."""
    return f"(cd functions/{name} && cargo lambda build --release --locked --bin {name})"


def build_commands() -> str:
    """Every function's release build (`build_command`), as `make release` runs them."""
    return " && ".join(build_command(n) for n in NAMES)
