"""End to end: `ragreplay ingest` of each tracing tool's export, then a replay against a fake target."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.store import Store

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
EXPORTS = {
    "langfuse": "langfuse.jsonl",
    "langsmith": "langsmith.jsonl",
    "openinference": "phoenix.jsonl",
    "otel": "otel_genai.jsonl",
}


@pytest.mark.parametrize("fmt", list(EXPORTS))
def test_ingest_then_replay(
    fmt: str, tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mapping.yaml").write_text("rating_threshold: 4\n")
    target = {"name": "unchanged", "target": {"kind": "fake", "echo_old_answer": True}}
    (tmp_path / "target.json").write_text(json.dumps(target))
    log = str(tmp_path / EXPORTS[fmt])
    shutil.copy(TRACES / EXPORTS[fmt], log)
    mapping = ["--mapping", str(tmp_path / "mapping.yaml")]
    assert main(["ingest", log, "--db", store_url, "--dry-run", *mapping]) == 0
    assert main(["ingest", log, "--db", store_url, "--format", fmt, *mapping]) == 0
    assert "conversations" in capsys.readouterr().out
    run = ["run", "--target", str(tmp_path / "target.json"), "--judge", "fake:default", "--db", store_url]
    assert main(run) == 0
    capsys.readouterr()
    with Store.open(store_url) as store:
        (source,) = store.cases.list_sources()
        (record,) = store.runs.list_runs()
    assert source.format == fmt
    assert main(["report", record.id, "--format", "json", "--db", store_url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_cases"] == 5  # five answers carry user feedback; the others are counted skips
    assert report["n_errors"] == 0
    assert sum(report["rates"]["counts"].values()) + report["n_unscorable"] == 5
    assert report["skipped"] == {"no_feedback": 1}


def test_a_bad_export_exits_2_naming_file_line_field_and_fix(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "langfuse.jsonl"
    shutil.copy(TRACES / "langfuse.jsonl", log)  # a 1-5 rating and no rating_threshold
    assert main(["ingest", str(log), "--db", store_url]) == 2
    err = capsys.readouterr().err
    assert f"{log}:" in err and "value" in err and "rating_threshold" in err and "Traceback" not in err
    with Store.open(store_url) as store:
        assert store.cases.list_sources() == []
