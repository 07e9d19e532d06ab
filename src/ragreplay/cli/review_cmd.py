"""`ragreplay review ...` (reviewers, queues, export, import) and `ragreplay calibration` (judge vs human,
exit 1 on an alert)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from ragreplay.cli.common import ConfigOption, DbOption, err_console, open_store, settings_from
from ragreplay.core.review import Agreement, AlertPolicy, Taxonomy, taxonomy
from ragreplay.errors import ConfigError
from ragreplay.report.labels import SIMULATED_NOTE
from ragreplay.review.agreement import DEFAULT_MIN_OVERLAP
from ragreplay.review.calibration import CalibrationReport, calibration_report
from ragreplay.review.queues import (
    DEFAULT_CALIBRATION_SIZE,
    build_calibration_queue,
    build_regset_queue,
    build_triage_queue,
)
from ragreplay.review.transfer import export_reviews, import_reviews
from ragreplay.settings import Settings
from ragreplay.shadow.judging import parse_since

review_app = typer.Typer(help="Human review: reviewers, review queues, and reviews as JSONL.")
reviewer_app = typer.Typer(help="Reviewer accounts (each gets a token link, shown once).")
queue_app = typer.Typer(help="Review queues.")
review_app.add_typer(reviewer_app, name="reviewer")
review_app.add_typer(queue_app, name="queue")

REVIEW_PORT = 8788
"""The web app's default port (`ragreplay shadow dashboard`)."""


def _say(text: str) -> None:
    err_console.print(text, markup=False, highlight=False, soft_wrap=True)


def _taxonomy(settings: Settings) -> Taxonomy:
    try:
        return taxonomy(settings.review.failure_tags)
    except ValueError as exc:
        raise ConfigError(f"review.failure_tags: {exc}") from None


def _policy(settings: Settings) -> AlertPolicy:
    r = settings.review
    return AlertPolicy(r.alert_overall, r.alert_per_tag, r.min_labels_overall, r.min_labels_tag)


LinkHost = Annotated[str, typer.Option(help="Host of the review link")]
LinkPort = Annotated[int, typer.Option(min=1, max=65535, help="Port of the review link")]


def _print_link(host: str, port: int, token: str) -> None:
    sys.stdout.write(f"http://{host}:{port}/review?token={quote(token)}\n")


def _no_such_reviewer(name: str) -> ConfigError:
    return ConfigError(f"no reviewer named {name!r}. Fix: see `ragreplay review reviewer list`")


def add_reviewer(
    name: Annotated[str, typer.Argument(help="The reviewer's name (shown on their reviews)")],
    host: LinkHost = "127.0.0.1",
    port: LinkPort = REVIEW_PORT,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Create a reviewer and print their token link, once: only a hash of the token is kept."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        token = store.reviews.add_reviewer(name)
    _print_link(host, port, token)
    _say(f"reviewer {name.strip()!r} added; the link above is shown once (only its hash is stored)")


def list_reviewers(
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List the reviewers."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        found = store.reviews.list_reviewers()
    for r in found:
        sys.stdout.write(
            f"{r.name}\t{r.created_at:%Y-%m-%d %H:%M}\t{'disabled' if r.disabled else 'active'}\n"
        )
    if not found:
        _say("no reviewer yet: add one with `ragreplay review reviewer add NAME`")


def disable_reviewer(
    name: Annotated[str, typer.Argument(help="The reviewer to disable")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Disable a reviewer: their link stops working and they are logged out of the review screen at once."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        if not store.reviews.set_reviewer_disabled(name):
            raise _no_such_reviewer(name)
    _say(f"reviewer {name!r} disabled and logged out; `ragreplay review reviewer enable {name}` undoes it")


def enable_reviewer(
    name: Annotated[str, typer.Argument(help="The reviewer to enable again")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Enable a disabled reviewer again: their link works again (they log in anew)."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        if not store.reviews.set_reviewer_disabled(name, disabled=False):
            raise _no_such_reviewer(name)
    _say(f"reviewer {name!r} enabled")


def rotate_reviewer(
    name: Annotated[str, typer.Argument(help="The reviewer whose link to replace")],
    host: LinkHost = "127.0.0.1",
    port: LinkPort = REVIEW_PORT,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Give a reviewer a new token link (printed once): the old link stops working and their sessions end."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        token = store.reviews.rotate_token(name)
    if token is None:
        raise _no_such_reviewer(name)
    _print_link(host, port, token)
    _say(f"reviewer {name!r} has a new link (shown once); the old one and their sessions no longer work")


reviewer_app.command(name="add")(add_reviewer)
reviewer_app.command(name="list")(list_reviewers)
reviewer_app.command(name="disable")(disable_reviewer)
reviewer_app.command(name="enable")(enable_reviewer)
reviewer_app.command(name="rotate")(rotate_reviewer)


def _source(value: str) -> tuple[str, str]:
    kind, _, ref = value.partition(":")
    if kind == "calibration" and not ref:
        return kind, ""
    if kind in ("regset", "triage") and ref:
        return kind, ref
    raise ConfigError(
        f"--from {value!r}: use regset:REF (latest, vN or an id), triage:RUN (a run id) or calibration"
    )


def queue_build(
    source: Annotated[str, typer.Option("--from", help="regset:REF | triage:RUN | calibration")],
    since: Annotated[str, typer.Option(help="Calibration window: an age (7d) or an ISO date")] = "7d",
    n: Annotated[int, typer.Option(help="Calibration sample size")] = DEFAULT_CALIBRATION_SIZE,
    seed: Annotated[int, typer.Option(help="Seed of the calibration sample")] = 0,
    k: Annotated[int, typer.Option(help="Reviewers wanted per item")] = 1,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Build a review queue: a regression set's open wounds and contested questions, a run's BAD_NO_FIT cases,
    or the calibration sample of judged shadow rows (stratified by tag and judge outcome)."""
    kind, ref = _source(source)
    if k < 1:
        raise ConfigError(f"--k {k}: a queue needs at least one reviewer per item")
    settings = settings_from(config, db=db)
    tax = _taxonomy(settings)
    with open_store(settings.db) as store:
        if kind == "regset":
            queue = build_regset_queue(store, ref, tax, k=k)
        elif kind == "triage":
            queue = build_triage_queue(store, ref, tax, k=k)
        else:
            start = parse_since(since, datetime.now(UTC))
            queue = build_calibration_queue(store, start, tax, n=n, seed=seed, k=k)
    sys.stdout.write(f"{queue.id}\n")
    _say(f"queue {queue.id}: {queue.n_items} item(s) from {source}, {k} reviewer(s) per item")


queue_app.command(name="build")(queue_build)


@review_app.command(name="queues")
def list_queues(
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List the review queues, newest first, with their progress."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        queues = store.reviews.list_queues()
        progress = {q.id: store.reviews.progress(q.id) for q in queues}
    if not queues:
        _say("no review queue yet: build one with `ragreplay review queue build --from ...`")
        return
    sys.stdout.write("id\tkind\tcreated\titems\tk\treviews\tcomplete\treviewers\n")
    for q in queues:
        p = progress[q.id]
        who = ", ".join(f"{r.reviewer}:{r.done}" for r in p.reviewers) or "-"
        sys.stdout.write(
            f"{q.id}\t{q.kind}\t{q.created_at:%Y-%m-%d %H:%M}\t{q.n_items}\t{q.k}\t{p.reviews}/{p.wanted}\t"
            f"{p.complete_items}\t{who}\n"
        )


@review_app.command(name="export")
def export_cmd(
    queue: Annotated[str, typer.Argument(help="Queue id (or a unique prefix, or latest)")],
    file: Annotated[Path, typer.Argument(help="JSONL file to write")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write a queue's reviews as JSONL: one `{"queue": ..., "review": {...}}` per line."""
    settings = settings_from(config, db=db)
    with open_store(settings.db) as store:
        n = export_reviews(store, queue, file)
    _say(f"{n} review(s) written to {file}")


@review_app.command(name="import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="JSONL file of reviews (as `review export` writes)")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Import reviews from JSONL: every line is checked first, and nothing is written if one is bad."""
    settings = settings_from(config, db=db)
    tax = _taxonomy(settings)
    with open_store(settings.db) as store:
        n = import_reviews(store, file, tax)
    _say(f"{n} review(s) imported from {file}")


def _figure(a: Agreement) -> dict[str, Any]:
    return {
        "label": a.label,
        "n": a.n,
        "agree": a.agreement.k,
        "rate": a.agreement.value,
        "low": a.agreement.low,
        "high": a.agreement.high,
        "kappa": a.kappa,
        "status": a.status,
        "threshold": a.threshold,
        "min_n": a.min_n,
    }


def render_json(report: CalibrationReport, min_overlap: int = DEFAULT_MIN_OVERLAP) -> str:
    cal = report.calibration
    data = {
        "status": cal.status,
        "since": None if report.since is None else report.since.isoformat(),
        "reviews": report.reviews,
        "simulated_reviews": report.simulated_reviews,
        "queues": report.queues,
        "judges": cal.judges,
        "overall": _figure(cal.overall),
        "per_axis": [_figure(a) for a in cal.per_axis],
        "per_tag": [_figure(a) for a in cal.per_tag],
        "per_failure_tag": [_figure(a) for a in cal.per_failure_tag],
        "alerts": [a.label for a in cal.alerts],
        "judge_unscored": cal.judge_unscored,
        "humans_split": cal.humans_split,
        "reviewers": {
            "items": report.reviewers.items,
            "alpha": report.reviewers.alpha,
            "min_overlap": min_overlap,
            "enough": report.reviewers.items >= min_overlap,
            "pairs": [
                {
                    "a": p.a,
                    "b": p.b,
                    "n": p.n,
                    "agree": p.agreement.k,
                    "kappa": p.kappa,
                    "enough": p.n >= min_overlap,
                }
                for p in report.reviewers.pairs
            ],
        },
    }
    return json.dumps(data, indent=2) + "\n"


def _line(a: Agreement) -> str:
    r = a.agreement
    value = "-" if r.value is None else f"{r.value:.0%}"
    kappa = "-" if a.kappa is None else f"{a.kappa:.2f}"
    note = {"ok": "", "alert": f"  ALERT: lower bound under {a.threshold:.0%}"}.get(
        a.status, f"  not enough labels yet (needs {a.min_n})"
    )
    return f"  {a.label:<28} {r.k:>4}/{r.n:<4} {value:>5}  [{r.low:.0%}, {r.high:.0%}]  kappa {kappa}{note}"


def _simulated_line(report: CalibrationReport) -> list[str]:
    if not report.simulated_reviews:
        return []
    share = "all" if report.simulated_reviews == report.reviews else f"{report.simulated_reviews}"
    return [f"{share} of these reviews are by {SIMULATED_NOTE}"]


def render_text(report: CalibrationReport, min_overlap: int = DEFAULT_MIN_OVERLAP) -> str:
    cal = report.calibration
    head = {
        "ok": "calibration: ok",
        "alert": f"calibration: ALERT on {', '.join(a.label for a in cal.alerts)}",
        "not-enough-labels": f"calibration: not enough labels yet ({cal.overall.n} of {cal.overall.min_n})",
    }[cal.status]
    lines = [
        head,
        f"judge vs human on the winner: {report.reviews} review(s) in {len(report.queues)} queue(s); "
        f"judges {', '.join(cal.judges) or '-'}",
        *_simulated_line(report),
        _line(cal.overall),
    ]
    for title, figures in (
        ("per axis (shown, no alert)", cal.per_axis),
        ("per tag", cal.per_tag),
        ("per failure tag", cal.per_failure_tag),
    ):
        if figures:
            lines.append(title)
            lines += [_line(a) for a in figures]
    lines.append(
        f"left out: {cal.judge_unscored} the judge could not score, {cal.humans_split} reviewers split"
    )
    ia = report.reviewers
    if ia.items:
        lines.append(
            f"reviewers: {ia.items} item(s) with 2+ reviews, {_alpha(ia.alpha, ia.items, min_overlap)}"
        )
        for p in ia.pairs:
            if p.n < min_overlap:
                lines.append(f"  {p.a} vs {p.b}: {p.n} shared, not enough overlap yet (needs {min_overlap})")
                continue
            kappa = "-" if p.kappa is None else f"{p.kappa:.2f}"
            lines.append(f"  {p.a} vs {p.b}: {p.agreement.k}/{p.n} agree, Cohen's kappa {kappa}")
    return "\n".join(lines) + "\n"


def _alpha(alpha: float | None, n: int, min_overlap: int) -> str:
    if n < min_overlap:
        return f"Krippendorff's alpha: not enough overlap yet (needs {min_overlap})"
    return f"Krippendorff's alpha {'-' if alpha is None else f'{alpha:.2f}'}"


def calibration(
    since: Annotated[
        str | None,
        typer.Option(help="Only reviews submitted since: an age (28d) or an ISO date [default: all]"),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Judge vs human agreement on the winner (overall, per axis, per tag, per failure tag) with Wilson
    intervals and kappa. Exits 1 when an alert fires (a lower bound under the threshold), 0 otherwise."""
    if fmt not in ("text", "json"):
        raise ConfigError(f"--format {fmt!r}: choose text or json")
    settings = settings_from(config, db=db)
    start = None if since is None else parse_since(since, datetime.now(UTC))
    policy = _policy(settings)
    with open_store(settings.db) as store:
        report = calibration_report(store, start, policy)
    overlap = settings.review.min_overlap
    sys.stdout.write(render_json(report, overlap) if fmt == "json" else render_text(report, overlap))
    if report.calibration.status == "alert":
        raise typer.Exit(1)
