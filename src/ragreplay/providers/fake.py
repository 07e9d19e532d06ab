"""A deterministic fake chat model that ships in the package, so tests, the demo and the docs need no key.

It answers from ``request.hints`` by ``request.task``:

- ``rewrite`` (hints ``query``, ``history``): if the query contains an English or Dutch pronoun/deictic
  word and the history has a human message, the first such word is replaced by the history's most recent
  subject (the last capitalised word or name in the last human message that does not start a sentence;
  failing that, its last word longer than 3 letters) and ``standalone`` is false. Otherwise the query comes
  back unchanged with ``standalone`` true (also when no subject can be found).
  Reply: JSON ``{"standalone": bool, "query": str}``.
- ``fit`` (hints ``question``, ``old_answer``, ``new_answer``): FIT iff the Jaccard similarity of the
  lowercase alphanumeric token sets of old and new answers is >= 0.5. Reply: JSON ``{"verdict", "reason"}``;
  if the new answer contains ``[[unparseable]]`` the reply is prose naming no verdict.
- ``generate`` (hints ``question``, ``contexts``): the first context sentence sharing the most words with the
  question, or ``I don't know.`` without contexts.
- ``pairwise`` (hints ``question``, ``answer_a``, ``answer_b``, ``contexts_a``, ``contexts_b``, optional
  ``axes``): each side's support is the number of distinct words its answer shares with its own contexts (with
  the question when neither side has contexts); more support wins, equal support is a tie. Scores per axis
  (the hint ``axes``, else groundedness, completeness, directness, recency): the first axis is
  ``1 + round(4 * support / answer words)``, the others 4 for the winner, 2 for the loser, 3 on a tie.
  Reply: JSON ``{"scores_a", "scores_b", "winner", "reason"}``; ``[[unparseable]]`` in either answer gives
  prose with no JSON.
- ``claims`` (hints ``question``, ``answer``, ``contexts``, optional ``reference``): the answer's and the
  reference's sentences are their claims; a claim is supported by a text when at least half of its words of 3+
  letters occur in it (the contexts joined, the reference, the answer for ``covered_by_answer``). A context is
  relevant when it shares a word of 3+ letters with the question; ``answer_relevance`` is
  ``1 + round(4 * share of the question's such words in the answer)``. Reply: JSON in the shape of
  :class:`ragreplay.metrics.llm.ClaimsReply`; ``[[unparseable]]`` in the answer gives prose with no JSON.
- ``claims_batch`` (hint ``rows``: each row's ``claims`` hints): ``{"rows": [...]}`` holding each row's
  ``claims`` reply object with its number ``row`` (from 1); a row with ``[[unparseable]]`` in its answer gets an
  object without claims (that row alone cannot be read).
- ``synth`` (hint ``draft``): the template draft of the test item, as the reply's JSON
  (:class:`ragreplay.datasets.synth_prompt.SynthReply`).
- ``rubric`` (hints ``question``, ``answer``, ``contexts``, ``reference``, ``criteria``): every criterion scores
  ``1 + round(4 * share of the answer's words of 3+ letters found in the question, contexts and reference)``.
  Reply: JSON ``{"criteria": {name: {"reasoning", "score"}}}``; ``[[unparseable]]`` in the answer gives prose.
- ``claims`` and ``rubric`` with the hint ``repeat`` above 0 (a scoring repeated by ``ragreplay eval
  --repeats``): each 1-5 score (answer relevance, every criterion) moves by -1, 0 or +1, clamped to 1-5, as a
  hash of the answer, the criterion and the repeat says; so repeats differ, and the same repeat never does.
- ``coverage`` (hints ``reference``, ``contexts``): the reference's sentences are its facts; a fact is held by
  each context that holds at least half of its words of 3+ letters; ``covered`` when every fact is held,
  ``missing`` when none is, else ``partly``. Reply: JSON in the shape of
  :class:`ragreplay.diagnosis.coverage_judge.CoverageReply`; ``[[unparseable]]`` in the reference gives prose.
- anything else: the last user message, echoed.

Usage counts whitespace-separated words. Test hooks: ``latency_ms``, ``call_log`` (one JSON line per
completed call, fsynced, safe across processes), ``hang_after`` (calls after the N-th completed one never
finish) and ``fail_first`` (the first K calls raise a transient 503).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragreplay.core.chat import ChatRequest, ChatResponse, ProviderError
from ragreplay.core.ids import canonical_json
from ragreplay.core.lexicon import PRONOUNS
from ragreplay.core.types import TokenUsage

# Lowercase words that may sit inside a name: "Lisa van Dam", "Ludwig van der Rohe".
NAME_PARTICLES = frozenset(["van", "de", "der", "den", "von", "da", "di", "du", "te", "ter"])
UNPARSEABLE_MARKER = "[[unparseable]]"
FIT_THRESHOLD = 0.5

_WORD = re.compile(r"[^\W\d_](?:[\w'-]*\w)?")
_LETTERS = re.compile(r"[^\W\d_]+")
_POSSESSIVE = re.compile(r"'s$")
_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_HUMAN_ROLES = frozenset({"human", "user"})


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the lowercase alphanumeric token sets of ``a`` and ``b`` (1.0 if both empty)."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\n\"'(")
    return not before or before[-1] in ".!?"


def _joins_name(gap: str) -> bool:
    """Whether ``gap`` between two capitalised words keeps them one name ("Lisa van Dam", "New York")."""
    return all(w.lower() in NAME_PARTICLES for w in gap.split()) and _LETTERS.sub("", gap).strip() == ""


def find_subject(message: str) -> str | None:
    """The last capitalised word or name in ``message`` not opening a sentence, else its last long word."""
    runs: list[tuple[int, int]] = []
    for match in _WORD.finditer(message):
        word = match.group()
        if not word[0].isupper() or word == "I" or _starts_sentence(message, match.start()):
            continue
        if runs and _joins_name(message[runs[-1][1] : match.start()]):
            runs[-1] = (runs[-1][0], match.end())
        else:
            runs.append((match.start(), match.end()))
    if runs:
        start, end = runs[-1]
        return _POSSESSIVE.sub("", " ".join(message[start:end].split()))
    long_words = [w for w in _WORD.findall(message) if len(w) > 3 and w.lower() not in PRONOUNS]
    return _POSSESSIVE.sub("", long_words[-1]) if long_words else None


def rewrite_query(query: str, history: Sequence[dict[str, Any]]) -> tuple[bool, str]:
    """``(standalone, query)`` by the fake's rewrite rule (see the module docstring)."""
    humans = [str(m.get("content", "")) for m in history if str(m.get("role", "")).lower() in _HUMAN_ROLES]
    pronoun = next((m for m in _LETTERS.finditer(query) if m.group().lower() in PRONOUNS), None)
    if pronoun is None or not humans:
        return True, query
    subject = find_subject(humans[-1])
    if subject is None:
        return True, query
    return False, query[: pronoun.start()] + subject + query[pronoun.end() :]


def best_sentence(question: str, contexts: Sequence[str]) -> str:
    """The first sentence of ``contexts`` sharing most words with ``question``; ``I don't know.`` if none."""
    wanted = _tokens(question)
    best, best_score = None, -1
    for context in contexts:
        for sentence in _SENTENCE_END.split(str(context).strip()):
            if not sentence:
                continue
            score = len(wanted & _tokens(sentence))
            if score > best_score:
                best, best_score = sentence, score
    return best if best is not None else "I don't know."


PAIRWISE_AXES = ("groundedness", "completeness", "directness", "recency")


def pairwise_reply(hints: dict[str, Any]) -> str:
    """The fake's pairwise judgment (rule in the module docstring)."""
    answers = {side: str(hints[f"answer_{side}"]) for side in "ab"}
    if any(UNPARSEABLE_MARKER in a for a in answers.values()):
        return "Both answers have merits and I cannot honestly pick one over the other."
    contexts = {side: " ".join(str(c) for c in hints.get(f"contexts_{side}") or []) for side in "ab"}
    if not any(contexts.values()):
        contexts = {side: str(hints.get("question", "")) for side in "ab"}
    words = {side: _tokens(answers[side]) for side in "ab"}
    support = {side: len(words[side] & _tokens(contexts[side])) for side in "ab"}
    winner = "A" if support["a"] > support["b"] else "B" if support["b"] > support["a"] else "tie"
    axes = [str(a) for a in hints.get("axes") or PAIRWISE_AXES]
    scores = {}
    for side in "ab":
        first = 1 + round(4 * support[side] / max(1, len(words[side])))
        rest = 3 if winner == "tie" else 4 if winner == side.upper() else 2
        scores[side] = {axis: first if i == 0 else rest for i, axis in enumerate(axes)}
    reason = f"support in own contexts: A {support['a']} words, B {support['b']} words"
    return json.dumps({"scores_a": scores["a"], "scores_b": scores["b"], "winner": winner, "reason": reason})


_CLAIM_WORD = re.compile(r"[^\W_]{3,}")


def _claim_words(text: str) -> set[str]:
    return set(_CLAIM_WORD.findall(text.lower()))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if _claim_words(s)]


def _supports(claim: str, words: set[str]) -> str:
    wanted = _claim_words(claim)
    return "yes" if wanted and 2 * len(wanted & words) >= len(wanted) else "no"


def claims_reply(hints: dict[str, Any]) -> str:
    """The fake's claim check (rule in the module docstring)."""
    answer = str(hints.get("answer") or "")
    if UNPARSEABLE_MARKER in answer:
        return "The answer makes several points; some of them look right to me."
    contexts = [str(c) for c in hints.get("contexts") or []]
    reference = hints.get("reference")
    reference = str(reference) if reference is not None else ""
    in_contexts = _claim_words(" ".join(contexts))
    in_reference, in_answer = _claim_words(reference), _claim_words(answer)
    asked = _claim_words(str(hints.get("question") or ""))
    answer_claims = [
        {
            "claim": c,
            "supported_by_contexts": _supports(c, in_contexts),
            "supported_by_reference": _supports(c, in_reference),
        }
        for c in _sentences(answer)
    ]
    reference_claims = [
        {
            "claim": c,
            "covered_by_answer": _supports(c, in_answer),
            "supported_by_contexts": _supports(c, in_contexts),
        }
        for c in _sentences(reference)
    ]
    verdicts = [
        {"n": n, "relevant": "yes" if asked & _claim_words(c) else "no"}
        for n, c in enumerate(contexts, start=1)
    ]
    share = len(asked & in_answer) / len(asked) if asked else 1.0
    supported = sum(c["supported_by_contexts"] == "yes" for c in answer_claims)
    relevance = repeat_jitter(1 + round(4 * share), f"answer_relevance|{answer}", hints.get("repeat"))
    return json.dumps(
        {
            "answer_claims": answer_claims,
            "reference_claims": reference_claims,
            "contexts": verdicts,
            "answer_relevance": relevance,
            "reason": f"{supported} of {len(answer_claims)} answer claims found in the contexts",
        },
        ensure_ascii=False,
    )


def claims_batch_reply(hints: dict[str, Any]) -> str:
    """The fake's batched claim check: each row's ``claims`` reply object, numbered."""
    rows: list[dict[str, Any]] = []
    for n, row in enumerate(hints.get("rows") or [], start=1):
        text = claims_reply(row)
        try:
            rows.append({"row": n, **json.loads(text)})
        except ValueError:
            rows.append({"row": n, "reason": text})
    return json.dumps({"rows": rows}, ensure_ascii=False)


def repeat_jitter(score: int, key: str, repeat: Any) -> int:
    """``score`` (1-5) moved by -1, 0 or +1 for a repeat above 0, as the hash of ``key`` and the repeat says."""
    if not isinstance(repeat, int) or repeat <= 0:
        return score
    step = int(hashlib.sha256(f"{key}|{repeat}".encode()).hexdigest(), 16) % 3 - 1
    return max(1, min(5, score + step))


def rubric_reply(hints: dict[str, Any]) -> str:
    """The fake's rubric grades (rule in the module docstring)."""
    answer = str(hints.get("answer") or "")
    if UNPARSEABLE_MARKER in answer:
        return "A fair answer overall; I would grade it somewhere in the middle."
    known = _claim_words(
        " ".join(
            [str(hints.get("question") or ""), str(hints.get("reference") or "")]
            + [str(c) for c in hints.get("contexts") or []]
        )
    )
    words = _claim_words(answer)
    share = len(words & known) / len(words) if words else 0.0
    base = 1 + round(4 * share)
    grades = {
        str(name): {
            "reasoning": f"{len(words & known)} of {len(words)} answer words found in the material",
            "score": repeat_jitter(base, f"{name}|{answer}", hints.get("repeat")),
        }
        for name in hints.get("criteria") or []
    }
    return json.dumps({"criteria": grades}, ensure_ascii=False)


def coverage_reply(hints: dict[str, Any]) -> str:
    """The fake's coverage check (rule in the module docstring)."""
    reference = str(hints.get("reference") or "")
    if UNPARSEABLE_MARKER in reference:
        return "Some of this is in the documents, I think."
    contexts = [_claim_words(str(c)) for c in hints.get("contexts") or []]
    facts = [
        {
            "fact": f,
            "held_by": [n for n, words in enumerate(contexts, start=1) if _supports(f, words) == "yes"],
        }
        for f in _sentences(reference)
    ]
    held = sum(bool(f["held_by"]) for f in facts)
    verdict = "covered" if facts and held == len(facts) else "missing" if held == 0 else "partly"
    reason = f"{held} of {len(facts)} reference sentences found in the chunks"
    return json.dumps({"facts": facts, "verdict": verdict, "reason": reason}, ensure_ascii=False)


def _need(hints: dict[str, Any], task: str, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in hints]
    if missing:
        raise ProviderError(
            f"fake model: task '{task}' needs hints {', '.join(keys)}; missing {', '.join(missing)}",
            transient=False,
        )


def respond(request: ChatRequest) -> str:
    """The fake's deterministic reply text for ``request``."""
    hints, task = request.hints, request.task
    if task == "rewrite":
        _need(hints, task, ["query"])
        standalone, query = rewrite_query(str(hints["query"]), hints.get("history") or [])
        return json.dumps({"standalone": standalone, "query": query}, ensure_ascii=False)
    if task == "fit":
        _need(hints, task, ["old_answer", "new_answer"])
        old, new = str(hints["old_answer"]), str(hints["new_answer"])
        if UNPARSEABLE_MARKER in new:
            return "Hmm, these two answers are hard to compare and I would rather not commit either way."
        score = jaccard(old, new)
        verdict = "FIT" if score >= FIT_THRESHOLD else "NO_FIT"
        reason = f"token overlap {score:.2f} (threshold {FIT_THRESHOLD})"
        return json.dumps({"verdict": verdict, "reason": reason})
    if task == "pairwise":
        _need(hints, task, ["answer_a", "answer_b"])
        return pairwise_reply(hints)
    if task == "claims":
        _need(hints, task, ["answer"])
        return claims_reply(hints)
    if task == "claims_batch":
        _need(hints, task, ["rows"])
        return claims_batch_reply(hints)
    if task == "rubric":
        _need(hints, task, ["answer", "criteria"])
        return rubric_reply(hints)
    if task == "coverage":
        _need(hints, task, ["reference", "contexts"])
        return coverage_reply(hints)
    if task == "synth":
        _need(hints, task, ["draft"])
        return json.dumps(hints["draft"], ensure_ascii=False)
    if task == "generate":
        return best_sentence(str(hints.get("question", "")), hints.get("contexts") or [])
    users = [m.content for m in request.messages if m.role == "user"]
    return users[-1] if users else ""


async def _forever() -> None:
    # A fresh event per wait: an Event binds to the loop it first waits on.
    await asyncio.Event().wait()


def request_key(request: ChatRequest) -> str:
    """Hex SHA-256 of the request's cache payload, as written to the call log."""
    return hashlib.sha256(canonical_json(request.cache_payload()).encode("utf-8")).hexdigest()


def _append_log(path: Path, request: ChatRequest, n: int) -> None:
    line = json.dumps({"task": request.task, "key": request_key(request), "n": n}) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    # One write() on an O_APPEND descriptor keeps lines whole when several processes share the log.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class FakeCounters:
    """Call counters; fake models of one provider share them so ``hang_after`` counts all their calls."""

    started: int = 0
    completed: int = 0


class FakeChatModel:
    """A deterministic, offline :class:`~ragreplay.ports.ChatModel` (rules in the module docstring)."""

    def __init__(
        self,
        name: str = "fake:default",
        latency_ms: float = 0,
        call_log: Path | None = None,
        hang_after: int | None = None,
        fail_first: int = 0,
        *,
        counters: FakeCounters | None = None,
    ) -> None:
        self._name = name
        self.latency_ms = latency_ms
        self.call_log = Path(call_log) if call_log is not None else None
        self.hang_after = hang_after
        self.fail_first = fail_first
        self.counters = counters or FakeCounters()

    @property
    def name(self) -> str:
        """``fake:<model>``."""
        return self._name

    @property
    def calls(self) -> int:
        """Calls completed so far."""
        return self.counters.completed

    def _hung(self) -> bool:
        return self.hang_after is not None and self.counters.completed >= self.hang_after

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request`` deterministically, honouring the test hooks."""
        self.counters.started += 1
        if self.counters.started <= self.fail_first:
            raise ProviderError(
                f"{self.name}: simulated failure {self.counters.started} of {self.fail_first}",
                transient=True,
                status=503,
            )
        if self._hung():
            await _forever()
        text = respond(request)
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000.0)
        # Re-checked after the sleep, with no await before the count, so exactly hang_after calls complete.
        if self._hung():
            await _forever()
        self.counters.completed += 1
        n = self.counters.completed
        if self.call_log is not None:
            _append_log(self.call_log, request, n)
        words_in = sum(len(m.content.split()) for m in request.messages)
        return ChatResponse(
            text=text,
            model=self.name,
            usage=TokenUsage(input=words_in, output=len(text.split())),
            latency_ms=float(self.latency_ms),
        )

    async def aclose(self) -> None:
        """Nothing to release."""
