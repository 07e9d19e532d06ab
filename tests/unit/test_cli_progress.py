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


def test_the_replay_bar_is_redrawn_ten_times_a_second_not_per_case() -> None:
    from ragreplay.cli.run_cmd import progress_bar, progress_updater
    from ragreplay.jobs.runner import Progress

    bar = progress_bar()
    task = bar.add_task("replay", total=1000, rate="–", cost=0.0, errors=0, unscorable=0)
    updates: list[int] = []
    update = bar.update
    bar.update = lambda *a, **kw: updates.append(kw["completed"]) or update(*a, **kw)  # type: ignore[method-assign]
    ticks = iter(i * 0.001 for i in range(10_000))  # one case a millisecond
    on_progress = progress_updater(bar, task, clock=lambda: next(ticks))
    for done in range(1, 1001):
        on_progress(Progress(total=1000, done=done, errors=done // 100))
    assert 10 <= len(updates) <= 12  # about every 100 cases, not 1000 redraws
    assert updates[-1] == 1000 and bar.tasks[0].fields["errors"] == 10  # the last case is always shown
