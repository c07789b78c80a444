"""The demo's red-packet scenario (`play`): cold starts, alice's deposit, a lucky and a fixed
packet, 1,000 concurrent grabs, the claims (about a fifth never claim), expiry, reclaim-cron and
the money audits; then the history, coupon-drop, chat-packet, merchant-packet and ledger-feed
steps of their own modules, and the red-packet report (packets, wallets, money conservation, cold
starts)."""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict

from .. import events
from ..checks import Checks, MoneyAudit, check_conservation, claimed_cents
from ..emf import EmfTotals
from ..emf import report as report_dashboard
from ..report import Phases, histogram, parse_rfc3339, percentile
from ..report import cents as money
from ..rie import LocalStack
from .chat_packets import chat, report_chat
from .common import (
    DEPOSIT_CENTS,
    DROP_CODES,
    FIXED_COUNT,
    FIXED_TOTAL,
    GREETING,
    LUCKY_COUNT,
    LUCKY_TOTAL,
    SENDER,
)
from .coupons import drop, report_drop
from .draws import draws, report_draws
from .history import history, report_history
from .ledger import ledger, report_ledger
from .merchant_packets import merchant_packets, report_merchant


def play(stack: LocalStack, args, rng: random.Random, inv: Checks, ph: Phases) -> int:
    grab_pool, claim_pool = stack["grab"], stack["claim"]

    # Cold start every sandbox with a request that moves no money.
    def cold():
        stack["wallet"].each(lambda sb: events.wallet_event("warmup"))
        stack["create-packet"].each(
            lambda sb: events.create_event("warmup", 100, 1)
        )  # 402, no money
        grab_pool.each(lambda sb: events.view_event(events.NO_SUCH_PACKET, "warmup"))
        claim_pool.each(lambda sb: events.claim_event(events.NO_SUCH_PACKET, "warmup"))
        r = stack["reclaim-cron"].each(lambda sb: events.scheduled_event())
        inv.check(
            "reclaim-cron on an empty store settles nothing",
            r[0].get("settled") == 0,
            str(dict(r[0])),
        )
        for p in stack.pools.values():
            p.wait_reports()
        return sorted(c for p in stack.pools.values() for c in p.cold_starts_ms())

    colds = ph.run(
        "cold-start every sandbox",
        cold,
        lambda c: (
            f"init (RIE INIT REPORT) median {percentile(c, 50):.1f} ms, "
            f"max {max(c):.1f} ms over {len(c)} sandboxes"
            if c
            else ""
        ),
    )

    # Deposit.
    def deposit():
        r = stack.invoke("wallet", events.deposit_event(SENDER, DEPOSIT_CENTS, "demo-topup-1"))
        inv.check(
            "deposit of 200.00 to alice -> 201, balance 200.00",
            r.status == 201 and r["body"]["balance_cents"] == DEPOSIT_CENTS,
            str(r["body"]),
        )
        return r

    ph.run("deposit 200.00 to alice (AWS_IAM)", deposit)
    deposits = DEPOSIT_CENTS

    # Create the packets.
    def create():
        lucky = stack.invoke(
            "create-packet",
            events.create_event(
                SENDER,
                LUCKY_TOTAL,
                LUCKY_COUNT,
                "lucky",
                split="double_mean",
                expires_in_secs=args.expires_in,
                greeting=GREETING,
                idempotency_key="demo-lucky-1",
            ),
        )
        fixed = stack.invoke(
            "create-packet",
            events.create_event(
                SENDER,
                FIXED_TOTAL,
                FIXED_COUNT,
                "fixed",
                expires_in_secs=args.expires_in,
                idempotency_key="demo-fixed-1",
            ),
        )
        for name, r in (("lucky", lucky), ("fixed", fixed)):
            if not inv.check(f"create {name} packet -> 201", r.status == 201, str(r["body"])):
                raise SystemExit(1)
        bal = stack.invoke("wallet", events.wallet_event(SENDER))["body"]["balance_cents"]
        inv.check(
            "alice paid 110.00 for the two packets",
            bal == DEPOSIT_CENTS - LUCKY_TOTAL - FIXED_TOTAL,
            f"balance {bal}",
        )
        return lucky["body"], fixed["body"]

    lucky, fixed = ph.run(
        "create a lucky 100 x ~1.00 and a fixed 10 x 1.00 packet",
        create,
        lambda r: f"lucky {r[0]['packet_id']}, fixed {r[1]['packet_id']}",
    )
    packets = {"lucky": lucky, "fixed": fixed}

    # 1,000 concurrent grabbers (and some of them on the fixed packet too).
    users = [f"user{i:04d}" for i in range(1, args.grabbers + 1)]
    fixed_users = rng.sample(users, min(args.fixed_grabbers, len(users)))
    jobs = [("lucky", u) for u in users] + [("fixed", u) for u in fixed_users]
    rng.shuffle(jobs)
    grab_events = [events.grab_event(packets[k]["packet_id"], u) for k, u in jobs]

    def grab_all():
        return grab_pool.map(grab_events, threads=args.threads)

    before = grab_pool.invocations()
    t = time.perf_counter()
    results = ph.run(
        f"{len(jobs)} concurrent grabs ({args.threads} threads, {len(grab_pool)} sandboxes)",
        grab_all,
    )
    grab_secs = time.perf_counter() - t
    served = [a - b for a, b in zip(grab_pool.invocations(), before, strict=True)]
    lat = [r.client_ms for r in results]
    ph.set_note(
        f"{len(jobs) / grab_secs:.0f} invocations/s, p50 {percentile(lat, 50):.1f} ms, "
        f"p99 {percentile(lat, 99):.1f} ms; per sandbox {served}"
    )
    shares: dict[str, dict[str, dict]] = {"lucky": {}, "fixed": {}}  # packet -> user -> share
    outcomes: dict[str, Counter] = {"lucky": Counter(), "fixed": Counter()}
    for (k, u), r in zip(jobs, results, strict=True):
        code = r.status if r.status == 200 else f"{r.status} {r['body'].get('error')}"
        outcomes[k][code] += 1
        if r.status == 200:
            shares[k][u] = r["body"]
    for k, total, count, asked in (
        ("lucky", LUCKY_TOTAL, LUCKY_COUNT, len(users)),
        ("fixed", FIXED_TOTAL, FIXED_COUNT, len(fixed_users)),
    ):
        won = min(count, asked)
        got = shares[k]
        inv.check(f"{k}: exactly {won} winners", len(got) == won, str(dict(outcomes[k])))
        inv.check(
            f"{k}: the other {asked - won} got 410 sold_out",
            outcomes[k]["410 sold_out"] == asked - won and sum(outcomes[k].values()) == asked,
            str(dict(outcomes[k])),
        )
        amounts = [s["amount_cents"] for s in got.values()]
        inv.check(
            f"{k}: share ids are 1..{won}, every share >= 0.01",
            sorted(s["share_id"] for s in got.values()) == list(range(1, won + 1))
            and all(a >= 1 for a in amounts),
        )
        if won == count:
            inv.check(
                f"{k}: the shares sum to the total {money(total)}",
                sum(amounts) == total,
                f"sum {sum(amounts)}",
            )
        if k == "fixed":
            inv.check(
                "fixed: every share is 1.00", all(a == FIXED_TOTAL // FIXED_COUNT for a in amounts)
            )
    inv.check(f"every grab sandbox served invocations ({served})", all(n > 0 for n in served))

    # Winners claim, except about a fifth.
    winners = sorted({u for k in shares for u in shares[k]})
    skip_n = round(len(winners) * args.no_claim)
    no_claim = set(rng.sample(winners, skip_n))
    claim_jobs = [(k, u) for k in shares for u in sorted(shares[k]) if u not in no_claim]
    rng.shuffle(claim_jobs)
    claim_events = [events.claim_event(packets[k]["packet_id"], u) for k, u in claim_jobs]
    claims = ph.run(
        f"{len(claim_jobs)} claims, {len(claim_pool)} sandboxes "
        f"({len(no_claim)} of {len(winners)} winners never claim)",
        lambda: claim_pool.map(claim_events, threads=min(args.threads, 16)),
    )
    claimed: dict[str, dict[str, int]] = {"lucky": {}, "fixed": {}}
    too_late = 0
    bad = []
    for (k, u), r in zip(claim_jobs, claims, strict=True):
        if (
            r.status == 200
            and r["body"]["repeat"] is False
            and r["body"]["amount_cents"] == shares[k][u]["amount_cents"]
        ):
            claimed[k][u] = r["body"]["amount_cents"]
        elif r.status == 410 and r["body"].get("error") == "expired":
            too_late += 1  # the machine was slower than --expires-in: the money goes back to alice
        else:
            bad.append((k, u, r.status, r["body"]))
    inv.check("every claim -> 200 with the grabbed amount, repeat false", not bad, str(bad[:3]))
    if too_late:
        print(
            f"  note: {too_late} claims came after expires_at"
            " (raise --expires-in on a slow machine)"
        )

    # Checkpoint: conservation while the packets still hold money.
    def audit(label: str) -> MoneyAudit:
        ids = {k: p["packet_id"] for k, p in packets.items()}
        return check_conservation(
            stack, inv, label, deposits, ids, users=[SENDER, *winners], viewer=SENDER
        )

    ph.run("audit checkpoint (before expiry)", lambda: audit("before expiry"))

    # Let the packets expire.
    deadline = max(parse_rfc3339(p["expires_at"]) for p in packets.values())

    def expire():
        wait = deadline - time.time() + 0.3
        if wait > 0:
            time.sleep(wait)
        late = sorted(no_claim)[:1]
        for u in late:
            k = "lucky" if u in shares["lucky"] else "fixed"
            r = stack.invoke("claim", events.claim_event(packets[k]["packet_id"], u))
            inv.check(
                f"a late claim by {u} after expires_at -> 410 expired",
                r.status == 410 and r["body"].get("error") == "expired",
                str(r["body"]),
            )
        r = stack.invoke("grab", events.grab_event(lucky["packet_id"], "latecomer"))
        inv.check(
            "a grab after expires_at -> 410 expired",
            r.status == 410 and r["body"].get("error") == "expired",
            str(r["body"]),
        )
        return wait

    ph.run(
        f"wait for expires_at (expires_in_secs {args.expires_in})",
        expire,
        lambda w: f"slept {max(w, 0):.1f} s",
    )

    # reclaim-cron.
    expected_refund = {k: p["total_cents"] - sum(claimed[k].values()) for k, p in packets.items()}
    summaries = []

    def reclaim():
        r = stack.invoke("reclaim-cron", events.scheduled_event())
        summaries.append(dict(r))
        r2 = stack.invoke("reclaim-cron", events.scheduled_event())
        summaries.append(dict(r2))
        inv.check(
            "reclaim-cron settles both packets and refunds total - claimed",
            r.get("settled") == 2
            and r.get("refunded_cents") == sum(expected_refund.values())
            and r.get("remaining_due") == 0,
            f"{dict(r)} expected refund {sum(expected_refund.values())}",
        )
        inv.check(
            "a second reclaim-cron run finds nothing to do",
            r2.get("settled") == 0 and r2.get("refunded_cents") == 0,
            str(dict(r2)),
        )
        return r

    ph.run("reclaim-cron (EventBridge scheduled event)", reclaim, lambda r: str(dict(r)))
    final = ph.run("final audit", lambda: audit("after reclaim"))
    views, held, walls, redis_n = final.views, final.held, final.wallets, final.redis_wallets

    # Per-packet and per-wallet invariants.
    for k, v in views.items():
        c = claimed_cents(v)
        inv.check(
            f"{k}: settled, claimed + refunded = total, nothing held",
            v["status"] == "settled"
            and c + v["refunded_cents"] == v["total_cents"]
            and held[k] == 0,
            f"status {v['status']} claimed {c} refunded {v['refunded_cents']} "
            f"total {v['total_cents']}",
        )
        inv.check(
            f"{k}: refunded = total - claimed as claimed by the claim calls",
            v["refunded_cents"] == expected_refund[k],
            f"{v['refunded_cents']} != {expected_refund[k]}",
        )
    lucky_amounts = [s["amount_cents"] for s in shares["lucky"].values()]
    best = views["lucky"].get("best_luck")
    if len(shares["lucky"]) == LUCKY_COUNT:
        top = max(lucky_amounts)
        first = min(
            (s["share_id"], u) for u, s in shares["lucky"].items() if s["amount_cents"] == top
        )[1]
        inv.check(
            "best luck (GET /packets/{id}) = the largest share, earliest on ties",
            best == {"user_id": first, "amount_cents": top},
            f"{best} vs {first} {top}",
        )
    credited = defaultdict(int)
    for k in claimed:
        for u, a in claimed[k].items():
            credited[u] += a
    wrong = [u for u in winners if walls[u]["balance_cents"] != credited.get(u, 0)]
    inv.check(
        "every grabber's balance = what they claimed (0 for those who didn't)",
        not wrong,
        str(wrong[:5]),
    )
    alice_expected = DEPOSIT_CENTS - LUCKY_TOTAL - FIXED_TOTAL + sum(expected_refund.values())
    inv.check(
        "alice = 200.00 - 110.00 + refunds",
        walls[SENDER]["balance_cents"] == alice_expected,
        f"{walls[SENDER]['balance_cents']} != {alice_expected}",
    )
    hist = ph.run(
        "history: the sender's and a winner's lists and yearly summary",
        lambda: history(stack, inv, packets, views, claimed, walls),
    )
    dropped = ph.run(
        f"coupon drop: {DROP_CODES} codes, {len(users)} people racing",
        lambda: drop(stack, args, rng, inv, users),
        lambda d: f"campaign {d['campaign_id']}: {d['outcomes']}",
    )
    chats = ph.run(
        "chat packets: a password packet, a scheduled one, one cancelled; every receipt checked",
        lambda: chat(stack, inv),
        lambda c: (
            f"{len(c['receipts'])} receipts verified, cancel refunded {money(c['cancel_refund'])}"
        ),
    )
    merchants = ph.run(
        "merchant packets: 20 orders' packets of a merchant's budget, the seed's 100 grabbers "
        "for 5 shares, claims, expiry",
        lambda: merchant_packets(stack, args, rng, inv),
        lambda m: f"{money(m['paid'])} paid out, {money(m['refunded'])} back to the merchant",
    )
    drawn = ph.run(
        f"draws: a draw packet and a draw campaign, {len(users)} entrants each, every result "
        "checked from the public view",
        lambda: draws(stack, args, inv, users),
        lambda d: f"{d['winners']} of {d['entrants']} won each; {d['checked']} verified",
    )
    errors = sum(sb.error_lines for sb in stack.all_sandboxes())
    inv.check("no ERROR log line in any sandbox", errors == 0, f"{errors} lines")
    inv.check("every sandbox still running", all(sb.alive() for sb in stack.all_sandboxes()))
    feed = ph.run(
        "ledger-export (EventBridge scheduled event) -> EventBridge (moto) -> SQS",
        lambda: ledger(stack, inv),
        lambda f: f"{f['events']} events, {f['distinct']} distinct",
    )

    report_packets(args, deposits, packets, outcomes, shares, views, grab_pool, served)
    report_settlement(views, held, summaries)
    report_wallets(walls, shares, claimed, no_claim, too_late)
    report_conservation(deposits, walls, held, redis_n, colds)
    report_history(hist)
    report_drop(dropped)
    report_chat(chats)
    report_merchant(merchants)
    report_draws(drawn)
    report_ledger(feed)
    dashboard(stack, feed["emf"], inv)
    return 0


def dashboard(stack: LocalStack, export: EmfTotals, inv: Checks) -> None:
    """The run's EMF metrics as the stack's dashboard adds them up, checked against what the
    demo itself counted: one `Requests` per HTTP invocation, one `ColdStart` per sandbox."""
    totals = EmfTotals()
    for sb in stack.all_sandboxes():
        totals.merge(sb.emf)
    totals.merge(export)
    report_dashboard(totals)
    for fn, pool in stack.pools.items():
        invocations = sum(sb.invocations for sb in pool.sandboxes)
        started = sum(1 for sb in pool.sandboxes if sb.invocations)
        requests = sum(totals.samples.get((fn, "Requests"), []))
        colds = sum(totals.samples.get((fn, "ColdStart"), []))
        if fn != "reclaim-cron":  # scheduled: no HTTP requests
            inv.check(
                f"dashboard: {fn} Requests = its {invocations} invocations",
                requests == invocations,
                f"{requests}",
            )
        inv.check(
            f"dashboard: {fn} ColdStart = its {started} sandboxes", colds == started, f"{colds}"
        )


def report_packets(args, deposits, packets, outcomes, shares, views, grab_pool, served) -> None:
    """The report's head: the two packets, the grabs' outcomes, the lucky amounts and best luck."""
    line = "=" * 78
    print(f"\n{line}\nhongbao demo report (every step a Lambda invocation under the RIE)\n{line}")
    lucky, fixed = packets["lucky"], packets["fixed"]
    print(f"sender alice deposited {money(deposits)} and sent:")
    print(
        f"  lucky {lucky['packet_id']}: {money(lucky['total_cents'])} in {lucky['count']} shares "
        f'({lucky["split"]}), greeting "{lucky["greeting"]}", expires_in {args.expires_in} s'
    )
    print(
        f"  fixed {fixed['packet_id']}: {money(fixed['total_cents'])} in {fixed['count']} shares "
        f"of {money(fixed['total_cents'] // fixed['count'])}"
    )

    print(
        f"\nGrabs: {len(shares['lucky']) + outcomes['lucky']['410 sold_out']} people on the "
        "lucky packet, "
        f"{sum(outcomes['fixed'].values())} of them also on the fixed one; "
        f"{len(grab_pool)} grab sandboxes served {served}"
    )
    for k in ("lucky", "fixed"):
        o = outcomes[k]
        others = {c: n for c, n in o.items() if c not in (200, "410 sold_out")}
        print(
            f"  {k}: {o[200]} winners (200), {o['410 sold_out']} losers (410 sold_out)"
            + (f", other {others}" if others else "")
        )

    amounts = [s["amount_cents"] for s in shares["lucky"].values()]
    if amounts:
        mean = sum(amounts) / len(amounts)
        print(
            f"\nLucky amounts: {len(amounts)} shares, min {money(min(amounts))}, "
            f"median {money(sorted(amounts)[len(amounts) // 2])}, mean {mean / 100:.2f}, "
            f"max {money(max(amounts))}, sum {money(sum(amounts))}"
        )
        for row in histogram(amounts):
            print(row)
    best = views["lucky"].get("best_luck")
    if best:
        print(
            f"\nBest luck (GET /packets/{{id}}): {best['user_id']} "
            f"with {money(best['amount_cents'])}"
        )
    else:
        print("\nBest luck: none (the lucky packet was not sold out)")


def report_settlement(views, held, summaries) -> None:
    """Each packet after reclaim-cron: grabbed, claimed, refunded, still held."""
    print("\nPackets after reclaim-cron:")
    print(
        f"  {'packet':<7}{'status':<9}{'total':>9}{'grabbed':>9}{'claimed':>9}{'unclaimed':>10}"
        f"{'never grabbed':>14}{'refunded':>10}{'held':>7}"
    )
    for k, v in views.items():
        c = claimed_cents(v)
        unclaimed = v["grabbed_cents"] - c
        print(
            f"  {k:<7}{v['status']:<9}{money(v['total_cents']):>9}{money(v['grabbed_cents']):>9}"
            f"{money(c):>9}{money(unclaimed):>10}{money(v['total_cents'] - v['grabbed_cents']):>14}"
            f"{money(v['refunded_cents']):>10}{money(held[k]):>7}"
        )
    print(f"  reclaim-cron runs: {summaries}")


def report_wallets(walls, shares, claimed, no_claim, too_late) -> None:
    """Alice's ledger, the grabbers' wallets and the ten largest."""
    print("\nWallets touched:")
    a = walls["alice"]
    print(f"  alice: balance {money(a['balance_cents'])}; ledger (newest first):")
    for e in a["entries"]:
        print(f"    {e['kind']:<14}{money(e['amount_cents']):>9}  {e['reference']:<26} {e['at']}")
    grabbers = {u: w for u, w in walls.items() if u != "alice"}
    paid = {u: w["balance_cents"] for u, w in grabbers.items() if w["balance_cents"] > 0}
    unclaimed_users = sorted(no_claim)
    unclaimed_cents = sum(
        shares[k][u]["amount_cents"] for k in shares for u in unclaimed_users if u in shares[k]
    )
    print(
        f"  grabbers: {len(grabbers)} winners; {len(paid)} wallets received money, "
        f"sum {money(sum(paid.values()))}; {len(unclaimed_users)} winners never claimed "
        f"(their {money(unclaimed_cents)} went back to alice)"
        + (f"; {too_late} claims were too late" if too_late else "")
    )
    print("  top 10 grabber wallets:")
    for i, (u, bal) in enumerate(sorted(paid.items(), key=lambda x: (-x[1], x[0]))[:10], 1):
        what = ", ".join(
            f"{k} {money(claimed[k][u])}" for k in ("lucky", "fixed") if u in claimed[k]
        )
        print(f"    {i:>2}. {u:<10}{money(bal):>8}   ({what})")


def report_conservation(deposits, walls, held, redis_n, colds) -> None:
    """Deposits = wallets + held by packets, and the sandboxes' cold starts."""
    wallet_sum = sum(w["balance_cents"] for w in walls.values())
    print("\nMoney conservation:")
    print(f"  deposits                      {money(deposits):>9}")
    print(f"  alice's wallet                {money(walls['alice']['balance_cents']):>9}")
    print(
        f"  grabbers' wallets             {money(wallet_sum - walls['alice']['balance_cents']):>9}"
    )
    print(f"  held by packets               {money(sum(held.values())):>9}")
    print(
        f"  wallets + held                {money(wallet_sum + sum(held.values())):>9}   "
        f"{'= deposits' if wallet_sum + sum(held.values()) == deposits else '!= deposits'}"
        f" (cross-checked against all {redis_n} wallets in Redis)"
    )
    if colds:
        print(
            f"\nCold starts (RIE INIT REPORT): median {percentile(colds, 50):.1f} ms, "
            f"max {max(colds):.1f} ms over {len(colds)} sandboxes"
        )
