"""The configuration of `ragreplay shadow serve`, as a file (``--config shadow.yaml``) and as flags.

```yaml
champion: http://app:8000
challengers: {hybrid: "http://cand:8000"}
db: postgresql://rag@db/ragreplay
sampling: {base_rate: 0.15, windows: {"09:00-11:00": 0.05, "14:00-17:00": 0.5}, tz: Europe/Amsterdam, per: user}
mirror_paths: [/ask]
fields: {contexts_path: contexts, tags_path: tags, request_id_path: id}
feedback: {path: /feedback, id_path: message_id, label_path: rating}
privacy: {redact: default, hash_user_ids: true}
server: {header_timeout_s: 10, body_timeout_s: 30, idle_timeout_s: 5, max_connections: 1000, backlog: 2048}
```

Flags given on the command line win over the file. ``ragreplay schema shadow`` prints the JSON Schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragreplay.asgi.limits import ServerLimits
from ragreplay.shadow.payloads import RequestFields
from ragreplay.shadow.sampler import SamplingConfig

if TYPE_CHECKING:
    from ragreplay.shadow.mirror import FeedbackTap


def base_url_problem(url: str) -> str | None:
    """Why ``url`` is not an absolute http(s) base URL without query or fragment, or ``None`` if it is."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        return (
            f"{url!r} is not a base URL. Fix: give the app's address, e.g. http://127.0.0.1:8000 "
            "(paths and queries of each request are appended)"
        )
    return None


def path_problem(value: str) -> str | None:
    """Why ``value`` is not a request path (or shell pattern) starting with ``/``, or ``None``."""
    if not value.startswith("/") or "://" in value or any(c.isspace() for c in value):
        return f"{value!r} is not a path. Fix: give the path alone, e.g. /ask or /api/*/chat"
    return None


def _checked(problem: str | None, value: str) -> str:
    if problem is not None:
        raise ValueError(problem)
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldsConfig(_Section):
    """Where the question, user, tags, request id and answer live in the app's requests and replies."""

    question_paths: list[str] = Field(
        default_factory=lambda: ["question", "query"],
        description="Dotted paths of the question, tried in order.",
    )
    answer_path: str = Field("answer", description="Dotted path of the answer in JSON replies.")
    contexts_path: str | None = Field(None, description="Dotted path of the retrieved chunks (ids).")
    context_id_field: str = Field("id", description="The id field of a chunk object.")
    context_text_field: str = Field(
        "text", description="The text field of a chunk object (kept bounded and redacted with the row)."
    )
    user_header: str | None = Field("X-User-Id", description="Request header with the user id.")
    user_path: str | None = Field(None, description="Dotted path of the user id in the request.")
    tags_path: str | None = Field(None, description="Dotted path of an object of tags in the request.")
    request_id_header: str | None = Field(
        "X-Request-Id", description="Request header with the id that feedback refers to."
    )
    request_id_path: str | None = Field(None, description="Dotted path of that id in the champion's reply.")
    stream_text_path: str | None = Field(
        None, description="Dotted path of the text piece in each event of a streamed (SSE) reply."
    )

    def build(self) -> RequestFields:
        """The mirror's :class:`RequestFields`."""
        return RequestFields(**{**self.model_dump(), "question_paths": tuple(self.question_paths)})


class FeedbackConfig(_Section):
    """The app's own feedback endpoint, read by the proxy on the way through."""

    path: str = Field(description="Path of the endpoint, e.g. /feedback.")
    id_path: str = Field("request_id", description="Dotted path of the request id in its JSON body.")
    label_path: str = Field("feedback", description="Dotted path of the label (good/bad, thumbs, 1/0).")
    comment_path: str | None = Field(None, description="Dotted path of a free-text comment.")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _checked(path_problem(value), value)

    def build(self) -> FeedbackTap:
        """The mirror's :class:`FeedbackTap`."""
        from ragreplay.shadow.mirror import FeedbackTap  # aiohttp, the [shadow] extra: only when serving

        return FeedbackTap(self.path, self.id_path, self.label_path, self.comment_path)


class PrivacyConfig(_Section):
    """What is done to text and user ids before they are stored."""

    redact: str = Field("default", description="default (e-mail, phone, IBAN), none, or module:function.")
    hash_user_ids: bool = Field(True, description="Store salted hashes of user ids ($RAGREPLAY_SHADOW_SALT).")


class ShadowServeConfig(_Section):
    """Everything `ragreplay shadow serve` needs."""

    champion: str = Field(description="Base URL of the champion RAG app.")
    challengers: dict[str, str] = Field(
        default_factory=dict, description="Name -> base URL of each challenger app (none: forward only)."
    )
    db: str | None = Field(
        None, description="Store for shadow rows (default: $RAGREPLAY_DB or ragreplay.db)."
    )
    sampling: SamplingConfig = Field(default_factory=lambda: SamplingConfig(base_rate=0.15))
    mirror_paths: list[str] = Field(
        default_factory=list, description="Shadow only these paths (shell patterns); empty: every path."
    )
    fields: FieldsConfig = Field(default_factory=FieldsConfig)
    feedback: FeedbackConfig | None = None
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    timeout_s: float = Field(60.0, gt=0, description="Seconds to wait for the champion before a 504.")
    challenger_timeout_s: float = Field(30.0, gt=0, description="Seconds a challenger may take.")
    max_body_mb: float = Field(16.0, gt=0, description="Request bodies over this many MB get a 413.")
    shadow_max_body_kb: float = Field(
        256.0,
        gt=0,
        description="Request bodies over this many KB are streamed to the champion and not shadowed.",
    )
    max_reply_mb: float = Field(
        4.0, gt=0, description="Challenger replies over this many MB are errors, never stored."
    )
    server: ServerLimits = Field(
        default_factory=ServerLimits, description="Client timeouts and the connection limit."
    )
    host: str = Field("127.0.0.1", description="Interface to listen on.")
    port: int = Field(8787, ge=0, le=65535, description="Port to listen on.")

    @field_validator("champion")
    @classmethod
    def _champion(cls, value: str) -> str:
        return _checked(base_url_problem(value), value)

    @field_validator("challengers")
    @classmethod
    def _challengers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not name.strip():
                raise ValueError("a challenger needs a name")
            problem = base_url_problem(url)
            if problem is not None:
                raise ValueError(f"challenger {name!r}: {problem}")
        return value

    @field_validator("mirror_paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for path in value:
            _checked(path_problem(path), path)
        return value
