"""The shadow rig end to end on the shipped HR data, offline: two RAG apps on loopback, the proxy in front,
users asking the logged first questions and giving their logged thumbs through the app's feedback endpoint.

The champion app answers with the production configuration, so the answers users rated in the log are the
answers it gives again; the challenger is the shipped candidate. Every request is shadowed (rate 1.0).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ragreplay.asgi.guard import WholeBodies
from ragreplay.asgi.serving import serve_in_thread
from ragreplay.core.types import Case
from ragreplay.demo.configs import demo_config
from ragreplay.shadow.mirror import FeedbackTap
from ragreplay.shadow.payloads import RequestFields
from ragreplay.shadow.sampler import Sampler
from ragreplay.shadow.serve_app import build_app
from ragreplay.store import Store
from ragreplay.targets.asgi import TargetApp
from ragreplay.targets.loader import load_target

FIELDS = RequestFields(contexts_path="contexts", tags_path="tags", user_path="user_id", request_id_path="id")


@dataclass(frozen=True)
class TrafficResult:
    """What the simulated users did and what the proxy counted."""

    requests: int
    answered: int
    feedback_sent: int
    failed: int
    proxy_stats: dict[str, Any]


def first_questions(cases: Sequence[Case], limit: int | None = None) -> list[Case]:
    """The labelled cases that open a conversation (a live request carries no history), in id order."""
    opening = sorted((c for c in cases if not c.history), key=lambda c: c.id)
    return opening if limit is None else opening[:limit]


async def _users(
    proxy_url: str, cases: Sequence[Case], concurrency: int, on_done: Callable[[], None]
) -> tuple[int, int, int]:
    """Each case's user asks, then rates the answer with the thumbs from the log; (answered, rated, failed)."""
    todo = iter(cases)
    answered = rated = failed = 0
    async with httpx.AsyncClient(base_url=proxy_url, timeout=60, trust_env=False) as client:

        async def user() -> None:
            nonlocal answered, rated, failed
            for case in todo:
                body = {"question": case.query, "tags": case.tags, "user_id": case.user_id}
                resp = await client.post("/ask", json=body)
                if resp.status_code != 200:
                    failed += 1
                    on_done()
                    continue
                answered += 1
                thumbs = {"request_id": resp.json()["id"], "feedback": case.feedback.value}
                rated += (await client.post("/feedback", json=thumbs)).status_code == 204
                on_done()

        await asyncio.gather(*(user() for _ in range(concurrency)))
    return answered, rated, failed


def run_traffic(
    data: Path,
    out: Path,
    db: str,
    cases: Sequence[Case],
    concurrency: int = 4,
    on_done: Callable[[], None] = lambda: None,
) -> TrafficResult:
    """Serve both apps and the proxy on loopback, send the users' traffic, stop the proxy (its shadow log is
    flushed then) and return the counts."""
    champion = load_target(demo_config(data, "champion", out))
    challenger = load_target(demo_config(data, "challenger", out))
    with (
        serve_in_thread(TargetApp(champion)) as champion_url,
        serve_in_thread(TargetApp(challenger)) as challenger_url,
    ):
        app = build_app(
            champion_url,
            {"challenger": challenger_url},
            Store.open(db),
            Sampler(1.0),
            FIELDS,
            timeout_s=60,
            challenger_timeout_s=60,
            mirror_paths=("/ask",),
            feedback=FeedbackTap("/feedback"),
        )
        app.close_timeout_s = 120  # let every challenger finish before the log is flushed
        with serve_in_thread(WholeBodies(app), join_timeout=180) as proxy_url:
            answered, rated, failed = asyncio.run(_users(proxy_url, cases, concurrency, on_done))
            stats = httpx.get(proxy_url + "/_shadow/stats", trust_env=False, timeout=10).json()
    stats["shadow_final"] = app.mirror.shadow.stats().as_dict()
    return TrafficResult(len(cases), answered, rated, failed, stats)
