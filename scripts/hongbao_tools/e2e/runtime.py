"""What the Lambda runtime path holds beyond a feature's answers: a function reads only its
own settings, prints one EMF metric line per invocation and no credentials at trace level, runs
as its own Redis user and is never refused; at the end money is conserved, no sandbox logged an
ERROR and every sandbox still runs."""

from __future__ import annotations

import time

from .. import events, functions
from ..checks import Checks, check_conservation
from ..emf import emf_lines
from ..moto import MotoServer
from ..rie import InvocationError, LocalStack, Sandbox
from .common import State


def logged(sb: Sandbox, text: str, timeout: float = 3.0) -> bool:
    """Whether `text` shows in the sandbox's last output lines within `timeout` seconds: a
    failing Init's message can reach the output after RIE has answered the invoke 502."""
    deadline = time.monotonic() + timeout
    while text not in sb.tail():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def settings_per_function(st: LocalStack, c: Checks, s: State) -> None:
    """A function reads only its own feature's settings: broken voting, order-code and coupon
    settings stop the vote and coupon functions at Init (naming the variable) and leave grab
    running."""
    c.section(
        "settings per function (a broken HONGBAO_VOTE_SITE stops vote, a broken "
        "HONGBAO_COUPON_VISIT_WINDOW_MS coupon, neither grab)"
    )
    env = {
        "HONGBAO_VOTE_SITE": "Not A Site",
        "HONGBAO_ORDER_CODE_DIGITS": "9",
        "HONGBAO_COUPON_VISIT_WINDOW_MS": "0",
    }
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-bad-vote-env") as sb:
        r = sb.invoke(events.view_event(events.NO_SUCH_PACKET, "settings"))
        c.status("grab with broken vote/order-code/coupon settings answers", r, 404, "not_found")
    for fn, make_event, variable, broken in (
        (
            "coupon",
            lambda: events.campaign_event(events.NO_SUCH_CAMPAIGN, "settings"),
            "HONGBAO_COUPON_VISIT_WINDOW_MS",
            "HONGBAO_COUPON_VISIT_WINDOW_MS=0",
        ),
        (
            "vote",
            lambda: events.list_articles_event(sub="settings"),
            "HONGBAO_VOTE_SITE",
            "HONGBAO_VOTE_SITE='Not A Site'",
        ),
    ):
        with Sandbox(fn, env, redis_url=st.redis.url, name=f"{fn}-bad-env") as sb:
            try:
                sb.invoke(make_event())
                c.check(f"{fn} with {broken} fails Init", False, "it answered")
            except InvocationError as e:
                c.check(
                    f"{fn} with {broken} fails Init, naming the variable",
                    variable in str(e) or logged(sb, variable),
                    str(e)[:300],
                )


def metrics(st: LocalStack, c: Checks, s: State) -> None:
    """The functions print one EMF line per invocation (hongbao::api::metrics): a won, a
    sold-out and a repeated grab in a fresh sandbox (the cold start counted on the first, every
    request and its status class on each), and reclaim-cron's backlog gauge."""
    c.section("CloudWatch Embedded Metric Format lines")
    r = st.invoke("create-packet", events.create_event("alice", 100, 1))
    if not c.status("create a 1-share packet", r, 201):
        return
    pid = r["body"]["packet_id"]
    s.packets.append(pid)
    env = {"HONGBAO_METRICS_NAMESPACE": "hb-e2e"}
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-emf") as sb:
        answers = [
            sb.invoke(events.grab_event(pid, u))["statusCode"] for u in ("emf1", "emf2", "emf1")
        ]
        sb.wait_reports()
        docs = emf_lines(sb.lines)
    c.check(
        "grabs answer 200, 410 sold_out, 409 already_grabbed",
        answers == [200, 410, 409],
        str(answers),
    )
    c.check("one EMF line per invocation", len(docs) == 3, f"{len(docs)} lines: {docs}")
    if len(docs) != 3:
        return
    meta = [d["_aws"]["CloudWatchMetrics"][0] for d in docs]
    c.check(
        "namespace hb-e2e, dimension Function = the function name",
        all(m["Namespace"] == "hb-e2e" and m["Dimensions"] == [["Function"]] for m in meta)
        and all(d.get("Function") == "grab-emf" for d in docs),
        str(meta[0]),
    )
    names = [{x["Name"] for x in m["Metrics"]} for m in meta]
    c.check(
        "GrabWon 1, then GrabSoldOut 1, then GrabAlreadyGrabbed 1",
        [docs[0].get("GrabWon"), docs[1].get("GrabSoldOut"), docs[2].get("GrabAlreadyGrabbed")]
        == [1, 1, 1]
        and "GrabWon" not in names[1],
        str(docs),
    )
    c.check(
        "ColdStart 1 on the sandbox's first line only; Requests 1 on each; Answered4xx on"
        " the 410 and the 409, not on the 200; no Answered5xx",
        [d.get("ColdStart") for d in docs] == [1, None, None]
        and [d.get("Requests") for d in docs] == [1, 1, 1]
        and [d.get("Answered4xx") for d in docs] == [None, 1, 1]
        and not any("Answered5xx" in d for d in docs),
        str(docs),
    )
    c.check(
        "every line has LatencyMs (Milliseconds) and the Lambda RequestId",
        all("LatencyMs" in n for n in names)
        and all(d.get("RequestId") for d in docs)
        and any(
            x.get("Unit") == "Milliseconds" for x in meta[0]["Metrics"] if x["Name"] == "LatencyMs"
        ),
        str(meta[0]),
    )
    reclaim = [d for sb in st["reclaim-cron"].sandboxes for d in emf_lines(sb.lines)]
    c.check(
        "reclaim-cron prints ReclaimRemainingDue on every run (0 included)",
        bool(reclaim) and all("ReclaimRemainingDue" in d for d in reclaim),
        f"{len(reclaim)} lines: {reclaim[:2]}",
    )


def no_credentials_in_logs(st: LocalStack, c: Checks, s: State) -> None:
    """At the most verbose level (RUST_LOG=trace, as the template's LogLevel=trace sets it) a
    function's output carries no Authorization header, cookie or security token of the event:
    lambda_runtime logs every raw event at trace, which hongbao's tracing caps away
    (hongbao::lambda::init_tracing)."""
    c.section("logs at trace level carry no credentials")
    secrets = {
        "authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.TRACE-JWT-SECRET.sig",
        "cookie": "session=TRACE-COOKIE-SECRET",
        "x-amz-security-token": "IQoJb3JpZ2luX2VjTRACE-STS-SECRET",
    }
    env = {"RUST_LOG": "trace", "LOG_LEVEL": "debug"}
    with Sandbox("grab", env, redis_url=st.redis.url, name="grab-trace") as sb:
        ev = events.view_event(events.NO_SUCH_PACKET, "tracer")
        ev.setdefault("headers", {}).update(secrets)
        ev["cookies"] = [secrets["cookie"]]
        r = sb.invoke(ev)
        c.status("a view at RUST_LOG=trace answers", r, 404, "not_found")
        sb.wait_reports()
        out = "\n".join(sb.lines)
        leaked = [
            m for m in ("TRACE-JWT-SECRET", "TRACE-COOKIE-SECRET", "TRACE-STS-SECRET") if m in out
        ]
        c.check(
            "the sandbox logged at debug or trace level (the check can see a leak)",
            '"level":"DEBUG"' in out or '"level":"TRACE"' in out,
            f"{len(sb.lines)} lines, none at debug/trace",
        )
        c.check(
            "no Authorization, cookie or x-amz-security-token value in the output",
            not leaked,
            f"leaked: {leaked}",
        )


def conservation(st: LocalStack, c: Checks, s: State) -> None:
    c.section(
        "money conservation (every wallet in Redis + merchant budgets + money held by packets"
        " = deposits - withdrawals)"
    )
    # The merchant of events/merchant-*.json, once its fixtures ran: its balance, and the
    # coupons its packets' shares became (outstanding, or spent on a discount).
    books = st.invoke("merchant", events.http_event("merchant-get"))["body"] if s.merchants else {}
    budgets = sum(
        books.get(k, 0) for k in ("balance_cents", "outstanding_coupon_cents", "paid_coupon_cents")
    )
    audit = check_conservation(
        st,
        c,
        "every wallet in Redis",
        s.deposits - s.withdrawals + s.merchant_net,
        {pid: pid for pid in s.packets},
        budgets=budgets,
    )
    for line in audit.lines():
        print(f"      {line}")
    errors = sum(sb.error_lines for sb in st.all_sandboxes())
    c.check("no ERROR log line in any sandbox", errors == 0, f"{errors} ERROR lines")
    dead = [sb.name for sb in st.all_sandboxes() if not sb.alive()]
    c.check("every RIE sandbox is still running", not dead, str(dead))


def redis_users(st: LocalStack, c: Checks, s: State) -> None:
    """Each function ran every flow above as its own Redis user (hongbao::store::acl: the
    server's clients are those users) and was never refused: the server's ACL LOG is empty."""
    c.section("each function as its own Redis user")
    want = {f"hongbao-{f['redis_user']}" for f in functions.DECLARED if f["name"] in st.pools}
    clients = st.redis.command("CLIENT", "LIST")
    users = {
        part[5:] for line in clients.splitlines() for part in line.split() if part[:5] == "user="
    }
    c.check(f"the sandboxes are connected as {sorted(want)}", want <= users, str(sorted(users)))
    log = st.redis.command("ACL", "LOG")
    refusals = [dict(zip(e[::2], e[1::2], strict=False)) for e in log]
    c.check(
        "no command of any flow was refused (ACL LOG is empty)",
        not log,
        "; ".join(f"{r['username']}: {r['reason']} {r['object']} x{r['count']}" for r in refusals),
    )


def password_secret(st: LocalStack, c: Checks, s: State) -> None:
    """With REDIS_PASSWORD_SECRET_ARN a function reads its Redis password from Secrets Manager
    (moto) at Init and serves; a secret that does not exist stops Init, naming the variable and
    the secret; the password is in no output line."""
    c.section("the Redis password read from Secrets Manager at Init")
    password = functions.LOCAL_REDIS_PASSWORD
    with MotoServer() as moto:
        arn = moto.client("secretsmanager").create_secret(
            Name="hongbao/redis", SecretString=password
        )["ARN"]
        env = {
            **moto.lambda_env(),
            "REDIS_AUTH": "password",
            "REDIS_USERNAME": "hongbao-app",
            "REDIS_PASSWORD_SECRET_ARN": arn,
        }
        with Sandbox("grab", env, redis_url=st.redis.url, name="grab-secret") as sb:
            r = sb.invoke(events.view_event(events.NO_SUCH_PACKET, "secret"))
            c.status("grab with its password's secret answers", r, 404, "not_found")
            sb.wait_reports()
            c.check("no output line holds the password", password not in "\n".join(sb.lines))
        env["REDIS_PASSWORD_SECRET_ARN"] = "hongbao/missing"
        with Sandbox("grab", env, redis_url=st.redis.url, name="grab-no-secret") as sb:
            try:
                sb.invoke(events.view_event(events.NO_SUCH_PACKET, "secret"))
                c.check("grab with a missing secret fails Init", False, "it answered")
            except InvocationError as e:
                named = "REDIS_PASSWORD_SECRET_ARN=hongbao/missing"
                c.check(
                    "grab with a missing secret fails Init, naming the variable and the secret",
                    named in str(e) or logged(sb, named),
                    str(e)[:300],
                )
