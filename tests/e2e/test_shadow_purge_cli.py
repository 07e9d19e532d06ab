"""`ragreplay shadow purge` in-process on SQLite and PostgreSQL: dry run, --yes, confirmation on a terminal,
refusal without --yes elsewhere, the guard against a too-recent cutoff, bad input, --vacuum."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow
from ragreplay.core.types import Feedback
from ragreplay.store import Store

NOW = datetime.now(UTC)
SIDE = ShadowAnswer(text="employees get 25 leave days " * 50)
CUTOFF_LINE = re.compile(r"older than (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


def seed(url: str) -> None:
    """Two requests 100 days old (one labelled), one 10 days old (labelled 100 days ago), one 10 minutes old."""
    now = datetime.now(UTC)  # at seeding, not import: the 10-minute-old row must stay newer than 30m
    ages = {"req-old-1": 100, "req-old-2": 100, "req-recent": 10}
    rows = [
        ShadowRow(
            request_id=rid,
            ts=now - timedelta(days=days),
            query="q",
            challenger=c,
            champion_answer=SIDE,
            challenger_answer=SIDE,
        )
        for rid, days in ages.items()
        for c in ("b", "c")
    ]
    rows.append(
        ShadowRow(
            request_id="req-now",
            ts=now - timedelta(minutes=10),
            query="q",
            challenger="b",
            champion_answer=SIDE,
            challenger_answer=SIDE,
        )
    )
    with Store.open(url) as store:
        store.shadow_rows.write_shadow_rows(rows)
        store.shadow_feedback.write_shadow_feedback(
            [
                ShadowFeedback(request_id=rid, feedback=Feedback.GOOD, ts=now - timedelta(days=100))
                for rid in ("req-old-1", "req-recent")
            ]
        )


def stored(url: str) -> tuple[int, int]:
    """(shadow rows, feedback labels) in the store."""
    with Store.open(url) as store:
        return store.shadow_rows.count_shadow_rows(), store.shadow_feedback.count_shadow_feedback()[0]


class Terminal(io.StringIO):
    """A stdin that says it is a terminal and answers the prompt with what it was given."""

    def isatty(self) -> bool:
        return True


def purge(url: str, *extra: str) -> int:
    return main(["shadow", "purge", "--db", url, *extra])


def test_dry_run_counts_and_deletes_nothing(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(store_url)
    started = datetime.now(UTC)
    assert purge(store_url, "--older-than", "90d", "--dry-run") == 0
    finished = datetime.now(UTC)
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("would purge 4 shadow row(s), 0 judgment(s), 1 feedback label(s) older than ")
    assert err.endswith("; dry run: nothing deleted")
    cutoff = CUTOFF_LINE.search(err)
    assert cutoff is not None
    shown = datetime.fromisoformat(cutoff.group(1))
    days_90 = timedelta(days=90)
    assert started.replace(microsecond=0) - days_90 <= shown <= finished - days_90
    assert stored(store_url) == (7, 2)


def test_yes_purges_and_prints_the_counts(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(store_url)
    assert purge(store_url, "--older-than", "90d", "--yes") == 0
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(
        r"purged 4 shadow row\(s\), 0 judgment\(s\), 1 feedback label\(s\) older than \S+Z", err
    ), err
    assert stored(store_url) == (3, 1)  # req-recent's old label stays with its rows
    with Store.open(store_url) as store:
        assert set(store.shadow_feedback.shadow_feedback_for(["req-old-1", "req-recent"])) == {"req-recent"}


def test_iso_date_cutoff(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(store_url)
    day = (NOW - timedelta(days=50)).date().isoformat()
    assert purge(store_url, "--older-than", day, "-y") == 0
    assert f"older than {day}T00:00:00Z" in capsys.readouterr().err
    assert stored(store_url) == (3, 1)


def test_refuses_without_yes_when_stdin_is_not_a_terminal(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(store_url)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # piped input is no consent
    assert purge(store_url, "--older-than", "90d") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "refusing to purge 4 shadow row(s), 0 judgment(s), 1 feedback label(s)" in err
    assert "stdin is not a terminal. Fix: add --yes" in err
    assert stored(store_url) == (7, 2)


def test_asks_on_a_terminal(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(store_url)
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert purge(store_url, "--older-than", "90d") == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "Permanently delete 4 shadow row(s), 0 judgment(s), 1 feedback label(s) older than" in err
    assert "aborted: nothing purged" in err
    assert stored(store_url) == (7, 2)

    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert purge(store_url, "--older-than", "90d") == 0
    assert "purged 4 shadow row(s)" in capsys.readouterr().err
    assert stored(store_url) == (3, 1)


def test_nothing_to_purge_needs_no_confirmation(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(store_url)
    assert purge(store_url, "--older-than", "200d") == 0
    assert capsys.readouterr().err.startswith("purged 0 shadow row(s), 0 judgment(s), 0 feedback label(s)")


@pytest.mark.parametrize(
    ("older_than", "message"),
    [
        ("30m", "--older-than '30m' keeps less than 1 hour of shadow traffic"),
        ("0d", "--older-than '0d' keeps less than 1 hour of shadow traffic"),
        ("2999-01-01", "--older-than '2999-01-01' is in the future"),
    ],
)
def test_guard_refuses_a_recent_or_future_cutoff_unless_forced(
    store_url: str, capsys: pytest.CaptureFixture[str], older_than: str, message: str
) -> None:
    seed(store_url)
    assert purge(store_url, "--older-than", older_than, "--yes") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert "or add --force" in err
    assert stored(store_url) == (7, 2)

    assert purge(store_url, "--older-than", older_than, "--yes", "--force") == 0
    left = 1 if older_than == "30m" else 0  # the row 10 minutes old is newer than 30m
    assert stored(store_url) == (left, 0)


def test_one_hour_is_allowed(store_url: str) -> None:
    seed(store_url)
    assert purge(store_url, "--older-than", "1h", "--yes") == 0
    assert stored(store_url) == (1, 0)


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo.db"
    assert purge(str(missing), "--older-than", "90d", "--yes") == 2
    assert "There is no store at" in capsys.readouterr().err
    assert not missing.exists()  # a typo does not create an empty store

    assert purge(str(missing), "--older-than", "90 days") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--older-than '90 days' is not an age or a date. Fix: use e.g. 90d" in err

    assert main(["shadow", "purge", "--db", str(missing)]) == 2  # --older-than is required
    assert "--older-than" in capsys.readouterr().err


def test_vacuum(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed(store_url)
    big = ShadowAnswer(text="leave " * 2000)
    old = NOW - timedelta(days=100)
    with Store.open(store_url) as store:
        store.shadow_rows.write_shadow_rows(
            [
                ShadowRow(
                    request_id=f"big{i}",
                    ts=old,
                    query="q",
                    challenger="b",
                    champion_answer=big,
                    challenger_answer=big,
                )
                for i in range(200)
            ]
        )
    path = Path(store_url.removeprefix("sqlite:///"))
    before = path.stat().st_size if path.exists() else 0
    assert purge(store_url, "--older-than", "5d", "--yes", "--vacuum") == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("purged 206 shadow row(s)")
    if store_url.startswith("postgresql"):
        assert lines[1] == (
            "--vacuum: nothing to do on PostgreSQL (autovacuum makes the freed space reusable)"
        )
        return
    sizes = re.fullmatch(r"VACUUM: store file (\d+\.\d) MB -> (\d+\.\d) MB", lines[1])
    assert sizes is not None, lines
    assert float(sizes.group(1)) > 4.0
    assert float(sizes.group(2)) < 0.5
    assert before > 4_000_000
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    assert path.stat().st_size < 500_000  # the freed pages went back to the OS
    assert stored(store_url) == (1, 0)
