"""Agreement per judge version, from the store, and its history.

Each judge version is calibrated on the human-labelled items it judged: the decisions kept on the items when
their queues were built and the re-judgments in ``store.review_judgments``. :func:`record_history` appends a
snapshot per version to ``store.calibration_history`` (skipped when a version's figures did not change).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragreplay.core.review import Agreement, AlertPolicy, Calibration
from ragreplay.core.version_agreement import Decisions, decisions_by_version, label_of, per_version
from ragreplay.review.calibration import Labelled, labelled_items
from ragreplay.store import Store
from ragreplay.store.calibration_history import CalibrationSnapshot


@dataclass(frozen=True)
class VersionFigures:
    """The labelled items, every version's decisions on them, and each version's calibration and label."""

    labelled: Labelled
    decisions: Decisions
    calibrations: dict[str, Calibration]
    labels: dict[str, str]


def version_figures(
    store: Store, since: datetime | None = None, policy: AlertPolicy | None = None
) -> VersionFigures:
    """Every judge version's agreement with reviewers on the items reviewed since ``since``."""
    found = labelled_items(store, since)
    judged = [
        (f"{r.queue_id}/{r.key}", r.decision)
        for r in store.review_judgments.load_review_judgments(queue_ids=found.queues)
    ]
    decisions = decisions_by_version(found.items, judged)
    calibrations = per_version(found.items, found.reviews, decisions, policy)
    return VersionFigures(found, decisions, calibrations, {v: label_of(d) for v, d in decisions.items()})


def figure(a: Agreement) -> dict[str, Any]:
    """One slice as stored in a snapshot."""
    r = a.agreement
    return {
        "label": a.label,
        "n": r.n,
        "agree": r.k,
        "rate": r.value,
        "low": r.low,
        "high": r.high,
        "kappa": a.kappa,
        "status": a.status,
    }


def snapshot(
    version: str, label: str, cal: Calibration, source: str, since: datetime | None, at: datetime
) -> CalibrationSnapshot:
    """The snapshot of one version's calibration."""
    o = cal.overall.agreement
    return CalibrationSnapshot(
        judge_version=version,
        judge=label,
        computed_at=at,
        source=source,
        since=since,
        n=o.n,
        agree=o.k,
        agreement=o.value,
        low=o.low,
        high=o.high,
        kappa=cal.overall.kappa,
        status=cal.status,
        per_tag=[figure(a) for a in [*cal.per_tag, *cal.per_failure_tag]],
    )


def record_history(
    store: Store,
    figures: VersionFigures,
    source: str,
    since: datetime | None = None,
    now: datetime | None = None,
) -> list[CalibrationSnapshot]:
    """Append a snapshot of each version that has labels (those whose figures changed); returns them."""
    at = now or datetime.now(UTC)
    snaps = [
        snapshot(v, figures.labels[v], cal, source, since, at)
        for v, cal in figures.calibrations.items()
        if cal.overall.n
    ]
    return store.calibration_history.record(snaps)
