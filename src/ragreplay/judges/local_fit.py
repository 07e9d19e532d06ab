"""A FIT judge that needs no LLM: a small logistic regression over cheap agreement signals, plus slot rules.

The coefficients, the feature standardisation and two thresholds ship in ``local_fit_model.json`` (fitted by
``benchmarks/fit_local_judges.py`` on the NQ301 and EVOUNA-NQ dev labels). With ``p`` the model's probability that
the answers agree: ``p >= hi`` is FIT, ``p <= lo`` is NO_FIT and the narrow band between is UNSCORABLE (the
signals really disagree); every judgment also carries a best guess (FIT or NO_FIT). The reason names the signals
or the rule that decided.

Factoid dev sets cannot calibrate everything a replay meets (refusals, near-identical sentences with another
number, name, role or polarity, echoes of the question), so the model JSON also carries explicit rules that
override the regression: see :data:`DEFAULT_RULES`. The benchmark applies them too, so its figures include them.
Several references are judged one by one, fitting any (:meth:`LocalFitJudge.judge_references`).
"""

from __future__ import annotations

import asyncio
import json
import math
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragreplay.core.ids import content_hash
from ragreplay.core.types import Answer, Case, Fit, Judgment
from ragreplay.errors import ConfigError
from ragreplay.judges import fit_features, slots
from ragreplay.judges import signals as sig
from ragreplay.judges.references import combine
from ragreplay.local.embeddings import get_embedder

_CONTEXT_SIGNALS = frozenset(["length_ratio", "question_echo", "new_length"])
# Signals that shift the odds but say nothing about content on their own; never given as the reason.
_SIMILARITY_SIGNALS = frozenset(
    "cosine token_f1 novel_f1 containment_max containment_min char_overlap recall novel_recall phrase".split()
)
# Only these can be a reason *for* FIT; a mismatch signal is named only when it fired (value > 0).

DEFAULT_MODEL_PATH = Path(__file__).with_name("local_fit_model.json")
"""The shipped model, fitted on NQ301 and EVOUNA-NQ dev with the ``use`` embedder."""

_FORMAT = "ragreplay-local-fit/2"


class NamedEncoder(sig.TextEncoder, Protocol):
    """An embedder with a name (``ragreplay.local.embeddings`` embedders fit); the model records the name."""

    @property
    def name(self) -> str:
        """``use`` or ``e5`` for the packaged models."""
        ...


@dataclass(frozen=True)
class Rule:
    """When ``signal >= at_least``, the decision becomes ``fit`` (an UNSCORABLE rule only demotes a FIT)."""

    signal: str
    at_least: float
    fit: Fit

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"signal": self.signal, "at_least": self.at_least, "fit": self.fit.value}


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("both_refuse", 1.0, Fit.FIT),  # the same takeaway: no answer
    Rule("refusal_mismatch", 1.0, Fit.NO_FIT),  # one declines, the other answers
    Rule("echo_mismatch", 1.0, Fit.NO_FIT),  # "You asked: ..." against an answer
    Rule("slot_numbers", 1.0, Fit.NO_FIT),  # "25 days" vs "30 days", years left to the dates
    Rule("slot_dates", 1.0, Fit.NO_FIT),  # "1 March 2021" vs "1 March 2022"
    Rule("slot_names", 1.0, Fit.NO_FIT),  # "approved by Anna" vs "approved by Mark"
    Rule(
        "slot_roles", 1.0, Fit.NO_FIT
    ),  # "HR approves" vs "your manager approves"; employer/employee swapped
    Rule("slot_polarity", 1.0, Fit.NO_FIT),  # "allowed" vs "forbidden"; "is" vs "is not 20 days"
    Rule("partial", 1.0, Fit.NO_FIT),  # the new answer keeps one clause of the reference and drops another
    Rule("translation", 0.7, Fit.FIT),  # another language, the same meaning (multilingual embedding)
)
"""Overrides for contradictions the regression cannot weigh from the dev sets; the first rule that matches wins.

The slot rules read the value two answers give in the same place (:mod:`ragreplay.judges.slots`)."""


@dataclass(frozen=True)
class LocalFitModel:
    """Logistic regression over standardised signals, with the two decision thresholds."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    lo: float
    hi: float
    embedder: str = "use"
    rules: tuple[Rule, ...] = DEFAULT_RULES
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<model>") -> LocalFitModel:
        """Read a model from its JSON form; a malformed file raises :class:`ConfigError` naming the field."""

        def need(key: str) -> Any:
            if key not in data:
                raise ConfigError(
                    f"{source}: field '{key}' is missing. Fix: refit with benchmarks/fit_local_judges.py"
                )
            return data[key]

        if data.get("format") != _FORMAT:
            raise ConfigError(f"{source}: field 'format' must be {_FORMAT!r}, got {data.get('format')!r}")
        features = tuple(str(f) for f in need("features"))
        unknown = [f for f in features if f not in fit_features.FEATURE_NAMES]
        if unknown:
            raise ConfigError(
                f"{source}: field 'features' names unknown signals {unknown}. "
                f"Fix: use names from {fit_features.FEATURE_NAMES}"
            )
        try:
            arrays = [np.asarray(need(k), dtype=np.float64) for k in ("mean", "scale", "coef")]
            intercept, lo, hi = (float(need(k)) for k in ("intercept", "lo", "hi"))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: a coefficient or threshold is not a number ({exc})") from exc
        if any(a.shape != (len(features),) for a in arrays):
            raise ConfigError(f"{source}: 'mean', 'scale' and 'coef' must each have one number per feature")
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"{source}: thresholds must satisfy 0 <= lo <= hi <= 1, got lo={lo}, hi={hi}")
        if np.any(arrays[1] <= 0):
            raise ConfigError(f"{source}: field 'scale' must be positive")
        rules = tuple(_read_rule(r, source) for r in data.get("rules", []))
        meta = dict(data.get("meta", {}))
        mean, scale, coef = arrays
        embedder = str(data.get("embedder", "use"))
        return cls(features, mean, scale, coef, intercept, lo, hi, embedder, rules, meta)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form read by :meth:`from_dict`."""
        return {
            "format": _FORMAT,
            "embedder": self.embedder,
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "intercept": round(self.intercept, 6),
            "lo": round(self.lo, 4),
            "hi": round(self.hi, 4),
            "rules": [r.to_dict() for r in self.rules],
            "meta": self.meta,
        }

    def contributions(self, signals: Mapping[str, float]) -> dict[str, float]:
        """Each feature's additive share of the log-odds of FIT."""
        x = np.array([signals[f] for f in self.features], dtype=np.float64)
        parts = self.coef * (x - self.mean) / self.scale
        return dict(zip(self.features, (float(v) for v in parts), strict=True))

    def probability(self, signals: Mapping[str, float]) -> float:
        """The probability that the two answers fit."""
        z = self.intercept + sum(self.contributions(signals).values())
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def decide(self, p: float) -> Fit:
        """FIT at or above ``hi``, NO_FIT at or below ``lo``, UNSCORABLE between."""
        if p >= self.hi:
            return Fit.FIT
        if p <= self.lo:
            return Fit.NO_FIT
        return Fit.UNSCORABLE

    def matching_rule(self, signals: Mapping[str, float], fit: Fit) -> Rule | None:
        """The first rule that changes ``fit`` for these signals, if any."""
        for rule in self.rules:
            if signals.get(rule.signal, 0.0) < rule.at_least:
                continue
            if rule.fit is Fit.UNSCORABLE and fit is not Fit.FIT:
                continue
            return rule if rule.fit is not fit else None
        return None


def _read_rule(data: Any, source: str) -> Rule:
    try:
        rule = Rule(str(data["signal"]), float(data["at_least"]), Fit(data["fit"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{source}: field 'rules' has an invalid entry {data!r}. "
            "Fix: each rule needs 'signal', 'at_least' (number) and 'fit' (FIT, NO_FIT or UNSCORABLE)"
        ) from exc
    if rule.signal not in fit_features.FEATURE_NAMES:
        raise ConfigError(f"{source}: field 'rules' names an unknown signal {rule.signal!r}")
    return rule


def load_model(path: Path | str | None = None) -> tuple[LocalFitModel, str]:
    """The model at ``path`` (default: the shipped one) and a short hash of its content."""
    path = Path(path) if path is not None else DEFAULT_MODEL_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"local FIT model not found at {path}. Fix: check the path") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return LocalFitModel.from_dict(data, str(path)), content_hash(data, length=8)


_SLOT_PHRASES = {
    "slot_dates": ("the dates differ", "the dates agree"),
    "slot_names": ("another name in the same place", "the same names"),
    "slot_roles": ("another role in the same place (or the roles swapped)", "the same roles"),
    "slot_polarity": ("opposite polarity (allowed / forbidden, or a negation)", "the same polarity"),
    "echo_mismatch": ("one answer only restates the question", "both answer"),
    "partial": ("the new answer leaves out part of the reference", "nothing left out"),
    "translation": ("the same meaning in another language", "the same language"),
}


def describe_signal(name: str, value: float, a: str, b: str) -> str:
    """A short human phrase for one signal's value on the pair ``a`` (old) / ``b`` (new)."""
    if name == "slot_numbers":
        na, nb = (sorted(set().union(*slots.numbers_by_unit(slots.clean(t)).values())) for t in (a, b))
        return f"amounts {'differ' if value else 'agree'} (old {', '.join(na) or '-'}; new {', '.join(nb) or '-'})"
    if name in ("number_conflict", "number_gap"):
        na, nb = sorted(sig.numbers(a)), sorted(sig.numbers(b))
        return f"numbers {'differ' if value else 'agree'} (old {', '.join(na) or '-'}; new {', '.join(nb) or '-'})"
    if name in ("entity_conflict", "entity_gap"):
        missing = sorted(
            (sig.entities(a) - set(sig.answer_tokens(b))) | (sig.entities(b) - set(sig.answer_tokens(a)))
        )
        return f"names {'differ: ' + ', '.join(missing[:4]) if missing else 'agree'}"
    slot = _SLOT_PHRASES.get(name)
    if slot is not None:
        return slot[0] if value else slot[1]
    if name == "date_mismatch":
        return f"dates {'differ' if value else 'agree'}"
    if name == "negation_mismatch":
        return "one answer is negated, the other not" if value else "same polarity"
    if name == "refusal_mismatch":
        return "one answer declines to answer, the other answers" if value else "both answer"
    if name == "both_refuse":
        return "both decline to answer" if value else "not both declining"
    labels = {
        "cosine": "meaning similarity",
        "token_f1": "word overlap F1",
        "novel_f1": "overlap beyond the question's words",
        "containment_max": "one answer inside the other",
        "containment_min": "mutual word coverage",
        "length_ratio": "length ratio",
        "question_echo": "share of an answer echoing the question",
        "char_overlap": "character overlap",
        "recall": "share of the reference's words in the new answer",
        "novel_recall": "share of the reference's own words (not the question's) in the new answer",
        "phrase": "one answer inside the other as a phrase",
        "names_missing": "share of the reference's names missing",
    }
    return f"{labels.get(name, name)} {value:.2f}"


@dataclass
class _LoopQueue:
    pending: deque[tuple[list[str], asyncio.Future[np.ndarray]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None


class BatchingEncoder:
    """Merges the ``encode`` calls of concurrent coroutines into one model call, run in a worker thread.

    A packaged embedder pays a fixed cost per call (tens of milliseconds for its dense layers) and little per
    text, so two texts per call would dominate a replay. While one batch is encoded, new requests queue; the
    next batch takes all of them (up to ``max_texts``). No timer: a lone request is encoded at once.
    """

    def __init__(self, encoder: sig.TextEncoder, max_texts: int = 256) -> None:
        self._encoder = encoder
        self._max_texts = max_texts
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue] = (
            weakref.WeakKeyDictionary()
        )

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The embeddings of ``texts`` (unit rows), computed together with other waiting requests."""
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _LoopQueue())
        future: asyncio.Future[np.ndarray] = loop.create_future()
        queue.pending.append((list(texts), future))
        if queue.worker is None or queue.worker.done():
            queue.worker = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _LoopQueue) -> None:
        while queue.pending:
            batch = [queue.pending.popleft()]
            size = len(batch[0][0])
            while queue.pending and size + len(queue.pending[0][0]) <= self._max_texts:
                batch.append(queue.pending.popleft())
                size += len(batch[-1][0])
            texts = [t for item, _ in batch for t in item]
            try:
                vectors = await asyncio.to_thread(self._encoder.encode, texts)
            except Exception as exc:  # every waiting caller gets the embedder's error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for item, future in batch:
                if not future.done():  # a cancelled caller has nothing to receive
                    future.set_result(vectors[start : start + len(item)])
                start += len(item)


_VERDICT = {Fit.FIT: "fits", Fit.NO_FIT: "does not fit", Fit.UNSCORABLE: "signals disagree"}


def explain(model: LocalFitModel, fit: Fit, signals: Mapping[str, float], old: str, new: str) -> str:
    """The signals that pushed hardest towards ``fit`` (for UNSCORABLE: the strongest one each way).

    Only similarity signals the model rewards count as reasons for FIT; a mismatch signal is named against FIT
    only when it fired, and length / question-echo signals are never named (they carry no content).
    """
    weight = dict(zip(model.features, model.coef, strict=True))
    similar = {n for n in _SIMILARITY_SIGNALS if weight.get(n, 0.0) > 0}
    ranked = sorted(model.contributions(signals).items(), key=lambda kv: abs(kv[1]), reverse=True)
    pro = [n for n, c in ranked if c > 0 and n in similar]
    con = [
        n
        for n, c in ranked
        if c < 0
        and n not in _CONTEXT_SIGNALS
        and (n in similar or (n not in _SIMILARITY_SIGNALS and signals[n] > 0))
    ]

    def say(names: list[str]) -> str:
        return "; ".join(describe_signal(n, signals[n], old, new) for n in names)

    if fit is Fit.FIT:
        return say(pro[:2] or ["cosine"])
    if fit is Fit.NO_FIT:
        return say(con[:2] or ["cosine"])
    return f"for FIT {say(pro[:1] or ['cosine'])}; against {say(con[:1] or ['novel_f1'])}"


class LocalFitJudge:
    """The FIT judge without an LLM: features + logistic regression + rules + two thresholds.

    ``embedder``: any embedder from :mod:`ragreplay.local.embeddings` with the name the model was fitted with
    (default: the packaged ``use`` model, loaded on first use). ``model_path``: a model JSON (default: shipped).
    Every judgment carries a ``best_guess`` (FIT or NO_FIT), also when it is UNSCORABLE.
    """

    name = "local:fit"

    def __init__(self, embedder: NamedEncoder | None = None, model_path: Path | str | None = None) -> None:
        self.model, digest = load_model(model_path)
        self._embedder: NamedEncoder = embedder if embedder is not None else get_embedder("use")
        if self._embedder.name != self.model.embedder:
            raise ConfigError(
                f"the local FIT model was fitted with the {self.model.embedder!r} embedder, not "
                f"{self._embedder.name!r}. Fix: use the {self.model.embedder!r} embedder or refit the model "
                "with benchmarks/fit_local_judges.py --embedder " + self._embedder.name
            )
        self._prompt_version = f"local-fit-2.{digest}"
        self._batcher = BatchingEncoder(self._embedder)

    @property
    def prompt_version(self) -> str:
        """``local-fit-2.<hash of the model JSON>``: a refitted model is a new judge version."""
        return self._prompt_version

    def signals(self, question: str, old: str, new: str) -> dict[str, float]:
        """All features for the pair (blocking: embeds both answers in one batch)."""
        cosine = sig.embedding_cosine(self._embedder, old, new)
        return fit_features.compute(question, old, new, cosine)

    def decide(self, question: str, old: str, new: str, signals: Mapping[str, float]) -> Judgment:
        """The judgment for precomputed ``signals`` of the pair, with the reason naming the signals that decided.

        The best guess is the rule's decision when a rule decides, else FIT when ``p >= 0.5``.
        """
        p = self.model.probability(signals)
        fit = self.model.decide(p)
        rule = self.model.matching_rule(signals, fit)
        guess = Fit.FIT if p >= 0.5 else Fit.NO_FIT
        if rule is not None:
            fit = rule.fit
            guess = fit if fit is not Fit.UNSCORABLE else guess
            reason = f"{_VERDICT[fit]} (rule, model p={p:.2f}): {describe_signal(rule.signal, 1.0, old, new)}"
        else:
            reason = f"{_VERDICT[fit]} (p={p:.2f}): " + explain(self.model, fit, signals, old, new)
        raw = json.dumps({"p": round(p, 4), "signals": {k: round(v, 4) for k, v in signals.items()}})
        return Judgment(
            fit=fit,
            best_guess=guess,
            reason=reason,
            judge=self.name,
            prompt_version=self.prompt_version,
            raw=raw,
        )

    def _empty(self, old: str, new: str) -> Judgment | None:
        if new.strip() and old.strip():
            return None
        both = not new.strip() and not old.strip()
        return Judgment(
            fit=Fit.UNSCORABLE if both else Fit.NO_FIT,
            best_guess=Fit.FIT if both else Fit.NO_FIT,
            reason="both answers are empty" if both else "one answer is empty",
            judge=self.name,
            prompt_version=self.prompt_version,
        )

    async def judge_references(
        self, question: str, references: Sequence[str], new_answer: Answer
    ) -> Judgment:
        """Judge ``new_answer`` against each reference on its own; it fits if it fits any (see ``combine``).

        The new answer and every reference are embedded in one batch, merged with concurrent judgments'
        batches, off the event loop.
        """
        new = new_answer.text
        refs = list(references)
        vectors = await self._batcher.encode([new, *refs])
        cosines = [float(np.clip(vectors[0] @ vectors[i], -1.0, 1.0)) for i in range(1, len(refs) + 1)]
        return await asyncio.to_thread(self._decide_all, question, refs, new, cosines)

    def _decide_all(self, question: str, refs: Sequence[str], new: str, cosines: Sequence[float]) -> Judgment:
        judgments = [
            self._empty(old, new)
            or self.decide(question, old, new, fit_features.compute(question, old, new, c))
            for old, c in zip(refs, cosines, strict=True)
        ]
        return combine(judgments)

    async def judge(self, case: Case, question: str, new_answer: Answer) -> Judgment:
        """Judge whether ``new_answer`` fits ``case.old_answer``."""
        empty = self._empty(case.old_answer, new_answer.text)
        if empty is not None:
            return empty
        return await self.judge_references(question, [case.old_answer], new_answer)
