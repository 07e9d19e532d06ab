"""A target served as a JSON RAG app: answers with id, text and chunk ids; feedback endpoint; clear errors."""

from __future__ import annotations

from typing import Any

import httpx

from ragreplay.targets.asgi import TargetApp
from shadow_fakes import FakeTarget


async def call(app: TargetApp, method: str, path: str, **kwargs: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.request(method, path, **kwargs)


async def test_answers_with_the_targets_text_chunks_and_the_case_it_was_given() -> None:
    target = FakeTarget("champ", text="25 dagen.")
    app = TargetApp(target)
    body = {"question": "Hoeveel vakantiedagen?", "tags": {"department": "hr"}, "user_id": 7}
    resp = await call(app, "POST", "/ask", json=body)
    assert resp.status_code == 200
    data = resp.json()
    assert data["answer"] == "25 dagen." and data["contexts"] == [{"id": "champ#1"}]
    assert len(data["id"]) == 32 and data["latency_ms"] >= 0
    question, case = target.calls[0]
    assert question == "Hoeveel vakantiedagen?"
    assert case.tags == {"department": "hr"} and case.user_id == "7"
    assert app.answered == 1


async def test_feedback_endpoint_and_errors() -> None:
    seen: list[dict[str, Any]] = []
    app = TargetApp(FakeTarget("champ"), feedback=seen.append)
    ok = await call(app, "POST", "/feedback", json={"request_id": "r1", "feedback": "bad"})
    assert ok.status_code == 204 and seen == [{"request_id": "r1", "feedback": "bad"}]
    assert (await call(app, "POST", "/feedback", json={"request_id": "r1"})).status_code == 422
    assert (await call(app, "GET", "/ask")).status_code == 405
    bad = await call(app, "POST", "/ask", content=b"{not json")
    assert bad.status_code == 400 and "bad JSON" in bad.json()["error"]
    assert (await call(app, "POST", "/ask", json={"question": " "})).status_code == 400
    broken = await call(TargetApp(FakeTarget("x", mode="raise")), "POST", "/ask", json={"question": "q"})
    assert broken.status_code == 500 and broken.json()["error"] == "RuntimeError: index offline"
    failed = await call(TargetApp(FakeTarget("x", mode="error")), "POST", "/ask", json={"question": "q"})
    assert failed.status_code == 502 and failed.json()["error"] == "rate limited"
