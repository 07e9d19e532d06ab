"""A pairwise judge that needs no LLM: per-side text signals, four 1-5 axes and a small fitted winner model.

For each side the judge measures (:class:`SideSignals`):

- ``grounded``: share of answer sentences supported by a sentence of that side's retrieved chunks (embedding
  cosine or token containment above a threshold, and no number the chunks lack); ``None`` without chunk text;
- ``recency``: how recent the documents are that the answer leans on, between the oldest (0) and newest (1)
  dated chunk of *both* sides; ``None`` when dates are unknown or all equal;
- directness: cosine of the question with the first sentence, a refusal, a hedge or filler in the opening,
  text copied from the question, repeated items and phrases, word variety;
- coverage: share of the question's content terms the answer addresses, cosine of question and whole answer;
- ``substance``: ``min(tokens, 10) / 10``: separates a non-answer from an answer;
- ``length``: characters on a log scale, saturating at 3,000 (0 for a refusal): a completeness proxy, fitted on
  RAG answers (RAGChecker), where "the longer answer wins" is the best signal read from the answers alone; with
  a reference answer it counts for nothing (the answer-only features are scaled by ``reference_scale``, 0);
- with a reference answer (a reviewed or gold answer): closeness to it (``ref_fscore``, a recall-weighted token
  F-score) and amounts that contradict it (``ref_numbers``).

The winner comes from an ordinal logistic model over the *differences* of the side features, with no intercept
(``s = w . (f(A) - f(B))``) and a symmetric tie band whose width grows when the two answers are nearly the same
text: ``P(A) = sigmoid(s - t)``, ``P(B) = sigmoid(-s - t)``, ``t = exp(t0 + v * similar)``; the most probable
outcome wins. With a reference answer that band is off (the closeness signal decides) and answers at least
``same_from_reference`` similar tie unless their chunks separate them.
Swapping A and B negates ``s`` and leaves ``t``, so the verdict swaps exactly. The weights, the
thresholds and the axis cut points ship in ``local_pairwise_model.json`` (written by
``benchmarks/pairwise_local_judge.py``); see docs/local_judges.md for how they were fitted and what they reach.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragreplay.core.ids import canonical_json, content_hash
from ragreplay.core.pairwise import DEFAULT_AXIS_NAMES, AxisScores, PairwiseJudgment, PairwiseSide, Winner
from ragreplay.errors import ConfigError, RagreplayError
from ragreplay.judges.local_pairwise_signals import PairSignals, SideSignals, pair_signals
from ragreplay.local.embeddings import get_embedder

DEFAULT_MODEL_PATH = Path(__file__).with_name("local_pairwise_model.json")
"""The shipped model, fitted on PandaLM with the ``use`` embedder."""

MODEL_FORMAT = "ragreplay-local-pairwise/1"

DEFAULT_SETTINGS: dict[str, Any] = {
    "thresholds": {
        # A sentence is supported when a chunk sentence is this close (USE v3: paraphrases score ~0.6-0.9)...
        "support_cosine": 0.6,
        # ...or holds this share of its content tokens, and the chunks hold every number it states.
        "support_containment": 0.8,
    },
    "axes": {
        # share-like signals (grounded, recency, completeness) -> 1..5: below 0.2 is 1, ..., 0.8 and above is 5.
        "share_cuts": [0.2, 0.4, 0.6, 0.8],
        # USE cosine of question vs first sentence -> 1..5 (off-topic ~0.0, a direct answer ~0.35-0.6).
        "relevance_cuts": [0.1, 0.2, 0.3, 0.4],
        # completeness = mean(term coverage, min(answer cosine / relevance_full, 1)).
        "relevance_full": 0.5,
        # directness loses a point for each: copying >= copy_at of the question, repetition >= repeat_at,
        # a filler opening, a hedge in the opening; two points for a refusal.
        "copy_at": 0.5,
        "repeat_at": 0.3,
    },
}
"""Thresholds and cut points that are set, not fitted; the benchmark copies them into the model JSON."""

FEATURE_LABELS: dict[str, str] = {
    "grounded": "support in its retrieved chunks",
    "recency": "reliance on recent documents",
    "first_relevance": "an opening that addresses the question",
    "answer_relevance": "closeness to the question",
    "term_coverage": "coverage of the question's terms",
    "refusal": "declining to answer",
    "hedging": "hedging",
    "filler": "filler in the opening",
    "question_copy": "text copied from the question",
    "repeated_items": "repeated items",
    "repeated_phrases": "repeated phrases",
    "word_variety": "word variety",
    "substance": "substance (more than a few words)",
    "ref_cosine": "closeness to the reference answer",
    "ref_f1": "word overlap with the reference answer",
    "ref_fscore": "word overlap with the reference answer",
    "ref_recall": "more of the reference answer's terms",
    "ref_numbers": "numbers that agree with the reference answer",
    "detail": "more distinct content",
    "length": "text (a fuller, longer answer)",
}
"""What each feature means, for the reason line."""

CHUNK_FEATURES = ("grounded", "recency")
"""Features read from an answer's retrieved chunks: they still separate two answers that say the same."""


class NamedEncoder(Protocol):
    """An embedder with a name (``ragreplay.local.embeddings`` embedders fit); the model records the name."""

    @property
    def name(self) -> str:
        """``use`` or ``e5`` for the packaged models."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows, one per text."""
        ...


@dataclass(frozen=True)
class PairwiseModel:
    """The fitted winner model and the settings the signals and axes use."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    tie_base: float
    tie_similar: float
    similar_from: float
    settings: dict[str, Any]
    embedder: str = "use"
    tie_reference: float | None = None
    """The tie band's base with a reference answer (closeness to it spreads the scores: its own band)."""
    reference_features: tuple[str, ...] = ()
    """Features that measure closeness to a reference answer (their difference is 0 without one)."""
    reference_scale: float = 1.0
    """With a reference answer, the fitted answer-only features' contributions are multiplied by this: closeness
    to a reviewed or gold answer says more about which answer is right than style signals read from the answers
    alone. The hand-set ``prior_features`` (grounding in the chunks, recency, refusal, filler) are not scaled."""
    prior_features: tuple[str, ...] = ()
    """Features whose weights are set by hand, not fitted (``prior_weights`` in the JSON)."""
    tie_similar_reference: float | None = None
    """How much near-identical answers widen the tie band with a reference (``None``: as without one)."""
    band: float = 0.0
    """An explicit tie band: ``|score| < band`` is a tie (the signals are weak), calibrated so that predicted ties
    fall where annotators tie; ``band_reference`` with a reference answer."""
    band_reference: float | None = None
    same_from: float | None = None
    """Answers at least this similar (cosine) are a tie whatever the score (``None``: no such rule);
    ``same_from_reference`` with a reference answer. Tuned on RAGChecker's training folds."""
    same_from_reference: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<model>") -> PairwiseModel:
        """Read a model from its JSON form; a malformed file raises :class:`ConfigError` naming the field."""
        if data.get("format") != MODEL_FORMAT:
            raise ConfigError(
                f"{source}: field 'format' must be {MODEL_FORMAT!r}, got {data.get('format')!r}"
            )
        try:
            weights = {str(k): float(v) for k, v in data["weights"].items()}
            tie = data["tie"]
            tie_base, tie_similar = float(tie["base"]), float(tie["similar"])
            similar_from = float(tie["similar_from"])
            tie_reference = float(tie["reference"]) if tie.get("reference") is not None else None
            reference_features = tuple(str(n) for n in data.get("reference_features", ()))
            reference_scale = float(data.get("reference_scale", 1.0))
            prior_features = tuple(str(n) for n in data.get("prior_weights", ()))
            similar_reference = tie.get("similar_reference")
            tie_similar_reference = float(similar_reference) if similar_reference is not None else None
            band = float(tie.get("band", 0.0))
            band_reference = float(tie["band_reference"]) if tie.get("band_reference") is not None else None
            same_from = float(tie["same_from"]) if tie.get("same_from") is not None else None
            same_ref = tie.get("same_from_reference")
            same_from_reference = float(same_ref) if same_ref is not None else None
            settings = {"thresholds": dict(data["thresholds"]), "axes": dict(data["axes"])}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"{source}: missing or malformed field {exc}. Fix: regenerate it with "
                "benchmarks/pairwise_local_judge.py"
            ) from exc
        unknown = sorted(set(weights) - set(SideSignals.feature_names()))
        if unknown:
            raise ConfigError(f"{source}: field 'weights' names unknown features {unknown}")
        if not 0.0 <= similar_from < 1.0:
            raise ConfigError(f"{source}: field 'tie.similar_from' must be in [0, 1), got {similar_from}")
        names = tuple(weights)
        return cls(
            names,
            tuple(weights[n] for n in names),
            tie_base,
            tie_similar,
            similar_from,
            settings,
            str(data.get("embedder", "use")),
            tie_reference,
            reference_features,
            reference_scale,
            prior_features,
            tie_similar_reference,
            band,
            band_reference,
            same_from,
            same_from_reference,
        )

    def contributions(self, a: SideSignals, b: SideSignals) -> dict[str, float]:
        """Each feature's share of the score ``s`` (positive favours A); with a reference answer measured on
        both sides, the fitted features that do not read it count ``reference_scale`` times."""
        fa, fb = a.features(), b.features()
        scale = self.reference_scale if _referenced(a, b) else 1.0
        kept = {*self.reference_features, *self.prior_features}
        return {
            n: w * (fa[n] - fb[n]) * (1.0 if n in kept else scale)
            for n, w in zip(self.features, self.weights, strict=True)
        }

    def score(self, a: SideSignals, b: SideSignals) -> float:
        """``s = w . (f(A) - f(B))``: positive favours A, and swapping the sides negates it exactly."""
        return math.fsum(self.contributions(a, b).values())

    def tie_width(self, similarity: float, referenced: bool = False) -> float:
        """The half-width ``t`` of the tie band, wider when the two answers are nearly the same text; with a
        reference answer (``referenced``) the band calibrated for judging against one."""
        similar = min(1.0, max(0.0, (similarity - self.similar_from) / (1.0 - self.similar_from)))
        base = self.tie_reference if referenced and self.tie_reference is not None else self.tie_base
        widen = self.tie_similar
        if referenced and self.tie_similar_reference is not None:
            widen = self.tie_similar_reference
        return math.exp(base + widen * similar)

    def tie_band(self, referenced: bool = False) -> float:
        """The calibrated band: ``|score|`` below it is a tie."""
        if referenced and self.band_reference is not None:
            return self.band_reference
        return self.band

    def same_cut(self, referenced: bool = False) -> float | None:
        """The similarity from which two answers are a tie (``None``: no such cut)."""
        return self.same_from_reference if referenced else self.same_from

    def probabilities(self, score: float, similarity: float, referenced: bool = False) -> dict[Winner, float]:
        """P(A), P(tie), P(B) under the ordinal model."""
        t = self.tie_width(similarity, referenced)
        p_a, p_b = _sigmoid(score - t), _sigmoid(-score - t)
        return {"A": p_a, "tie": max(0.0, 1.0 - p_a - p_b), "B": p_b}

    def decide(
        self, score: float, similarity: float, referenced: bool = False, chunk_score: float = 0.0
    ) -> Winner:
        """The most probable outcome; a tie when the tie band is at least as likely as either side (the score is
        inside the band, ``|score| < t`` roughly: the signals are weak), or when ``score`` is exactly 0 (the two
        sides are then equally likely, and neither order may be favoured). Answers at least :meth:`same_cut`
        similar say the same: only ``chunk_score`` (the part of the score read from their chunks, grounding and
        recency) may then separate them, and without it they tie."""
        same = self.same_cut(referenced)
        if same is not None and similarity >= same:
            if chunk_score == 0.0:
                return "tie"
            score = chunk_score
        p = self.probabilities(score, similarity, referenced)
        if p["tie"] >= max(p["A"], p["B"]) or abs(score) < self.tie_band(referenced) or score == 0.0:
            return "tie"
        return "A" if score > 0 else "B"

    def chunk_score(self, a: SideSignals, b: SideSignals) -> float:
        """The part of :meth:`score` read from the sides' chunks (CHUNK_FEATURES)."""
        contrib = self.contributions(a, b)
        return math.fsum(contrib.get(n, 0.0) for n in CHUNK_FEATURES)


def _referenced(a: SideSignals, b: SideSignals) -> bool:
    """Both sides were measured against a reference answer."""
    return a.ref_cosine is not None and b.ref_cosine is not None


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def load_model(path: Path | str | None = None) -> tuple[PairwiseModel, str]:
    """The model at ``path`` (the shipped one by default) and the hash of its file's content."""
    path = Path(path) if path is not None else DEFAULT_MODEL_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"local pairwise model not found at {path}. Fix: check the path") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return PairwiseModel.from_dict(data, source=str(path)), content_hash(data, length=8)


def _cut(value: float, cuts: Sequence[float]) -> int:
    return 1 + bisect_right(list(cuts), value)


def axis_scores(side: SideSignals, axes: Mapping[str, Any]) -> AxisScores:
    """Map one side's signals to the four 1-5 axes with the documented cut points (unknown -> neutral 3)."""
    share_cuts, rel_cuts = axes["share_cuts"], axes["relevance_cuts"]
    grounded = 3 if side.grounded is None else _cut(side.grounded, share_cuts)
    recency = 3 if side.recency is None else _cut(side.recency, share_cuts)
    if side.substance == 0.0:
        return AxisScores(groundedness=grounded, completeness=1, directness=1, recency=recency)
    direct = _cut(side.first_relevance, rel_cuts)
    direct -= 2 * side.refusal + side.hedging + side.filler
    direct -= side.question_copy >= axes["copy_at"]
    direct -= max(side.repeated_items, side.repeated_phrases) >= axes["repeat_at"]
    relevance = min(1.0, max(0.0, side.answer_relevance / axes["relevance_full"]))
    complete = _cut((side.term_coverage + relevance) / 2, share_cuts)
    if side.refusal:
        complete = min(complete, 2)
    return AxisScores(
        groundedness=grounded, completeness=complete, directness=max(1, int(direct)), recency=recency
    )


class MemoEncoder:
    """Remembers vectors by text (chunks recur across cases), encoding only new texts, in sorted order."""

    def __init__(self, inner: NamedEncoder, limit: int = 50_000) -> None:
        self.inner = inner
        self.name = inner.name
        self._limit = limit
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Rows for ``texts``; calls from several threads take turns."""
        with self._lock:
            new = sorted(set(texts) - self._vectors.keys())
            if new:
                if len(self._vectors) + len(new) > self._limit:
                    self._vectors.clear()
                self._vectors.update(zip(new, self.inner.encode(new), strict=True))
            return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)


def explain(model: PairwiseModel, winner: Winner, pair: PairSignals, score: float) -> str:
    """One line naming the two features that moved the verdict most (or why it is a tie)."""
    if winner == "tie":
        same = model.same_cut(_referenced(pair.a, pair.b))
        if pair.similarity >= model.similar_from or (same is not None and pair.similarity >= same):
            return f"tie: the answers say nearly the same (cosine {pair.similarity:.2f})"
        return f"tie: no signal separates the answers clearly (score {score:+.2f})"
    sign = 1.0 if winner == "A" else -1.0
    contrib = model.contributions(pair.a, pair.b)
    top = sorted((c * sign, n) for n, c in contrib.items() if c * sign > 0)[::-1][:2]
    fa, fb = pair.a.features(), pair.b.features()
    parts = []
    for _, name in top:
        more = (fa[name] - fb[name]) * sign > 0
        parts.append(("more " if more else "less ") + FEATURE_LABELS.get(name, name))
    return f"{winner} is better: " + (", ".join(parts) if parts else f"score {score:+.2f}")


class LocalPairwiseJudge:
    """Which of two answers is better, decided locally from text signals (no model call, no network).

    ``embedder``: one from :mod:`ragreplay.local.embeddings` with the name the model was fitted with (``use``);
    ``model_path``: a model JSON other than the shipped one.
    """

    name = "local:pairwise"

    def __init__(self, embedder: NamedEncoder | None = None, model_path: Path | str | None = None) -> None:
        self.model, digest = load_model(model_path)
        inner: NamedEncoder = embedder if embedder is not None else get_embedder("use")
        if inner.name != self.model.embedder:
            raise ConfigError(
                f"the local pairwise model was fitted with the {self.model.embedder!r} embedder, not "
                f"{inner.name!r}, and its cut points hold for that embedder only. Fix: pass "
                f"get_embedder({self.model.embedder!r}) or leave the embedder out"
            )
        self._encoder = MemoEncoder(inner)
        self._version = "local-pairwise-2." + digest

    @property
    def prompt_version(self) -> str:
        """``local-pairwise-2.<hash of the model JSON>``: a refit model is a new version."""
        return self._version

    @property
    def prompt_text(self) -> str:
        """What stands for a prompt: the fitted model, as canonical JSON (weights, cut points, embedder)."""
        return canonical_json(asdict(self.model))

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The four default axes it scores."""
        return DEFAULT_AXIS_NAMES

    def signals(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> PairSignals:
        """Both sides' signals and the answers' similarity (blocking: embeds the texts); with a ``reference``
        answer, each side's closeness to it too."""
        return pair_signals(self._encoder, question, a, b, self.model.settings["thresholds"], reference)

    def decide(self, pair: PairSignals) -> PairwiseJudgment:
        """The judgment for already computed signals (judged against a reference when they hold one)."""
        referenced = _referenced(pair.a, pair.b)
        score = self.model.score(pair.a, pair.b)
        chunk = self.model.chunk_score(pair.a, pair.b)
        winner = self.model.decide(score, pair.similarity, referenced, chunk)
        probabilities = self.model.probabilities(score, pair.similarity, referenced)
        raw = {
            "reference": referenced,
            "score": round(score, 6),
            "similarity": round(pair.similarity, 6),
            "p": {k: round(v, 6) for k, v in probabilities.items()},
            "a": asdict(pair.a),
            "b": asdict(pair.b),
        }
        axes = self.model.settings["axes"]
        return PairwiseJudgment(
            winner=winner,
            scores_a=axis_scores(pair.a, axes),
            scores_b=axis_scores(pair.b, axes),
            reason=explain(self.model, winner, pair, score),
            judge=self.name,
            prompt_version=self.prompt_version,
            raw=json.dumps(raw, sort_keys=True, default=str),
        )

    async def judge(
        self, question: str, a: PairwiseSide, b: PairwiseSide, reference: str | None = None
    ) -> PairwiseJudgment:
        """Judge one pair, against ``reference`` (a reviewed or gold answer) when given: closeness to it then
        weighs most. A failure while measuring gives ``winner=None`` with the error, not an exception."""
        try:
            pair = await asyncio.to_thread(self.signals, question, a, b, reference)
        except RagreplayError:
            raise
        except Exception as exc:  # recorded on the judgment: nothing is silently dropped
            return PairwiseJudgment(
                winner=None,
                scores_a=None,
                scores_b=None,
                reason=f"could not score: {type(exc).__name__}: {exc}",
                judge=self.name,
                prompt_version=self.prompt_version,
            )
        return self.decide(pair)
