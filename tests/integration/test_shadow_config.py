"""`shadow serve --config shadow.yaml`: the file, flags over it, errors naming file/line/field, the schema, and
a proxy built from a file that shadows and reads feedback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from loopback import serve
from ragreplay.cli.app import main
from ragreplay.cli.shadow_cmd import resolve_config
from ragreplay.core.types import Feedback
from ragreplay.errors import ConfigError
from ragreplay.shadow.serve_app import app_from_config, bare_proxy_from_config
from ragreplay.store import Store
from ragreplay.targets.asgi import TargetApp
from shadow_fakes import FakeTarget

FLAG_NAMES = (
    "champion challenger db sample window tz per question_path answer_path contexts_path user_path tags_path "
    "host port timeout challenger_timeout mirror_path stream_text_path request_id_header request_id_path "
    "feedback_path feedback_id_path feedback_label_path feedback_comment_path redact keep_user_ids "
    "header_timeout body_timeout idle_timeout max_connections shadow_max_body_kb"
).split()

FILE = {
    "champion": "http://app:8000",
    "challengers": {"hybrid": "http://cand:8000"},
    "sampling": {"base_rate": 0.2, "windows": {"09:00-11:00": 0.05}, "tz": "Europe/Amsterdam", "per": "user"},
    "mirror_paths": ["/ask"],
    "fields": {"contexts_path": "contexts", "request_id_path": "id"},
    "feedback": {"path": "/feedback", "label_path": "rating"},
    "privacy": {"redact": "none", "hash_user_ids": False},
    "port": 9000,
}


def flags(**given: Any) -> dict[str, Any]:
    return {name: given.get(name) for name in FLAG_NAMES}


def write(tmp_path: Path, data: object, name: str = "shadow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_file_alone_and_flags_over_it(tmp_path: Path) -> None:
    path = write(tmp_path, FILE)
    cfg = resolve_config(path, flags())
    assert cfg.champion == "http://app:8000" and cfg.challengers == {"hybrid": "http://cand:8000"}
    assert (cfg.sampling.base_rate, cfg.sampling.per, cfg.sampling.tz) == (0.2, "user", "Europe/Amsterdam")
    assert cfg.feedback is not None and (cfg.feedback.label_path, cfg.feedback.id_path) == (
        "rating",
        "request_id",
    )
    assert cfg.fields.build().request_id_path == "id" and cfg.port == 9000
    assert not cfg.privacy.hash_user_ids

    over = resolve_config(
        path,
        flags(
            challenger=["b=http://other:1"],
            sample=0.5,
            window=["14:00-17:00=0.5"],
            feedback_label_path="thumb",
            request_id_header="",
            keep_user_ids=False,
            question_path="q",
        ),
    )
    assert over.challengers == {"b": "http://other:1"}  # the flag list replaces the file's
    assert over.sampling.base_rate == 0.5 and over.sampling.windows == {"14:00-17:00": 0.5}
    assert over.sampling.per == "user"  # untouched by flags: from the file
    assert over.feedback is not None and (over.feedback.path, over.feedback.label_path) == (
        "/feedback",
        "thumb",
    )
    fields = over.fields.build()
    assert fields.request_id_header is None and fields.question_paths == ("q",)
    assert over.privacy.hash_user_ids and over.privacy.redact == "none"

    bare = resolve_config(None, flags(champion="http://127.0.0.1:1"))
    assert (
        bare.sampling.base_rate == 0.15
        and bare.feedback is None
        and bare.fields.build().question_paths
        == (
            "question",
            "query",
        )
    )


def test_server_limits_from_the_file_and_flags(tmp_path: Path) -> None:
    bare = resolve_config(None, flags(champion="http://127.0.0.1:1"))
    assert bare.server.model_dump() == {
        "header_timeout_s": 10.0,
        "body_timeout_s": 30.0,
        "idle_timeout_s": 5.0,
        "max_connections": 1000,
        "backlog": 2048,
    }
    path = write(tmp_path, {**FILE, "server": {"header_timeout_s": 3, "max_connections": 50, "backlog": 64}})
    cfg = resolve_config(path, flags(body_timeout=7.5, idle_timeout=2))
    assert (cfg.server.header_timeout_s, cfg.server.body_timeout_s, cfg.server.idle_timeout_s) == (3, 7.5, 2)
    assert (cfg.server.max_connections, cfg.server.backlog) == (50, 64)
    assert resolve_config(path, flags(max_connections=9)).server.max_connections == 9


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**FILE, "server": {"header_timeout_s": 0}}, "field 'server.header_timeout_s'"),
        ({**FILE, "server": {"max_conns": 5}}, "field 'server.max_conns'"),
        ({**FILE, "sampling": {"base_rate": 2}}, "shadow.yaml: field 'sampling.base_rate'"),
        ({**FILE, "sampling": {"base_rate": 0.1, "windows": {"9-11": 0.5}}}, "field 'sampling.windows'"),
        ({**FILE, "champion": "app:8000"}, "field 'champion'"),
        ({**FILE, "challengers": {"b": "ftp://x"}}, "challenger 'b'"),
        ({**FILE, "mirror_paths": ["ask"]}, "field 'mirror_paths'"),
        ({**FILE, "feedback": {"path": "feedback"}}, "field 'feedback.path'"),
        ({**FILE, "colour": "blue"}, "field 'colour': Extra inputs are not permitted"),
        ({**FILE, "fields": ["a"]}, "field 'fields' must be a mapping"),
        ({**FILE, "privacy": {"redact": "nosuchmod_q:f"}}, "cannot import module 'nosuchmod_q'"),
    ],
)
def test_file_mistakes_name_the_file_and_field(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config(write(tmp_path, data), flags())
    assert expected in str(err.value)


def test_flag_mistakes_and_yaml_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="no champion"):
        resolve_config(None, flags())
    with pytest.raises(ConfigError, match="Fix: add --feedback-path"):
        resolve_config(None, flags(champion="http://a:1", feedback_label_path="rating"))
    broken = write(tmp_path, "champion: http://a:1\nsampling: {base_rate: 0.1\n", "broken.yaml")
    assert main(["shadow", "serve", "--config", str(broken)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "broken.yaml:" in err and "invalid YAML" in err
    assert main(["shadow", "serve", "--champion", "http://a:1", "--workers", "0"]) == 2
    assert "--workers 0" in capsys.readouterr().err
    assert main(["shadow", "serve", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "file not found" in " ".join(capsys.readouterr().err.split())


def test_schema_of_the_shadow_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "shadow"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["required"] == ["champion"]
    assert {"sampling", "feedback", "privacy", "mirror_paths", "fields"} <= schema["properties"].keys()


def test_a_proxy_built_from_a_file_shadows_and_reads_feedback(
    tmp_path: Path, store: Store, store_url: str
) -> None:
    champion = serve(TargetApp(FakeTarget("champ")))
    challenger = serve(TargetApp(FakeTarget("cand")))
    data = {
        "champion": next(champion),
        "challengers": {"cand": next(challenger)},
        "sampling": {"base_rate": 1.0},
        "mirror_paths": ["/ask"],
        "fields": {"contexts_path": "contexts", "request_id_path": "id"},
        "feedback": {"path": "/feedback"},
    }
    cfg = resolve_config(write(tmp_path, data), flags())
    server = serve(app_from_config(cfg, Store.open(store_url)))
    url = next(server)
    answer = httpx.post(url + "/ask", json={"question": "q"}, trust_env=False).json()
    assert answer["answer"] == "champ says hi"
    sent = httpx.post(
        url + "/feedback", json={"request_id": answer["id"], "feedback": "bad"}, trust_env=False
    )
    assert sent.status_code == 204
    next(server, None)
    for gen in (champion, challenger):
        next(gen, None)
    (row,) = store.shadow_rows.iter_shadow_rows()
    assert row.request_id == answer["id"] and row.challenger_answer.text == "cand says hi"
    assert row.champion_answer.chunk_ids == ["champ#1"]
    assert store.shadow_feedback.shadow_feedback_for([answer["id"]])[answer["id"]].feedback == Feedback.BAD


def test_a_long_path_in_an_error_is_printed_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 6) / "shadow-settings-for-the-acme-hr-assistant.yaml"
    assert main(["shadow", "serve", "--config", str(deep)]) == 2
    assert f"{deep}: file not found. Fix: check the path." in capsys.readouterr().err  # no line break inside


def test_without_challengers_the_proxy_keeps_the_body_limit_and_side_door_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGREPLAY_SHADOW_TOKEN", "s3cret")
    champion = serve(TargetApp(FakeTarget("champ")))
    cfg = resolve_config(write(tmp_path, {"champion": next(champion), "max_body_mb": 0.001}), flags())
    proxy = bare_proxy_from_config(cfg)
    assert proxy.side_door_token == "s3cret"
    server = serve(proxy)
    url = next(server)
    try:
        small = httpx.post(url + "/ask", json={"question": "q"}, trust_env=False)
        big = httpx.post(url + "/ask", json={"question": "x" * 4096}, trust_env=False)
    finally:
        next(server, None)
        next(champion, None)
    assert small.status_code == 200 and small.json()["answer"] == "champ says hi"
    assert big.status_code == 413
