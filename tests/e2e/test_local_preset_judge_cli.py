"""`--judge ollama:llama3.1` as a user types it: no config file, the Ollama preset moved by ``OLLAMA_HOST`` to a
loopback OpenAI-compatible mock server (the test switch lifted explicitly for this test), through the CLI."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

import httpx
import pytest

from ragreplay.cli.app import main
from ragreplay.demo.sample import build_sample

ROOT = Path(__file__).resolve().parents[2]
TARGET = "name: candidate\ntarget:\n  kind: logged\n  log: candidate.jsonl\n  match: turn\n"


def _mock() -> ModuleType:
    path = ROOT / "benchmarks" / "mock_openai_server.py"
    spec = importlib.util.spec_from_file_location("mock_openai_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def mock_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A mock OpenAI server on loopback, reachable as Ollama through ``OLLAMA_HOST=127.0.0.1:PORT``."""
    base_url, stop = _mock().run_in_thread(port=0, latency_ms=1)
    monkeypatch.delenv("RAGREPLAY_BLOCK_REAL_MODELS", raising=False)  # a loopback server, on purpose
    monkeypatch.setenv("OLLAMA_HOST", urlsplit(base_url).netloc)  # host:port, as Ollama users write it
    try:
        yield base_url
    finally:
        stop()


def test_judge_ollama_llama31_through_the_cli(
    tmp_path: Path, mock_ollama: str, capsys: pytest.CaptureFixture[str]
) -> None:
    build_sample(12).write(tmp_path)
    (tmp_path / "candidate.yaml").write_text(TARGET)
    db = str(tmp_path / "r.db")
    assert main(["ingest", str(tmp_path / "production.jsonl"), "--db", db]) == 0
    args = ["run", "--target", str(tmp_path / "candidate.yaml"), "--judge", "ollama:llama3.1", "--db", db]
    assert main(args) == 0
    capsys.readouterr()
    stats = httpx.get(mock_ollama.removesuffix("/v1") + "/stats").json()
    assert stats["requests"] > 0  # the judge's calls reached the server OLLAMA_HOST names
    assert main(["runs", "--db", db, "--format", "json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert main(["report", run["id"], "--format", "json", "--db", db]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "ollama:llama3.1" in json.dumps(report)
    counts = report["rates"]["counts"]
    assert (
        sum(counts[v] for v in ("GOOD_FIT", "GOOD_NO_FIT", "BAD_FIT", "BAD_NO_FIT")) > 0
    )  # judged by the mock
