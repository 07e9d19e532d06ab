"""`ragreplay shadow serve`: put the shadow proxy in front of the champion RAG app.

Every request goes to the champion and its response goes back unchanged. Sampled JSON requests (on the
``--mirror-path`` paths) are also sent, off the user's path, to each challenger (same body), and each (request,
challenger) pair is logged to the store. Users' feedback is read from the app's own feedback endpoint
(``--feedback-path``) or posted to ``/_shadow/feedback``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ragreplay.asgi.guard import WholeBodies
from ragreplay.asgi.limits import fit_open_files
from ragreplay.asgi.serving import serve as serve_app
from ragreplay.cli.listen import check_listen
from ragreplay.errors import ConfigError
from ragreplay.ingest.yaml_files import load_model, read_yaml
from ragreplay.settings import DEFAULT_DB
from ragreplay.shadow.config import ShadowServeConfig, base_url_problem, path_problem
from ragreplay.shadow.privacy import load_redactor
from ragreplay.shadow.sampler import Per, Sampler, parse_window
from ragreplay.shadow.serve_app import app_from_config, bare_proxy_from_config
from ragreplay.shadow.workers import check_workers, run_workers
from ragreplay.store import Store


def check_champion_url(url: str, flag: str = "--champion") -> str:
    """The URL if it is an absolute http(s) base URL without query or fragment; else a `ConfigError`."""
    problem = base_url_problem(url)
    if problem is not None:
        raise ConfigError(f"{flag} {problem}.")
    return url


def check_path(value: str, flag: str) -> str:
    """A request path (or shell pattern) starting with ``/``; else a `ConfigError`."""
    problem = path_problem(value)
    if problem is not None:
        raise ConfigError(f"{flag} {problem}")
    return value


def parse_challengers(values: list[str]) -> dict[str, str]:
    """``["a=http://...", ...]`` -> ``{"a": "http://..."}``; `ConfigError` on a malformed or repeated name."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, url = value.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(
                f"--challenger {value!r}: expected NAME=URL. Fix: e.g. --challenger b=http://127.0.0.1:8001"
            )
        if name in out:
            raise ConfigError(
                f"--challenger {name!r} is given twice. Fix: give each challenger its own name."
            )
        out[name] = check_champion_url(url.strip(), f"--challenger {name}=")
    return out


def parse_windows(windows: list[str]) -> dict[str, float]:
    """``["09:00-11:00=0.05"]`` -> ``{"09:00-11:00": 0.05}``; `ConfigError` on a malformed one."""
    parsed: dict[str, float] = {}
    for spec in windows:
        span, sep, value = spec.partition("=")
        try:
            window_rate = float(value)
        except ValueError:
            window_rate = -1.0
        if not sep or window_rate < 0:
            raise ConfigError(
                f"--window {spec!r}: expected HH:MM-HH:MM=RATE. Fix: e.g. --window 09:00-11:00=0.05"
            )
        parse_window(span, window_rate)
        parsed[span] = window_rate
    return parsed


def build_sampler(rate: float, windows: list[str], tz: str, per: str) -> Sampler:
    """A `Sampler` from the CLI flags; windows are ``HH:MM-HH:MM=RATE``."""
    spans = parse_windows(windows)
    if per not in ("user", "request"):
        raise ConfigError(f"--per {per!r}: expected 'user' or 'request'.")
    per_value: Per = "user" if per == "user" else "request"
    return Sampler(rate, [parse_window(span, r) for span, r in spans.items()], tz=tz, per=per_value)


def _section(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: field '{key}' must be a mapping. Fix: see `ragreplay schema shadow`.")
    return dict(value)


def _set(section: dict[str, Any], **values: Any) -> dict[str, Any]:
    """``section`` with the given values that are not ``None``."""
    return {**section, **{k: v for k, v in values.items() if v is not None}}


def resolve_config(config: Path | None, flags: dict[str, Any]) -> ShadowServeConfig:
    """The file's settings (if any) with the flags that were given laid over them, validated."""
    data: dict[str, Any] = read_yaml(config) if config is not None else {}
    source = str(config) if config is not None else "shadow serve"
    if flags["champion"] is not None:
        data["champion"] = check_champion_url(flags["champion"])
    elif "champion" not in data:
        raise ConfigError(
            "no champion: give --champion URL, or `champion:` in the --config file. "
            "Fix: e.g. --champion http://127.0.0.1:8000"
        )
    if flags["challenger"]:
        data["challengers"] = parse_challengers(flags["challenger"])
    if flags["db"] is not None:
        data["db"] = flags["db"]
    windows = parse_windows(flags["window"]) if flags["window"] else None
    if flags["per"] is not None and flags["per"] not in ("user", "request"):
        raise ConfigError(f"--per {flags['per']!r}: expected 'user' or 'request'.")
    sampling = _set(
        _section(data, "sampling", source),
        base_rate=flags["sample"],
        windows=windows,
        tz=flags["tz"],
        per=flags["per"],
    )
    data["sampling"] = {"base_rate": 0.15, **sampling}
    paths = [check_path(p, "--mirror-path") for p in flags["mirror_path"] or []]
    if paths:
        data["mirror_paths"] = paths
    question = flags["question_path"]
    data["fields"] = _set(
        _section(data, "fields", source),
        question_paths=[question] if question is not None else None,
        answer_path=flags["answer_path"],
        contexts_path=flags["contexts_path"],
        user_path=flags["user_path"],
        tags_path=flags["tags_path"],
        request_id_header=flags["request_id_header"],
        request_id_path=flags["request_id_path"],
        stream_text_path=flags["stream_text_path"],
    )
    if data["fields"].get("request_id_header") == "":
        data["fields"]["request_id_header"] = None
    feedback = _section(data, "feedback", source)
    if flags["feedback_path"] is not None:
        feedback["path"] = check_path(flags["feedback_path"], "--feedback-path")
    tap = {"id_path": flags["feedback_id_path"], "label_path": flags["feedback_label_path"]}
    tap["comment_path"] = flags["feedback_comment_path"]
    if feedback:
        data["feedback"] = _set(feedback, **tap)
    elif any(v is not None for v in tap.values()):
        raise ConfigError(
            "--feedback-id-path / --feedback-label-path / --feedback-comment-path need the endpoint they "
            "read. Fix: add --feedback-path, e.g. --feedback-path /feedback"
        )
    keep = flags["keep_user_ids"]
    data["privacy"] = _set(
        _section(data, "privacy", source),
        redact=flags["redact"],
        hash_user_ids=None if keep is None else not keep,
    )
    for key, flag in (
        ("timeout_s", "timeout"),
        ("challenger_timeout_s", "challenger_timeout"),
        ("shadow_max_body_kb", "shadow_max_body_kb"),
    ):
        if flags[flag] is not None:
            data[key] = flags[flag]
    for key in ("host", "port"):
        if flags[key] is not None:
            data[key] = flags[key]
    data["server"] = _set(
        _section(data, "server", source),
        header_timeout_s=flags["header_timeout"],
        body_timeout_s=flags["body_timeout"],
        idle_timeout_s=flags["idle_timeout"],
        max_connections=flags["max_connections"],
    )
    cfg = load_model(ShadowServeConfig, data, source)
    load_redactor(cfg.privacy.redact)  # a bad redactor fails before the server starts
    return cfg


def serve(
    champion: Annotated[
        str | None, typer.Option(help="Base URL of the champion RAG app, e.g. http://127.0.0.1:8000")
    ] = None,
    challenger: Annotated[
        list[str] | None,
        typer.Option(help="NAME=URL of a challenger app (repeatable); it gets the same request."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="shadow.yaml with any of these settings (`ragreplay schema shadow`); flags win."),
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="Store for shadow rows (default: $RAGREPLAY_DB or ragreplay.db).")
    ] = None,
    sample: Annotated[
        float | None, typer.Option(help="Share of requests shadowed outside every window [default: 0.15].")
    ] = None,
    window: Annotated[
        list[str] | None,
        typer.Option(help="HH:MM-HH:MM=RATE: another rate during a time window (repeatable)."),
    ] = None,
    tz: Annotated[str | None, typer.Option(help="IANA time zone of the windows [default: UTC].")] = None,
    per: Annotated[
        str | None,
        typer.Option(help="'request' or 'user' (a user is in or out for a whole window) [default: request]."),
    ] = None,
    question_path: Annotated[
        str | None,
        typer.Option(help="Dotted path of the question in the JSON request [default: question, then query]."),
    ] = None,
    answer_path: Annotated[
        str | None, typer.Option(help="Dotted path of the answer in JSON replies [default: answer].")
    ] = None,
    contexts_path: Annotated[
        str | None, typer.Option(help="Dotted path of the retrieved chunks (ids).")
    ] = None,
    user_path: Annotated[
        str | None, typer.Option(help="Dotted path of the user id (after X-User-Id).")
    ] = None,
    tags_path: Annotated[
        str | None, typer.Option(help="Dotted path of an object of tags in the request.")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on [default: 127.0.0.1].")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on [default: 8787].")] = None,
    timeout: Annotated[
        float | None,
        typer.Option(help="Seconds to wait for the champion before answering 504 [default: 60]."),
    ] = None,
    challenger_timeout: Annotated[
        float | None, typer.Option(help="Seconds a challenger may take [default: 30].")
    ] = None,
    shadow_max_body_kb: Annotated[
        float | None,
        typer.Option(
            help="Request bodies over this many KB go to the champion (streamed) but are not shadowed "
            "[default: 256]."
        ),
    ] = None,
    header_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a client has to send a request's headers, then 408 [default: 10]."),
    ] = None,
    body_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a client has to send a request's body, then 408 [default: 30]."),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a kept-alive connection may sit idle between requests [default: 5]."),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(help="Connections served at once; a request over them gets a 503 [default: 1000]."),
    ] = None,
    mirror_path: Annotated[
        list[str] | None,
        typer.Option(help="Shadow only requests to this path; shell patterns like /api/*/ask (repeatable)."),
    ] = None,
    stream_text_path: Annotated[
        str | None,
        typer.Option(
            help="Dotted path of the text piece in each event of a streamed (SSE) reply "
            "[default: choices.0.delta.content, delta, token, text, content]."
        ),
    ] = None,
    request_id_header: Annotated[
        str | None,
        typer.Option(
            help="Request header holding the id feedback refers to ('' for none) [default: X-Request-Id]."
        ),
    ] = None,
    request_id_path: Annotated[
        str | None,
        typer.Option(help="Dotted path of that id in the champion's JSON reply, when no header has it."),
    ] = None,
    feedback_path: Annotated[
        str | None,
        typer.Option(help="The app's own feedback endpoint (e.g. /feedback): forwarded as usual, and read."),
    ] = None,
    feedback_id_path: Annotated[
        str | None,
        typer.Option(help="Dotted path of the request id in the feedback body [default: request_id]."),
    ] = None,
    feedback_label_path: Annotated[
        str | None,
        typer.Option(
            help="Dotted path of the label (good/bad, thumbs, 1/0) in the feedback body [default: feedback]."
        ),
    ] = None,
    feedback_comment_path: Annotated[
        str | None, typer.Option(help="Dotted path of a free-text comment in the feedback body.")
    ] = None,
    redact: Annotated[
        str | None,
        typer.Option(
            help="Redaction of queries, answers and comments before storage: default (e-mail, phone, IBAN), "
            "none, or module:function."
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(help="Worker processes, each with its own proxy, shadow and log (one per core)."),
    ] = 1,
    keep_user_ids: Annotated[
        bool | None,
        typer.Option(
            "--keep-user-ids/--hash-user-ids", help="Store user ids as they are, or salted hashes [default]."
        ),
    ] = None,
) -> None:
    """Forward every request to the champion unchanged; shadow a sample to the challengers; counters at
    /_shadow/stats; users' feedback via --feedback-path or POST /_shadow/feedback."""
    flags = dict(locals())
    workers = check_workers(flags.pop("workers"))
    cfg = resolve_config(flags.pop("config"), flags)
    check_listen(cfg.host, cfg.port)  # before the banner: a busy port is one clear error
    typer.echo(
        f"shadow proxy on http://{cfg.host}:{cfg.port} -> {cfg.champion}; "
        + (
            f"challengers {', '.join(cfg.challengers)}"
            if cfg.challengers
            else "no challenger (forwarding only)"
        )
        + (f"; {workers} workers" if workers > 1 else "")
        + " (stats at /_shadow/stats, /_shadow/metrics)",
        err=True,
    )
    warning = fit_open_files(cfg.server)
    if warning is not None:
        typer.echo(f"warning: {warning}", err=True)
    if workers > 1:
        run_workers(cfg, workers)
        return
    app: Any
    if cfg.challengers:
        store = Store.open(cfg.db or os.environ.get("RAGREPLAY_DB") or DEFAULT_DB)
        app = app_from_config(cfg, store)
    else:  # no challenger: forward and count only, no store needed
        app = bare_proxy_from_config(cfg)
    # no server/date headers of the proxy's own: the champion's pass through unchanged
    serve_app(WholeBodies(app), cfg.host, cfg.port, cfg.server, server_header=False, date_header=False)
