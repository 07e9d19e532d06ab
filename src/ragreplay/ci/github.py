"""Keep one gate comment up to date on a GitHub pull request: find ours by its marker, edit it, or post it.

Used by the GitHub Action (``action.yml``) through ``ragreplay gate-comment``. Talks to the REST API with the
job's token; every request has a timeout, and a failure names the status and what to check.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from ragreplay.errors import RagreplayError
from ragreplay.report.gate import COMMENT_MARKER

MAX_PAGES = 20
"""Comments are read 100 a page; a pull request with more than 2,000 comments gets a new gate comment."""
MAX_BODY = 65_000
"""GitHub refuses comment bodies over 65,536 characters."""


@dataclass(frozen=True)
class PullRequest:
    """Where the comment goes: ``owner/name`` and the pull request number, on ``api_url``."""

    repo: str
    number: int
    api_url: str = "https://api.github.com"


def upsert_comment(pr: PullRequest, body: str, token: str, timeout_s: float = 20.0) -> str:
    """Edit the pull request's gate comment (the one starting with the marker) or post a new one; returns
    ``updated`` or ``created``. ``body`` gets the marker when it lacks it and is cut to GitHub's limit."""
    if not body.startswith(COMMENT_MARKER):
        body = f"{COMMENT_MARKER}\n{body}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - 40] + "\n\n_(cut: see the full report)_\n"
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    base = f"{pr.api_url.rstrip('/')}/repos/{pr.repo}"
    with httpx.Client(headers=headers, timeout=timeout_s, trust_env=False) as client:
        existing = _find_ours(client, f"{base}/issues/{pr.number}/comments")
        if existing is not None:
            _check(
                client.patch(f"{base}/issues/comments/{existing}", json={"body": body}), "edit the comment"
            )
            return "updated"
        _check(client.post(f"{base}/issues/{pr.number}/comments", json={"body": body}), "post the comment")
        return "created"


def _find_ours(client: httpx.Client, url: str) -> int | None:
    for page in range(1, MAX_PAGES + 1):
        response = _check(client.get(url, params={"per_page": 100, "page": page}), "list the comments")
        comments = response.json()
        for comment in comments:
            if str(comment.get("body", "")).startswith(COMMENT_MARKER):
                return int(comment["id"])
        if len(comments) < 100:
            return None
    return None


def _check(response: httpx.Response, what: str) -> httpx.Response:
    if response.status_code >= 400:
        raise RagreplayError(
            f"GitHub refused to {what}: HTTP {response.status_code} {response.text[:200]}. Fix: check that the "
            "token can write pull-request comments (permissions: pull-requests: write) and the repo and number"
        )
    return response
