"""`ingest --dry-run`'s tables beside the counts: the first turns read, each value with the field it came from,
and the records read and left out, by kind and reason."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ragreplay.ingest import IngestSummary
from ragreplay.ingest.preview import TurnPreview


def _value_rows(turn: TurnPreview) -> list[tuple[str, str, str]]:
    tokens = f"{turn.tokens['input']} in, {turn.tokens['output']} out" if turn.tokens else ""
    latency = f"{turn.latency_ms:,.0f} ms" if turn.latency_ms is not None else ""
    values = [
        ("question", turn.question),
        ("answer", turn.answer),
        ("history", f"{turn.history_messages} earlier message(s)" if turn.history_messages else ""),
        ("retrieved", ", ".join(turn.chunk_ids)),
        ("latency_ms", latency),
        ("tokens", tokens),
        ("feedback", turn.feedback or ""),
        ("session", turn.conversation_id),
        ("user_id", turn.user_id or ""),
    ]
    return [(name, value or "-", turn.origin.get(name, "")) for name, value in values]


def turn_table(turn: TurnPreview) -> Table:
    """One previewed turn: each value as read and the source field it came from (text shown as is, never
    as markup)."""
    title = Text(f"conversation {turn.conversation_id}, turn {turn.turn}")
    table = Table(title=title, show_header=True, title_justify="left")
    table.add_column("value", style="bold", no_wrap=True)
    table.add_column("read")
    table.add_column("from", style="dim")
    for name, value, origin in _value_rows(turn):
        table.add_row(name, Text(value), Text(origin))
    return table


def counts_table(title: str, counts: dict[str, int]) -> Table:
    """Records by kind or reason, most first."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("records", justify="right")
    for what, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(Text(what), f"{n:,}")
    return table


def dry_run_tables(summary: IngestSummary) -> list[Table]:
    """The preview's tables in the order shown: the first turns, then records read, then records left out."""
    tables = [turn_table(turn) for turn in summary.preview]
    if summary.records_read:
        tables.append(counts_table("records read and used", summary.records_read))
    if summary.records_ignored:
        tables.append(counts_table("records read and left out", summary.records_ignored))
    return tables
