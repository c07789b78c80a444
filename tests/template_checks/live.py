"""The store users' access strings on a real redis-server: each Redis user of functions.json
(hongbao::store::acl) as the template creates it is accepted, may send what every connection
needs, and is refused the dangerous commands, keys outside the prefix and the key families of
the other users. (tests/it/acl.rs asks ACL DRYRUN of every command of every user's scripts on
its keys; the end-to-end runs connect each function as its user.)"""

from __future__ import annotations

import json

import redis

from hongbao_tools.redis_server import RedisServer

from .stack import ROOT

# A key of a family, and the users that may touch it.
FAMILY_KEYS = {
    "hb:{ab12}:wallet:alice": {"app"},
    "hb:{ab12}:merchant:m-1": {"app"},
    "hb:{vote:news}:article-seq": {"vote"},
    "hb:{oc}:newest_day": {"order-codes"},
    "hb:{export}:lock": {"ledger-export"},
}


def camel(name: str) -> str:
    """`ledger-export` -> `LedgerExport`: a Redis user's part of its resources' logical ids."""
    return "".join(part.capitalize() for part in name.split("-"))


def memorydb_user(name: str) -> str:
    """The MemoryDB user's logical id: `app`'s keeps the id stacks deployed before there were
    several (a replacement would create a user of the same name before deleting the old)."""
    return "MemoryDbUser" if name == "app" else f"MemoryDb{camel(name)}User"


def access_strings(template: dict) -> dict[str, str]:
    """Each Redis user's access string for KeyPrefix `hb`: its ElastiCache and MemoryDB users'
    must be functions.json's."""
    out = {}
    for user in json.loads((ROOT / "functions.json").read_text())["redis_users"]:
        strings = set()
        for n in (f"ElastiCache{camel(user['name'])}User", memorydb_user(user["name"])):
            value = template["Resources"][n]["Properties"]["AccessString"]
            strings.add(value["Fn::Sub"] if isinstance(value, dict) else value)
        if strings != {user["access"]}:
            raise SystemExit(f"{user['name']}: the store users' access strings {strings} differ")
        out[user["name"]] = user["access"].replace("${KeyPrefix}", "hb")
    return out


def refused(c: redis.Redis, cmd: list[str]) -> str | None:
    """None when `cmd` is refused for permissions, else what happened."""
    try:
        c.execute_command(*cmd)
        return "allowed"
    except redis.exceptions.NoPermissionError:
        return None
    except redis.exceptions.ResponseError as e:
        return None if "NOPERM" in str(e) or "no permissions" in str(e) else str(e)


def live_access_strings(acls: dict[str, str]) -> list[str]:
    """Every user of `acls` on a real redis-server (default user off): what each must be
    allowed and refused. Returns the failures."""
    failures = []
    server = RedisServer().start()
    try:
        for name, acl in acls.items():
            server.command("ACL", "SETUSER", f"hongbao-{name}", "reset", *acl.split(), ">pw")
        server.command("ACL", "SETUSER", "default", "off")
        for name in acls:
            c = redis.Redis(port=server.port, username=f"hongbao-{name}", password="pw")
            for cmd in (
                ["FLUSHALL"],
                ["FLUSHDB"],
                ["KEYS", "hb:*"],
                ["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
                ["SET", "other:key", "1"],
                ["SHUTDOWN"],
                ["ACL", "LIST"],
                ["SWAPDB", "0", "1"],
                ["SCRIPT", "FLUSH"],
            ) + tuple(["SET", k, "1"] for k, users in FAMILY_KEYS.items() if name not in users):
                if (what := refused(c, cmd)) is not None:
                    failures.append(f"hongbao-{name} may run {' '.join(cmd)}: {what}")
            for cmd in (
                ["INFO", "memory"],
                ["TIME"],
                ["EVAL", "return 1", "0"],
                ["PING"],
            ) + tuple(["GET", k] for k, users in FAMILY_KEYS.items() if name in users):
                try:
                    c.execute_command(*cmd)
                except redis.exceptions.ResponseError as e:
                    failures.append(f"hongbao-{name} may not run {' '.join(cmd)}: {e}")
            print(f"live: hongbao-{name}'s access string allows and refuses as it should")
    finally:
        server.stop()
    return failures
