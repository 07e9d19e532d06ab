"""The HTML report: one self-contained page, every number present, all model and user text escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from builders import make_case
from ragreplay.core.run_summary import summarize
from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord, RunStatus
from ragreplay.core.types import Answer, Case, Feedback, Fit, Judgment, RetrievedChunk, Rewrite, Verdict
from ragreplay.report import render

EVIL = "<script>alert('x')</script>"


def _run(judge: str = "local:fit") -> RunRecord:
    return RunRecord(
        id="run_html",
        created_at=datetime.now(UTC),
        status=RunStatus.DONE,
        target_name="challenger",
        target_version="v1",
        judge_name=judge,
        judge_prompt_version="p1",
        rewriter_name="local:referent",
        rewrite_prompt_version="r1",
        config_hash="c",
        dataset_hash="d",
        n_cases=3,
    )


def _case(i: int, feedback: Feedback, answer: str) -> Case:
    return make_case(
        id=f"case_{i}",
        conversation_id=f"conv_{i}",
        query=f"question {i}?",
        old_answer=answer,
        feedback=feedback,
        retrieved=(RetrievedChunk(id=f"old-doc#{i}"),),
        tags={"department": "hr" if i % 2 else "finance"},
    )


def _summary(judge: str = "local:fit"):  # type: ignore[no-untyped-def]
    cases = {
        c.id: c
        for c in (
            _case(1, Feedback.BAD, EVIL),
            _case(2, Feedback.GOOD, "25 days"),
            _case(3, Feedback.GOOD, "x"),
        )
    }
    judged = Judgment(fit=Fit.NO_FIT, reason="numbers differ", judge=judge, prompt_version="p1")
    results = [
        ResultRecord(
            run_id="run_html",
            case_id="case_1",
            status=ResultStatus.DONE,
            rewrite=Rewrite(original="question 1?", query="what is question 1?", rewritten=True),
            answer=Answer(text=f"new {EVIL}", contexts=(RetrievedChunk(id="new-doc#7"),)),
            judgment=judged,
            verdict=Verdict.BAD_NO_FIT,
        ),
        ResultRecord(
            run_id="run_html",
            case_id="case_2",
            status=ResultStatus.DONE,
            answer=Answer(text="25 days"),
            judgment=judged.model_copy(update={"fit": Fit.FIT}),
            verdict=Verdict.GOOD_FIT,
        ),
        ResultRecord(
            run_id="run_html", case_id="case_3", status=ResultStatus.ERROR, error="target: boom <b>"
        ),
    ]
    return summarize(_run(judge), results, cases, {})


def test_html_is_self_contained_and_escaped() -> None:
    page = render(_summary(), "html")
    assert page.startswith("<!doctype html>")
    assert "<script" not in page  # neither ours nor the injected one
    assert "&lt;script&gt;alert(" in page
    assert "target: boom &lt;b&gt;" in page
    assert not re.search(r'(src|href)="https?://', page)  # nothing loaded from elsewhere


def test_html_shows_matrix_rates_tags_and_cases() -> None:
    page = render(_summary(), "html")
    assert re.search(r'data-verdict="BAD_NO_FIT">1<', page)
    assert re.search(r'data-verdict="GOOD_FIT">1<', page)
    assert re.search(r'data-verdict="ERROR">1<', page)
    assert "100.0% [" in page  # a rate with its interval
    assert ">department<" in page and ">finance<" in page
    assert "new-doc#7" in page and "old-doc#1" in page
    assert "rewritten from: question 1?" in page
    # review rows come first in the case list
    assert page.index('data-case="case_1"') < page.index('data-case="case_2"')


def test_html_names_a_local_judge_and_what_it_cannot_tell() -> None:
    assert 'id="judge-note"' in render(_summary("local:fit"), "html")
    assert "cannot reliably tell" in render(_summary("local:fit"), "html")
    assert 'id="judge-note"' not in render(_summary("openai:gpt-4.1-mini"), "html")


def test_every_format_says_what_a_local_judge_cannot_tell() -> None:
    for fmt in ("text", "md", "html"):
        assert "cannot reliably tell" in " ".join(render(_summary("local:fit"), fmt).split()), fmt
        assert "cannot reliably tell" not in render(_summary("openai:gpt-4.1-mini"), fmt), fmt


def test_markdown_reports_escape_html_and_links_as_html_does() -> None:
    from ragreplay.report.labels import md_text

    page = render(_summary(), "md")
    assert "<script>" not in page and "&lt;script&gt;" in page
    link = "[click](javascript:alert(1)) <javascript:alert(2)> a|b\nc"
    assert md_text(link) == "[click]\\(javascript:alert(1)) &lt;javascript:alert(2)&gt; a\\|b c"
    assert md_text("54.5% [38.0%-70.2%] (18/33)") == "54.5% [38.0%-70.2%] (18/33)"  # our figures unchanged
