"""The generated client as session.py uses it: the operations and models it calls by role
(found in the package openapi-python-client generated into GENERATED_DIR, the first argument of
session.py, default tests/clients/gen/py), a call with plain dicts and strings, and the checks
that parse every answer into the generated models (`expect`, `expect_error`; `failed` lists the
checks that failed)."""

from __future__ import annotations

import enum
import importlib
import inspect
import pkgutil
import sys
import typing
from pathlib import Path
from typing import Any

# The generated names this program uses, in one place. openapi-python-client names an
# operation's module after its operationId (under api/<tag>/, any tag: looked up below); a
# tuple lists accepted spellings, first found wins (today's id, then the one before).
OPERATIONS: dict[str, tuple[str, ...]] = {
    "deposit": ("deposit",),  # POST /wallet/deposits
    "create_packet": ("create_packet", "create"),  # POST /packets
    "list_packets": ("list_packets",),  # GET /packets
    "grab": ("grab_share", "grab"),  # POST /packets/{id}/grab
    "claim": ("claim_share", "claim"),  # POST /packets/{id}/claim
    "view": ("view_packet", "view"),  # GET /packets/{id}
    "get_wallet": ("get_wallet",),  # GET /wallet
    "next_codes": ("next_order_codes", "next_codes"),  # POST /order-codes
    "post_article": ("post_article",),  # POST /articles
    "create_campaign": ("create_campaign",),  # POST /campaigns
    "grab_coupon": ("grab_coupon",),  # POST /campaigns/{id}/grab
    "get_campaign": ("get_campaign",),  # GET /campaigns/{id}
    "redeem_coupon": ("redeem_coupon",),  # POST /coupons/redeem
    "hold_coupon": ("hold_coupon",),  # POST /coupons/hold
    "release_coupon": ("release_coupon",),  # POST /coupons/release
    "list_coupons": ("list_coupons",),  # GET /coupons
    "cancel": ("cancel_packet",),  # POST /packets/{id}/cancel
    "merchant_deposit": ("merchant_deposit",),  # POST /merchants/{merchant_id}/deposits
    "merchant_create_packet": ("merchant_create_packet",),  # POST /merchant-packets
    "get_merchant": ("get_merchant",),  # GET /merchants/{merchant_id}
    "merchant_list_packets": ("merchant_list_packets",),  # GET /merchants/{merchant_id}/packets
}
# Response models (hongbao_client.models) by role, error answers by code; a tuple lists
# accepted class names (the per-code error schemas, then the one shared `ErrorDoc`).
MODELS: dict[str, tuple[str, ...]] = {
    "deposit": ("DepositBody",),
    "packet": ("PacketBody",),
    "share": ("ShareBody",),
    "entered": ("EnteredBody",),
    "campaign_entered": ("CampaignEnteredBody",),
    "claim": ("ClaimBody",),
    "wallet": ("WalletBody",),
    "view": ("PacketViewBody",),
    "history": ("HistoryBody",),
    "codes": ("CodesBody",),
    "article": ("ArticleBody",),
    "campaign": ("CampaignBody",),
    "coupon": ("CouponBody",),
    "redeemed": ("RedeemBody",),
    "held": ("HoldBody",),
    "released": ("ReleaseBody",),
    "coupons": ("CouponsBody",),
    "movement": ("MovementBody",),
    "merchant_packet": ("MerchantPacketBody",),
    "merchant": ("MerchantBody",),
    "merchant_packets": ("MerchantPacketsBody",),
    "already_grabbed": ("AlreadyGrabbedError", "ErrorDoc"),
    "not_drawn": ("GrabGoneError", "ErrorDoc"),
    "unauthorized": ("UnauthorizedError", "ErrorDoc"),
    "invalid_request": ("InvalidRequestError", "ErrorDoc"),
    "insufficient_funds": ("InsufficientFundsError", "ErrorDoc"),
    "not_found": ("NotFoundError", "ErrorDoc"),
    "no_share": ("ClaimNotFoundError", "ErrorDoc"),
    "sold_out": ("CampaignGoneError", "ErrorDoc"),
    "already_redeemed": ("AlreadyRedeemedError", "ErrorDoc"),
    "cancelled_packet": ("CancelBody",),
    "wrong_password": ("GrabForbiddenError", "ErrorDoc"),
    "cancelled": ("GrabGoneError", "ErrorDoc"),
    "not_open_yet": ("NotOpenYetError", "ErrorDoc"),
}
# (Request bodies are built with the model class the operation's `body` parameter is
# annotated with, so their names are not needed here.)

GENERATED = Path(
    sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "gen" / "py"
)
sys.path.insert(0, str(GENERATED))

import hongbao_client  # noqa: E402
import hongbao_client.api  # noqa: E402
from hongbao_client import Client  # noqa: E402
from hongbao_client.types import Response, Unset  # noqa: E402


def _modules() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for tag in pkgutil.iter_modules(hongbao_client.api.__path__):
        pkg = importlib.import_module(f"hongbao_client.api.{tag.name}")
        for mod in pkgutil.iter_modules(pkg.__path__):
            found.setdefault(mod.name, f"hongbao_client.api.{tag.name}.{mod.name}")
    return found


_MODULES = _modules()


def op(role: str) -> Any:
    """The generated `sync_detailed` of OPERATIONS[role]."""
    for name in OPERATIONS[role]:
        if name in _MODULES:
            return importlib.import_module(_MODULES[name]).sync_detailed
    raise SystemExit(
        f"no generated module for {role}: tried {OPERATIONS[role]}, "
        f"have {sorted(_MODULES)} (adjust OPERATIONS in {__file__})"
    )


def models(role: str) -> tuple[type, ...]:
    """The generated classes of MODELS[role] (those that exist; at least one must)."""
    import hongbao_client.models as generated

    found = tuple(getattr(generated, n) for n in MODELS[role] if hasattr(generated, n))
    if not found:
        raise SystemExit(
            f"no generated model for {role}: tried {MODELS[role]} (adjust MODELS in {__file__})"
        )
    return found


def _hint_classes(fn: Any, param: str) -> list[type]:
    hint = typing.get_type_hints(fn)[param]
    args = typing.get_args(hint) or (hint,)
    return [a for a in args if inspect.isclass(a) and a not in (type(None), Unset)]


def call(operation: str, client: Client, /, **kw: Any) -> Response[Any]:
    """Calls operation `role`; a `body` dict becomes the operation's body model (from_dict),
    a str argument annotated with an enum becomes that enum."""
    fn = op(operation)
    for name, value in list(kw.items()):
        classes = _hint_classes(fn, name)
        if name == "body" and isinstance(value, dict):
            body_models = [c for c in classes if hasattr(c, "from_dict")]
            assert len(body_models) == 1, (operation, classes)
            kw[name] = body_models[0].from_dict(value)
        elif isinstance(value, str):
            enums = [c for c in classes if issubclass(c, enum.Enum)]
            if enums:
                kw[name] = enums[0](value)
    return fn(client=client, **kw)


def code(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


failed: list[str] = []


def expect(
    name: str,
    resp: Response[Any],
    status: int,
    role: str,
    check: typing.Callable[[Any], bool] = lambda _: True,
) -> Any:
    """The answer has `status`, parsed into (one of) MODELS[role], and `check(parsed)` holds."""
    parsed = resp.parsed
    classes = models(role)
    ok = int(resp.status_code) == status and isinstance(parsed, classes)
    try:
        ok = ok and bool(check(parsed))
    except Exception as e:  # noqa: BLE001 - a failed field read is a failed check
        ok, parsed = False, f"{parsed!r}: {e!r}"
    if ok:
        print(f"PASS  {name}")
    else:
        want = "|".join(c.__name__ for c in classes)
        print(
            f"FAIL  {name}\n      {int(resp.status_code)} {type(parsed).__name__} "
            f"(want {status} {want}) {parsed!r} {resp.content[:300]!r}"
        )
    if not ok:
        failed.append(name)
    return parsed


def expect_error(
    name: str,
    resp: Response[Any],
    status: int,
    error: str,
    check: typing.Callable[[Any], bool] = lambda _: True,
) -> Any:
    """An error answer: `status`, parsed into MODELS[error], its `error` code (str or enum)
    `error`, a message, and `check(parsed)`."""
    return expect(
        name,
        resp,
        status,
        error,
        lambda e: (
            code(e.error) == error and isinstance(e.message, str) and e.message != "" and check(e)
        ),
    )
