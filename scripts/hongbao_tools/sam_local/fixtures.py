"""Every events/*.json fixture through `sam local invoke`, on a standalone redis-server or a
3-master cluster with moto as EventBridge (`run_target`), in an order that fills the path
placeholders with what the earlier fixtures created."""

from __future__ import annotations

import inspect
import json
import time

from .. import events
from ..checks import Checks
from ..moto import LedgerFeed, MotoServer
from ..paths import EVENTS_DIR
from ..redis_server import RedisCluster, RedisServer
from .invoke import Invocation, OpenApi, SamLocal
from .sam import (
    BUS,
    Function,
    store_parameters,
)

# A draw's entry window under `sam local invoke`: longer than any container start seen.
SAM_LOCAL_ENTRY_SECS = 600


def long_entry(stem: str) -> dict:
    """The body of the draw fixture events/<stem>.json with its `draw.entry_secs` set to
    SAM_LOCAL_ENTRY_SECS (and a packet's `expires_in_secs` to twice that: a packet's draw
    comes before it expires)."""
    body = json.loads(events.load_event(stem)["body"])
    body["draw"]["entry_secs"] = SAM_LOCAL_ENTRY_SECS
    if "expires_in_secs" in body:
        body["expires_in_secs"] = 2 * SAM_LOCAL_ENTRY_SECS
    return body


def every_fixture(s: SamLocal, feed: LedgerFeed) -> None:
    """Every events/*.json fixture, in an order that gives the placeholders real ids."""
    c = s.c
    # Wallets (AWS_IAM routes).
    s.fixture("wallet-deposit", 201)
    s.fixture("wallet-deposit-no-iam", 403, "forbidden")
    s.fixture("wallet-withdrawal", 201)
    s.fixture("wallet-get", 200)
    # Merchant budgets (AWS_IAM routes): funded, drawn down, the books.
    s.fixture("merchant-deposit", 201)
    s.fixture("merchant-withdrawal", 201)
    books = s.fixture("merchant-get", 200)
    c.check(
        f"[{s.label}] the merchant's books: deposited - withdrawn = balance",
        books is not None
        and books.get("deposited_cents", 0) - books.get("withdrawn_cents", 0)
        == books.get("balance_cents"),
        str(books)[:300],
    )
    # A merchant packet: an order's packet paid from the budget, the sharer's share taken.
    made = s.fixture("merchant-create-packet", 201)
    listed = s.fixture("merchant-list-packets", 200)
    c.check(
        f"[{s.label}] the merchant's packets list the order's packet",
        made is not None
        and listed is not None
        and [i.get("packet_id") for i in listed.get("items", [])] == [made.get("packet_id")],
        str(listed)[:300],
    )
    # Red packets.
    lucky = s.fixture("create-packet-lucky", 201)
    s.fixture("create-packet-fixed", 201)
    s.fixture("create-packet-bad-amount", 400, "invalid_request")
    s.fixture("create-packet-no-auth", 401, "unauthorized")
    pid = (lucky or {}).get("packet_id", "missing")
    s.fixture("grab-grab", 200, packet_id=pid)
    s.fixture("grab-view", 200, packet_id=pid)
    s.fixture("grab-grabs", 200, packet_id=pid)
    s.fixture("claim-claim", 200, packet_id=pid)
    # Support look-ups (AWS_IAM): the packet with bob's claim, and bob's wallet.
    looked = s.fixture("wallet-support-packet", 200, packet_id=pid)
    c.check(
        f"[{s.label}] the support look-up shows bob's claim done",
        looked is not None
        and [(g.get("user_id"), g.get("claim")) for g in looked.get("grabs", [])]
        == [("bob", "done")],
        str(looked)[:300],
    )
    s.fixture("wallet-support-wallet", 200)
    s.fixture("grab-history", 200)
    s.fixture("grab-summary", 200)
    # Chat packets: a password packet, grabbed with it, then cancelled by its sender.
    chat = s.fixture("create-packet-password", 201)
    chat_id = (chat or {}).get("packet_id", "missing")
    s.fixture("grab-grab-password", 200, packet_id=chat_id)
    cancelled = s.fixture("create-packet-cancel", 200, packet_id=chat_id)
    c.check(
        f"[{s.label}] the cancel refunded the two un-grabbed shares",
        cancelled is not None and 0 < cancelled.get("refunded_cents", 0) < 600,
        str(cancelled),
    )
    # Draws: a draw packet and a draw campaign, each entered (202) in its window. Each
    # `sam local invoke` starts a container (5-10 s under load), so the fixtures' 10 s entry
    # windows are stretched to SAM_LOCAL_ENTRY_SECS: the entries must land inside them.
    drawn = s.fixture("create-packet-draw", 201, body=long_entry("create-packet-draw"))
    s.fixture("grab-grab", 202, packet_id=(drawn or {}).get("packet_id", "missing"))
    drawc = s.fixture(
        "coupon-create-draw-campaign", 201, body=long_entry("coupon-create-draw-campaign")
    )
    s.fixture("coupon-grab", 202, campaign_id=(drawc or {}).get("campaign_id", "missing"))
    # Order codes.
    s.fixture("next-order-code-single", 201)
    batch = s.fixture("next-order-code-batch", 201)
    c.check(
        f"[{s.label}] the batch holds 100 distinct codes",
        batch is not None and len(set(batch.get("codes", []))) == 100,
        str(batch)[:200],
    )
    s.fixture("next-order-code-bad-count", 400, "invalid_request")
    # Article voting.
    article = s.fixture("vote-post-article", 201)
    aid = str((article or {}).get("article_id", "missing"))
    s.fixture("vote-vote", 200, article_id=aid)
    s.fixture("vote-groups", 200, article_id=aid)
    s.fixture("vote-list", 200)
    s.fixture("vote-group-articles", 200)
    # Coupon drops: the fixture's campaign of generated codes, grabbed, viewed, listed, held,
    # redeemed (the hold committed) and released (the redemption reversed: CouponReleased on
    # the feed); and a campaign of uploaded codes that the add-codes fixture adds a batch to.
    drop = s.fixture("coupon-create-campaign", 201)
    cid = (drop or {}).get("campaign_id", "missing")
    won = s.fixture("coupon-grab", 200, campaign_id=cid)
    s.fixture("coupon-view", 200, campaign_id=cid)
    s.fixture("coupon-list", 200)
    code = (won or {}).get("code", "missing")
    hold = json.loads(events.load_event("coupon-hold")["body"])
    s.fixture("coupon-hold", 200, body={**hold, "code": code})
    redeem = json.loads(events.load_event("coupon-redeem")["body"])
    s.fixture("coupon-redeem", 200, body={**redeem, "code": code})
    release = json.loads(events.load_event("coupon-release")["body"])
    s.fixture("coupon-release", 200, body={**release, "code": code})
    looked = s.fixture("wallet-support-coupon", 200, code=code)
    c.check(
        f"[{s.label}] the support look-up shows the coupon issued again, its redemption released",
        looked is not None
        and looked.get("state") == "issued"
        and [r.get("released") for r in looked.get("releases", [])] == ["redemption"],
        str(looked)[:300],
    )
    uploaded = events.create_campaign_event(
        {
            "title": "uploaded codes",
            "codes": [f"SAM-{s.label.upper()}-{i}" for i in range(1, 3)],
            # Codes are added only before the start.
            "starts_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
            "ends_at": json.loads(events.load_event("coupon-create-campaign")["body"])["ends_at"],
            "reference": f"sam-local-{s.label}",
        }
    )
    second = s.http("a campaign of uploaded codes", uploaded, 201)
    s.fixture("coupon-add-codes", 201, campaign_id=(second or {}).get("campaign_id", "-"))
    # The scheduled functions.
    summary = s.scheduled(
        "reclaim-cron-scheduled.json", "ReclaimCronFunction", events.scheduled_event()
    )
    c.check(
        f"[{s.label}] reclaim-cron's summary: {{settled, refunded_cents, redriven, remaining_due}}",
        summary is not None
        and {"settled", "refunded_cents", "redriven", "remaining_due"} <= summary.keys(),
        str(summary),
    )
    export = s.scheduled(
        "ledger-export-scheduled.json",
        "LedgerExportFunction",
        events.load_event("ledger-export-scheduled"),
    )
    published = feed.drain()
    c.check(
        f"[{s.label}] ledger-export published the journal to EventBridge (moto): "
        f"{len(published)} events",
        export is not None and len(published) > 0,
        f"{export} / {len(published)} events\n      {s.last_stderr[-1500:]}",
    )
    kinds = {e.get("detail-type") for e in published}
    c.check(
        f"[{s.label}] the feed holds the deposit, withdrawal, packet debits, claim, cancel and "
        "its refund, the coupon issued, redeemed and released, the merchant's movements and "
        "packet",
        {
            "Deposit",
            "Withdrawal",
            "MerchantDeposit",
            "MerchantWithdrawal",
            "MerchantPacketDebit",
            "PacketDebit",
            "ClaimCredit",
            "PacketCancelled",
            "RefundCredit",
            "CouponIssued",
            "CouponRedeemed",
            "CouponReleased",
        }
        <= kinds,
        str(sorted(k for k in kinds if k)),
    )


def every_fixture_is_played() -> list[str]:
    """The events/*.json fixtures every_fixture does not name, by file name or as a quoted
    stem (`s.fixture("grab-view", ...)`): must be none."""
    source = inspect.getsource(every_fixture)
    return sorted(
        p.name
        for p in EVENTS_DIR.glob("*.json")
        if p.name not in source and f'"{p.stem}"' not in source
    )


def run_target(
    label: str,
    functions: dict[str, Function],
    gateway: str,
    arch: str,
    openapi: OpenApi,
    c: Checks,
) -> list[Invocation]:
    """Starts the store of `label` and moto, then plays every fixture."""
    c.section(f"sam local invoke: every fixture, {label} store")
    with MotoServer(host=gateway) as moto:
        feed = LedgerFeed(moto, BUS)
        store: RedisServer | RedisCluster
        if label == "cluster":
            store = RedisCluster(also_bind=(gateway,), announce_ip=gateway)
        else:
            store = RedisServer(also_bind=(gateway,))
        with store:
            if isinstance(store, RedisCluster):
                url = ",".join(store.urls(gateway))
                endpoint = ",".join(f"{gateway}:{n.port}" for n in store.nodes)
            else:
                url = f"redis://{gateway}:{store.port}"
                endpoint = f"{gateway}:{store.port}"
            parameters = store_parameters(arch, endpoint, cluster=label == "cluster")
            env_vars = {
                # The template says rediss:// (every store it deploys speaks only TLS).
                "Parameters": {"REDIS_URL": url},
                "LedgerExportFunction": {
                    "HONGBAO_EVENT_BUS_NAME": BUS,
                    "AWS_ENDPOINT_URL_EVENTBRIDGE": moto.url,
                },
            }
            s = SamLocal(label, functions, parameters, env_vars, openapi, c)
            every_fixture(s, feed)
            return s.invocations
