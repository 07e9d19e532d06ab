"""Target configuration: the ``target:`` section of a target YAML file, validated by pydantic.

Also holds the few pieces every target shares: environment expansion, question normalisation and the
way a failed call is described in ``Answer.error``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from ragreplay.errors import ConfigError, InputProblem
from ragreplay.ingest.yaml_files import yaml_line_of
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig

KINDS = ("python", "http", "logged", "fake", "builtin")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PythonTargetConfig(_Strict):
    """A Python function (sync or async) that answers a question, or a factory that builds one."""

    kind: Literal["python"]
    function: str
    python_path: list[str] = Field(default_factory=list)
    factory: bool = False
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("function")
    @classmethod
    def _module_colon_function(cls, value: str) -> str:
        module, sep, attr = value.partition(":")
        if not sep or not module.strip() or not attr.strip():
            raise ValueError(f"'{value}' is not of the form 'module:function' (e.g. 'mypkg.rag:answer')")
        return value.strip()


class HttpTargetConfig(_Strict):
    """An HTTP endpoint that answers a question with JSON (or plain text when ``answer_path`` is null).

    String leaves of ``body`` (and the url and header values) may hold ``{question}``, ``{user_id}``,
    ``{conversation_id}``, ``{turn_index}``, ``{history_json}`` and ``{tags_json}``; a leaf that is exactly
    ``{history}`` or ``{tags}`` becomes the list / object itself. Without a body, POST sends
    ``{"question": "{question}"}``; a GET sends the body's fields as query parameters.
    """

    kind: Literal["http"]
    url: str
    method: Literal["GET", "POST", "PUT", "PATCH"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    answer_path: str | None = "answer"
    contexts_path: str | None = None
    context_id_field: str = "id"
    context_score_field: str = "score"
    context_text_field: str = "text"
    tokens_path: str | None = None
    cost_path: str | None = None
    timeout_s: float = Field(default=30.0, gt=0)
    max_concurrency: int = Field(default=16, ge=1)
    retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    retry_budget_s: float = Field(
        default=300.0,
        gt=0,
        description="Give up on 429s once the target has answered nothing else this long.",
    )

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class LoggedTargetConfig(_Strict):
    """Answers already in another log, looked up by turn and/or by question."""

    kind: Literal["logged"]
    log: str
    format: str | None = None
    mapping: dict[str, Any] | str | None = None
    match: Literal["turn", "question"] | None = None


class FakeTargetConfig(_Strict):
    """A deterministic target for tests, demos and docs."""

    kind: Literal["fake"]
    answers: dict[str, Any] = Field(default_factory=dict)
    answers_file: str | None = None
    default: str = "I don't know."
    echo_old_answer: bool = False
    latency_ms: float = Field(default=0.0, ge=0)


TargetConfig = Annotated[
    PythonTargetConfig | HttpTargetConfig | LoggedTargetConfig | FakeTargetConfig | BuiltinTargetConfig,
    Field(discriminator="kind"),
]
"""One target's configuration; ``kind`` picks the variant."""


class TargetFile(_Strict):
    """A whole target YAML file."""

    name: str | None = None
    target: TargetConfig


_TARGET_ADAPTER: TypeAdapter[TargetConfig] = TypeAdapter(TargetConfig)


def parse_target_file(data: Any, source: str, yaml_text: str | None = None) -> TargetFile:
    """Validate the parsed content of a target file; raise :class:`ConfigError` naming each bad field.

    ``yaml_text`` (the file's text) lets the message point at the line of the bad field.
    """
    if not isinstance(data, dict):
        raise ConfigError(
            str(
                InputProblem(
                    source,
                    1,
                    None,
                    "a target file must be a YAML mapping with a 'target' section",
                    "start the file with 'target:' and a 'kind:' under it",
                )
            )
        )
    try:
        return TargetFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_validation(exc, source, yaml_text, prefix=())) from None


def parse_target_config(data: Any, source: str, field_prefix: str = "target") -> TargetConfig:
    """Validate one ``target:`` section embedded in another config file."""
    try:
        return _TARGET_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ConfigError(_describe_validation(exc, source, None, prefix=(field_prefix,))) from None


def read_target_file(path: Path) -> TargetFile:
    """Read and validate a target YAML file; any problem becomes a :class:`ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            str(InputProblem(str(path), None, None, "target file not found", "check the path"))
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            str(InputProblem(str(path), None, None, f"cannot read target file: {exc}"))
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            str(
                InputProblem(
                    str(path),
                    line,
                    None,
                    f"invalid YAML: {problem}",
                    "check indentation and quoting near this line (quote strings containing ': ' or '{')",
                )
            )
        ) from None
    return parse_target_file(data, str(path), text)


def _describe_validation(
    exc: ValidationError, source: str, yaml_text: str | None, prefix: tuple[str, ...]
) -> str:
    problems = []
    for err in exc.errors():
        loc = [*prefix, *(str(p) for p in err["loc"])]
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("kind")
        # pydantic puts the discriminator value in the location of a tagged union member: drop it.
        if len(loc) > 1 and loc[0] == "target" and loc[1] in KINDS:
            del loc[1]
        field = ".".join(loc) or None
        message, fix = _message_and_fix(err, loc)
        line = yaml_line_of(yaml_text, loc[len(prefix) :]) if yaml_text is not None else None
        problems.append(str(InputProblem(source, line, field, message, fix)))
    return "\n".join(problems)


def _message_and_fix(err: Any, loc: list[str]) -> tuple[str, str]:
    kinds = ", ".join(KINDS)
    etype = err["type"]
    if etype == "union_tag_invalid":
        return f"unknown target kind {err['ctx']['tag']!r}", f"use one of: {kinds}"
    if etype == "union_tag_not_found":
        return "'kind' is missing", f"add 'kind:' with one of: {kinds}"
    if etype == "missing":
        return "required field is missing", f"add '{loc[-1]}'"
    if etype == "extra_forbidden":
        return "unknown field", "remove it or check its spelling"
    if etype == "literal_error":
        return f"invalid value {err['input']!r}", f"use {err['ctx']['expected']}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return msg, ""


_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: Any, source: str, field: str) -> Any:
    """Replace ``${VAR}`` in every string of ``value`` from the environment; missing -> ConfigError."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            var = match.group(1)
            if var not in os.environ:
                raise ConfigError(
                    str(
                        InputProblem(
                            source,
                            None,
                            field,
                            f"environment variable {var} is not set",
                            f"export {var}=... before running, or remove '${{{var}}}'",
                        )
                    )
                )
            return os.environ[var]

        return _ENV_VAR.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, source, f"{field}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, source, f"{field}.{i}") for i, v in enumerate(value)]
    return value


def normalise_question(text: str) -> str:
    """Casefold, collapse whitespace and strip punctuation at both ends, so trivial variants match."""
    text = " ".join(text.casefold().split())
    start, end = 0, len(text)
    while start < end and _is_edge_noise(text[start]):
        start += 1
    while end > start and _is_edge_noise(text[end - 1]):
        end -= 1
    return text[start:end]


def _is_edge_noise(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")
