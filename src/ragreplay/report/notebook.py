"""What the Python API returns, shown in a notebook: the summary objects with a small ``_repr_html_`` table
(every value escaped). Each view is a subclass of the object it shows, with the same fields, so code that reads
the summary is unchanged; the full report stays :func:`ragreplay.render_report`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from html import escape
from typing import Any

from ragreplay.core.costs import cost_text
from ragreplay.core.run_summary import RunSummary
from ragreplay.core.types import Verdict
from ragreplay.gate.run import GateReport
from ragreplay.ingest import IngestSummary
from ragreplay.report.labels import RATE_LABELS, rate_of, rate_text


def html_table(caption: str, header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """A plain HTML table, every cell and the caption escaped (``None`` shown as an empty cell)."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{'' if v is None else escape(str(v))}</td>" for v in row) + "</tr>"
        for row in rows
    )
    return f"<table><caption>{escape(caption)}</caption><tr>{head}</tr>{body}</table>"


class RunSummaryView(RunSummary):
    """A :class:`RunSummary` that a notebook shows as its counts, verdict matrix and rates."""

    @classmethod
    def of(cls, summary: RunSummary) -> RunSummaryView:
        """The view of ``summary`` (its fields shared, nothing recomputed)."""
        return cls.model_construct(_fields_set=summary.model_fields_set, **dict(summary))

    def _repr_html_(self) -> str:
        run = self.run
        counts = self.rates.counts
        facts = [
            ("target", f"{run.target_name} ({run.target_version})"),
            ("judge", f"{run.judge_name} ({run.judge_prompt_version})"),
            ("status", str(run.status)),
            (
                "cases",
                f"{self.n_done} done of {self.n_cases}; {self.n_errors} errors, {self.n_unscorable} unscorable",
            ),
            ("cost", cost_text(self.cost_usd, self.unpriced_calls)),
        ]
        matrix = [
            ("GOOD", counts[Verdict.GOOD_FIT], counts[Verdict.GOOD_NO_FIT]),
            ("BAD", counts[Verdict.BAD_FIT], counts[Verdict.BAD_NO_FIT]),
        ]
        rates = [(label, rate_text(rate_of(self.rates, key))) for key, label, _ in RATE_LABELS]
        return (
            html_table(f"run {run.id}", ("", ""), facts)
            + html_table("verdicts", ("users said", "new answer fits", "new answer differs"), matrix)
            + html_table("rates, 95% Wilson intervals", ("rate", "value [interval] (k/n)"), rates)
        )


class IngestSummaryView(IngestSummary):
    """An :class:`IngestSummary` that a notebook shows as its counts."""

    @classmethod
    def of(cls, summary: IngestSummary) -> IngestSummaryView:
        """The view of ``summary``."""
        return cls.model_construct(_fields_set=summary.model_fields_set, **dict(summary))

    def _repr_html_(self) -> str:
        rows: list[tuple[str, Any]] = []
        for key, value in self.model_dump(mode="json").items():
            if isinstance(value, dict):
                rows += [(f"{key}: {sub}", n) for sub, n in sorted(value.items())]
            else:
                rows.append((key, value))
        return html_table(f"ingest of {self.path}", ("what", "count"), rows)


@dataclass(frozen=True)
class GateReportView(GateReport):
    """A :class:`GateReport` that a notebook shows as its decision and bars."""

    @classmethod
    def of(cls, report: GateReport) -> GateReportView:
        """The view of ``report``."""
        return cls(**{f.name: getattr(report, f.name) for f in fields(report)})

    def _repr_html_(self) -> str:
        verdict = self.verdict
        bars = [
            (bar.name, bar.description, f"{bar.k}/{bar.n}", bar.value, bar.threshold, str(bar.decision))
            for bar in verdict.bars
        ]
        caption = (
            f"gate {self.gate.id}: {verdict.decision} (exit {verdict.exit_code}), {verdict.n_items} items, "
            f"{verdict.n_errors} errors"
        )
        header = ("bar", "means", "k/n", "value", "threshold", "decision")
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in verdict.reasons)
        return html_table(caption, header, bars) + (f"<ul>{reasons}</ul>" if reasons else "")
