"""`ragreplay shadow serve`: put the shadow proxy in front of the champion RAG app.

Every request goes to the champion and its response goes back unchanged. Sampled JSON requests (on the
``--mirror-path`` paths) are also sent, off the user's path, to each challenger (same body), and each (request,
challenger) pair is logged to the store. Users' feedback is read from the app's own feedback endpoint
(``--feedback-path``) or posted to ``/_shadow/feedback``.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.settings import DEFAULT_DB
from ragreplay.shadow.core import Shadow
from ragreplay.shadow.log import ShadowLog
from ragreplay.shadow.mirror import (
    FeedbackTap,
    MirrorHttpTarget,
    ProxyMirror,
    RequestFields,
    ShadowServeApp,
)
from ragreplay.shadow.privacy import Redactor, default_redactor, load_redactor
from ragreplay.shadow.proxy import create_proxy
from ragreplay.shadow.sampler import Per, Sampler, parse_window
from ragreplay.store import Store

shadow_app = typer.Typer(
    help="Shadow live traffic: challengers answer the same questions off the user's path."
)


def check_champion_url(url: str, flag: str = "--champion") -> str:
    """The URL if it is an absolute http(s) base URL without query or fragment; else a `ConfigError`."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(
            f"{flag} {url!r} is not a base URL. Fix: give the app's address, "
            "e.g. http://127.0.0.1:8000 (paths and queries of each request are appended)."
        )
    return url


def check_path(value: str, flag: str) -> str:
    """A request path (or shell pattern) starting with ``/``; else a `ConfigError`."""
    if not value.startswith("/") or "://" in value or any(c.isspace() for c in value):
        raise ConfigError(
            f"{flag} {value!r} is not a path. Fix: give the path alone, e.g. /ask or /api/*/chat"
        )
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


def build_sampler(rate: float, windows: list[str], tz: str, per: str) -> Sampler:
    """A `Sampler` from the CLI flags; windows are ``HH:MM-HH:MM=RATE``."""
    parsed = []
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
        parsed.append(parse_window(span, window_rate))
    if per not in ("user", "request"):
        raise ConfigError(f"--per {per!r}: expected 'user' or 'request'.")
    per_value: Per = "user" if per == "user" else "request"
    return Sampler(rate, parsed, tz=tz, per=per_value)


def build_app(
    champion: str,
    challengers: dict[str, str],
    store: Store,
    sampler: Sampler,
    fields: RequestFields,
    timeout_s: float = 60.0,
    challenger_timeout_s: float = 30.0,
    mirror_paths: tuple[str, ...] = (),
    feedback: FeedbackTap | None = None,
    redact: Redactor | None = default_redactor,
    hash_user_ids: bool = True,
) -> ShadowServeApp:
    """The proxy with the shadow wired: challengers as HTTP targets, rows and feedback logged to `store`
    (closed on exit); only `mirror_paths` (all when empty) are shadowed; `feedback` reads the app's own
    feedback endpoint."""
    targets = {
        name: MirrorHttpTarget(name, url, fields, challenger_timeout_s + 1)
        for name, url in challengers.items()
    }
    shadow = Shadow(
        MirrorHttpTarget("champion", champion, fields, timeout_s),
        targets,
        sampler=sampler,
        log=ShadowLog(store),
        challenger_timeout_s=challenger_timeout_s,
        redact=redact,
        hash_user_ids=hash_user_ids,
    )
    mirror = ProxyMirror(shadow, fields, mirror_paths=mirror_paths, feedback=feedback)

    async def close() -> None:
        for target in targets.values():
            await target.aclose()
        await shadow.champion.aclose()
        store.close()

    return ShadowServeApp(create_proxy(champion, mirror, timeout_s=timeout_s), mirror, on_close=close)


@shadow_app.command()
def serve(
    champion: Annotated[
        str, typer.Option(help="Base URL of the champion RAG app, e.g. http://127.0.0.1:8000")
    ],
    challenger: Annotated[
        list[str] | None,
        typer.Option(help="NAME=URL of a challenger app (repeatable); it gets the same request."),
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="Store for shadow rows (default: $RAGREPLAY_DB or ragreplay.db).")
    ] = None,
    sample: Annotated[float, typer.Option(help="Share of requests shadowed outside every window.")] = 0.15,
    window: Annotated[
        list[str] | None,
        typer.Option(help="HH:MM-HH:MM=RATE: another rate during a time window (repeatable)."),
    ] = None,
    tz: Annotated[str, typer.Option(help="IANA time zone of the windows.")] = "UTC",
    per: Annotated[
        str, typer.Option(help="'request' or 'user' (a user is in or out for a whole window).")
    ] = "request",
    question_path: Annotated[
        str, typer.Option(help="Dotted path of the question in the JSON request.")
    ] = "question",
    answer_path: Annotated[
        str, typer.Option(help="Dotted path of the answer in the JSON responses.")
    ] = "answer",
    contexts_path: Annotated[
        str | None, typer.Option(help="Dotted path of the retrieved chunks (ids).")
    ] = None,
    user_path: Annotated[
        str | None, typer.Option(help="Dotted path of the user id (after X-User-Id).")
    ] = None,
    tags_path: Annotated[
        str | None, typer.Option(help="Dotted path of an object of tags in the request.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8787,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the champion before answering 504.")
    ] = 60.0,
    challenger_timeout: Annotated[float, typer.Option(help="Seconds a challenger may take.")] = 30.0,
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
        str, typer.Option(help="Request header holding the id that feedback refers to ('' for none).")
    ] = "X-Request-Id",
    request_id_path: Annotated[
        str | None,
        typer.Option(help="Dotted path of that id in the champion's JSON reply, when no header has it."),
    ] = None,
    feedback_path: Annotated[
        str | None,
        typer.Option(help="The app's own feedback endpoint (e.g. /feedback): forwarded as usual, and read."),
    ] = None,
    feedback_id_path: Annotated[
        str, typer.Option(help="Dotted path of the request id in the feedback request body.")
    ] = "request_id",
    feedback_label_path: Annotated[
        str, typer.Option(help="Dotted path of the label (good/bad, thumbs, 1/0) in the feedback body.")
    ] = "feedback",
    feedback_comment_path: Annotated[
        str | None, typer.Option(help="Dotted path of a free-text comment in the feedback body.")
    ] = None,
    redact: Annotated[
        str,
        typer.Option(
            help="Redaction of queries, answers and comments before storage: default (e-mail, phone, IBAN), "
            "none, or module:function."
        ),
    ] = "default",
    keep_user_ids: Annotated[
        bool, typer.Option(help="Store user ids as they are instead of salted hashes.")
    ] = False,
) -> None:
    """Forward every request to the champion unchanged; shadow a sample to the challengers; counters at
    /_shadow/stats; users' feedback via --feedback-path or POST /_shadow/feedback."""
    check_champion_url(champion)
    redactor = load_redactor(redact)
    paths = tuple(check_path(p, "--mirror-path") for p in mirror_path or [])
    tap = None
    if feedback_path is not None:
        tap = FeedbackTap(
            check_path(feedback_path, "--feedback-path"),
            feedback_id_path,
            feedback_label_path,
            feedback_comment_path,
        )
    urls = parse_challengers(challenger or [])
    sampler = build_sampler(sample, window or [], tz, per)
    questions = (question_path,) if question_path != "question" else ("question", "query")
    fields = RequestFields(
        question_paths=questions,
        answer_path=answer_path,
        contexts_path=contexts_path,
        user_path=user_path,
        tags_path=tags_path,
        request_id_header=request_id_header or None,
        request_id_path=request_id_path,
        stream_text_path=stream_text_path,
    )
    try:
        import uvicorn
    except ImportError as exc:
        raise RagreplayError("`ragreplay shadow serve` needs uvicorn. Fix: pip install uvicorn") from exc
    app: object
    if urls:
        store = Store.open(db or os.environ.get("RAGREPLAY_DB") or DEFAULT_DB)
        app = build_app(
            champion,
            urls,
            store,
            sampler,
            fields,
            timeout,
            challenger_timeout,
            mirror_paths=paths,
            feedback=tap,
            redact=redactor,
            hash_user_ids=not keep_user_ids,
        )
        shadowed = f"challengers {', '.join(urls)}"
    else:  # no challenger: forward and count only, no store needed
        app = create_proxy(champion, mirror=None, timeout_s=timeout)
        shadowed = "no challenger (forwarding only)"
    typer.echo(
        f"shadow proxy on http://{host}:{port} -> {champion}; {shadowed} (stats at /_shadow/stats)", err=True
    )
    # no server/date headers of the proxy's own: the champion's pass through unchanged
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False, date_header=False)
