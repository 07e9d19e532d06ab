"""The shared progress bar: counts, a rate once there is one, ETA and elapsed time."""

from __future__ import annotations

from rich.progress import MofNCompleteColumn, TimeElapsedColumn, TimeRemainingColumn

from ragreplay.cli.common import RateColumn, count_progress


def test_rate_column_shows_a_dash_then_items_per_second() -> None:
    clock = iter([0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    bar = count_progress()
    bar.get_time = lambda: next(clock)  # type: ignore[method-assign]
    task_id = bar.add_task("judging", total=10)
    task = bar.tasks[0]
    assert RateColumn().render(task).plain == "–/s"
    bar.advance(task_id, 2)
    bar.advance(task_id, 2)
    assert RateColumn().render(task).plain == "2.0/s"  # 4 items over 2 s
    kinds = {type(c) for c in bar.columns}
    assert {MofNCompleteColumn, RateColumn, TimeRemainingColumn, TimeElapsedColumn} <= kinds
