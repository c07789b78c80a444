"""The store users' access string on a real redis-server: the README's curl session runs as a
user with it, which must also be refused FLUSHALL, FLUSHDB, KEYS, CONFIG and keys outside the
prefix."""

from __future__ import annotations

import os
import subprocess

import redis

from hongbao_tools.redis_server import RedisServer

from .stack import ROOT


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
