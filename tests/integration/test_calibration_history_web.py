"""The dashboard's calibration area lists the calibration history per judge version (escaped), in /index.json
too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from starlette.testclient import TestClient

from ragreplay.core.review import Review, taxonomy
from ragreplay.review.history import record_history, version_figures
from ragreplay.review.queues import build_calibration_queue
from ragreplay.store import Store
from ragreplay.store.calibration_history import CalibrationSnapshot
from ragreplay.web.app import create_app
from regset_data import seed_shadow

NOW = datetime.now(UTC).replace(microsecond=0)


def test_the_overview_lists_the_calibration_history(store: Store, store_url: str) -> None:
    seed_shadow(store, NOW)
    queue = build_calibration_queue(store, NOW - timedelta(days=7), taxonomy(), n=5, seed=1)
    while (a := store.reviews.next_item_for(queue.id, "ann")) is not None:
        review = {"reviewer": "ann", "item_key": a.item.key, "a_side": a.a_side, "choice": "tie"}
        store.reviews.save_review(queue.id, Review.model_validate(review))
    with TestClient(create_app(store_url, cache_s=0)) as client:
        assert 'id="calibration-history"' not in client.get("/").text  # nothing computed yet
        (snap,) = record_history(store, version_figures(store), "calibration")
        hostile = snap.model_copy(
            update={"judge": "<script>alert(1)</script>@p2", "judge_version": "jv_x", "n": 7, "agree": 7}
        )
        store.calibration_history.record([CalibrationSnapshot.model_validate(hostile.model_dump())])
        page = client.get("/").text
        assert 'id="calibration-history"' in page and f'data-judge-version="{snap.judge_version}"' in page
        assert "fake:default@p1" in page and f"{snap.agree}/{snap.n}" in page and "7/7" in page
        assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;@p2" in page
        history = client.get("/index.json").json()["calibration"]["history"]
        assert [h["judge_version"] for h in history] == ["jv_x", snap.judge_version]
        assert history[1]["n"] == snap.n and history[1]["source"] == "calibration"
