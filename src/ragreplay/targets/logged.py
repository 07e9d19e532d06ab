"""Answers already logged in another period, so two logged periods can be compared without a live system."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from ragreplay.core.extract import AnsweredTurn, answered_turns
from ragreplay.core.ids import content_hash
from ragreplay.core.types import Answer, Case
from ragreplay.errors import ConfigError, InputProblem
from ragreplay.targets.base import TargetBase
from ragreplay.targets.config import LoggedTargetConfig, normalise_question

MatchMode = Literal["turn", "question"] | None
NO_ANSWER = "no logged answer for this question"


class LoggedTarget(TargetBase):
    """Looks each question up in an index of logged cases.

    ``match="turn"``: same conversation id and turn index. ``match="question"``: same normalised question
    (the standalone question, then the case's original query). ``None``: turn first, then question.
    When several logged turns share a question, the last one in the log wins.
    """

    def __init__(
        self, name: str, version: str, turns: Iterable[AnsweredTurn], match: MatchMode = None
    ) -> None:
        self._name = name
        self._version = version
        self._match = match
        self._by_turn: dict[tuple[str, int], AnsweredTurn] = {}
        self._by_question: dict[str, AnsweredTurn] = {}
        for turn in turns:
            self._by_turn[(turn.conversation_id, turn.turn_index)] = turn
            self._by_question[normalise_question(turn.query)] = turn

    @classmethod
    def from_cases(cls, name: str, cases: Iterable[Case], match: MatchMode = None) -> LoggedTarget:
        """Build from cases already in memory; the version hashes their ids and answers."""
        turns = [
            AnsweredTurn(
                conversation_id=c.conversation_id,
                turn_index=c.turn_index,
                query=c.query,
                answer=c.old_answer,
                retrieved=c.retrieved,
                case_id=c.id,
            )
            for c in cases
        ]
        version = content_hash(
            {"kind": "logged", "match": match, "cases": [[t.case_id, t.answer] for t in turns]}
        )
        return cls(name, version, turns, match)

    def __len__(self) -> int:
        return len(self._by_turn)

    async def answer(self, question: str, case: Case) -> Answer:
        """The logged answer (with its retrieved chunks), or ``Answer.error`` when the log has none."""
        start = time.perf_counter()
        found = self._find(question, case)
        elapsed = (time.perf_counter() - start) * 1000
        if found is None:
            return Answer(text="", error=NO_ANSWER, latency_ms=elapsed)
        return Answer(
            text=found.answer,
            contexts=found.retrieved,
            latency_ms=elapsed,
            extra={"logged_turn": [found.conversation_id, found.turn_index]},
        )

    async def aclose(self) -> None:
        """Nothing to release."""

    def _find(self, question: str, case: Case) -> AnsweredTurn | None:
        if self._match in (None, "turn"):
            found = self._by_turn.get((case.conversation_id, case.turn_index))
            if found is not None or self._match == "turn":
                return found
        for text in (question, case.query):
            found = self._by_question.get(normalise_question(text))
            if found is not None:
                return found
        return None


def logged_target_from_config(
    cfg: LoggedTargetConfig, base_dir: Path, name: str, source: str
) -> LoggedTarget:
    """Read the configured log (relative to the target file) with the ingest package and index it."""
    path = (base_dir / cfg.log).resolve()
    if not path.is_file():
        raise ConfigError(
            str(
                InputProblem(
                    source,
                    None,
                    "target.log",
                    f"log file {path} not found",
                    "give a path relative to the target file",
                )
            )
        )
    hashed = [path] + ([base_dir / cfg.mapping] if isinstance(cfg.mapping, str) else [])
    digests = [hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in hashed if p.is_file()]
    version = content_hash([cfg.model_dump(mode="json"), *digests])
    return LoggedTarget(
        name, version, _iter_turns(path, cfg.format, _mapping(cfg, base_dir, source)), cfg.match
    )


def _mapping(cfg: LoggedTargetConfig, base_dir: Path, source: str) -> Any:
    """The ingest field mapping: inline in the target file, or a YAML file relative to it."""
    if cfg.mapping is None:
        return None
    from ragreplay.ingest.mapping import FieldMapping

    if isinstance(cfg.mapping, str):
        return FieldMapping.from_yaml(base_dir / cfg.mapping)
    return FieldMapping.from_dict(cfg.mapping, origin=f"{source}: field 'target.mapping'")


def _iter_turns(path: Path, fmt: str | None, mapping: Any) -> Iterator[AnsweredTurn]:
    """Every answered turn of the log, labelled or not (a candidate period's log usually has no feedback)."""
    from ragreplay.ingest import iter_conversations

    for _, conv in iter_conversations(path, fmt, mapping):
        yield from answered_turns(conv)
