"""The voting fixtures (events/vote-*.json) through the runtime: an article posted, voted on
(and again), listed, put in a group by its poster (not by someone else), the group's page."""

from __future__ import annotations

import json
import time

from .. import events
from ..checks import Checks
from ..report import parse_rfc3339
from ..rie import LocalStack
from .common import RFC3339, State

VOTE_SCORE = 432  # score = posted Unix s + 432 x votes


def voting(st: LocalStack, c: Checks, s: State) -> None:
    c.section("voting: events/vote-*.json through the runtime")
    inv = st.invoke
    fixture = events.load_event("vote-post-article")
    poster = fixture["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    sent = json.loads(fixture["body"])

    # POST /articles (alice)
    r = inv("vote", events.http_event("vote-post-article"))
    b = r["body"]
    if not c.status(f"vote-post-article.json ({poster})", r, 201):
        return
    aid = str(b.get("article_id", ""))
    posted = parse_rfc3339(b["posted_at"]) if RFC3339.match(str(b.get("posted_at"))) else None
    c.check(
        f"article body: decimal article_id, poster {poster}, title and link as sent, votes 1, "
        f"score = posted + {VOTE_SCORE}",
        aid.isdigit()
        and b.get("poster") == poster
        and b.get("title") == sent["title"]
        and b.get("link") == sent["link"]
        and b.get("votes") == 1
        and posted is not None
        and b.get("score") == int(posted) + VOTE_SCORE,
        str(b),
    )
    c.check(
        "posted_at is now",
        posted is not None and abs(posted - time.time()) < 30,
        str(b.get("posted_at")),
    )
    s.article_id = aid
    base = int(posted) if posted is not None else 0

    # POST /articles/{id}/vote (bob), then again
    voter = events.load_event("vote-vote")["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    r = inv("vote", events.http_event("vote-vote", article_id=aid))
    b = r["body"]
    if c.status(f"vote-vote.json ({voter}, up)", r, 200):
        c.check(
            f"vote body: votes 2, score = posted + {2 * VOTE_SCORE}, direction up, changed true",
            b
            == {
                "article_id": aid,
                "votes": 2,
                "score": base + 2 * VOTE_SCORE,
                "direction": "up",
                "changed": True,
            },
            str(b),
        )
    r = inv("vote", events.http_event("vote-vote", article_id=aid))
    b = r["body"]
    if c.status("vote-vote.json again", r, 200):
        c.check(
            "repeat vote: changed false, votes and score unchanged",
            b.get("changed") is False
            and b.get("votes") == 2
            and b.get("score") == base + 2 * VOTE_SCORE,
            str(b),
        )
    r = inv("vote", events.vote_event("999999999999", voter))
    c.status("vote on an unknown article", r, 404, "not_found")

    # GET /articles
    r = inv("vote", events.http_event("vote-list"))
    b = r["body"]
    if c.status("vote-list.json", r, 200):
        mine = [a for a in b.get("articles", []) if a.get("article_id") == aid]
        c.check(
            "list: order score, page 1, contains the article with votes 2",
            b.get("order") == "score"
            and b.get("page") == 1
            and len(mine) == 1
            and mine[0].get("votes") == 2
            and mine[0].get("score") == base + 2 * VOTE_SCORE,
            str(b)[:400],
        )

    # PUT /articles/{id}/groups: the poster, then someone else
    groups_fixture = events.load_event("vote-groups")
    change = json.loads(groups_fixture["body"])
    group = change["add"][0]
    r = inv("vote", events.http_event("vote-groups", article_id=aid))
    if c.status(f"vote-groups.json ({poster}, the poster)", r, 200):
        c.check(
            f"groups body: article_id, groups [{group}]",
            r["body"] == {"article_id": aid, "groups": sorted(change["add"])},
            str(r["body"]),
        )
    r = inv("vote", events.http_event("vote-groups", article_id=aid, sub=voter))
    c.status(f"vote-groups.json as {voter} (not the poster)", r, 403, "forbidden")

    # GET /groups/{group}/articles
    r = inv("vote", events.http_event("vote-group-articles"))
    b = r["body"]
    if c.status(f"vote-group-articles.json ({group})", r, 200):
        c.check(
            f"group page: group {group}, order score, page 1, lists the article",
            b.get("group") == group
            and b.get("order") == "score"
            and b.get("page") == 1
            and [a.get("article_id") for a in b.get("articles", [])] == [aid],
            str(b)[:400],
        )
