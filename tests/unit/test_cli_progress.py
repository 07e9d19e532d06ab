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


def test_piped_progress_is_a_start_line_then_a_line_every_few_seconds() -> None:
    import io

    from rich.console import Console

    from ragreplay.cli.common import LineProgress

    out = io.StringIO()
    now = [0.0]
    bar = LineProgress(every_s=5.0, console=Console(file=out, width=200), get_time=lambda: now[0])
    task = bar.add_task("comparing", total=100, cost=0.0, errors=0)
    with bar:
        for i in range(1, 101):  # one item a second
            now[0] = float(i)
            bar.update(task, advance=1, cost=i / 1000, errors=i // 50)
    lines = out.getvalue().splitlines()
    assert lines[0] == "comparing: started, 0/100 done"
    assert len(lines) == 1 + 20  # every 5 s, not per item; the last item always shown, and only once
    assert lines[1] == "comparing: 5/100 (5%), 1.0/s, ETA 1m35s, $0.0050 so far, 5s elapsed"
    assert lines[-1] == "comparing: 100/100 (100%), 1.0/s, $0.1000 so far, 2 errors, 1m40s elapsed"


def test_the_drivers_cleanup_warnings_are_shown_only_under_verbose() -> None:
    import logging

    from ragreplay.cli.common import set_output_mode

    driver = logging.getLogger("psycopg")
    try:
        set_output_mode(quiet=False, verbose=False)
        assert not driver.isEnabledFor(logging.WARNING) and driver.isEnabledFor(logging.ERROR)
        set_output_mode(quiet=False, verbose=True)
        assert driver.isEnabledFor(logging.WARNING)
    finally:
        set_output_mode(quiet=False, verbose=False)
