"""The store's Redis users in template.yaml, from functions.json's `redis_users` (declared in
`hongbao::store::acl`) and each function's `redis_user`: their ElastiCache and MemoryDB users
and connect policies, the user group's and the MemoryDB ACL's lists, and a function's
REDIS_USERNAME when its user is not the globals' (`app`)."""

from __future__ import annotations

# The user the globals' REDIS_USERNAME names (template/globals.yaml).
GLOBAL_USER = "app"


def camel(name: str) -> str:
    """`ledger-export` -> `LedgerExport`."""
    return "".join(part.capitalize() for part in name.split("-"))


def memorydb_user(name: str) -> str:
    """The MemoryDB user's logical id: `app`'s keeps the id stacks deployed before there were
    several (a replacement would create a user of the same name before deleting the old)."""
    return "MemoryDbUser" if name == GLOBAL_USER else f"MemoryDb{camel(name)}User"


def values(user: dict) -> dict:
    """The `redis-user` prototype's placeholders for a `redis_users` entry."""
    return {
        "U": camel(user["name"]),
        "u": user["name"],
        "MemoryDbUser": memorydb_user(user["name"]),
        "Access": user["access"],
    }


def refs(users: list[dict], kind: str) -> str:
    """The `- !Ref` lines of every user's `kind` (`ElastiCache`, `MemoryDb`) store user."""
    if kind == "ElastiCache":
        ids = [f"ElastiCache{camel(u['name'])}User" for u in users]
    elif kind == "MemoryDb":
        ids = [memorydb_user(u["name"]) for u in users]
    else:
        raise ValueError(f"redis-user-refs: no kind {kind!r}")
    return "\n".join(f"- !Ref {i}" for i in ids)
