"""`ragreplay ingest --from-langfuse` against a fake Langfuse public API (starlette + uvicorn on 127.0.0.1)."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loopback import serve
from ragreplay.cli.app import main
from ragreplay.core.retry import RetryPolicy
from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.ingest.langfuse import read_langfuse
from ragreplay.ingest.langfuse_api import LangfusePull, pull_langfuse
from ragreplay.ingest.mapping import FieldMapping
from ragreplay.store import Store

EXPORT = Path(__file__).parent.parent / "fixtures" / "traces" / "langfuse.jsonl"
KEYS = {"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "sk-lf-test"}
MAPPING = FieldMapping(rating_threshold=4)


def _tables() -> dict[str, list[dict[str, Any]]]:
    records = [json.loads(line) for line in EXPORT.read_text().splitlines() if line.strip()]
    return {
        "traces": [r for r in records if "traceId" not in r],
        "observations": [r for r in records if "type" in r and "traceId" in r],
        "scores": [r for r in records if "dataType" in r],
    }


class FakeLangfuse:
    """Serves the fixture export as paged API tables; ``throttle`` 429s answer the first requests."""

    def __init__(self, throttle: int = 0) -> None:
        self.tables = _tables()
        self.throttle = throttle
        self.requests: list[tuple[str, dict[str, str]]] = []
        routes = [Route(f"/api/public/{name}", self._endpoint(name)) for name in self.tables]
        self.app = Starlette(routes=routes)

    def _endpoint(self, name: str) -> Any:
        async def handle(request: Request) -> JSONResponse:
            self.requests.append((name, dict(request.query_params)))
            expected = "Basic " + base64.b64encode(b"pk-lf-test:sk-lf-test").decode()
            if request.headers.get("authorization") != expected:
                return JSONResponse({"message": "Invalid credentials"}, status_code=401)
            if self.throttle > 0:
                self.throttle -= 1
                return JSONResponse(
                    {"message": "rate limited"}, status_code=429, headers={"Retry-After": "0"}
                )
            page, limit = int(request.query_params["page"]), int(request.query_params["limit"])
            rows = self.tables[name]
            total_pages = -(-len(rows) // limit)
            data = rows[(page - 1) * limit : page * limit]
            meta = {"page": page, "limit": limit, "totalItems": len(rows), "totalPages": total_pages}
            return JSONResponse({"data": data, "meta": meta})

        return handle


@pytest.fixture
def fake() -> Iterator[FakeLangfuse]:
    yield FakeLangfuse()


@pytest.fixture
def url(fake: FakeLangfuse) -> Iterator[str]:
    yield from serve(fake.app)


def _pull(url: str, tmp_path: Path, env: dict[str, str] = KEYS, **options: Any) -> Path:
    dest = tmp_path / "pulled.jsonl"
    pull_langfuse(LangfusePull(url, page_size=4, **options), dest, env, sleep=lambda s: None)
    return dest


def _conversations(path: Path) -> list[Any]:
    return [conv for _, conv in read_langfuse(path, MAPPING)]


def test_two_pages_of_each_table_give_the_export_files_conversations(
    url: str, fake: FakeLangfuse, tmp_path: Path
) -> None:
    pulled = _pull(url, tmp_path)
    assert _conversations(pulled) == _conversations(EXPORT)
    pages = {name: [int(q["page"]) for n, q in fake.requests if n == name] for name in fake.tables}
    assert pages == {"traces": [1, 2], "observations": [1, 2, 3], "scores": [1, 2, 3]}


def test_since_and_limit_reach_the_api_and_cap_the_traces(
    url: str, fake: FakeLangfuse, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    pulled = _pull(url, tmp_path, since=datetime(2026, 3, 1, tzinfo=UTC), limit=2)
    assert {c.id for c in _conversations(pulled)} <= {c.id for c in _conversations(EXPORT)}
    assert len({line for line in pulled.read_text().splitlines()}) >= 1
    traces = [q for n, q in fake.requests if n == "traces"]
    assert traces == [{"page": "1", "limit": "4", "fromTimestamp": "2026-03-01T00:00:00Z"}]
    assert all(
        q.get("fromStartTime") == "2026-03-01T00:00:00Z" for n, q in fake.requests if n == "observations"
    )
    kept = [r for line in pulled.read_text().splitlines() for r in json.loads(line)["data"]]
    assert {r.get("traceId", r.get("id")) for r in kept} == {"lf-trace-1", "lf-trace-2"}


def test_a_429_is_waited_out_then_the_pull_succeeds(fake: FakeLangfuse, tmp_path: Path) -> None:
    fake.throttle = 1
    for base in serve(fake.app):
        pulled = _pull(base, tmp_path, retry=RetryPolicy(max_retries=0, budget_s=30.0))
    assert _conversations(pulled) == _conversations(EXPORT)
    assert fake.requests[0] == fake.requests[1]  # the throttled request was sent again


def test_rejected_keys_name_the_env_vars(url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"LANGFUSE_PUBLIC_KEY.*LANGFUSE_SECRET_KEY") as err:
        _pull(url, tmp_path, env={"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "wrong"})
    assert "HTTP 401" in str(err.value) and "wrong" not in str(err.value)


def test_missing_keys_are_named_before_any_request(fake: FakeLangfuse, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="LANGFUSE_SECRET_KEY"):
        _pull("http://127.0.0.1:9", tmp_path, env={"LANGFUSE_PUBLIC_KEY": "pk"})


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    with pytest.raises(RagreplayError, match="cannot reach Langfuse"):
        _pull(f"http://127.0.0.1:{port}", tmp_path, retry=RetryPolicy(max_retries=1))


def test_cli_ingests_the_pull_like_the_export_file(
    url: str,
    tmp_path: Path,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "mapping.yaml").write_text("rating_threshold: 4\n")
    mapping = ["--mapping", str(tmp_path / "mapping.yaml")]
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    assert (
        main(["ingest", "--from-langfuse", url, "--db", store_url, "--output-format", "json", *mapping]) == 0
    )
    pulled = json.loads(capsys.readouterr().out)
    other = str(tmp_path / "other.db")
    assert main(["ingest", str(EXPORT), "--db", other, "--output-format", "json", *mapping]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert pulled["format"] == "langfuse"
    for key in ("conversations", "messages", "cases", "cases_by_feedback", "skipped"):
        assert pulled[key] == exported[key]
    with Store.open(store_url) as store:
        assert len(store.cases.list_sources()) == 1


def test_cli_401_exits_2_and_writes_nothing(
    url: str, store_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-bad")
    assert main(["ingest", "--from-langfuse", url, "--db", store_url]) == 2
    err = capsys.readouterr().err
    assert "LANGFUSE_SECRET_KEY" in err and "sk-lf-bad" not in err and "Traceback" not in err
    with Store.open(store_url) as store:
        assert store.cases.list_sources() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "a log file or --from-langfuse"),
        (["log.jsonl", "--from-langfuse", "http://127.0.0.1:9"], "not both"),
        (["log.jsonl", "--since", "7d"], "go with --from-langfuse"),
        (["--from-langfuse", "http://127.0.0.1:9", "--limit", "0"], "at least 1"),
        (["--from-langfuse", "http://127.0.0.1:9"], "needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"),
    ],
)
def test_cli_flag_mistakes_exit_2_with_a_fix(
    args: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    db = tmp_path / "store.db"
    assert main(["ingest", *args, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "pulling" not in err
    assert not db.exists()
