"""The one check recorder of the scripts (a named PASS or FAIL per check, the failures listed
at the end) and the money-conservation check the demo and the end-to-end tests share."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

from .events import view_event, wallet_event
from .rie import LocalStack


class Result(NamedTuple):
    """One check: its name, whether it held, what was seen when it did not."""

    name: str
    ok: bool
    detail: str


class Checks:
    """Records checks in order. A failure prints `FAIL  name` and its detail at once; a pass
    prints `PASS  name` unless `print_passes` is false (the demo prints only failures). A
    `held` recorder keeps its lines instead, for a part run beside another (`merge`)."""

    def __init__(self, *, print_passes: bool = True, held: bool = False) -> None:
        self.print_passes = print_passes
        self.held = held
        self.lines: list[str] = []
        self.results: list[Result] = []

    def _print(self, text: str) -> None:
        if self.held:
            self.lines.append(text)
        else:
            print(text, flush=True)

    def merge(self, other: Checks) -> None:
        """Prints the lines `other` (a held recorder) kept and takes its results, in order."""
        for line in other.lines:
            print(line)
        sys.stdout.flush()
        self.results.extend(other.results)

    @property
    def passed(self) -> int:
        """How many checks held."""
        return sum(1 for r in self.results if r.ok)

    @property
    def failed(self) -> list[Result]:
        """The checks that failed, in order."""
        return [r for r in self.results if not r.ok]

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        """Records the check `name`; returns `ok` (as a bool)."""
        ok = bool(ok)
        self.results.append(Result(name, ok, detail))
        if not ok:
            self._print(f"FAIL  {name}" + (f"\n      {detail}" if detail else ""))
        elif self.print_passes:
            self._print(f"PASS  {name}")
        return ok

    def status(self, name: str, resp: dict, status: int, error: str | None = None) -> bool:
        """Checks an HTTP function's answer: `statusCode` is `status` and, when `error` is
        given, the body's `error` code is `error`."""
        body = resp.get("body")
        ok = resp.get("statusCode") == status
        if ok and error is not None:
            ok = isinstance(body, dict) and body.get("error") == error
        want = f"{status}" + (f" {error}" if error else "")
        return self.check(
            f"{name} -> {want}", ok, f"got {resp.get('statusCode')} {str(body)[:400]}"
        )

    def section(self, title: str) -> None:
        """Prints a section heading."""
        self._print(f"\n== {title}")

    def print_failed(self, details: bool = False) -> None:
        """Lists the failed checks (`  FAILED: name`, with ` — detail` when `details`)."""
        for r in self.failed:
            print(f"  FAILED: {r.name}" + (f" — {r.detail}" if details and r.detail else ""))

    def guard(self, name: str, fn: Callable[[], object]) -> None:
        """Runs `fn()`; an exception it raises becomes the failed check `name`, with the
        traceback as its detail (a crashed section fails, the run goes on)."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001 — a crashed section is a failed check
            self.check(
                name,
                False,
                "".join(traceback.format_exception(e)).rstrip().replace("\n", "\n      "),
            )

    def summary(self, t0: float) -> int:
        """Prints `N passed, M failed in S s` (seconds since `time.perf_counter()` was `t0`) and
        the failed checks; returns the exit status: 0 only if every check passed."""
        print(
            f"\n{self.passed} passed, {len(self.failed)} failed in {time.perf_counter() - t0:.1f} s"
        )
        self.print_failed()
        return 0 if not self.failed else 1


def claimed_cents(view: dict) -> int:
    """The claimed shares' sum of a `GET /packets/{id}` body."""
    return sum(g["amount_cents"] for g in view["grabs"] if g["claimed"])


def held_cents(view: dict) -> int:
    """The money a packet still holds (`GET /packets/{id}` body): total - refunded - claimed."""
    return view["total_cents"] - view["refunded_cents"] - claimed_cents(view)


@dataclass
class MoneyAudit:
    """What `check_conservation` saw."""

    deposits: int
    views: dict[str, dict]  # packet name -> its GET /packets/{id} body
    held: dict[str, int]  # packet name -> cents it still holds
    redis_cents: int  # every wallet in Redis
    redis_wallets: int
    wallets: dict[str, dict] = field(default_factory=dict)  # user -> GET /wallet body
    budgets: int = 0  # the merchant budgets' balances, cents

    @property
    def held_total(self) -> int:
        """Cents held by all the packets."""
        return sum(self.held.values())

    def lines(self) -> list[str]:
        """One line per packet, then the totals."""
        out = [
            f"{name[:8]}… {v['status']} total {v['total_cents']} claimed {claimed_cents(v)} "
            f"refunded {v['refunded_cents']} held {self.held[name]}"
            for name, v in self.views.items()
        ]
        out.append(
            f"{self.redis_wallets} wallets hold {self.redis_cents}, packets hold "
            f"{self.held_total}, merchant budgets {self.budgets}, deposits {self.deposits}"
        )
        return out


def check_conservation(
    stack: LocalStack,
    checks: Checks,
    label: str,
    deposits: int,
    packets: Mapping[str, str],
    users: Iterable[str] = (),
    viewer: str = "viewer",
    budgets: int = 0,
) -> MoneyAudit:
    """Money is neither created nor lost: `deposits` (net of withdrawals, the wallets' and the
    merchant budgets') = the wallets' balances + the merchant budgets' balances (`budgets`,
    cents) + the money the `packets` (name -> packet id; a merchant's packets among them) still
    hold (each one's `GET /packets/{id}` as `viewer`).

    The wallets are every wallet in Redis (SCAN); with `users`, their `GET /wallet` balances,
    and a second check that those are every wallet in Redis (same sum). Both checks are named
    after `label`."""
    views = {
        name: stack.invoke("grab", view_event(pid, viewer))["body"] for name, pid in packets.items()
    }
    held = {name: held_cents(v) for name, v in views.items()}
    redis_cents, redis_wallets = stack.redis.wallet_total()
    audit = MoneyAudit(deposits, views, held, redis_cents, redis_wallets, budgets=budgets)
    users = list(users)
    if users:
        with ThreadPoolExecutor(max_workers=len(stack["wallet"])) as ex:
            bodies = ex.map(lambda u: stack.invoke("wallet", wallet_event(u))["body"], users)
            audit.wallets = dict(zip(users, bodies, strict=True))
        wallet_cents = sum(w["balance_cents"] for w in audit.wallets.values())
    else:
        wallet_cents = redis_cents
    checks.check(
        f"{label}: deposits = wallet balances + merchant budgets + money held by packets",
        deposits == wallet_cents + budgets + audit.held_total,
        f"{deposits} != {wallet_cents} + {budgets} + {audit.held_total}",
    )
    if users:
        checks.check(
            f"{label}: the wallets seen through GET /wallet are every wallet in Redis",
            redis_cents == wallet_cents,
            f"redis {redis_cents} in {redis_wallets} wallets, API {wallet_cents}",
        )
    return audit
