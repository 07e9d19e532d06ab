"""The figures of a comparison report as text cells, shared by the text and Markdown renderers so both say the
same thing."""

from __future__ import annotations

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.core.compare_stats import ChallengerSummary, PreferenceStats, TagBreakdown
from ragreplay.core.costs import cost_text
from ragreplay.report.labels import pct, rate_text


def ms(value: float | None) -> str:
    """Milliseconds without decimals, or an en dash."""
    return "–" if value is None else f"{value:.0f} ms"


def signed_ms(value: float | None) -> str:
    """A latency delta with its sign."""
    return "–" if value is None else f"{value:+.0f} ms"


def usd(value: float, unpriced_calls: int = 0) -> str:
    """Dollars with four decimals, with the calls whose price is unknown (see ``core/costs.cost_text``)."""
    return cost_text(value, unpriced_calls)


def cost_delta_text(s: ChallengerSummary) -> str:
    """Challenger minus champion in dollars; ``price unknown`` when a side has calls of unknown price."""
    return f"{s.cost.delta_usd:+.4f} $" if s.cost.delta_known else "price unknown"


def p_text(value: float | None) -> str:
    """A p-value with three significant digits."""
    return "–" if value is None else f"{value:.3g}"


def preference_text(p: PreferenceStats) -> str:
    """``75.0% [58.8–87.3%] (30 vs 10, 5 ties)``: the challenger's win share among decided pairs."""
    counts = f"({p.challenger_wins} vs {p.champion_wins}, {p.ties} ties)"
    if p.n_decided == 0:
        return f"– {counts}"
    return f"{pct(p.share)} [{pct(p.low)}–{pct(p.high)}] {counts}"


def consistency_text(s: ChallengerSummary) -> str:
    """Order consistency, or why it is not measured."""
    pos = s.position
    if pos is None or pos.consistency_rate is None:
        return "not measured (single random order)" if pos is not None else "–"
    return f"{pct(pos.consistency_rate)} ({pos.consistent} pairs)"


def favoured_text(s: ChallengerSummary) -> str:
    """The favoured position (A shown first, B second) with the binomial p-value."""
    pos = s.position
    if pos is None:
        return "–"
    who = pos.favoured or "none"
    return f"{who} (A {pos.a_wins} / B {pos.b_wins}, p={p_text(pos.p_value)})"


def grid_rows(summary: ComparisonSummary) -> list[tuple[str, list[str]]]:
    """One (label, cell per challenger) per figure of the grid, in report order."""
    cs = summary.challengers
    return [
        ("cases (side errors)", [f"{s.n_cases} ({s.n_errors})" for s in cs]),
        ("agreement (FIT)", [rate_text(s.agreement) for s in cs]),
        ("agreement unscorable", [str(s.agreement_unscorable) for s in cs]),
        ("preference when they disagree", [preference_text(s.preference_disagreements) for s in cs]),
        ("p-value (sign test), disagreements", [p_text(s.preference_disagreements.p_value) for s in cs]),
        ("preference over all cases", [preference_text(s.preference_all) for s in cs]),
        ("p-value (sign test), all cases", [p_text(s.preference_all.p_value) for s in cs]),
        ("preference could not score", [str(s.preference_unscorable) for s in cs]),
        ("order consistency", [consistency_text(s) for s in cs]),
        ("favoured position", [favoured_text(s) for s in cs]),
        (
            "latency p50 champion → challenger",
            [f"{ms(s.latency.champion_p50)} → {ms(s.latency.challenger_p50)}" for s in cs],
        ),
        ("latency p50 delta", [signed_ms(s.latency.delta_p50) for s in cs]),
        (
            "latency p95 champion → challenger",
            [f"{ms(s.latency.champion_p95)} → {ms(s.latency.challenger_p95)}" for s in cs],
        ),
        ("latency p95 delta", [signed_ms(s.latency.delta_p95) for s in cs]),
        (
            "cost champion → challenger",
            [
                f"{usd(s.cost.champion_usd, s.cost.champion_unpriced_calls)} → "
                f"{usd(s.cost.challenger_usd, s.cost.challenger_unpriced_calls)}"
                for s in cs
            ],
        ),
        ("cost delta", [cost_delta_text(s) for s in cs]),
        (
            "wrong language champion / challenger",
            [f"{s.champion_wrong_language} / {s.challenger_wrong_language}" for s in cs],
        ),
        *feedback_rows(cs),
    ]


def feedback_rows(cs: list[ChallengerSummary]) -> list[tuple[str, list[str]]]:
    """The user-feedback figures of the grid; none when no challenger has rated rows."""
    if all(s.feedback is None for s in cs):
        return []
    none = "–"
    f = [s.feedback for s in cs]
    return [
        ("users rated champion good / bad", [none if x is None else f"{x.n_good} / {x.n_bad}" for x in f]),
        (
            "good answers kept (GOOD_FIT)",
            [none if x is None else rate_text(x.verdicts.good_maintenance) for x in f],
        ),
        (
            "bad answers changed (BAD_NO_FIT, review)",
            [none if x is None else rate_text(x.verdicts.bad_change) for x in f],
        ),
        (
            "preference where users said bad",
            [none if x is None else preference_text(x.preference_bad) for x in f],
        ),
        (
            "preference where users said good",
            [none if x is None else preference_text(x.preference_good) for x in f],
        ),
    ]


TAG_COLUMNS = ("challenger", "tag", "n", "agreement (FIT)", "preference when they disagree")


def tag_rows(summary: ComparisonSummary) -> list[list[str]]:
    """The per-tag table: one row per challenger and tag value."""
    rows = []
    for s in summary.challengers:
        t: TagBreakdown
        for t in s.by_tag:
            rows.append(
                [
                    s.name,
                    f"{t.tag}={t.value}",
                    str(t.n),
                    rate_text(t.agreement),
                    preference_text(t.preference),
                ]
            )
    return rows


def header_lines(summary: ComparisonSummary) -> list[tuple[str, str]]:
    """What was compared, on which cases, judged by what."""
    order = "both orders" if summary.order == "both" else "single random order"
    lines = [
        ("comparison", summary.id or "–"),
        ("champion", summary.champion),
        ("challengers", ", ".join(s.name for s in summary.challengers)),
        ("cases", f"{summary.n_cases} from {summary.cases}"),
        ("pairwise judge", f"{summary.judge} (prompt {summary.judge_prompt_version}), {order}"),
        ("agreement judge", summary.fit_judge),
    ]
    if summary.seed is not None:
        lines.append(("seed", str(summary.seed)))
    return lines
