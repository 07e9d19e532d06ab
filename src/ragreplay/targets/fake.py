"""A deterministic target for tests, demos and docs: canned answers keyed by normalised question."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.reply_shapes import coerce_answer
from ragreplay.core.types import Answer, Case
from ragreplay.errors import ConfigError, InputProblem
from ragreplay.targets.base import TargetBase
from ragreplay.targets.config import FakeTargetConfig, normalise_question


class FakeTarget(TargetBase):
    """Answers from a fixed mapping (question -> answer text or ``{"answer", "contexts", ...}``).

    Looks up the standalone question, then ``case.query``; with nothing found, returns ``case.old_answer``
    when ``echo_old_answer`` is set (an unchanged system), else ``default``.
    """

    def __init__(
        self,
        answers: Mapping[str, Any] | None = None,
        *,
        name: str = "fake",
        default: str = "I don't know.",
        echo_old_answer: bool = False,
        latency_ms: float = 0.0,
        version: str | None = None,
    ) -> None:
        self._answers: dict[str, Answer] = {}
        for question, value in (answers or {}).items():
            try:
                self._answers[normalise_question(question)] = coerce_answer(value)
            except ValueError as exc:
                raise ConfigError(f"fake target answer for {question!r}: {exc}") from None
        self._name = name
        self._default = default
        self._echo = echo_old_answer
        self._latency_s = latency_ms / 1000
        self._version = version or content_hash(
            {
                "kind": "fake",
                "answers": {k: v.model_dump(mode="json") for k, v in self._answers.items()},
                "default": default,
                "echo_old_answer": echo_old_answer,
                "latency_ms": latency_ms,
            }
        )

    async def answer(self, question: str, case: Case) -> Answer:
        """The canned answer for ``question`` (or ``case.query``), the old answer, or the default."""
        start = time.perf_counter()
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        found = None
        if self._answers:  # no canned answers (an echo target): nothing to normalise the question for
            found = self._answers.get(normalise_question(question)) or self._answers.get(
                normalise_question(case.query)
            )
        if found is None:  # made here: one construction, no copy
            text = case.old_answer if self._echo else self._default
            return Answer(text=text, latency_ms=(time.perf_counter() - start) * 1000)
        return found.model_copy(update={"latency_ms": (time.perf_counter() - start) * 1000})

    async def aclose(self) -> None:
        """Nothing to release."""


def fake_target_from_config(cfg: FakeTargetConfig, base_dir: Path, name: str, source: str) -> FakeTarget:
    """Build a fake target; ``answers_file`` (a JSON object, relative to the target file) adds answers."""
    answers: dict[str, Any] = {}
    if cfg.answers_file is not None:
        answers.update(_read_answers(base_dir / cfg.answers_file, source))
    answers.update(cfg.answers)
    version = content_hash({"config": cfg.model_dump(mode="json", exclude={"answers"}), "answers": answers})
    return FakeTarget(
        answers,
        name=name,
        default=cfg.default,
        echo_old_answer=cfg.echo_old_answer,
        latency_ms=cfg.latency_ms,
        version=version,
    )


def _read_answers(path: Path, source: str) -> dict[str, Any]:
    def problem(message: str, fix: str) -> ConfigError:
        return ConfigError(str(InputProblem(source, None, "target.answers_file", message, fix)))

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise problem(f"{path} not found", "give a path relative to the target file") from None
    except (OSError, ValueError) as exc:
        raise problem(
            f"cannot read {path}: {exc}", "it must be a JSON object of question -> answer"
        ) from None
    if not isinstance(data, dict):
        raise problem(
            f"{path} holds a {type(data).__name__}", "it must be a JSON object of question -> answer"
        )
    return data
