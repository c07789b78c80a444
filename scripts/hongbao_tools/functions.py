"""hongbao's Lambda functions as functions.json declares them: the one list every tool reads.

functions.json is written from the Rust declarations (`hongbao::lambda::Function`, `make
functions`; a unit test fails while it is stale), so a function added there reaches the
Makefile's builds, the template, env.json and these tools without another edit."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_JSON = ROOT / "functions.json"

# Every function's declaration: {"name", "logical_id", "trigger": "http" | "schedule",
# "features", "redis_user", "operations": [{"event", "method", "path", "auth", "principals",
# "tenant"}]}, in the declared order.
DECLARED: list[dict] = json.loads(FUNCTIONS_JSON.read_text())["functions"]
# Every Redis user (hongbao::store::acl): {"name", "scripts", "access"}, `access` with the key
# prefix written `${KeyPrefix}`.
REDIS_USERS: list[dict] = json.loads(FUNCTIONS_JSON.read_text())["redis_users"]
# The password of the Redis users the local runs create (never a deployment's: those use IAM).
LOCAL_REDIS_PASSWORD = "local-redis-user-password"


def create_redis_users(command, prefix: str = "hb") -> None:
    """Creates every Redis user of REDIS_USERS, named `hongbao-<name>` with
    LOCAL_REDIS_PASSWORD, through `command` (a server's `command(*args)`); the default user is
    left as it was."""
    for user in REDIS_USERS:
        rules = user["access"].replace("${KeyPrefix}", prefix).split()
        command(
            "ACL", "SETUSER", f"hongbao-{user['name']}", "reset", *rules, f">{LOCAL_REDIS_PASSWORD}"
        )


def redis_user_env(function: str) -> dict[str, str]:
    """The settings that connect `function` as its Redis user (created by create_redis_users)."""
    user = next(f["redis_user"] for f in DECLARED if f["name"] == function)
    return {
        "REDIS_AUTH": "password",
        "REDIS_USERNAME": f"hongbao-{user}",
        "REDIS_PASSWORD": LOCAL_REDIS_PASSWORD,
    }


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


def merchant_bound(declared: list[dict]) -> frozenset[str]:
    """The principals variables of `declared` whose entries may bind a principal to merchants
    (`<principal>=<merchant>|...`): those of the operations whose tenant is a merchant."""
    return frozenset(
        op["principals"]
        for f in declared
        for op in f["operations"]
        if op.get("tenant") == "merchant"
    )


def with_features(*features: str) -> tuple[str, ...]:
    """The functions that read no feature's settings but `features` (e.g. the red-packet
    stack: packets, reclaim, wallet)."""
    allowed = set(features)
    return tuple(f["name"] for f in DECLARED if set(f["features"]) <= allowed)


def timeout_secs(name: str) -> int:
    """The template's Timeout of function `name` (seconds)."""
    f = next(f for f in DECLARED if f["name"] == name)
    return SCHEDULED_TIMEOUT_SECS if f["trigger"] == "schedule" else HTTP_TIMEOUT_SECS


def hongbao_features(name: str) -> tuple[str, ...]:
    """The `hongbao` features function `name`'s crate turns on (functions/<name>/Cargo.toml):
    ("eventbridge",) for ledger-export, () for the others."""
    manifest = tomllib.loads((ROOT / "functions" / name / "Cargo.toml").read_text("utf-8"))
    dep = manifest["dependencies"]["hongbao"]
    return tuple(sorted(dep.get("features", []))) if isinstance(dep, dict) else ()


def release_groups() -> list[tuple[str, ...]]:
    """The functions in groups of crates that turn on the same `hongbao` features, in declared
    order: built in one cargo invocation, a group resolves the features each of its crates
    resolves alone (the same compiled artifacts, so `sam build` finds them current), and cargo
    links its bootstraps in parallel."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for n in NAMES:
        groups.setdefault(hongbao_features(n), []).append(n)
    return [tuple(g) for g in groups.values()]


def release_build_commands() -> str:
    """The shipped bootstraps (`make release`): what `sam build` builds (the template's
    `BuildMethod: rust-cargolambda`, `CodeUri: functions/<name>`: `cargo lambda build --release
    --bin <name>` in the function's crate, `[profile.release]`), one `cargo lambda build` per
    group of `release_groups`, with `--locked`. Only ledger-export's bootstrap links the AWS SDK
    (hongbao's `eventbridge` feature). They land in target/lambda/<name>/bootstrap, where `sam
    build` then finds them current."""
    return " && ".join(
        "cargo lambda build --release --locked " + " ".join(f"-p {n}" for n in group)
        for group in release_groups()
    )


def local_build_command() -> str:
    """The local bootstraps (`make local`: `make demo`, `make e2e`, `make test`): every function
    in one cargo invocation from the workspace root with Cargo.toml's `[profile.local]`. cargo
    unifies the crates' features, so the library compiles once, with ledger-export's
    `eventbridge` (the SDK is linked only where it is called). They land in
    target/local/<name>."""
    return "cargo build --locked --profile local " + " ".join(f"-p {n}" for n in NAMES)
