"""Versions of the regression set: show, diff, export and import as JSONL, pin or drop a question by hand.

Every change makes a new version; none is ever edited. A pin or a drop records an override (later builds
apply it) and derives a new version from the latest one with just that change, its note saying what changed.
A hand-made version keeps the inclusion probabilities of the build it derives from, except that a pinned
item has probability 1.

The JSONL file holds, on its first line, ``{"format": "ragreplay.regset/1", "record": {...}}`` and then one
item per line. Importing validates every line first (a problem names the file, the line and the field) and
writes nothing unless all are valid; the imported set becomes a new version whose recipe says where it came
from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragreplay.core.regset import (
    RegressionSetRecord,
    SetItem,
    as_pinned,
    diff_sets,
    strata_counts,
)
from ragreplay.errors import ConfigError, InputError, InputProblem
from ragreplay.regset.build import new_set_id
from ragreplay.store import Store
from ragreplay.store.regsets import OverrideAction

EXPORT_FORMAT = "ragreplay.regset/1"
MAX_PROBLEMS = 20
"""Problems listed when an import fails (the rest are counted)."""


@dataclass(frozen=True)
class SetVersion:
    """One stored version and its items."""

    record: RegressionSetRecord
    items: list[SetItem]


def load_version(store: Store, ref: str) -> SetVersion:
    """The version ``ref`` names (``latest``, ``vN``, an id or a unique id prefix) with its items."""
    record = store.regsets.get_set(ref)
    if record is None:
        if not store.regsets.list_sets():
            raise ConfigError(
                f"there is no regression set {ref!r}: the store holds none yet. "
                "Fix: build one with `ragreplay regset build`."
            )
        raise ConfigError(
            f"there is no regression set {ref!r}. Fix: name one from `ragreplay regset list` "
            "(latest, vN, or an id)."
        )
    return SetVersion(record, store.regsets.load_items(record.id))


@dataclass(frozen=True)
class VersionDiff:
    """What changed from ``old`` to ``new``: items added, removed, and moved between strata (old, new)."""

    old: RegressionSetRecord
    new: RegressionSetRecord
    added: list[SetItem] = field(default_factory=list)
    removed: list[SetItem] = field(default_factory=list)
    moved: list[tuple[SetItem, SetItem]] = field(default_factory=list)


def diff_versions(store: Store, old_ref: str, new_ref: str) -> VersionDiff:
    """The difference between two versions (see :func:`ragreplay.core.regset.diff_sets`)."""
    old, new = load_version(store, old_ref), load_version(store, new_ref)
    changes = diff_sets(old.items, new.items)
    before = {i.key: i for i in old.items}
    after = {i.key: i for i in new.items}
    moved_keys = [line.split(":", 1)[0] for line in changes["moved"]]
    return VersionDiff(
        old.record,
        new.record,
        added=[after[k] for k in changes["added"]],
        removed=[before[k] for k in changes["removed"]],
        moved=[(before[k], after[k]) for k in moved_keys],
    )


# --- export / import --------------------------------------------------------------------------------------


def export_lines(version: SetVersion) -> list[str]:
    """The JSONL lines of a version: the record first, then one item per line."""
    head = {"format": EXPORT_FORMAT, "record": version.record.model_dump(mode="json")}
    return [json.dumps(head, ensure_ascii=False)] + [
        json.dumps(item.model_dump(mode="json"), ensure_ascii=False) for item in version.items
    ]


def export_version(store: Store, ref: str, path: Path) -> SetVersion:
    """Write version ``ref`` to ``path`` as JSONL (whole or not at all: written aside, then renamed)."""
    version = load_version(store, ref)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text("\n".join(export_lines(version)) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}. Fix: check the path.") from None
    return version


def _field(loc: Sequence[int | str], prefix: str = "") -> str:
    return prefix + ".".join(str(part) for part in loc)


def _validation_problems(file: str, line: int, exc: ValidationError, prefix: str = "") -> list[InputProblem]:
    return [
        InputProblem(file, line, _field(error["loc"], prefix) or None, error["msg"].rstrip("."))
        for error in exc.errors()
    ]


def _parse(file: str, number: int, text: str) -> tuple[Any, list[InputProblem]]:
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        return None, [InputProblem(file, number, None, f"not valid JSON ({exc.msg} at column {exc.colno})")]


def _read_head(file: str, text: str) -> tuple[RegressionSetRecord | None, list[InputProblem]]:
    data, problems = _parse(file, 1, text)
    if problems:
        return None, problems
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        return None, [
            InputProblem(
                file,
                1,
                "format",
                f"the first line is not a regression set header (format {EXPORT_FORMAT!r})",
                "import a file written by `ragreplay regset export`",
            )
        ]
    try:
        return RegressionSetRecord.model_validate(data.get("record")), []
    except ValidationError as exc:
        return None, _validation_problems(file, 1, exc, "record.")


def _item_problems(file: str, number: int, item: SetItem) -> list[InputProblem]:
    problems: list[InputProblem] = []
    if item.key != item.candidate.key:
        problems.append(
            InputProblem(
                file,
                number,
                "key",
                f"{item.key!r} is not the key of the question {item.candidate.question!r} "
                f"({item.candidate.key})",
                "keep each item's question as exported, or set its key to the question's",
            )
        )
    if not math.isclose(item.weight, item.count / item.inclusion_probability, rel_tol=1e-9):
        problems.append(
            InputProblem(
                file,
                number,
                "weight",
                f"{item.weight} is not count / inclusion_probability ({item.count / item.inclusion_probability})",
            )
        )
    if item.pinned and item.inclusion_probability != 1.0:
        problems.append(
            InputProblem(file, number, "inclusion_probability", "a pinned item has probability 1")
        )
    return problems


def read_export(path: Path) -> tuple[RegressionSetRecord, list[SetItem]]:
    """The record and items of an exported file, every line validated; :class:`InputError` listing the
    problems (file, line, field) if any line is bad."""
    file = str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {file}: {exc}. Fix: check the path.") from None
    numbered = [(n, text) for n, text in enumerate(lines, start=1) if text.strip()]
    if not numbered:
        raise InputError([InputProblem(file, None, None, "the file is empty", "export a set first")])
    first_line, head = numbered[0]
    record, problems = _read_head(file, head)
    if first_line != 1 and problems:
        problems = [InputProblem(p.file, first_line, p.field, p.message, p.fix) for p in problems]
    items: list[SetItem] = []
    seen: dict[str, int] = {}
    for number, text in numbered[1:]:
        data, bad = _parse(file, number, text)
        if not bad:
            try:
                item = SetItem.model_validate(data)
            except ValidationError as exc:
                bad = _validation_problems(file, number, exc)
            else:
                bad = _item_problems(file, number, item)
                if item.key in seen:
                    bad.append(
                        InputProblem(file, number, "key", f"{item.key} is on line {seen[item.key]} too")
                    )
                seen.setdefault(item.key, number)
                items.append(item)
        problems += bad
    if record is not None and not problems and strata_counts(items) != {**strata_counts([]), **record.counts}:
        problems.append(
            InputProblem(
                file,
                first_line,
                "record.counts",
                f"the header counts {record.counts} but the file holds {strata_counts(items)} (a cut file?)",
                "export the set again",
            )
        )
    if problems:
        raise InputError(problems[:MAX_PROBLEMS], more=max(0, len(problems) - MAX_PROBLEMS))
    assert record is not None
    return record, items


def import_version(store: Store, path: Path, now: datetime | None = None) -> SetVersion:
    """Store the set exported in ``path`` as a new version (nothing is written if any line is bad)."""
    original, items = read_export(path)
    now = now or datetime.now(UTC)
    source = {
        "file": path.name,
        "id": original.id,
        "version": original.version,
        "created_at": original.created_at.isoformat(),
        "inputs_digest": original.inputs_digest,
    }
    record = RegressionSetRecord(
        id=new_set_id(now),
        version=store.regsets.next_version(),
        created_at=now,
        recipe={"kind": "import", "imported_from": source, "sizes": original.recipe.get("sizes", {})}
        | {"original_recipe": original.recipe},
        inputs_digest=original.inputs_digest,
        counts=strata_counts(items),
        note=f"imported from {path.name} (was {original.label}, {original.id})",
    )
    store.regsets.create_set(record, items)
    return SetVersion(record, store.regsets.load_items(record.id))


# --- pin / drop -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OverrideOutcome:
    """What a pin or a drop did: the override is always recorded; ``version`` is the new version it made,
    ``None`` when the latest version already was as asked."""

    key: str
    action: OverrideAction
    version: SetVersion | None
    message: str


def _check_reason(reason: str) -> str:
    if not reason.strip():
        raise ConfigError(
            "--reason is empty. Fix: say why, e.g. --reason 'the CAO clause everyone asks about'."
        )
    return reason.strip()


def _latest(store: Store) -> SetVersion:
    record = store.regsets.get_set("latest")
    if record is None:
        raise ConfigError("there is no regression set yet. Fix: build one with `ragreplay regset build`.")
    return SetVersion(record, store.regsets.load_items(record.id))


def _derive(
    store: Store,
    parent: RegressionSetRecord,
    items: list[SetItem],
    change: dict[str, str],
    note: str,
    now: datetime,
) -> SetVersion:
    kept = ("sizes", "base_recipe", "imported_from")
    recipe: dict[str, Any] = {k: v for k, v in parent.recipe.items() if k in kept}
    if parent.recipe.get("kind") == "build":
        recipe["base_recipe"] = parent.recipe
    recipe["kind"] = "hand"
    recipe["changes"] = [*parent.recipe.get("changes", []), change | {"from": parent.id}]
    recipe["overrides"] = store.regsets.overrides()
    record = RegressionSetRecord(
        id=new_set_id(now),
        version=store.regsets.next_version(),
        created_at=now,
        recipe=recipe,
        inputs_digest=parent.inputs_digest,
        counts=strata_counts(items),
        parent_id=parent.id,
        note=note,
    )
    store.regsets.create_set(record, items)
    return SetVersion(record, store.regsets.load_items(record.id))


def pin_item(store: Store, key: str, reason: str, now: datetime | None = None) -> OverrideOutcome:
    """Pin ``key``: always in from now on. The latest version gets it pinned (probability 1) in a new
    version; a key it does not hold comes from the newest version that has it."""
    reason = _check_reason(reason)
    latest = _latest(store)
    held = {i.key: i for i in latest.items}
    if key in held and held[key].pinned:
        store.regsets.set_override(key, "pin", reason)
        return OverrideOutcome(key, "pin", None, f"{key} is already pinned in {latest.record.label}")
    origin = ""
    if key in held:
        item = held[key]
    else:
        found = store.regsets.find_item(key)
        if found is None:
            raise ConfigError(
                f"no regression set holds the key {key!r}. Fix: copy a key from `ragreplay regset show latest` "
                "(items of older versions can be pinned too)."
            )
        origin, item = f" from {found[0].label}", found[1]
    store.regsets.set_override(key, "pin", reason)
    pinned = as_pinned(item)
    items = [pinned if i.key == key else i for i in latest.items] if key in held else [*latest.items, pinned]
    note = f"pinned {key} ({item.stratum}){origin}: {reason}"
    change = {"action": "pin", "key": key, "reason": reason}
    version = _derive(store, latest.record, items, change, note, now or datetime.now(UTC))
    return OverrideOutcome(key, "pin", version, f"{version.record.label}: {note}")


def drop_item(store: Store, key: str, reason: str, now: datetime | None = None) -> OverrideOutcome:
    """Drop ``key``: never in from now on. The latest version without it becomes a new version."""
    reason = _check_reason(reason)
    latest = _latest(store)
    held = {i.key: i for i in latest.items}
    if key not in held:
        if store.regsets.find_item(key) is None:
            raise ConfigError(
                f"no regression set holds the key {key!r}. Fix: copy a key from `ragreplay regset show latest`."
            )
        store.regsets.set_override(key, "drop", reason)
        return OverrideOutcome(
            key, "drop", None, f"{key} is not in {latest.record.label}; later builds leave it out"
        )
    store.regsets.set_override(key, "drop", reason)
    items = [i for i in latest.items if i.key != key]
    note = f"dropped {key} ({held[key].stratum}): {reason}"
    change = {"action": "drop", "key": key, "reason": reason}
    version = _derive(store, latest.record, items, change, note, now or datetime.now(UTC))
    return OverrideOutcome(key, "drop", version, f"{version.record.label}: {note}")
