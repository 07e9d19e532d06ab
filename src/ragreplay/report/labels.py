"""Words and number formats shared by every report format, so they all say the same thing."""

from __future__ import annotations

from ragreplay.core.costs import cost_text
from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.judge_cards import card_for
from ragreplay.core.run_summary import RateValue, RunSummary, VerdictRates
from ragreplay.core.types import Verdict

VERDICT_MEANING = {
    Verdict.GOOD_FIT: "liked before, same answer now: quality kept",
    Verdict.GOOD_NO_FIT: "liked before, different answer now: possible regression",
    Verdict.BAD_FIT: "disliked before, same answer now: not fixed",
    Verdict.BAD_NO_FIT: "disliked before, different answer now: possible fix, review",
}

JUDGE_NOTES = {
    "local:": (
        "This run was judged by ragreplay's local judge: calibrated text signals (embedding similarity, token "
        "overlap, mismatched numbers, dates, negations and names), no language model. It catches changed facts "
        "and refusals; it cannot reliably tell a paraphrase that contradicts the old answer from one that agrees. "
        "Cases where its signals disagree are left unscorable. For a semantic judge, run with "
        "--judge provider:model."
    ),
    "fake:": (
        "This run was judged by the shipped deterministic fake model (word overlap). It shows the pipeline "
        "working; it is not a semantic judge."
    ),
}


def judge_caveat(s: RunSummary) -> str:
    """What the run's judge can and cannot tell, when it is not a language model (a local judge with its
    measured dev figures); else an empty string."""
    note = next((note for prefix, note in JUDGE_NOTES.items() if s.run.judge_name.startswith(prefix)), "")
    card = card_for(s.run.judge_name)
    return f"{note} {card.summary()}" if card is not None and note else note


LOCAL_PAIRWISE_ONLY = (
    "Preference here was decided only by the local pairwise judge (no language model, no reference answer): "
    "a screen for what to look at, not a verdict."
)


def local_judge_notes(pairwise_judge: str, *other_judges: str) -> list[str]:
    """The caveats of a comparison or gate judged by ``pairwise_judge`` (and ``other_judges``): that the
    preference was decided only by the local pairwise judge when it was, then the card of each local judge
    used (measured dev accuracy and coverage, the baseline, what it cannot tell). Empty for model judges."""
    notes = [LOCAL_PAIRWISE_ONLY] if pairwise_judge == "local:pairwise" else []
    seen: set[str] = set()
    for name in (pairwise_judge, *other_judges):
        card = card_for(name)
        if card is not None and card.judge not in seen:
            seen.add(card.judge)
            notes.append(card.summary())
    return notes


RATE_LABELS = (
    ("good_maintenance", "good maintenance", "GOOD answers kept (want high)"),
    ("good_change", "good change", "GOOD answers changed"),
    ("bad_persistence", "bad persistence", "BAD answers unchanged (want low)"),
    ("bad_change", "bad change", "BAD answers changed: candidates for review (want high)"),
)


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, or an en dash when undefined."""
    return "–" if value is None else f"{100 * value:.1f}%"


def rate_text(r: RateValue) -> str:
    """``62.5% [47.1–75.8%] (25/40)``."""
    if r.n == 0:
        return "– (0/0)"
    return f"{pct(r.value)} [{pct(r.low)}–{pct(r.high)}] ({r.k}/{r.n})"


def rate_of(rates: VerdictRates, key: str) -> RateValue:
    """One of the four rates by attribute name."""
    value = getattr(rates, key)
    assert isinstance(value, RateValue)
    return value


def header_lines(s: RunSummary) -> list[tuple[str, str]]:
    """Key facts of a run as (label, value) pairs."""
    run = s.run
    rewriter = f"{run.rewriter_name} ({run.rewrite_prompt_version})" if run.rewriter_name else "none"
    return [
        ("run", run.id),
        ("status", str(run.status)),
        ("target", f"{run.target_name} (version {run.target_version})"),
        ("judge", f"{run.judge_name} (prompt {run.judge_prompt_version})"),
        ("rewriter", rewriter),
        ("dataset", f"{run.dataset_hash} ({run.n_cases} cases)"),
        ("config", run.config_hash),
        (
            "cases",
            f"{s.n_done} judged/done, {s.n_errors} errored, {s.n_unscorable} unscorable, {s.n_pending} pending, "
            f"{s.n_rewritten} rewritten",
        ),
        ("cost", f"{cost_text(s.cost_usd, s.unpriced_calls)} ({s.tokens_in} tokens in, {s.tokens_out} out)"),
        (
            "latency",
            "–"
            if s.latency_p50_ms is None
            else f"p50 {s.latency_p50_ms:.0f} ms, p95 {(s.latency_p95_ms or 0):.0f} ms",
        ),
    ]


def truncate(text: str | None, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    if text is None:
        return "–"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def md_text(text: str) -> str:
    """Text made inert in Markdown, on one line (it is used in table cells): raw HTML and autolinks
    (``<script>``, ``<javascript:...>``) are escaped and inline links (``[x](javascript:...)``) broken, so a
    renderer shows the text as written and runs nothing; our own figures (``54.5% [38.0%-70.2%]``) are unchanged."""
    one_line = " ".join(text.split())
    return one_line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(")


NO_REVIEWS = "no reviews yet"
SIMULATED_NOTE = "simulated reviewers: the demo's ground truth, not people"


def failure_tags_head(ft: FailureTags) -> str:
    """What stands behind the failure-tag figures: ``5 reviews of 4 items``, ``no reviews yet``, and when any
    reviewer was simulated, how many of the reviews were and that they are not people."""
    if ft.reviews == 0:
        return NO_REVIEWS
    head = f"{ft.reviews} review(s) of {ft.items} item(s)"
    if not ft.tags:
        head += ", no failure tag given"
    if ft.simulated_reviews:
        share = "all" if ft.simulated_reviews == ft.reviews else f"{ft.simulated_reviews} of them"
        head += f"; {share} by {SIMULATED_NOTE}"
    return head


def failure_tag_rows(ft: FailureTags) -> list[tuple[str, str, str]]:
    """One ``(tag, items, reviews)`` row per failure tag, most frequent first."""
    return [(c.tag, str(c.items), str(c.reviews)) for c in ft.tags]
