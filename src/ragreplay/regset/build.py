"""Building a regression set version: candidates -> pool -> embed -> merge near duplicates -> clusters -> sample.

1. Read the candidates of the window (:mod:`ragreplay.regset.candidates`) from the chosen sources.
2. Pool them by question key into strata (:func:`ragreplay.core.regset.pool`), leaving dropped keys out and
   turning graduated wounds (fixed in enough consecutive gates: the gate feeds ``graduated``) into wins.
   Pinned keys the window no longer holds are carried from the newest version that has them.
3. Embed the questions with a packaged embedder (``use`` by default), merge near duplicates within a stratum
   (pinned questions are never merged away) and cluster the rest (leader clustering).
4. Sample each stratum's quota evenly across its clusters with the recipe's seed; pinned questions are in with
   probability 1 and count toward their stratum's quota.
5. Store the version with its recipe and the digest of the candidates it read.

The same store content and the same recipe give the same items (:func:`rebuild` checks it).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.regset import (
    STRATA,
    Candidate,
    MultisetDigest,
    Pooled,
    PoolEntry,
    Pooler,
    RegressionSetRecord,
    SetItem,
    Source,
    Stratum,
    inputs_digest,
    leader_clusters,
    merge_near_duplicates,
    phase_one,
    pool,
    select,
    strata_counts,
)
from ragreplay.errors import ConfigError
from ragreplay.local.embeddings import get_embedder
from ragreplay.regset.candidates import (
    CandidateCounts,
    Candidates,
    iter_shadow_candidates,
    merge,
    replay_candidates,
    shadow_candidates,
    window_candidate,
)
from ragreplay.shadow.privacy import load_redactor
from ragreplay.store import Store

EmbedderName = Literal["use", "e5", "hash"]
EMBEDDERS: tuple[EmbedderName, ...] = ("use", "e5", "hash")
THRESHOLDS: dict[str, tuple[float, float]] = {
    "use": (0.95, 0.6),
    "e5": (0.975, 0.92),
    "hash": (0.95, 0.5),
}
"""Per embedder: (near-duplicate cosine, cluster cosine). ``use``: 0.95 merges rewordings such as "when is it
paid?" / "when is that paid out?" (0.97) but not "annual leave" / "leave carried over" (0.88); 0.6 groups the
demo log's 242 distinct questions into 168 topic clusters (bonus questions in English and Dutch together).
``e5`` compresses cosines into 0.75-1.0: its thresholds give the same near-duplicate pairs and about as many
clusters (166) on the same questions. ``hash`` is the cheap token-hashing embedder (tests, no model)."""
EMBED_BATCH = 64
"""Questions embedded per call (the progress callback is called after each batch)."""

Progress = Callable[[int, int], None]


class Embedder(Protocol):
    """Turns questions into unit vectors (a packaged model of :mod:`ragreplay.local.embeddings`, or
    :class:`TokenHashEmbedder`)."""

    @property
    def name(self) -> str:
        """The name the recipe records."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text."""
        ...


class TokenHashEmbedder:
    """A cheap deterministic embedder: each lowercase word (and each word pair) hashed into 256 dimensions,
    normalised. Shares words, not meaning; for tests and for machines that cannot load a model."""

    name = "hash"
    dim = 256

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text."""
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            for token in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        normalised: np.ndarray = vectors / np.maximum(norms, 1e-12)
        return normalised


def embedder_for(name: str) -> Embedder:
    """The embedder called ``name``: a packaged model (``use``, ``e5``) or ``hash``."""
    if name == "hash":
        return TokenHashEmbedder()
    if name not in EMBEDDERS:
        raise ConfigError(f"--embedder {name!r} is not known. Fix: use one of {', '.join(EMBEDDERS)}.")
    return get_embedder(cast(Literal["use", "e5"], name))


class BuildRecipe(BaseModel):
    """Everything a build depends on besides the store's content: rebuilding with it gives the same items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["build"] = "build"
    since: datetime
    until: datetime
    seed: int = 0
    sizes: dict[Stratum, int]
    sources: list[Source] = Field(default_factory=lambda: list[Source](["shadow", "replay"]))
    margin: float = 0.5
    near_duplicate: float
    cluster_threshold: float
    embedder: str = "use"
    redactor: str = "default"
    """Applied to replay logs' questions and answers (shadow rows are redacted when logged)."""
    overrides: dict[str, Literal["pin", "drop"]] = Field(default_factory=dict)
    graduated: list[str] = Field(default_factory=list)
    """Wound keys fixed in enough consecutive gates: classified as wins."""
    open_wounds: list[str] = Field(default_factory=list)
    references: dict[str, tuple[str | None, str | None]] = Field(default_factory=dict)
    """Question key -> (a reviewer's correct answer, failure tag): a tagged question is a known failure."""
    design: Literal["exact", "two-phase"] = "exact"
    """``two-phase`` (every new build): a large stratum is sampled before anything is compared
    (:func:`~ragreplay.core.regset.subsample`); ``exact``: every question compared with every other (the
    builds made before, which rebuild as they were)."""


@dataclass
class BuildFigures:
    """What a build found on its way, for its report (also kept in the recipe's ``found``)."""

    candidates: int = 0
    read: dict[str, int] = field(default_factory=dict)
    pool_sizes: dict[Stratum, int] = field(default_factory=dict)
    """Distinct questions per stratum after merging near duplicates (what each quota was drawn from)."""
    clusters: dict[Stratum, int] = field(default_factory=dict)
    near_duplicates_merged: int = 0
    pins_carried: int = 0
    """Pinned questions the window no longer held, carried from the newest version that has them."""
    pins_missing: list[str] = field(default_factory=list)
    """Pinned keys found in no version and not in the window."""
    phase_one: dict[Stratum, list[int]] = field(default_factory=dict)
    """Per stratum, [questions kept, questions held] by phase one's sample (kept == held: taken whole)."""

    def as_dict(self) -> dict[str, Any]:
        """The figures as plain data."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class BuiltSet:
    """A stored version, its items and what the build found."""

    record: RegressionSetRecord
    items: list[SetItem]
    figures: BuildFigures


def make_recipe(
    since: datetime,
    until: datetime,
    sizes: Mapping[Stratum, int],
    seed: int = 0,
    sources: Sequence[Source] = ("shadow", "replay"),
    margin: float = 0.5,
    *,
    embedder: str = "use",
    near_duplicate: float | None = None,
    cluster_threshold: float | None = None,
    redactor: str = "default",
    overrides: Mapping[str, str] | None = None,
    graduated: frozenset[str] = frozenset(),
    open_wounds: frozenset[str] = frozenset(),
    references: Mapping[str, tuple[str | None, str | None]] | None = None,
    design: Literal["exact", "two-phase"] = "two-phase",
) -> BuildRecipe:
    """A validated recipe; thresholds default to the embedder's (:data:`THRESHOLDS`)."""
    if until <= since:
        raise ConfigError(
            f"--until {until.isoformat()} is not after --since {since.isoformat()}. Fix: swap them."
        )
    for stratum, size in sizes.items():
        if size < 0:
            raise ConfigError(f"the {stratum} size {size} is negative. Fix: give 0 or more.")
    if not sources:
        raise ConfigError("no source to build from. Fix: --source shadow, replay or both.")
    if embedder not in THRESHOLDS:
        raise ConfigError(f"--embedder {embedder!r} is not known. Fix: use one of {', '.join(EMBEDDERS)}.")
    default_near, default_cluster = THRESHOLDS[embedder]
    load_redactor(redactor)  # a bad redactor fails before anything is read
    return BuildRecipe(
        since=since,
        until=until,
        seed=seed,
        sizes={s: int(sizes.get(s, 0)) for s in STRATA},
        sources=list(dict.fromkeys(sources)),
        margin=margin,
        near_duplicate=default_near if near_duplicate is None else near_duplicate,
        cluster_threshold=default_cluster if cluster_threshold is None else cluster_threshold,
        embedder=embedder,
        redactor=redactor,
        overrides={k: cast(Literal["pin", "drop"], v) for k, v in sorted((overrides or {}).items())},
        graduated=sorted(graduated),
        open_wounds=sorted(open_wounds),
        references=dict(sorted((references or {}).items())),
        design=design,
    )


def read_candidates(store: Store, recipe: BuildRecipe) -> Candidates:
    """The candidates of the recipe's window and sources, ``open_wounds`` marked."""
    parts: list[Candidates] = []
    if "shadow" in recipe.sources:
        parts.append(shadow_candidates(store, recipe.since, recipe.until))
    if "replay" in recipe.sources:
        parts.append(replay_candidates(store, recipe.since, recipe.until, load_redactor(recipe.redactor)))
    found = merge(parts)
    wounds = set(recipe.open_wounds)
    if wounds:
        found.items = [
            c.model_copy(update={"open_wound": True}) if c.key in wounds else c for c in found.items
        ]
    if recipe.references:
        found.items = [_with_reference(c, recipe.references.get(c.key)) for c in found.items]
    return found


def stream_candidates(store: Store, recipe: BuildRecipe, counts: CandidateCounts) -> Iterator[Candidate]:
    """:func:`read_candidates` streamed: the shadow window in one lean pass (the replay side, ingested logs,
    read whole), ``open_wounds`` and ``references`` applied to each; ``counts`` filled as they are read."""
    wounds = set(recipe.open_wounds)
    parts: list[Iterable[Candidate]] = []
    if "shadow" in recipe.sources:
        parts.append(iter_shadow_candidates(store, recipe.since, recipe.until, counts))
    if "replay" in recipe.sources:
        replay = replay_candidates(store, recipe.since, recipe.until, load_redactor(recipe.redactor))
        parts.append(replay.items)
        for name, value in replay.counts.as_dict().items():
            setattr(counts, name, getattr(counts, name) + value)
    for part in parts:
        for c in part:
            if wounds and c.key in wounds:
                c = c.model_copy(update={"open_wound": True})
            if recipe.references:
                c = _with_reference(c, recipe.references.get(c.key))
            yield c


def _kept_whole(c: Candidate) -> Candidate | None:
    """What a streamed build keeps of the candidate standing for a question: a replay case whole (an ingested
    log is small), nothing of a shadow row (read again by id if phase one keeps its question)."""
    return None if c.source == "shadow" else c


def _read_again(store: Store, recipe: BuildRecipe, entries: Sequence[PoolEntry]) -> dict[int, Pooled]:
    """The pooled questions of ``entries`` with their candidates whole (shadow rows read again by id: a few
    hundred), by index in ``entries``; a row gone since the pass (purged meanwhile) leaves its question out."""
    rows = store.shadow_window.window_rows([e.source_id for e in entries if e.candidate is None])
    wounds = set(recipe.open_wounds)
    out: dict[int, Pooled] = {}
    for index, e in enumerate(entries):
        c = e.candidate
        if c is None:
            row = rows.get(e.source_id)
            if row is None:
                continue
            c = window_candidate(row)
            if e.key in wounds:
                c = c.model_copy(update={"open_wound": True})
            if recipe.references:
                c = _with_reference(c, recipe.references.get(e.key))
        out[index] = Pooled(e.stratum, c, e.count)
    return out


def _with_reference(c: Candidate, reviewed: tuple[str | None, str | None] | None) -> Candidate:
    """A candidate with what a reviewer wrote of its question (the answer, the failure tag), when anything."""
    if reviewed is None:
        return c
    answer, tag = reviewed
    return c.model_copy(
        update={"reference_answer": answer or c.reference_answer, "failure_tag": tag or c.failure_tag}
    )


def _embed(embedder: Embedder, questions: Sequence[str], progress: Progress | None) -> np.ndarray:
    parts: list[np.ndarray] = []
    for start in range(0, len(questions), EMBED_BATCH):
        parts.append(np.asarray(embedder.encode(questions[start : start + EMBED_BATCH]), dtype=np.float32))
        if progress is not None:
            progress(min(start + EMBED_BATCH, len(questions)), len(questions))
    return np.concatenate(parts) if parts else np.zeros((0, 1), dtype=np.float32)


def _carried_pins(
    store: Store, pinned: Sequence[str], graduated: frozenset[str]
) -> tuple[list[Pooled], list[str]]:
    """Pinned questions the window does not hold, from the newest version that has them; and the pinned keys
    found nowhere."""
    carried: list[Pooled] = []
    missing: list[str] = []
    for key in pinned:
        found = store.regsets.find_item(key)
        if found is None:
            missing.append(key)
            continue
        item = found[1]
        stratum: Stratum = "win" if item.stratum == "wound" and key in graduated else item.stratum
        carried.append(Pooled(stratum, item.candidate, item.count, tuple(item.merged_keys)))
    return carried, missing


def compute_items(
    store: Store, recipe: BuildRecipe, embedder: Embedder | None = None, progress: Progress | None = None
) -> tuple[list[SetItem], str, BuildFigures]:
    """The items the recipe selects from the store's content now, the digest of the candidates read, and the
    build's figures. Writes nothing."""
    embedder = embedder or embedder_for(recipe.embedder)
    figures = BuildFigures()
    dropped = frozenset(k for k, a in recipe.overrides.items() if a == "drop")
    pinned = frozenset(k for k, a in recipe.overrides.items() if a == "pin")
    graduated = frozenset(recipe.graduated)
    if recipe.design == "two-phase":  # streamed: memory follows the distinct questions, not the rows
        return _streamed_items(store, recipe, embedder, progress, figures)
    found = read_candidates(store, recipe)
    figures.candidates = len(found.items)
    figures.read = found.counts.as_dict()
    pooled = pool(found.items, recipe.margin, dropped=dropped, graduated=graduated)
    in_pool = {p.candidate.key for p in pooled}
    carried, figures.pins_missing = _carried_pins(store, sorted(pinned - in_pool), graduated)
    figures.pins_carried = len(carried)
    pooled += carried
    return _sampled_items(pooled, recipe, embedder, progress, figures), inputs_digest(found.items), figures


def _sampled_items(
    pooled: list[Pooled],
    recipe: BuildRecipe,
    embedder: Embedder,
    progress: Progress | None,
    figures: BuildFigures,
) -> list[SetItem]:
    """Phase two on the pooled questions: embedded, near duplicates merged, clustered, each quota drawn."""
    pinned = frozenset(k for k, a in recipe.overrides.items() if a == "pin")
    vectors = _embed(embedder, [p.candidate.question for p in pooled], progress)
    merged = merge_near_duplicates(pooled, vectors, recipe.near_duplicate, keep=pinned)
    figures.near_duplicates_merged = len(pooled) - len(merged)
    row = {p.candidate.key: i for i, p in enumerate(pooled)}
    kept = vectors[[row[p.candidate.key] for p in merged]] if merged else vectors[:0]
    clusters = leader_clusters(kept, recipe.cluster_threshold)
    chosen = select(merged, clusters, recipe.sizes, recipe.seed, pinned=pinned)
    figures.pool_sizes = dict(chosen.pool_sizes)
    figures.clusters = dict(chosen.clusters)
    return chosen.items


def _streamed_items(
    store: Store, recipe: BuildRecipe, embedder: Embedder, progress: Progress | None, figures: BuildFigures
) -> tuple[list[SetItem], str, BuildFigures]:
    """A two-phase build: the window pooled in one streamed pass keeping only each question's key, stratum,
    requests and the id of the row standing for it; phase one on those; the rows phase one kept read again."""
    dropped = frozenset(k for k, a in recipe.overrides.items() if a == "drop")
    pinned = frozenset(k for k, a in recipe.overrides.items() if a == "pin")
    graduated = frozenset(recipe.graduated)
    counts = CandidateCounts()
    pooler, digest = Pooler(recipe.margin, dropped, graduated, keep=_kept_whole), MultisetDigest()
    for c in stream_candidates(store, recipe, counts):
        pooler.add(c)
        digest.add(c)
    figures.candidates, figures.read = digest.count, counts.as_dict()
    entries = pooler.entries()
    in_pool = {e.key for e in entries}
    carried, figures.pins_missing = _carried_pins(store, sorted(pinned - in_pool), graduated)
    figures.pins_carried = len(carried)
    questions = [(e.key, e.stratum) for e in entries] + [(p.candidate.key, p.stratum) for p in carried]
    chosen = phase_one(questions, recipe.sizes, recipe.seed, pinned)
    held = Counter(stratum for _, stratum in questions)
    figures.phase_one = {
        s: [sum(questions[i][1] == s for i in chosen), held[s]] for s in STRATA if held[s] > 0
    }
    kept = [i for i in sorted(chosen) if i < len(entries)]
    whole = _read_again(store, recipe, [entries[i] for i in kept])
    pooled = [replace(whole[j], phase_one=chosen[i]) for j, i in enumerate(kept) if j in whole]
    pooled += [replace(p, phase_one=chosen[len(entries) + j]) for j, p in enumerate(carried)]
    return _sampled_items(pooled, recipe, embedder, progress, figures), digest.hexdigest(), figures


def new_set_id(now: datetime) -> str:
    """A sortable, unique version id such as ``rs_20261130_060000_a1b2``."""
    return f"rs_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(2)}"


def build_regset(
    store: Store,
    since: datetime,
    until: datetime,
    sizes: Mapping[Stratum, int],
    seed: int = 0,
    sources: Sequence[Source] = ("shadow", "replay"),
    margin: float = 0.5,
    *,
    embedder: str = "use",
    near_duplicate: float | None = None,
    cluster_threshold: float | None = None,
    redactor: str = "default",
    graduated: frozenset[str] = frozenset(),
    open_wounds: frozenset[str] = frozenset(),
    references: Mapping[str, tuple[str | None, str | None]] | None = None,
    note: str = "",
    progress: Progress | None = None,
    embed_with: Embedder | None = None,
    now: datetime | None = None,
    design: Literal["exact", "two-phase"] = "two-phase",
) -> BuiltSet:
    """Build and store a new version from the window ``[since, until)`` (see the module docstring).

    ``graduated`` is the hook for the gate: keys of wounds fixed in enough consecutive gates, which become
    wins; ``open_wounds`` the keys an earlier gate left failing. Both are recorded in the recipe. The store's
    pin/drop overrides are applied and recorded too. A stratum the window cannot fill holds what there is:
    ``record.shortfall()`` says by how much; a window with no question at all is a :class:`ConfigError`
    (nothing is stored). ``embed_with`` replaces the named embedder (tests). ``design`` ``exact`` compares every
    question with every other (quadratic: for benchmarks and small windows).
    """
    recipe = make_recipe(
        since,
        until,
        sizes,
        seed,
        sources,
        margin,
        embedder=embedder if embed_with is None else embed_with.name,
        near_duplicate=near_duplicate,
        cluster_threshold=cluster_threshold,
        redactor=redactor,
        overrides=store.regsets.overrides(),
        graduated=graduated,
        open_wounds=open_wounds,
        references=references,
        design=design,
    )
    items, digest, figures = compute_items(store, recipe, embed_with, progress)
    window = f"{recipe.since:%Y-%m-%d %H:%M} to {recipe.until:%Y-%m-%d %H:%M} UTC"
    if not items:
        read = figures.read
        raise ConfigError(
            f"no question of {' or '.join(recipe.sources)} from {window} fits a stratum "
            f"({read.get('shadow_rows', 0)} shadow row(s), {read.get('replay_cases', 0)} replay case(s) read): "
            "nothing stored. Fix: widen --since, judge the shadow rows first (`ragreplay shadow judge`), "
            "or ingest a log with feedback (`ragreplay ingest`)."
        )
    now = now or datetime.now(UTC)
    record = RegressionSetRecord(
        id=new_set_id(now),
        version=store.regsets.next_version(),
        created_at=now,
        recipe=recipe.model_dump(mode="json") | {"found": figures.as_dict()},
        inputs_digest=digest,
        counts=strata_counts(items),
        note=note or f"built from {' and '.join(recipe.sources)} {window}",
    )
    store.regsets.create_set(record, items)
    return BuiltSet(record, items, figures)


@dataclass(frozen=True)
class Rebuilt:
    """A stored version next to what its recipe gives from the store's content now."""

    record: RegressionSetRecord
    items: list[SetItem]
    digest: str
    identical: bool


def rebuild(store: Store, record: RegressionSetRecord, embed_with: Embedder | None = None) -> Rebuilt:
    """Run the recipe of a built version again (storing nothing) and say whether it gives the same items.
    A version made by hand (pin, drop, import) has no recipe to run: :class:`ConfigError`."""
    if record.recipe.get("kind") != "build":
        raise ConfigError(
            f"{record.label} ({record.id}) was not built from a recipe but made by "
            f"{record.recipe.get('kind', 'hand')}: only built versions can be rebuilt. "
            "Fix: rebuild the version it derives from (see `ragreplay regset show`)."
        )
    recipe = BuildRecipe.model_validate({k: v for k, v in record.recipe.items() if k != "found"})
    items, digest, _ = compute_items(store, recipe, embed_with)
    stored = store.regsets.load_items(record.id)
    same = digest == record.inputs_digest and sorted(items, key=_by_key) == sorted(stored, key=_by_key)
    return Rebuilt(record, items, digest, same)


def _by_key(item: SetItem) -> str:
    return item.key
