"""API Gateway v2 (HTTP API) and EventBridge events for the functions, each built from an
events/ fixture (the same files `sam local invoke`, the Rust tests and the scripts use), with a
fresh request id and time."""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from .paths import EVENTS_DIR

_event_cache: dict[str, dict] = {}
_request_seq = 0
_request_lock = threading.Lock()
NO_SUCH_PACKET = "0" * 24  # a well-formed packet id that no packet has
NO_SUCH_CAMPAIGN = "ZZZZZ"  # a well-formed campaign id that no campaign of a test run has


# The campaign fixtures' times, as placeholders in their bodies: a fixed date would pass. The
# loaders (this one and tests/it/common.rs `event`) put an end 30 days ahead and a redemption
# deadline 60 days ahead in their place (a campaign lasts at most 90 days).
TIME_PLACEHOLDERS = {"ENDS_AT": 30 * 86_400, "REDEEM_BY": 60 * 86_400}


def load_event(name: str) -> dict:
    """A fresh copy of `events/<name>.json`, its time placeholders (`TIME_PLACEHOLDERS`)
    filled from now."""
    if name not in _event_cache:
        with open(EVENTS_DIR / f"{name}.json", encoding="utf-8") as f:
            _event_cache[name] = json.load(f)
    ev = copy.deepcopy(_event_cache[name])
    if isinstance(ev.get("body"), str):
        for placeholder, ahead in TIME_PLACEHOLDERS.items():
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + ahead))
            ev["body"] = ev["body"].replace(placeholder, at)
    return ev


def _stamp(ev: dict) -> None:
    """A unique requestId and the current time, as API Gateway would set them."""
    global _request_seq
    with _request_lock:
        _request_seq += 1
        seq = _request_seq
    rc = ev.get("requestContext")
    if isinstance(rc, dict):
        now = time.time()
        rc["requestId"] = f"local-{seq:06d}-{uuid.uuid4().hex[:8]}"
        rc["timeEpoch"] = int(now * 1000)
        rc["time"] = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))


def _replace_in_path(ev: dict, old: str, new: str) -> None:
    """Replaces `old` by `new` in the event's path (rawPath, requestContext.http.path) and in
    its pathParameters."""
    ev["rawPath"] = ev["rawPath"].replace(old, new)
    ev["requestContext"]["http"]["path"] = ev["requestContext"]["http"]["path"].replace(old, new)
    if ev.get("pathParameters"):
        ev["pathParameters"] = {k: v.replace(old, new) for k, v in ev["pathParameters"].items()}


def http_event(
    fixture: str,
    *,
    packet_id: str | None = None,
    article_id: str | None = None,
    campaign_id: str | None = None,
    code: str | None = None,
    sub: str | None = None,
    user_arn: str | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    auth: bool = True,
) -> dict:
    """An API Gateway v2 event from `events/<fixture>.json`: `packet_id` / `article_id` /
    `campaign_id` / `code` replace the `PACKET_ID` / `ARTICLE_ID` / `CAMPAIGN_ID` /
    `COUPON_CODE` placeholders (path and pathParameters), `sub` the JWT claim `sub`,
    `user_arn` the IAM authorizer's `userArn` (a fixture signed with AWS_IAM), `body` (a dict
    is JSON-encoded) the body, `query` the query string (an empty dict removes it), `headers`
    are added (a body brings `content-type: application/json` unless `headers` says
    otherwise); `auth=False` drops the authorizer."""
    ev = load_event(fixture)
    if packet_id is not None:
        _replace_in_path(ev, "PACKET_ID", packet_id)
    if article_id is not None:
        _replace_in_path(ev, "ARTICLE_ID", article_id)
    if campaign_id is not None:
        _replace_in_path(ev, "CAMPAIGN_ID", campaign_id)
    if code is not None:
        _replace_in_path(ev, "COUPON_CODE", code)
    if query is not None:
        ev["rawQueryString"] = urlencode(query)
        if query:
            ev["queryStringParameters"] = dict(query)
        else:
            ev.pop("queryStringParameters", None)
    rc = ev["requestContext"]
    if not auth:
        rc.pop("authorizer", None)
    elif user_arn is not None:
        rc["authorizer"]["iam"]["userArn"] = user_arn
    if auth and sub is not None:
        claims = (
            rc.setdefault("authorizer", {})
            .setdefault("jwt", {"scopes": None})
            .setdefault("claims", {})
        )
        claims["sub"] = sub
        claims["username"] = sub
    if body is not None:
        ev["body"] = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
        ev["isBase64Encoded"] = False
        # A body is declared JSON, as every client of the API must (415 otherwise).
        ev.setdefault("headers", {}).setdefault("content-type", "application/json")
    if headers:
        ev.setdefault("headers", {}).update({k.lower(): v for k, v in headers.items()})
    _stamp(ev)
    return ev


def deposit_event(user_id: str, amount_cents: int, reference: str, *, iam: bool = True) -> dict:
    """`POST /wallet/deposits` from events/wallet-deposit.json (AWS_IAM authorizer) or, with
    `iam=False`, from wallet-deposit-no-iam.json."""
    return http_event(
        "wallet-deposit" if iam else "wallet-deposit-no-iam",
        body={"user_id": user_id, "amount_cents": amount_cents, "reference": reference},
    )


def create_event(
    sub: str,
    total_cents: int,
    count: int,
    mode: str = "lucky",
    *,
    split: str | None = None,
    expires_in_secs: int | None = None,
    greeting: str | None = None,
    idempotency_key: str | None = None,
    opens_in_secs: int | None = None,
    cover: str | None = None,
    password: str | None = None,
    draw_entry_secs: int | None = None,
) -> dict:
    """`POST /packets` from events/create-packet-lucky.json as `sub`, with this body (the
    optional fields only when given; `draw_entry_secs`: `"draw": {"entry_secs": ...}`) and an
    `Idempotency-Key` header when given."""
    body: dict[str, Any] = {"total_cents": total_cents, "count": count, "mode": mode}
    if draw_entry_secs is not None:
        body["draw"] = {"entry_secs": draw_entry_secs}
    for name, value in (("opens_in_secs", opens_in_secs), ("cover", cover), ("password", password)):
        if value is not None:
            body[name] = value
    if split is not None:
        body["split"] = split
    if expires_in_secs is not None:
        body["expires_in_secs"] = expires_in_secs
    if greeting is not None:
        body["greeting"] = greeting
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    return http_event("create-packet-lucky", sub=sub, body=body, headers=headers)


def grab_event(packet_id: str, sub: str, password: str | None = None) -> dict:
    """`POST /packets/{id}/grab` from events/grab-grab.json as `sub`; with `password`, the body
    `{"password": ...}` (a password packet)."""
    body = {"password": password} if password is not None else None
    return http_event("grab-grab", packet_id=packet_id, sub=sub, body=body)


def cancel_event(packet_id: str, sub: str) -> dict:
    """`POST /packets/{id}/cancel` from events/create-packet-cancel.json as `sub` (the
    create-packet function serves it: the sender's routes)."""
    return http_event("create-packet-cancel", packet_id=packet_id, sub=sub)


def view_event(packet_id: str, sub: str = "viewer") -> dict:
    """`GET /packets/{id}` from events/grab-view.json as `sub`."""
    return http_event("grab-view", packet_id=packet_id, sub=sub)


def claim_event(packet_id: str, sub: str) -> dict:
    """`POST /packets/{id}/claim` from events/claim-claim.json as `sub`."""
    return http_event("claim-claim", packet_id=packet_id, sub=sub)


def wallet_event(sub: str) -> dict:
    """`GET /wallet` from events/wallet-get.json as `sub`."""
    return http_event("wallet-get", sub=sub)


def order_codes_event(sub: str = "bob", count: int | None = None) -> dict:
    """`POST /order-codes` from events/next-order-code-single.json; `count` adds the body
    `{"count": N}` (none: no body, one code)."""
    return http_event(
        "next-order-code-single", sub=sub, body={"count": count} if count is not None else None
    )


def post_article_event(sub: str, title: str, link: str) -> dict:
    """`POST /articles` from events/vote-post-article.json."""
    return http_event("vote-post-article", sub=sub, body={"title": title, "link": link})


def vote_event(article_id: str, sub: str, direction: str = "up") -> dict:
    """`POST /articles/{id}/vote` from events/vote-vote.json."""
    return http_event("vote-vote", article_id=article_id, sub=sub, body={"direction": direction})


def list_articles_event(order: str = "score", page: int = 1, sub: str = "reader") -> dict:
    """`GET /articles?order=..&page=..` from events/vote-list.json."""
    return http_event("vote-list", sub=sub, query={"order": order, "page": str(page)})


def article_groups_event(
    article_id: str, sub: str, add: Iterable[str] = (), remove: Iterable[str] = ()
) -> dict:
    """`PUT /articles/{id}/groups` from events/vote-groups.json."""
    return http_event(
        "vote-groups",
        article_id=article_id,
        sub=sub,
        body={"add": list(add), "remove": list(remove)},
    )


def group_articles_event(
    group: str, order: str = "score", page: int = 1, sub: str = "reader"
) -> dict:
    """`GET /groups/{group}/articles?order=..&page=..` from events/vote-group-articles.json
    (whose group is `programming`)."""
    ev = http_event("vote-group-articles", sub=sub, query={"order": order, "page": str(page)})
    _replace_in_path(ev, "/groups/programming/", f"/groups/{group}/")
    ev["pathParameters"] = {"group": group}
    return ev


def create_campaign_event(body: dict, *, user_arn: str | None = None) -> dict:
    """`POST /campaigns` from events/coupon-create-campaign.json (AWS_IAM, the merchant
    fixtures' role unless `user_arn`) with this body."""
    return http_event("coupon-create-campaign", body=body, user_arn=user_arn)


def add_codes_event(
    campaign_id: str,
    codes: list[str] | None = None,
    reference: str | None = None,
    *,
    user_arn: str | None = None,
) -> dict:
    """`POST /campaigns/{id}/codes` from events/coupon-add-codes.json (AWS_IAM); `codes` and
    `reference` replace the fixture's batch when given."""
    body = None
    if codes is not None or reference is not None:
        body = json.loads(load_event("coupon-add-codes")["body"])
        if codes is not None:
            body["codes"] = codes
        if reference is not None:
            body["reference"] = reference
    return http_event("coupon-add-codes", campaign_id=campaign_id, body=body, user_arn=user_arn)


def campaign_event(campaign_id: str, sub: str = "viewer") -> dict:
    """`GET /campaigns/{id}` from events/coupon-view.json as `sub`."""
    return http_event("coupon-view", campaign_id=campaign_id, sub=sub)


def coupons_event(sub: str, query: dict[str, str] | None = None) -> dict:
    """`GET /coupons` (the caller's coupons) from events/coupon-list.json as `sub`; `query`
    gives `limit` / `cursor` (the fixture's `limit=20` otherwise)."""
    return http_event("coupon-list", sub=sub, query=query)


def coupon_grab_event(campaign_id: str, sub: str) -> dict:
    """`POST /campaigns/{id}/grab` from events/coupon-grab.json as `sub`."""
    return http_event("coupon-grab", campaign_id=campaign_id, sub=sub)


def redeem_event(
    code: str,
    user_id: str,
    order_reference: str,
    *,
    order_total_cents: int | None = None,
    user_arn: str | None = None,
) -> dict:
    """`POST /coupons/redeem` from events/coupon-redeem.json (AWS_IAM) with this body; with
    `order_total_cents` when given (a campaign with a minimum order requires it)."""
    body: dict = {"code": code, "user_id": user_id, "order_reference": order_reference}
    if order_total_cents is not None:
        body["order_total_cents"] = order_total_cents
    return http_event("coupon-redeem", body=body, user_arn=user_arn)


def hold_event(
    code: str, user_id: str, order_reference: str, order_total_cents: int, hold_secs: int = 30
) -> dict:
    """`POST /coupons/hold` from events/coupon-hold.json (AWS_IAM) with this body."""
    return http_event(
        "coupon-hold",
        body={
            "code": code,
            "user_id": user_id,
            "order_reference": order_reference,
            "order_total_cents": order_total_cents,
            "hold_secs": hold_secs,
        },
    )


def release_event(code: str, order_reference: str) -> dict:
    """`POST /coupons/release` from events/coupon-release.json (AWS_IAM) with this body."""
    return http_event("coupon-release", body={"code": code, "order_reference": order_reference})


def scheduled_event() -> dict:
    """The EventBridge schedule's event (events/reclaim-cron-scheduled.json), stamped now."""
    ev = load_event("reclaim-cron-scheduled")
    ev["id"] = str(uuid.uuid4())
    ev["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ev
