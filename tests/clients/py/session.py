#!/usr/bin/env python3
"""The README's curl session (scripts/serve.py `check()`), then some of the contract's error
answers, through the client openapi-python-client generates from openapi.json: every answer,
errors included, parsed into the generated models, their types and fields asserted.

    HONGBAO_BASE_URL=http://127.0.0.1:3000 python tests/clients/py/session.py [GENERATED_DIR]

GENERATED_DIR (default tests/clients/gen/py) holds the generated package `hongbao_client`;
scripts/contract.py generates it and runs this with the generator's venv (httpx, attrs);
generated.py finds the generated operations and models and holds the checks. Exit status 1
when a check fails.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sys
import time
import typing
from typing import Any

from generated import Client, call, code, expect, expect_error, failed


def main() -> int:
    base = os.environ.get("HONGBAO_BASE_URL")
    if not base:
        print("HONGBAO_BASE_URL is not set (e.g. http://127.0.0.1:3000)", file=sys.stderr)
        return 2
    run = f"{int(time.time() * 1000):x}-{os.getpid()}"
    alice_id = f"alice-{run}"

    def as_user(user: str | None) -> Client:
        client = Client(base_url=base, raise_on_unexpected_status=True)
        return client.with_headers({"x-user-id": user}) if user is not None else client

    alice, bob, carol, dave, anonymous = (
        as_user(alice_id),
        as_user(f"bob-{run}"),
        as_user(f"carol-{run}"),
        as_user(f"dave-{run}"),
        as_user(None),
    )

    expect(
        "deposit 100.00 -> 201",
        call(
            "deposit",
            alice,
            body={"user_id": alice_id, "amount_cents": 10000, "reference": f"py-{run}"},
        ),
        201,
        "deposit",
        lambda d: d.balance_cents == 10000 and d.repeat is False,
    )
    packet_body = {"total_cents": 1000, "count": 3, "greeting": "恭喜发财"}
    key = f"py-packet-{run}"
    packet = expect(
        "create a 3-share packet of 10.00 -> 201",
        call("create_packet", alice, body=packet_body, idempotency_key=key),
        201,
        "packet",
        lambda p: p.total_cents == 1000 and p.count == 3 and p.greeting == "恭喜发财",
    )
    packet_id = getattr(packet, "packet_id", "missing")
    expect(
        "the same Idempotency-Key again -> the same packet",
        call("create_packet", alice, body=packet_body, idempotency_key=key),
        201,
        "packet",
        lambda p: p.packet_id == packet_id,
    )
    share = expect(
        "bob grabs -> 200 with a share",
        call("grab", bob, id=packet_id),
        200,
        "share",
        lambda s: s.amount_cents > 0 and s.packet_id == packet_id,
    )
    amount = getattr(share, "amount_cents", -1)
    expect_error(
        "bob grabs again -> 409 already_grabbed (+ the share)",
        call("grab", bob, id=packet_id),
        409,
        "already_grabbed",
        # `share` once the document types it (AlreadyGrabbedError), else extra field
        lambda e: (
            (e.share.amount_cents if hasattr(e, "share") else e["share"]["amount_cents"]) == amount
        ),
    )
    expect(
        "bob claims -> 200",
        call("claim", bob, id=packet_id),
        200,
        "claim",
        lambda c: c.repeat is False and c.amount_cents == amount and c.balance_cents == amount,
    )
    expect(
        "bob's wallet holds his share",
        call("get_wallet", bob),
        200,
        "wallet",
        lambda w: w.balance_cents == amount and len(w.entries) == 1,
    )
    expect(
        "alice paid 10.00 once",
        call("get_wallet", alice),
        200,
        "wallet",
        lambda w: w.balance_cents == 9000,
    )
    expect(
        "the packet shows one grab, claimed",
        call("view", carol, id=packet_id),
        200,
        "view",
        lambda v: (
            len(v.grabs) == 1 and v.grabs[0].claimed is True and v.grabs[0].amount_cents == amount
        ),
    )
    expect(
        "alice's sent history lists the packet",
        call("list_packets", alice, role="sent"),
        200,
        "history",
        lambda h: any(i.packet_id == packet_id for i in h.items),
    )
    expect(
        "two order codes -> 201",
        call("next_codes", alice, body={"count": 2}),
        201,
        "codes",
        lambda c: len(c.codes) == 2,
    )
    expect(
        "post an article -> 201",
        call("post_article", alice, body={"title": "hongbao", "link": "https://example.com/"}),
        201,
        "article",
        lambda a: a.votes == 1 and a.title == "hongbao",
    )
    # A coupon drop: the merchant (the AWS_IAM routes; `make serve` signs every request as its
    # local principal) creates a campaign of two codes, bob and carol grab one each, the
    # checkout redeems bob's.
    coupon_codes = [f"PY-{run}-1", f"PY-{run}-2"]
    ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    campaign = expect(
        "the merchant creates a campaign of 2 codes -> 201, open",
        call(
            "create_campaign",
            anonymous,
            body={
                "title": "20 off 100",
                "codes": coupon_codes,
                "ends_at": ends,
                "reference": f"py-drop-{run}",
            },
        ),
        201,
        "campaign",
        lambda c: code(c.status) == "open" and c.codes_left == 2,
    )
    campaign_id = getattr(campaign, "campaign_id", "missing")
    bobs = expect(
        "bob grabs a coupon -> 200",
        call("grab_coupon", bob, id=campaign_id),
        200,
        "coupon",
        lambda c: c.code in coupon_codes and c.campaign_id == campaign_id,
    )
    bobs_code = getattr(bobs, "code", "missing")
    carols = expect(
        "carol grabs the other one -> 200",
        call("grab_coupon", carol, id=campaign_id),
        200,
        "coupon",
        lambda c: c.code in coupon_codes and c.code != bobs_code,
    )
    carols_code = getattr(carols, "code", "missing")
    expect_error(
        "dave is too late -> 410 sold_out",
        call("grab_coupon", dave, id=campaign_id),
        410,
        "sold_out",
    )
    expect(
        "the campaign is sold out and shows bob his coupon",
        call("get_campaign", bob, id=campaign_id),
        200,
        "campaign",
        lambda c: code(c.status) == "sold_out" and c.codes_left == 0 and c.coupons == [bobs_code],
    )
    redeem = {"code": bobs_code, "user_id": f"bob-{run}", "order_reference": f"py-order-{run}"}
    expect(
        "the checkout redeems bob's coupon -> 200",
        call("redeem_coupon", anonymous, body=redeem),
        200,
        "redeemed",
        lambda r: r.campaign_id == campaign_id and r.repeat is False,
    )
    expect_error(
        "another order redeems it -> 409 already_redeemed",
        call("redeem_coupon", anonymous, body={**redeem, "order_reference": f"py-order-2-{run}"}),
        409,
        "already_redeemed",
        lambda e: e.order_reference == redeem["order_reference"],
    )
    expect(
        "bob's coupons: the one he grabbed, redeemed",
        call("list_coupons", bob),
        200,
        "coupons",
        lambda c: [(i.code, code(i.state)) for i in c.items] == [(bobs_code, "redeemed")],
    )
    # A checkout of carol's coupon: held while she pays, redeemed, released when the order is
    # refunded, then redeemed again by her next order.
    cart = {"code": carols_code, "user_id": f"carol-{run}", "order_reference": f"py-cart-{run}"}
    expect(
        "the checkout holds carol's coupon -> 200 held",
        call("hold_coupon", anonymous, body={**cart, "order_total_cents": 12000, "hold_secs": 60}),
        200,
        "held",
        lambda h: code(h.state) == "held" and h.order_reference == cart["order_reference"],
    )
    expect(
        "the payment succeeds: the hold redeemed -> 200",
        call("redeem_coupon", anonymous, body=cart),
        200,
        "redeemed",
        lambda r: r.order_reference == cart["order_reference"] and r.repeat is False,
    )
    expect(
        "the order is refunded: the redemption released -> 200",
        call(
            "release_coupon",
            anonymous,
            body={"code": carols_code, "order_reference": cart["order_reference"]},
        ),
        200,
        "released",
        lambda r: code(r.released) == "redemption" and r.repeat is False,
    )
    expect(
        "carol's next order redeems it again -> 200",
        call("redeem_coupon", anonymous, body={**cart, "order_reference": f"py-cart-2-{run}"}),
        200,
        "redeemed",
        lambda r: r.order_reference == f"py-cart-2-{run}",
    )
    # Chat packets: a password packet with a cover, grabbed with its password, then cancelled
    # by alice (its un-grabbed shares come back at once), its fairness receipt checked from the
    # view alone; and a packet scheduled to open in a minute.
    chat_body = {"total_cents": 300, "count": 3, "password": "芝麻开门", "cover": "lantern-2027"}
    chat = expect(
        "a password packet with a cover -> 201, password_protected",
        call("create_packet", alice, body=chat_body),
        201,
        "packet",
        lambda p: p.password_protected is True and p.cover == "lantern-2027",
    )
    chat_id = getattr(chat, "packet_id", "missing")
    expect_error(
        "dave grabs without the password -> 403 wrong_password",
        call("grab", dave, id=chat_id),
        403,
        "wrong_password",
    )
    won = expect(
        "dave types it -> 200",
        call("grab", dave, id=chat_id, body={"password": "芝麻开门"}),
        200,
        "share",
        lambda s: s.share_id == 1,
    )
    won_cents = getattr(won, "amount_cents", -1)
    expect(
        "alice cancels -> 200, the two un-grabbed shares refunded",
        call("cancel", alice, id=chat_id),
        200,
        "cancelled_packet",
        lambda c: code(c.status) == "cancelled" and c.refunded_cents == 300 - won_cents,
    )
    expect_error(
        "carol grabs after the cancel -> 410 cancelled",
        call("grab", carol, id=chat_id, body={"password": "芝麻开门"}),
        410,
        "cancelled",
    )

    def receipt_holds(v: Any) -> bool:
        shares = v.reveal.shares_cents
        text = f"hongbao-shares-v1:{v.reveal.salt}:{','.join(map(str, shares))}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        return digest == v.commitment and sum(shares) == v.total_cents and shares[0] == won_cents

    expect(
        "the cancelled packet's receipt holds (commitment, sum, dave's share)",
        call("view", dave, id=chat_id),
        200,
        "view",
        lambda v: code(v.status) == "cancelled" and receipt_holds(v),
    )
    later = expect(
        "a packet scheduled to open in a minute -> 201",
        call("create_packet", alice, body={"total_cents": 100, "count": 1, "opens_in_secs": 60}),
        201,
        "packet",
    )
    expect_error(
        "grab before it opens -> 425 not_open_yet",
        call("grab", bob, id=getattr(later, "packet_id", "missing")),
        425,
        "not_open_yet",
        lambda e: e.opens_at is not None,
    )
    # Error answers, each parsed into the document's error model.
    expect_error(
        "no x-user-id -> 401 unauthorized", call("get_wallet", anonymous), 401, "unauthorized"
    )
    expect_error(
        "count 0 -> 400 invalid_request",
        call("create_packet", alice, body={"total_cents": 1000, "count": 0}),
        400,
        "invalid_request",
    )
    expect_error(
        "more than the balance -> 402 insufficient_funds",
        call("create_packet", alice, body={"total_cents": 9001, "count": 1}),
        402,
        "insufficient_funds",
    )
    expect_error(
        "an unknown packet -> 404 not_found",
        call("view", carol, id=f"no-such-packet-{run}"),
        404,
        "not_found",
    )
    expect_error(
        "claim without a share -> 404 no_share", call("claim", carol, id=packet_id), 404, "no_share"
    )

    merchant_order(run, as_user, anonymous)
    draw_packet(
        run,
        alice,
        anonymous,
        {f"{u}-{run}": c for u, c in (("bob", bob), ("carol", carol), ("dave", dave))},
    )

    print(
        "\npy session: " + ("all checks passed" if not failed else f"{len(failed)} check(s) failed")
    )
    return 1 if failed else 0


def draw_packet(run: str, sender: Client, merchant: Client, entrants: dict[str, Client]) -> None:
    """A draw packet and a draw campaign: three users enter each during its 10 s window (202),
    then each checks the draw from the public view alone, as the README shows: the seed hashes
    to the commitment, their ticket is HMAC-SHA256(seed bytes, user id), and they won exactly
    when it is at most the threshold; a winner's grab answers the share (or the code), anyone
    else's 410 not_drawn."""
    body = {
        "total_cents": 200,
        "count": 2,
        "mode": "fixed",
        "expires_in_secs": 60,
        "draw": {"entry_secs": 10},
    }
    made = expect(
        "a draw packet -> 201 with its commitment, no seed",
        call("create_packet", sender, body=body),
        201,
        "packet",
        lambda p: len(p.draw.commitment) == 64 and not isinstance(p.draw.seed, str),
    )
    packet_id = getattr(made, "packet_id", "missing")
    campaign = expect(
        "a draw campaign of 1 code -> 201, entering, its commitment, no seed",
        call(
            "create_campaign",
            merchant,
            body={
                "title": "the draw",
                "codes": [f"PYDRAW-{run}"],
                "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400)),
                "reference": f"py-draw-{run}",
                "draw": {"entry_secs": 10},
            },
        ),
        201,
        "campaign",
        lambda c: code(c.status) == "entering" and not isinstance(c.draw.seed, str),
    )
    campaign_id = getattr(campaign, "campaign_id", "missing")
    for user, client in entrants.items():
        expect(
            f"{user} enters -> 202",
            call("grab", client, id=packet_id),
            202,
            "entered",
            lambda e: e.entered is True,
        )
        expect(
            f"{user} enters the campaign's draw -> 202",
            call("grab_coupon", client, id=campaign_id),
            202,
            "campaign_entered",
            lambda e: e.entered is True,
        )
    draw_at = getattr(getattr(made, "draw", None), "draw_at", None)
    wait = draw_at.timestamp() - time.time() if draw_at else 10
    time.sleep(max(0.0, wait) + 1.5)
    for user, client in entrants.items():
        view = expect(
            f"{user} checks the draw from the view",
            call("view", client, id=packet_id),
            200,
            "view",
            lambda v, u=user: draw_checks_out(v, u),
        )
        won = any(g.user_id == user for g in getattr(view, "grabs", []))
        if won:
            expect(
                f"{user} won: the grab answers the share",
                call("grab", client, id=packet_id),
                200,
                "share",
            )
        else:
            expect_error(
                f"{user} was not drawn -> 410", call("grab", client, id=packet_id), 410, "not_drawn"
            )
        # The campaign: one code, so one winner; the grab tells who.
        grabbed = call("grab_coupon", client, id=campaign_id)
        won = int(grabbed.status_code) == 200
        expect(
            f"{user} checks the campaign's draw from the view",
            call("get_campaign", client, id=campaign_id),
            200,
            "campaign",
            lambda c, u=user, w=won: campaign_draw_checks_out(c, u, w),
        )


def campaign_draw_checks_out(campaign: Any, user: str, won: bool) -> bool:
    """The README's five lines for a campaign: `won` is whether the user's grab got a code."""
    draw = campaign.draw
    seed = draw.seed
    committed = hashlib.sha256(("hongbao-draw-v1:" + seed).encode()).hexdigest() == draw.commitment
    ticket = hmac.new(bytes.fromhex(seed), user.encode(), "sha256").hexdigest()
    threshold = draw.threshold if isinstance(draw.threshold, str) else None
    under = threshold is not None and ticket <= threshold
    return committed and ticket == campaign.ticket and won == under and draw.winners == 1


def draw_checks_out(view: Any, user: str) -> bool:
    """The README's five lines: the seed matches the commitment, the view's ticket is the
    seed's for `user`, and `user` won exactly when it is at most the threshold."""
    draw = view.draw
    seed = draw.seed
    committed = hashlib.sha256(("hongbao-draw-v1:" + seed).encode()).hexdigest() == draw.commitment
    ticket = hmac.new(bytes.fromhex(seed), user.encode(), "sha256").hexdigest()
    won = any(g.user_id == user for g in view.grabs)
    threshold = draw.threshold if isinstance(draw.threshold, str) else None
    under = threshold is not None and ticket <= threshold
    return view.status == "drawn" and committed and ticket == view.ticket and won == under


def merchant_order(run: str, as_user: typing.Callable[[str | None], Client], iam: Client) -> None:
    """A merchant's order packet: the team's backend (AWS_IAM; `make serve` signs as its local
    principal) funds the merchant's budget and creates the packet of one order for its customer
    to share, paid out as coupons; the sharer's share is taken at creation, six friends race for
    the other five, one claims hers as a coupon and pays with it at checkout, and the
    merchant's books close."""
    merchant_id = f"py-shop-{run}"
    expect(
        "the merchant's budget funded -> 201",
        call(
            "merchant_deposit",
            iam,
            merchant_id=merchant_id,
            body={"amount_cents": 100_000, "reference": f"py-budget-{run}"},
        ),
        201,
        "movement",
        lambda m: m.balance_cents == 100_000,
    )
    order = {
        "merchant_id": merchant_id,
        "order_reference": f"py-order-packet-{run}",
        "sharer_id": f"sharer-{run}",
        "total_cents": 2000,
        "count": 6,
        "payout": "coupon",
        "coupon": {"min_order_cents": 1_000, "redeem_within_secs": 86_400},
        "sharer_first": True,
    }
    made = expect(
        "the order's packet -> 201, paid by the merchant, shared by the sharer",
        call("merchant_create_packet", iam, body=order),
        201,
        "merchant_packet",
        lambda p: (
            p.merchant_id == merchant_id and p.sharer_id == order["sharer_id"] and p.repeat is False
        ),
    )
    packet_id = getattr(made, "packet_id", "missing")
    expect(
        "the same order again -> 201 (a replay), the same packet",
        call("merchant_create_packet", iam, body=order),
        201,
        "merchant_packet",
        lambda p: p.packet_id == packet_id and p.repeat is True,
    )
    friends = [as_user(f"friend-{i}-{run}") for i in range(1, 7)]
    grabs = [call("grab", f, id=packet_id) for f in friends]
    statuses = sorted(int(g.status_code) for g in grabs)
    ok = statuses == [200] * 5 + [410]
    print(("PASS  " if ok else "FAIL  ") + "six friends grab the five shares left: five win")
    if not ok:
        failed.append("six friends grab")
        print(f"      {statuses}")
    winner = next(i for i, g in enumerate(grabs) if int(g.status_code) == 200)
    share = grabs[winner].parsed
    claimed = expect(
        "a winner claims her share as a coupon worth it -> 200",
        call("claim", friends[winner], id=packet_id),
        200,
        "claim",
        lambda c: (
            c.amount_cents == share.amount_cents and c.coupon.amount_off_cents == share.amount_cents
        ),
    )
    code = getattr(getattr(claimed, "coupon", None), "code", "missing")
    expect(
        "she pays with the coupon at checkout: the share off her order -> 200",
        call(
            "redeem_coupon",
            iam,
            body={
                "code": code,
                "user_id": f"friend-{winner + 1}-{run}",
                "order_reference": f"py-order-coupon-{run}",
                "order_total_cents": 5_000,
            },
        ),
        200,
        "redeemed",
        lambda r: r.discount_cents == share.amount_cents,
    )
    expect(
        "the merchant's books close: deposited = balance + reserved + outstanding + paid out",
        call("get_merchant", iam, merchant_id=merchant_id),
        200,
        "merchant",
        lambda b: (
            b.deposited_cents - b.withdrawn_cents
            == b.balance_cents
            + b.reserved_cents
            + b.outstanding_coupon_cents
            + b.paid_cash_cents
            + b.paid_coupon_cents
            and b.paid_coupon_cents == share.amount_cents
        ),
    )
    expect(
        "the merchant's packets list the order's packet",
        call("merchant_list_packets", iam, merchant_id=merchant_id),
        200,
        "merchant_packets",
        lambda page: (
            len(page.items) == 1
            and page.items[0].packet_id == packet_id
            and page.items[0].order_reference == order["order_reference"]
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
