"""Regression set versions rendered: one version (text, Markdown, JSON), the list of versions, a diff."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragreplay.core.regset import STRATA, RegressionSetRecord, SetItem
from ragreplay.regset.versions import SetVersion, VersionDiff
from ragreplay.report.labels import md_text

SHOW_FORMATS = ("text", "md", "json")
DIFF_FORMATS = ("text", "json")
STRATUM_MEANING = {
    "win": "wins: the champion's answer was liked, or clearly preferred or agreed by the judge",
    "contested": "contested: champion and challenger differ and the call was close, or judge and user disagree",
    "wound": "open wounds: disliked, reviewed as wrong, scored 2 or less, or left failing by a gate",
}


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _window(recipe: Mapping[str, Any]) -> str:
    since, until = recipe.get("since"), recipe.get("until")
    return f"{since} to {until}" if since and until else "-"


def recipe_line(record: RegressionSetRecord) -> str:
    """The recipe in one line: how the version was made."""
    recipe = record.recipe
    kind = recipe.get("kind")
    if kind == "build":
        sizes = recipe.get("sizes", {})
        return (
            f"built from {'+'.join(recipe.get('sources', []))} over {_window(recipe)}, seed {recipe.get('seed')}, "
            f"sizes {' / '.join(f'{s} {sizes.get(s, 0)}' for s in STRATA)}, margin {recipe.get('margin')}, "
            f"embedder {recipe.get('embedder')} (near-duplicate >= {recipe.get('near_duplicate')}, "
            f"cluster >= {recipe.get('cluster_threshold')}), {len(recipe.get('overrides', {}))} override(s), "
            f"{len(recipe.get('graduated', []))} graduated"
        )
    if kind == "import":
        source = recipe.get("imported_from", {})
        return f"imported from {source.get('file')} (was v{source.get('version')}, {source.get('id')})"
    changes = recipe.get("changes", [])
    done = ", ".join(f"{c.get('action')} {c.get('key')}" for c in changes) or "-"
    return f"made by hand from {record.parent_id}: {done}"


def strata_line(record: RegressionSetRecord, items: Sequence[SetItem]) -> str:
    """Items per stratum against the sizes asked for, and what each stands for in production traffic."""
    sizes = record.recipe.get("sizes", {})
    parts = []
    for stratum in STRATA:
        held = [i for i in items if i.stratum == stratum]
        asked = f"/{sizes[stratum]}" if stratum in sizes else ""
        weight = sum(i.weight for i in held)
        parts.append(f"{stratum} {len(held)}{asked} (stands for ~{weight:.0f} requests)")
    return ", ".join(parts)


def shortfall_lines(record: RegressionSetRecord) -> list[str]:
    """One line per stratum the window could not fill."""
    found = record.recipe.get("found", {}).get("pool_sizes", {})
    lines = []
    for stratum, missing in record.shortfall().items():
        pool = f"; the window held {found[stratum]} such question(s)" if stratum in found else ""
        lines.append(f"{stratum}: {missing} short of {record.recipe['sizes'][stratum]}{pool}")
    return lines


def _item_row(item: SetItem) -> str:
    pin = "pin" if item.pinned else ""
    return (
        f"  {item.key}  {item.inclusion_probability:>6.3f}  {item.weight:>8.1f}  {item.count:>5}  "
        f"{item.cluster:>4}  {item.candidate.source:<6}  {pin:<3}  {_short(item.candidate.question)}"
    )


def render_version_text(version: SetVersion, reasons: Mapping[str, str] | None = None) -> str:
    """A version for the terminal: record, recipe, strata, shortfalls, then the items by stratum."""
    record, items = version.record, version.items
    lines = [
        f"regression set {record.label} ({record.id}), created {record.created_at:%Y-%m-%d %H:%M} UTC",
        *([f"note: {record.note}"] if record.note else []),
        f"recipe: {recipe_line(record)}",
        f"inputs digest: {record.inputs_digest or '-'}",
        f"strata: {strata_line(record, items)}",
    ]
    lines += [f"short: {line}" for line in shortfall_lines(record)]
    for stratum in STRATA:
        held = [i for i in items if i.stratum == stratum]
        lines += ["", f"{STRATUM_MEANING[stratum]} ({len(held)})"]
        if held:
            lines.append(
                f"  {'key':<18}  {'p':>6}  {'weight':>8}  {'count':>5}  {'clu':>4}  {'source':<6}  pin  question"
            )
        lines += [_item_row(i) for i in held]
    explained = [(i.key, reasons[i.key]) for i in items if i.pinned and reasons and i.key in reasons]
    if explained:
        lines += ["", "pinned by hand:"] + [f"  {key}: {reason}" for key, reason in explained]
    return "\n".join(lines) + "\n"


def render_version_md(version: SetVersion) -> str:
    """A version as Markdown: the record and a table of items per stratum."""
    record, items = version.record, version.items
    lines = [
        f"# Regression set {record.label}",
        "",
        f"`{record.id}`, created {record.created_at:%Y-%m-%d %H:%M} UTC. {md_text(record.note)}",
        "",
        f"- recipe: {md_text(recipe_line(record))}",
        f"- strata: {strata_line(record, items)}",
        *[f"- short: {line}" for line in shortfall_lines(record)],
        "- each item's weight is the requests it stands for divided by its inclusion probability: weight any "
        "figure over the set by it to read it back as a share of production traffic",
    ]
    for stratum in STRATA:
        held = [i for i in items if i.stratum == stratum]
        lines += [
            "",
            f"## {STRATUM_MEANING[stratum][0].upper()}{STRATUM_MEANING[stratum][1:]} ({len(held)})",
            "",
        ]
        if not held:
            lines.append("None.")
            continue
        lines += [
            "| key | question | p | weight | cluster | source | pinned |",
            "|---|---|---:|---:|---:|---|---|",
        ]
        lines += [
            f"| `{i.key}` | {md_text(i.candidate.question)} | {i.inclusion_probability:.3f} | {i.weight:.1f} | "
            f"{i.cluster} | {i.candidate.source} | {'yes' if i.pinned else ''} |"
            for i in held
        ]
    return "\n".join(lines) + "\n"


def render_version_json(version: SetVersion) -> str:
    """A version as JSON: the record, its shortfall and every item."""
    return (
        json.dumps(
            {
                "record": version.record.model_dump(mode="json"),
                "shortfall": version.record.shortfall(),
                "items": [i.model_dump(mode="json") for i in version.items],
            },
            ensure_ascii=False,
            indent=2,
        )
        + "\n"
    )


def render_version(version: SetVersion, fmt: str, reasons: Mapping[str, str] | None = None) -> str:
    """A version in ``fmt`` (one of :data:`SHOW_FORMATS`)."""
    if fmt == "md":
        return render_version_md(version)
    if fmt == "json":
        return render_version_json(version)
    return render_version_text(version, reasons)


def render_sets(records: Sequence[RegressionSetRecord]) -> str:
    """Every version, newest first, one line each."""
    lines = [f"{'version':<8} {'id':<24} {'created (UTC)':<16} {'win':>4} {'cont.':>5} {'wound':>5}  note"]
    for r in records:
        lines.append(
            f"{r.label:<8} {r.id:<24} {r.created_at:%Y-%m-%d %H:%M} "
            f"{r.counts.get('win', 0):>4} {r.counts.get('contested', 0):>5} {r.counts.get('wound', 0):>5}  "
            f"{_short(r.note, 70)}"
        )
    return "\n".join(lines) + "\n"


def render_diff_text(diff: VersionDiff) -> str:
    """What changed between two versions, with the questions."""
    lines = [
        f"{diff.old.label} ({diff.old.id}) -> {diff.new.label} ({diff.new.id}): "
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.moved)} moved between strata"
    ]
    for title, items in (("added", diff.added), ("removed", diff.removed)):
        if items:
            lines += ["", f"{title}:"] + [
                f"  {i.key}  {i.stratum:<9}  {_short(i.candidate.question)}" for i in items
            ]
    if diff.moved:
        lines += ["", "moved:"] + [
            f"  {old.key}  {old.stratum} -> {new.stratum}  {_short(new.candidate.question)}"
            for old, new in diff.moved
        ]
    return "\n".join(lines) + "\n"


def render_diff_json(diff: VersionDiff) -> str:
    """The diff as JSON: keys and questions added, removed and moved."""

    def brief(item: SetItem) -> dict[str, Any]:
        return {"key": item.key, "stratum": item.stratum, "question": item.candidate.question}

    data = {
        "old": {"id": diff.old.id, "version": diff.old.version},
        "new": {"id": diff.new.id, "version": diff.new.version},
        "added": [brief(i) for i in diff.added],
        "removed": [brief(i) for i in diff.removed],
        "moved": [brief(old) | {"to": new.stratum} for old, new in diff.moved],
    }
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
