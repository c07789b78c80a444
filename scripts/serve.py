#!/usr/bin/env python3
"""`make serve`: the whole hongbao HTTP API on http://127.0.0.1:3000 for curl, a browser or an app.

Starts a private `redis-server` on a free port (unless REDIS_URL is set) and the `serve` example
(`cargo build -p hongbao --example serve`, which `make serve` runs first): every function's axum
router merged as template.yaml routes them, identity from the `x-user-id` header
(HONGBAO_AUTH_MODE=header, local only) and deposits, withdrawals and the coupon merchant routes
allowed for the local IAM principal the example stamps on every request. Ctrl-C stops both.

    .venv/bin/python scripts/serve.py            # serve until Ctrl-C (HONGBAO_SERVE_ADDR moves it)
    .venv/bin/python scripts/serve.py --check    # on a free port: play the README's curl session
                                                 # over real HTTP, check every answer, exit 0/1
    .venv/bin/python scripts/serve.py --fuzz     # on a free port: schemathesis against openapi.json
                                                 # (every operation, positive and negative cases)
    .venv/bin/python scripts/serve.py --docs [--spec PATH]
                                                 # on a free port: /docs in headless Chromium
                                                 # (tests/clients/docs/browser.mjs): every
                                                 # operation of openapi.json (or PATH) listed
                                                 # and opened, no console error; a screenshot
                                                 # in target/docs/api-docs.png

The page at /docs is Swagger UI (its files built into the example by the crate
swagger-ui-dist: nothing to install) rendering /openapi.json, the document the example
generates.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hongbao_tools import guide
from hongbao_tools.deps import find_chromium
from hongbao_tools.paths import ROOT, TARGET_DIR
from hongbao_tools.procs import free_port, install_signal_handlers, kill_tree
from hongbao_tools.redis_server import RedisServer
from hongbao_tools.serve_api import request, start_api

BROWSER_CHECK = ROOT / "tests" / "clients" / "docs" / "browser.mjs"
PLAYWRIGHT = ROOT / "tests" / "clients" / "node_modules" / "playwright-core"
SCREENSHOT = TARGET_DIR / "docs" / "api-docs.png"


def banner_command(base: str) -> str:
    """The command the start banner suggests: a deposit to alice, pasted as printed."""
    body = '{"user_id":"alice","amount_cents":10000,"reference":"banner-1"}'
    return (
        f"curl -s -w '\\n%{{http_code}}\\n' -X POST {base}/wallet/deposits "
        f"-H 'content-type: application/json' -d '{body}'"
    )


def fetch(url: str) -> tuple[int, bytes, dict]:
    """GET `url`: (status, body, headers with lower-case names), error answers included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, e.read(), {k.lower(): v for k, v in e.headers.items()}


def check(base: str) -> int:
    """The README's curl session, docs/checkout.md's requests (hongbao_tools.guide), the /docs
    page's files, the contract's error answers, then the start banner's command as printed;
    prints PASS/FAIL lines."""
    failed: list[str] = []

    def expect(name: str, ok: bool, detail: object = "") -> None:
        print(("PASS  " if ok else "FAIL  ") + name + ("" if ok else f"\n      {detail}"))
        if not ok:
            failed.append(name)

    s, b, _ = request(
        base,
        "POST",
        "/wallet/deposits",
        body={"user_id": "alice", "amount_cents": 10000, "reference": "local-1"},
    )
    expect("deposit 100.00 to alice -> 201", s == 201 and b.get("balance_cents") == 10000, (s, b))
    # The same create twice: the Idempotency-Key makes the second the first's answer.
    create = {
        "user": "alice",
        "headers": {"Idempotency-Key": "local-packet-1"},
        "body": {"total_cents": 1000, "count": 3, "greeting": "恭喜发财"},
    }
    s, b, _ = request(base, "POST", "/packets", **create)
    expect("alice creates a 3-share packet of 10.00 -> 201", s == 201 and "packet_id" in b, (s, b))
    packet = b.get("packet_id", "")
    s, again, _ = request(base, "POST", "/packets", **create)
    expect(
        "the same Idempotency-Key again -> the same packet",
        s == 201 and again.get("packet_id") == packet,
        (s, again),
    )
    s, share, _ = request(base, "POST", f"/packets/{packet}/grab", user="bob")
    expect("bob grabs -> 200", s == 200 and share.get("amount_cents", 0) > 0, (s, share))
    s, b, _ = request(base, "POST", f"/packets/{packet}/grab", user="bob")
    expect(
        "bob grabs again -> 409 already_grabbed",
        s == 409 and b.get("error") == "already_grabbed",
        (s, b),
    )
    s, claim, _ = request(base, "POST", f"/packets/{packet}/claim", user="bob")
    expect(
        "bob claims -> 200",
        s == 200
        and claim.get("repeat") is False
        and claim.get("balance_cents") == share.get("amount_cents"),
        (s, claim),
    )
    s, w, _ = request(base, "GET", "/wallet", user="bob")
    expect(
        "bob's wallet holds his share",
        s == 200 and w.get("balance_cents") == share.get("amount_cents"),
        (s, w),
    )
    s, w, _ = request(base, "GET", "/wallet", user="alice")
    expect("alice paid 10.00 once", s == 200 and w.get("balance_cents") == 9000, (s, w))
    s, v, _ = request(base, "GET", f"/packets/{packet}", user="carol")
    expect(
        "the packet shows one grab, claimed",
        s == 200 and len(v.get("grabs", [])) == 1 and v["grabs"][0].get("claimed") is True,
        (s, v),
    )
    s, b, _ = request(base, "POST", "/order-codes", user="alice", body={"count": 2})
    expect("two order codes -> 201", s == 201 and len(b.get("codes", [])) == 2, (s, b))
    s, b, _ = request(
        base,
        "POST",
        "/articles",
        user="alice",
        body={"title": "hongbao", "link": "https://example.com/"},
    )
    expect("post an article -> 201", s == 201 and b.get("votes") == 1, (s, b))
    # A coupon drop: the merchant (the local IAM principal, in HONGBAO_COUPON_PRINCIPALS) creates
    # a campaign of two uploaded codes, open now, ending in a day; bob and carol grab one each;
    # the checkout redeems bob's.
    codes = ["LOCAL-0001", "LOCAL-0002"]
    ends = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    s, camp, _ = request(
        base,
        "POST",
        "/campaigns",
        body={"title": "20 off 100", "codes": codes, "ends_at": ends, "reference": "local-drop-1"},
    )
    expect(
        "the merchant creates a campaign of 2 codes -> 201, open",
        s == 201 and camp.get("status") == "open" and camp.get("codes_left") == 2,
        (s, camp),
    )
    campaign = camp.get("campaign_id", "")
    s, bobs, _ = request(base, "POST", f"/campaigns/{campaign}/grab", user="bob")
    expect("bob grabs a coupon -> 200", s == 200 and bobs.get("code") in codes, (s, bobs))
    s, carols, _ = request(base, "POST", f"/campaigns/{campaign}/grab", user="carol")
    expect(
        "carol grabs the other one -> 200",
        s == 200 and sorted([bobs.get("code"), carols.get("code")]) == codes,
        (s, carols),
    )
    s, b, _ = request(base, "POST", f"/campaigns/{campaign}/grab", user="dave")
    expect("dave is too late -> 410 sold_out", s == 410 and b.get("error") == "sold_out", (s, b))
    s, v, _ = request(base, "GET", f"/campaigns/{campaign}", user="bob")
    expect(
        "the campaign is sold out and shows bob his coupon",
        s == 200
        and v.get("status") == "sold_out"
        and v.get("codes_left") == 0
        and v.get("coupons") == [bobs.get("code")],
        (s, v),
    )
    redeem = {"code": bobs.get("code"), "user_id": "bob", "order_reference": "local-order-1"}
    s, b, _ = request(base, "POST", "/coupons/redeem", body=redeem)
    expect(
        "the checkout redeems bob's coupon -> 200",
        s == 200 and b.get("campaign_id") == campaign and b.get("repeat") is False,
        (s, b),
    )
    s, b, _ = request(
        base, "POST", "/coupons/redeem", body={**redeem, "order_reference": "local-order-2"}
    )
    expect(
        "another order redeems it -> 409 already_redeemed",
        s == 409 and b.get("error") == "already_redeemed",
        (s, b),
    )
    s, b, _ = request(base, "GET", "/coupons", user="bob")
    expect(
        "bob's coupons: the one he grabbed, redeemed",
        s == 200
        and [(i.get("code"), i.get("state")) for i in b.get("items", [])]
        == [(bobs.get("code"), "redeemed")],
        (s, b),
    )
    # The checkout guide's own requests, as docs/checkout.md writes them, with the answers it
    # promises: a hold, the payment fails and the hold is released, a hold again, the payment
    # succeeds and the coupon is redeemed.
    hold, redeem_req, release = guide.requests(ROOT / "docs" / "checkout.md")
    code, user = hold.body["code"], hold.body["user_id"]
    s, b, _ = request(
        base,
        "POST",
        "/campaigns",
        body={
            "title": "20.00 off",
            "codes": [code],
            "ends_at": ends,
            "reference": "local-checkout-guide",
            "discount": {"amount_off_cents": 2000},
        },
    )
    s, g, _ = request(base, "POST", f"/campaigns/{b.get('campaign_id', '')}/grab", user=user)
    expect(f"the guide's coupon, {code}, is {user}'s", s == 200 and g.get("code") == code, (s, g))
    for step in [hold, release, hold, redeem_req]:
        s, b, _ = request(base, step.method, step.path, body=step.body)
        problems = guide.differences(step, s, b)
        expect(f"docs/checkout.md: {step.name()}", not problems, (problems, b))
    # The reference page and everything it loads, from this server alone.
    for path, kind, size in [
        ("/docs", "text/html", 500),
        ("/docs/swagger-ui/swagger-ui-bundle.js", "javascript", 500_000),
        ("/docs/swagger-ui/swagger-ui.css", "text/css", 50_000),
    ]:
        s, body, h = fetch(base + path)
        expect(
            f"GET {path} -> 200 {kind}, at least {size} bytes",
            s == 200 and kind in h.get("content-type", "") and len(body) >= size,
            (s, h.get("content-type"), len(body)),
        )
    # The contract's error answers, over the wire.
    s, b, _ = request(base, "GET", "/wallet")
    expect(
        "no x-user-id -> 401 unauthorized", s == 401 and b.get("error") == "unauthorized", (s, b)
    )
    s, b, _ = request(base, "GET", "/nowhere", user="bob")
    expect("unknown path -> 404 not_found", s == 404 and b.get("error") == "not_found", (s, b))
    s, b, h = request(base, "DELETE", "/packets", user="bob")
    allow = {k.lower(): v for k, v in h.items()}.get("allow")
    expect(
        "DELETE /packets -> 405 with Allow: GET, POST (create; history)",
        s == 405
        and b.get("error") == "method_not_allowed"
        and sorted((allow or "").split(", ")) == ["GET", "POST"],
        (s, b, allow),
    )
    s, b, _ = request(base, "POST", "/packets", user="alice", body={"total_cents": 1.5, "count": 1})
    expect(
        "a fractional amount -> 400 invalid_request",
        s == 400 and b.get("error") == "invalid_request",
        (s, b),
    )
    # Last: the banner's deposit to alice leaves the session's balances above as they were.
    banner = subprocess.run(
        banner_command(base), shell=True, capture_output=True, text=True, check=False
    )
    expect(
        "the banner's command as printed -> 201",
        banner.stdout.strip().endswith("201"),
        (banner.stdout, banner.stderr),
    )
    print(f"\n{'all checks passed' if not failed else f'{len(failed)} check(s) failed'}")
    return 1 if failed else 0


# Schemathesis checks left out of `--fuzz`, and why:
# - ignored_auth, missing_required_header: the document declares the HTTP API's JWT (and SigV4)
#   authorizers, which API Gateway enforces before a function runs; `make serve` takes the caller
#   from `x-user-id` instead (security parameters are not generated either).
# - positive_data_acceptance: some rules are not expressible in a schema (a total of at least one
#   cent per share, a balance, a non-blank title, printable user ids, daily quotas); the answer to
#   such a request is a documented 4xx, which every other check still verifies.
# - ensure_resource_availability: POST /packets/{id}/claim answers 404 `no_share` to a caller who
#   grabbed no share of the packet (the share, not the packet, is what is not found; the contract
#   documents it). The stateful phase links a packet just created to its claim by a caller who
#   holds no share, and reads that documented 404 as "a resource just created is missing".
#   (Turning the check off for that operation alone in a schemathesis.toml did not stop it.)
FUZZ_EXCLUDED_CHECKS = (
    "ignored_auth,missing_required_header,positive_data_acceptance,ensure_resource_availability"
)


def fuzz(base: str) -> int:
    """Runs schemathesis (all its phases and checks but FUZZ_EXCLUDED_CHECKS) against `base`
    with openapi.json: no 5xx, every status, content type, header and body as documented,
    schema-violating requests refused. Returns its exit code."""
    exe = Path(sys.executable).parent / "schemathesis"
    cmd = [
        str(exe),
        "run",
        str(ROOT / "openapi.json"),
        "--url",
        base,
        "-H",
        "x-user-id: fuzzer",
        "-n",
        os.environ.get("HONGBAO_FUZZ_EXAMPLES", "100"),
        "--seed",
        os.environ.get("HONGBAO_FUZZ_SEED", "1"),
        "-c",
        "all",
        "--exclude-checks",
        FUZZ_EXCLUDED_CHECKS,
        "--generation-with-security-parameters",
        "false",
        "--no-color",
    ]
    print("$ " + " ".join(cmd[1:]), flush=True)
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


def docs(base: str, spec: Path) -> int:
    """Opens `base`/docs in headless Chromium (tests/clients/docs/browser.mjs, playwright-core
    over Debian's chromium): every operation of `spec` listed and opened, no console error,
    page error or failed request; a full-page screenshot in SCREENSHOT. Returns its exit code."""
    cmd = ["node", str(BROWSER_CHECK), f"{base}/docs", str(spec), str(SCREENSHOT)]
    print("$ " + " ".join(cmd), flush=True)
    env = dict(os.environ, HONGBAO_CHROMIUM=str(find_chromium()))
    return subprocess.run(cmd, cwd=ROOT, env=env, timeout=300, check=False).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="play the README curl session on a free port and exit"
    )
    ap.add_argument(
        "--fuzz",
        action="store_true",
        help="run schemathesis with openapi.json on a free port and exit",
    )
    ap.add_argument(
        "--docs",
        action="store_true",
        help="check the /docs page in headless Chromium on a free port and exit",
    )
    ap.add_argument(
        "--spec",
        type=Path,
        default=ROOT / "openapi.json",
        help="the document --docs expects the page to list (default: openapi.json)",
    )
    args = ap.parse_args()
    if args.docs and (shutil.which("node") is None or not PLAYWRIGHT.is_dir()):
        print(f"serve: node or {PLAYWRIGHT} missing; run scripts/install-deps.sh", file=sys.stderr)
        return 2
    install_signal_handlers()
    redis = None
    api = None
    try:
        redis_url = os.environ.get("REDIS_URL")
        if not redis_url:
            redis = RedisServer().start()
            redis_url = redis.url
        addr = (
            f"127.0.0.1:{free_port()}"
            if args.check or args.fuzz or args.docs
            else os.environ.get("HONGBAO_SERVE_ADDR", "127.0.0.1:3000")
        )
        api = start_api(redis_url, addr)
        base = f"http://{addr}"
        if args.check:
            return check(base)
        if args.fuzz:
            return fuzz(base)
        if args.docs:
            return docs(base, args.spec.resolve())
        print(f"hongbao API on {base} (Redis {redis_url}); identity: the x-user-id header.")
        print(f"API reference: {base}/docs")
        print(f"Try: {banner_command(base)}")
        print("Ctrl-C stops it.")
        while api.poll() is None:
            time.sleep(0.5)
        return api.returncode or 0
    except KeyboardInterrupt:
        return 0
    finally:
        if api is not None:
            kill_tree(api)
        if redis is not None:
            redis.stop()


if __name__ == "__main__":
    sys.exit(main())
