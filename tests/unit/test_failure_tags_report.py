"""Failure tags from review in the run report (text, Markdown, HTML, JSON) and the comparison/shadow report
(text, Markdown, JSON): counts per tag with the reviews behind them, "no reviews yet", the simulated reviewers
named as such, and a team's own tag name that holds HTML or Markdown shown inert."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime

from ragreplay.compare.grid import build_summary
from ragreplay.core.failure_tags import FailureTags, is_simulated, tally_failure_tags
from ragreplay.core.review import Review
from ragreplay.core.run_summary import RunSummary, summarize
from ragreplay.core.runs import RunRecord, RunStatus
from ragreplay.report import render
from ragreplay.report.compare_json import render_comparison

EVIL = "<img src=x onerror=alert(1)>|[x](javascript:alert(1))"


def _review(reviewer: str, key: str, *tags: str) -> Review:
    return Review(reviewer=reviewer, item_key=key, a_side="champion", choice="A", failure_tags=list(tags))


def _tags() -> FailureTags:
    return tally_failure_tags(
        [
            (("q1", "a"), _review("ann", "a", "wrong-version", EVIL)),
            (("q1", "a"), _review("bob", "a", "wrong-version")),
            (("q1", "b"), _review("ann", "b", "wrong-version")),
            (("q1", "c"), _review("bob", "c")),
        ]
    )


def test_tally_counts_items_once_per_tag_and_every_review() -> None:
    ft = _tags()
    assert (ft.reviews, ft.items, ft.simulated_reviews) == (4, 3, 0)
    assert [(c.tag, c.items, c.reviews) for c in ft.tags] == [("wrong-version", 2, 3), (EVIL, 1, 1)]
    sim = tally_failure_tags(
        [("x", _review("simulated-1", "x", "missing-document")), ("y", _review("ann", "y"))]
    )
    assert sim.simulated_reviews == 1 and is_simulated("simulated-2") and not is_simulated("ann")
    assert tally_failure_tags([]) == FailureTags()


def _run_summary(ft: FailureTags | None) -> RunSummary:
    run = RunRecord(
        id="run_ft",
        created_at=datetime.now(UTC),
        status=RunStatus.DONE,
        target_name="challenger",
        target_version="v1",
        judge_name="local:fit",
        judge_prompt_version="p1",
        rewriter_name=None,
        rewrite_prompt_version=None,
        config_hash="c",
        dataset_hash="d",
        n_cases=0,
    )
    return summarize(run, [], {}, {}).model_copy(update={"failure_tags": ft})


def test_run_report_shows_failure_tags_per_tag_in_every_format() -> None:
    s = _run_summary(_tags())
    text = render(s, "text")
    assert "Failure tags from review: 4 review(s) of 3 item(s)" in text
    assert re.search(r"wrong-version\s*│\s*2\s*│\s*3", text)
    assert "[x](javascript:alert(1))" in text  # shown as written: never taken for rich markup

    md = render(s, "md")
    assert "## Failure tags from review" in md and "4 review(s) of 3 item(s)." in md
    assert "| wrong-version | 2 | 3 |" in md
    assert "<img" not in md and "](javascript" not in md and "&lt;img" in md

    page = render(s, "html")
    assert 'id="failure-tags"' in page and "4 review(s) of 3 item(s)" in page
    assert re.search(
        r'<tr data-tag="wrong-version"><td>wrong-version</td><td class="num">2</td>'
        r'<td class="num">3</td></tr>',
        page,
    )
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page

    data = json.loads(render(s, "json"))
    assert data["failure_tags"]["reviews"] == 4
    assert data["failure_tags"]["tags"][0] == {"tag": "wrong-version", "items": 2, "reviews": 3}


def test_run_report_says_no_reviews_yet_and_names_simulated_reviewers() -> None:
    none = _run_summary(FailureTags())
    for fmt in ("text", "md", "html"):
        assert "no reviews yet" in render(none, fmt).lower(), fmt
    assert json.loads(render(none, "json"))["failure_tags"] == {
        "reviews": 0,
        "items": 0,
        "simulated_reviews": 0,
        "tags": [],
    }
    sim = _run_summary(tally_failure_tags([("x", _review("simulated-1", "x", "wrong-version"))]))
    for fmt in ("text", "md", "html"):
        shown = html.unescape(render(sim, fmt))
        assert "all by simulated reviewers: the demo's ground truth, not people" in shown, fmt
    # not looked up (a summary from the API): no section at all
    assert "Failure tags" not in render(_run_summary(None), "md")


def test_comparison_report_shows_failure_tags_per_challenger() -> None:
    base = build_summary(
        champion="champ",
        challenger_names=["b", "c"],
        rows=[],
        outcomes={},
        judge="fake:default",
        judge_prompt_version="p1",
        fit_judge="fake:default",
        order="both",
        cases="shadow rows",
        n_cases=0,
    )
    s = base.model_copy(update={"failure_tags": {"b": _tags(), "c": FailureTags()}})
    md = render_comparison(s, "md")
    assert "## Failure tags from review: b" in md and "| wrong-version | 2 | 3 |" in md
    assert "## Failure tags from review: c" in md and "No reviews yet." in md
    assert "<img" not in md and "](javascript" not in md
    text = render_comparison(s, "text")
    assert "Failure tags from review, b: 4 review(s) of 3 item(s)" in text
    assert "Failure tags from review, c: no reviews yet" in text
    data = json.loads(render_comparison(s, "json"))
    assert data["failure_tags"]["b"]["tags"][1]["tag"] == EVIL and data["failure_tags"]["c"]["reviews"] == 0
    assert "Failure tags" not in render_comparison(base, "md")  # a comparison on cases looks none up
