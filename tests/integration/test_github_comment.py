"""The gate's pull-request comment against a GitHub API stand-in on 127.0.0.1: created once, then edited."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopback import serve
from ragreplay.ci.github import PullRequest, upsert_comment
from ragreplay.errors import RagreplayError
from ragreplay.report.gate import COMMENT_MARKER


class FakeGitHub:
    """Issue comments of one repo, with the calls made and the tokens seen."""

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = [{"id": 1, "body": "LGTM"}]
        self.calls: list[str] = []
        self.tokens: set[str] = set()

    def app(self) -> Starlette:
        async def listing(request: Request) -> Response:
            self._seen(request)
            if request.method == "POST":
                body = (await request.json())["body"]
                self.comments.append({"id": len(self.comments) + 1, "body": body})
                return JSONResponse(self.comments[-1], status_code=201)
            page, per = int(request.query_params["page"]), int(request.query_params["per_page"])
            return JSONResponse(self.comments[(page - 1) * per : page * per])

        async def edit(request: Request) -> Response:
            self._seen(request)
            target = next(c for c in self.comments if c["id"] == int(request.path_params["cid"]))
            target["body"] = (await request.json())["body"]
            return JSONResponse(target)

        return Starlette(
            routes=[
                Route("/repos/o/r/issues/7/comments", listing, methods=["GET", "POST"]),
                Route("/repos/o/r/issues/comments/{cid:int}", edit, methods=["PATCH"]),
            ]
        )

    def _seen(self, request: Request) -> None:
        self.calls.append(request.method)
        self.tokens.add(request.headers.get("authorization", ""))


@pytest.fixture
def github() -> Iterator[tuple[FakeGitHub, str]]:
    fake = FakeGitHub()
    server = serve(fake.app())
    yield fake, next(server)
    next(server, None)


def test_the_comment_is_created_once_then_edited(github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    pr = PullRequest("o/r", 7, url)
    assert upsert_comment(pr, f"{COMMENT_MARKER}\nfirst", "t0k") == "created"
    assert upsert_comment(pr, "second, marker added", "t0k") == "updated"
    ours = [c for c in fake.comments if c["body"].startswith(COMMENT_MARKER)]
    assert len(fake.comments) == 2 and len(ours) == 1 and ours[0]["body"].endswith("second, marker added")
    assert fake.calls == ["GET", "POST", "GET", "PATCH"] and fake.tokens == {"Bearer t0k"}


def test_a_refusal_names_the_status_and_the_fix(github: tuple[FakeGitHub, str]) -> None:
    _, url = github
    with pytest.raises(RagreplayError, match=r"HTTP 404.*pull-requests: write"):
        upsert_comment(PullRequest("o/other", 7, url), "x", "t0k")
