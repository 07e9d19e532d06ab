"""A retriever diff's report as text, markdown or JSON: the aggregate (mean overlap@k, Jaccard, RBO, document
Jaccard, the share of queries whose top 1 changed and of identical lists, with 95% Wilson intervals; the chunks
and documents most often gained and dropped), then the queries that changed most (lowest RBO first) with their
gained, dropped and moved chunks, and the errored queries. JSON holds every query."""

from __future__ import annotations

from ragreplay.core.ranking_diff import CountedId, DiffAggregate
from ragreplay.core.run_summary import RateValue
from ragreplay.diagnosis.retriever_diff import QueryDiff, RetrieverDiffReport
from ragreplay.report.coverage import md, plain
from ragreplay.report.labels import pct

LISTED = 20
"""How many changed queries a text or md report shows."""


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _share(s: RateValue) -> str:
    if s.n == 0:
        return "– (0 queries)"
    return f"{pct(s.value)} [{pct(s.low)}–{pct(s.high)}] ({s.k}/{s.n})"


def _counted(ids: list[CountedId]) -> str:
    return ", ".join(f"{c.id} ({c.queries})" for c in ids) or "none"


def _head(r: RetrieverDiffReport) -> list[tuple[str, str]]:
    a: DiffAggregate = r.aggregate
    return [
        ("old", r.old),
        ("new", r.new),
        ("queries", f"{r.queries_from}: {len(r.rows)} ({a.queries} compared, {r.errors} errored)"),
        (f"mean overlap@{r.k}", _num(a.mean_overlap_at_k)),
        ("mean Jaccard", _num(a.mean_jaccard)),
        ("mean RBO (p=0.9)", _num(a.mean_rbo)),
        ("mean document Jaccard", _num(a.mean_doc_jaccard)),
        ("top 1 changed", _share(a.top1_changed)),
        ("identical lists", _share(a.identical)),
        ("most gained chunks", _counted(a.most_gained_chunks)),
        ("most dropped chunks", _counted(a.most_dropped_chunks)),
        ("most gained documents", _counted(a.most_gained_docs)),
        ("most dropped documents", _counted(a.most_dropped_docs)),
    ]


def changed_rows(r: RetrieverDiffReport) -> list[QueryDiff]:
    """The queries whose lists differ, the most changed (lowest RBO) first, ties in input order."""
    changed = [row for row in r.rows if row.diff is not None and row.diff.old != row.diff.new]
    return sorted(changed, key=lambda row: row.diff.rbo if row.diff is not None else 1.0)


def _moves(row: QueryDiff) -> tuple[str, str, str]:
    assert row.diff is not None
    d = row.diff
    moved = ", ".join(f"{m.id} {m.old_rank}->{m.new_rank}" for m in d.moved) or "-"
    return ", ".join(d.gained) or "-", ", ".join(d.dropped) or "-", moved


def render_diff_text(r: RetrieverDiffReport) -> str:
    """The plain-text report."""
    head = _head(r)
    width = max(len(k) for k, _ in head)
    lines = [f"retriever diff at k={r.k}", *[f"  {k.ljust(width)}  {plain(v, 300)}" for k, v in head]]
    changed = changed_rows(r)
    lines += ["", f"changed queries ({len(changed)}; most changed first)"]
    for row in changed[:LISTED]:
        assert row.diff is not None
        gained, dropped, moved = _moves(row)
        lines += [
            f"- {plain(row.id, 60)}: {plain(row.question)}",
            f"    overlap@{r.k} {row.diff.overlap_at_k:.2f}  RBO {row.diff.rbo:.2f}  top 1 "
            + ("changed" if row.diff.top1_changed else "kept"),
            f"    gained  {plain(gained, 200)}",
            f"    dropped {plain(dropped, 200)}",
            f"    moved   {plain(moved, 200)}",
        ]
    if len(changed) > LISTED:
        lines.append(f"  ... and {len(changed) - LISTED} more (--format json lists all)")
    errored = [row for row in r.rows if row.error is not None]
    if errored:
        lines += ["", f"errored queries ({len(errored)})"]
        lines += [f"- {plain(row.id, 60)}: {plain(row.error, 200)}" for row in errored[:LISTED]]
    return "\n".join(lines) + "\n"


def render_diff_md(r: RetrieverDiffReport) -> str:
    """The Markdown report."""
    lines = [f"# Retriever diff at k={r.k}", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {md(v, 400)} |" for k, v in _head(r)]
    changed = changed_rows(r)
    lines += ["", f"## Changed queries ({len(changed)}; most changed first)", ""]
    lines += [
        f"| query | overlap@{r.k} | RBO | top 1 | gained | dropped | moved |",
        "|---|---:|---:|---|---|---|---|",
    ]
    for row in changed[:LISTED]:
        assert row.diff is not None
        gained, dropped, moved = _moves(row)
        top1 = "changed" if row.diff.top1_changed else "kept"
        lines.append(
            f"| {md(row.question, 120)} | {row.diff.overlap_at_k:.2f} | {row.diff.rbo:.2f} | {top1} | "
            f"{md(gained, 200)} | {md(dropped, 200)} | {md(moved, 200)} |"
        )
    errored = [row for row in r.rows if row.error is not None]
    if errored:
        lines += ["", f"## Errored queries ({len(errored)})", ""]
        lines += [f"- {md(row.id, 60)}: {md(row.error, 200)}" for row in errored[:LISTED]]
    return "\n".join(lines) + "\n"


def render_retriever_diff(r: RetrieverDiffReport, fmt: str) -> str:
    """The report in ``fmt``: ``text``, ``md`` or ``json`` (every query)."""
    if fmt == "json":
        return r.model_dump_json(indent=2) + "\n"
    if fmt == "md":
        return render_diff_md(r)
    return render_diff_text(r)
