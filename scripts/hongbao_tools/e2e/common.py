"""What the end-to-end sections share: the run's `State` (packets, order codes, article and
campaign ids, cold starts and latencies one section leaves for the next), the contract's
regular expressions and the red-packet body check."""

from __future__ import annotations

import re

PACKET_FIELDS = {
    "packet_id",
    "sender_id",
    "total_cents",
    "count",
    "mode",
    "split",
    "greeting",
    "created_at",
    "expires_at",
}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PACKET_ID = re.compile(r"^[0-9a-f]{24}$")
# An IAM caller outside HONGBAO_DEPOSIT_PRINCIPALS and HONGBAO_COUPON_PRINCIPALS (the
# sandboxes allow the fixtures' role).
OUTSIDER_ARN = "arn:aws:sts::123456789012:assumed-role/some-other-role/x"


def is_packet_body(b: dict) -> bool:
    """Whether `b` is a red packet as the contract answers it: every field, a 24-hex-digit
    id, RFC 3339 creation and expiry times."""
    return (
        isinstance(b, dict)
        and b.keys() >= PACKET_FIELDS
        and bool(PACKET_ID.match(b["packet_id"]))
        and bool(RFC3339.match(b["created_at"]))
        and bool(RFC3339.match(b["expires_at"]))
    )


def answered(r: dict, status_code: int, /, **fields: object) -> bool:
    """Whether the function answered `status_code` with a body whose `fields` have these
    values (`True`, `False` and `None` compared by identity, as JSON decodes them)."""
    body = r.get("body")
    return (
        r.get("statusCode") == status_code
        and isinstance(body, dict)
        and all(
            body.get(k) is v if v is None or isinstance(v, bool) else body.get(k) == v
            for k, v in fields.items()
        )
    )


def replayed(r: dict) -> bool:
    """Whether the answer carries `Idempotent-Replayed: true` (docs/idempotency.md)."""
    headers = {k.lower(): v for k, v in (r.get("headers") or {}).items()}
    return headers.get("idempotent-replayed") == "true"


class State:
    """What the sections share."""

    def __init__(self) -> None:
        self.deposits = 0
        self.withdrawals = 0
        # Merchant budgets: deposits - withdrawals into them, and the merchants that have one.
        self.merchant_net = 0
        self.merchants: set[str] = set()
        self.packets: list[str] = []
        self.lucky_id: str | None = None
        self.fixed_id: str | None = None
        self.bob_share: dict | None = None
        self.order_codes: list[str] = []  # every order code handed out in this run
        self.article_id: str | None = None
        self.campaign_id: str | None = None
        self.cold: dict[str, list[tuple[float, float | None, float]]] = {}
        self.latency: dict[str, tuple[list[float], list[float]]] = {}
        # The concurrency section's grab storm, as `make bench` draws it (e2e_grabs.json).
        self.grab_storm: dict | None = None
        # The window storm's figures (window_storm.json), when run.
        self.window_storm: dict | None = None
