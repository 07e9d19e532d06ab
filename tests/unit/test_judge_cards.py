"""Local judges carry their measured dev figures into every report: the run report, the comparison report
(text, Markdown, JSON) and the gate; a preference decided only by the local pairwise judge says so; a model
judge gets none of it."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime

import pytest

from ragreplay.compare.grid import build_summary
from ragreplay.core.judge_cards import CARDS, card_for
from ragreplay.core.run_summary import RunSummary, summarize
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.report import render
from ragreplay.report.compare_json import render_comparison
from ragreplay.report.labels import LOCAL_PAIRWISE_ONLY, local_judge_notes


def _run(judge: str) -> RunSummary:
    run = RunRecord(
        id="run_1",
        created_at=datetime.now(UTC),
        status=RunStatus.DONE,
        target_name="t",
        target_version="v1",
        judge_name=judge,
        judge_prompt_version="p1",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="c",
        dataset_hash="d",
        n_cases=0,
    )
    return summarize(run, [], {}, {})


def test_cards_name_the_figures_the_baseline_and_the_blind_spots() -> None:
    fit = card_for("local:fit")
    assert fit is not None and card_for("local") == fit
    assert card_for("openai:gpt-4.1-mini") is None and card_for("fake:default") is None
    for card in CARDS:
        text = card.summary()
        assert f"{card.accuracy:.3f}" in text and f"{card.coverage:.2f}" in text
        assert f"{card.baseline_accuracy:.3f}" in text and "(dev)" in text and "cannot tell" in text
        assert 0 < card.accuracy <= card.coverage <= 1


@pytest.mark.parametrize("fmt", ["text", "md", "html", "json"])
def test_a_run_judged_locally_shows_the_card_and_a_model_judged_one_does_not(fmt: str) -> None:
    card = card_for("local:fit")
    assert card is not None
    local = html.unescape(render(_run("local:fit"), fmt))
    assert f"accuracy {card.accuracy:.3f} over all rows" in local
    assert "over all rows" not in html.unescape(render(_run("openai:gpt-4.1-mini"), fmt))


def _comparison(judge: str, fit_judge: str) -> object:
    return build_summary(
        champion="champ",
        challenger_names=["b"],
        rows=[],
        outcomes={},
        judge=judge,
        judge_prompt_version="p1",
        fit_judge=fit_judge,
        order="both",
        cases="cases",
        n_cases=0,
    )


def test_a_comparison_decided_only_by_the_local_pairwise_judge_is_marked() -> None:
    local = _comparison("local:pairwise", "local:fit")
    notes = local_judge_notes("local:pairwise", "local:fit")
    assert notes[0] == LOCAL_PAIRWISE_ONLY and len(notes) == 3
    for fmt in ("text", "md"):
        shown = " ".join(render_comparison(local, fmt).split())  # type: ignore[arg-type]
        assert "decided only by the local pairwise judge" in shown, fmt
        assert "pairwise-pandalm" in shown and "answer-fit-nq301" in shown, fmt
    assert json.loads(render_comparison(local, "json"))["judge_notes"] == notes  # type: ignore[arg-type]
    model = _comparison("openai:gpt-4.1", "openai:gpt-4.1")
    assert "decided only" not in render_comparison(model, "md")  # type: ignore[arg-type]
    assert json.loads(render_comparison(model, "json"))["judge_notes"] == []  # type: ignore[arg-type]
    # a model preference with the local FIT judge for agreement: the card, but not "decided only by"
    assert local_judge_notes("openai:gpt-4.1", "local:fit") == [card_for("local:fit").summary()]  # type: ignore[union-attr]
