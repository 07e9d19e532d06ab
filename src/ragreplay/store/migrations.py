"""Ordered schema migrations, applied in one transaction when a store is opened.

Modelled on simonw/llm: each migration is a function registered in order with its version number; the
``schema_migrations`` table records which versions a store has. A migration is never edited once released:
change the schema by appending a new one (and update :mod:`ragreplay.store.schema` to match).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    func,
    inspect,
    select,
    text,
)

from ragreplay.store.connect import StoreError
from ragreplay.store.schema import Id, UTCDateTime, schema_migrations

# Any constant works; it only has to be the same for every ragreplay process sharing a database.
_PG_MIGRATION_LOCK = 0x72_61_67_72  # "ragr"


@dataclass(frozen=True)
class Migration:
    """One step of the schema's history."""

    version: int
    name: str
    apply: Callable[[Connection], None]


MIGRATIONS: list[Migration] = []


def migration(version: int) -> Callable[[Callable[[Connection], None]], Callable[[Connection], None]]:
    """Register the decorated function as migration ``version`` (versions must be added in order)."""

    def register(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
        MIGRATIONS.append(Migration(version, fn.__name__, fn))
        check_order(MIGRATIONS)
        return fn

    return register


def check_order(migrations: Sequence[Migration]) -> None:
    """Raise ``ValueError`` unless versions run 1, 2, 3, ... with no gap or repeat (a programming error)."""
    for expected, step in enumerate(migrations, start=1):
        if step.version != expected:
            raise ValueError(f"migration {step.name} has version {step.version}, expected {expected}")


def latest_version(migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """The version a store has once every migration has run."""
    return migrations[-1].version if migrations else 0


def current_version(conn: Connection) -> int:
    """The highest version recorded in the store, 0 for a new store."""
    if not inspect(conn).has_table(schema_migrations.name):
        return 0
    return int(conn.execute(select(func.coalesce(func.max(schema_migrations.c.version), 0))).scalar_one())


def check_not_newer(version: int, display_url: str, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Refuse a store written by a newer ragreplay: this code would misread it."""
    known = latest_version(migrations)
    if version > known:
        raise StoreError(
            f"The store at {display_url} has schema version {version}, but this ragreplay only "
            f"knows versions up to {known}. "
            "Fix: upgrade ragreplay (pip install -U ragreplay) or open another store."
        )


def migrate(conn: Connection, display_url: str, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply the pending ``migrations`` in order on ``conn`` (inside the caller's transaction).

    Returns the versions applied, empty when the store was up to date.
    """
    check_order(migrations)
    if conn.dialect.name == "postgresql":
        # Two processes opening a new store at once would otherwise both try to create the tables.
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    schema_migrations.create(conn, checkfirst=True)
    version = current_version(conn)
    check_not_newer(version, display_url, migrations)
    applied = []
    for step in migrations:
        if step.version <= version:
            continue
        step.apply(conn)
        conn.execute(
            schema_migrations.insert().values(
                version=step.version, name=step.name, applied_at=datetime.now(UTC)
            )
        )
        applied.append(step.version)
    return applied


@migration(1)
def m001_initial(conn: Connection) -> None:
    """Sources, conversations, cases, skips, pinned rewrites, runs, results and the model-call cache."""
    md = MetaData()
    Table(
        "sources",
        md,
        Column("id", Id, primary_key=True),
        Column("path", Text, nullable=False),
        Column("format", Text, nullable=False),
        Column("ingested_at", UTCDateTime, nullable=False),
        Column("n_conversations", Integer, nullable=False),
        Column("n_cases", Integer, nullable=False),
        Column("n_skipped", Integer, nullable=False),
    )
    Table(
        "conversations",
        md,
        Column("id", Id, primary_key=True),
        Column("source_id", Id, ForeignKey("sources.id"), nullable=False),
        Column("user_id", Text),
        Column("n_messages", Integer, nullable=False),
        Column("data", Text, nullable=False),
        Index("ix_conversations_source", "source_id"),
    )
    Table(
        "cases",
        md,
        Column("id", Id, primary_key=True),
        Column("source_id", Id, ForeignKey("sources.id"), nullable=False),
        Column("conversation_id", Id, ForeignKey("conversations.id"), nullable=False),
        Column("turn_index", Integer, nullable=False),
        Column("feedback", Text, nullable=False),
        Column("data", Text, nullable=False),
        Index("ix_cases_order", "conversation_id", "turn_index", "id"),
        Index("ix_cases_source", "source_id"),
    )
    Table(
        "skips",
        md,
        Column("source_id", Id, ForeignKey("sources.id"), primary_key=True),
        Column("conversation_id", Id, primary_key=True),
        Column("message_index", Integer, primary_key=True, autoincrement=False),
        Column("reason", Text, nullable=False),
    )
    # No foreign key to cases: a rewrite or result may refer to a case from elsewhere (e.g. a regression set).
    Table(
        "rewrites",
        md,
        Column("case_id", Id, primary_key=True),
        Column("data", Text, nullable=False),
        Column("pinned_at", UTCDateTime, nullable=False),
    )
    Table(
        "runs",
        md,
        Column("id", Id, primary_key=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("finished_at", UTCDateTime),
        Column("status", Text, nullable=False),
        Column("target_name", Text, nullable=False),
        Column("target_version", Text, nullable=False),
        Column("judge_name", Text, nullable=False),
        Column("judge_prompt_version", Text, nullable=False),
        Column("rewriter_name", Text),
        Column("rewrite_prompt_version", Text),
        Column("config_hash", Text, nullable=False),
        Column("dataset_hash", Text, nullable=False),
        Column("n_cases", Integer, nullable=False),
        Column("config", Text, nullable=False),
        Index("ix_runs_created", "created_at"),
        Index("ix_runs_hashes", "config_hash", "dataset_hash"),
    )
    Table(
        "results",
        md,
        Column("run_id", Id, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        Column("case_id", Id, primary_key=True),
        Column("status", Text, nullable=False),
        Column("rewrite", Text),
        Column("answer", Text),
        Column("judgment", Text),
        Column("verdict", Text),
        Column("error", Text),
        Column("updated_at", UTCDateTime, nullable=False),
        Index("ix_results_run_status", "run_id", "status"),
    )
    Table(
        "llm_cache",
        md,
        Column("key", Id, primary_key=True),
        Column("model", Text, nullable=False),
        Column("request", Text, nullable=False),
        Column("response", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration(2)
def m002_comparisons(conn: Connection) -> None:
    """Comparisons (champion vs challengers) and their per-case rows, so `ragreplay compare` resumes."""
    md = MetaData()
    Table(
        "comparisons",
        md,
        Column("id", Id, primary_key=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("finished_at", UTCDateTime),
        Column("status", Text, nullable=False),
        Column("config", Text, nullable=False),
        Column("config_hash", Text, nullable=False),
        Column("dataset_hash", Text, nullable=False),
        Column("n_cases", Integer, nullable=False),
        Index("ix_comparisons_created", "created_at"),
        Index("ix_comparisons_hashes", "config_hash", "dataset_hash"),
    )
    Table(
        "comparison_rows",
        md,
        Column("comparison_id", Id, ForeignKey("comparisons.id", ondelete="CASCADE"), primary_key=True),
        Column("case_id", Id, primary_key=True),
        Column("challenger", Text, primary_key=True),
        Column("payload", Text, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration(3)
def m003_shadow_rows(conn: Connection) -> None:
    """Shadow rows: one live request answered by the champion and one challenger, judged later."""
    md = MetaData()
    Table(
        "shadow_rows",
        md,
        Column("id", Id, primary_key=True),
        Column("ts", UTCDateTime, nullable=False),
        Column("request_id", Id, nullable=False),
        Column("challenger", Text, nullable=False),
        Column("query", Text, nullable=False),
        Column("user_hash", Text),
        Column("tags", Text, nullable=False),
        Column("champion", Text, nullable=False),
        Column("candidate", Text, nullable=False),
        Column("judged_at", UTCDateTime),
        Index("ix_shadow_rows_ts", "ts", "id"),
        Index("ix_shadow_rows_request", "request_id"),
    )
    md.create_all(conn)


@migration(4)
def m004_shadow_judgments(conn: Connection) -> None:
    """Shadow judgments: agreement and preference of one shadow row, written when the row is marked judged."""
    md = MetaData()
    Table(
        "shadow_judgments",
        md,
        Column("row_id", Id, primary_key=True),
        Column("challenger", Text, nullable=False),
        Column("judged_at", UTCDateTime, nullable=False),
        Column("fit", Text),
        Column("winner", Text),
        Column("consistent", Boolean),
        Column("judge", Text, nullable=False),
        Column("judge_prompt_version", Text, nullable=False),
        Column("fit_judge", Text, nullable=False),
        Column("fit_judge_prompt_version", Text, nullable=False),
        Column("error", Text),
        Column("payload", Text, nullable=False),
        Index("ix_shadow_judgments_judged", "judged_at"),
    )
    md.create_all(conn)


@migration(5)
def m005_shadow_feedback(conn: Connection) -> None:
    """Live user feedback on champion answers, by request id (the last word of a user wins)."""
    md = MetaData()
    Table(
        "shadow_feedback",
        md,
        Column("request_id", Id, primary_key=True),
        Column("ts", UTCDateTime, nullable=False),
        Column("feedback", Text, nullable=False),
        Column("comment", Text),
        Column("source", Text, nullable=False),
        Index("ix_shadow_feedback_ts", "ts"),
    )
    md.create_all(conn)


@migration(6)
def m006_shadow_answer_columns(conn: Connection) -> None:
    """One name per thing: a shadow row's two answers are ``champion_answer`` and ``challenger_answer``
    (were ``champion`` and ``candidate``), as in comparison rows."""
    conn.execute(text("ALTER TABLE shadow_rows RENAME COLUMN champion TO champion_answer"))
    conn.execute(text("ALTER TABLE shadow_rows RENAME COLUMN candidate TO challenger_answer"))


@migration(7)
def m007_gates(conn: Connection) -> None:
    """Promotion gates (one per set, champion, challenger and judges) and each item's outcome."""
    md = MetaData()
    Table(
        "gates",
        md,
        Column("id", Id, primary_key=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("finished_at", UTCDateTime),
        Column("status", Text, nullable=False),
        Column("set_id", Id, nullable=False),
        Column("challenger", Text, nullable=False),
        Column("config", Text, nullable=False),
        Column("config_hash", Text, nullable=False),
        Column("n_items", Integer, nullable=False),
        Column("decision", Text),
        Column("verdict", Text),
        Index("ix_gates_set_challenger", "set_id", "challenger"),
        Index("ix_gates_config_hash", "config_hash"),
    )
    Table(
        "gate_items",
        md,
        Column("gate_id", Id, ForeignKey("gates.id"), primary_key=True),
        Column("key", Id, primary_key=True),
        Column("stratum", Text, nullable=False),
        Column("payload", Text, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Index("ix_gate_items_key", "key"),
    )
    md.create_all(conn)


@migration(8)
def m008_regression_sets(conn: Connection) -> None:
    """Regression sets: frozen versions with their recipe, their items (stratum, cluster, inclusion
    probability, weight), and the hand-made overrides (pin or drop a question by key) later builds apply."""
    md = MetaData()
    Table(
        "regsets",
        md,
        Column("id", Id, primary_key=True),
        Column("version", Integer, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("recipe", Text, nullable=False),
        Column("inputs_digest", Text, nullable=False),
        Column("counts", Text, nullable=False),
        Column("parent_id", Id),
        Column("note", Text, nullable=False),
        Index("ux_regsets_version", "version", unique=True),
    )
    Table(
        "regset_items",
        md,
        Column("set_id", Id, ForeignKey("regsets.id", ondelete="CASCADE"), primary_key=True),
        Column("key", Id, primary_key=True),
        Column("stratum", Text, nullable=False),
        Column("cluster", Integer, nullable=False),
        Column("inclusion_probability", Float, nullable=False),
        Column("count", Integer, nullable=False),
        Column("weight", Float, nullable=False),
        Column("pinned", Boolean, nullable=False),
        Column("payload", Text, nullable=False),
        Index("ix_regset_items_key", "key"),
    )
    Table(
        "regset_overrides",
        md,
        Column("key", Id, primary_key=True),
        Column("action", Text, nullable=False),
        Column("reason", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration(9)
def m009_reviews(conn: Connection) -> None:
    """Human review: reviewer accounts (a sha256 of the token, never the token), queues of items (the item a
    reviewer is shown, as JSON), reservations (who holds which item until when, and the side order drawn for
    that reviewer) and reviews (one per reviewer and item; a later one replaces it)."""
    md = MetaData()
    Table(
        "reviewers",
        md,
        Column("name", Text, primary_key=True),
        Column("token_hash", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("disabled", Boolean, nullable=False),
        Index("ux_reviewers_token_hash", "token_hash", unique=True),
    )
    Table(
        "review_queues",
        md,
        Column("id", Id, primary_key=True),
        Column("kind", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("k", Integer, nullable=False),
        Column("recipe", Text, nullable=False),
        Index("ix_review_queues_created_at", "created_at"),
    )
    Table(
        "review_queue_items",
        md,
        Column("queue_id", Id, ForeignKey("review_queues.id", ondelete="CASCADE"), primary_key=True),
        Column("key", Id, primary_key=True),
        Column("position", Integer, nullable=False),
        Column("payload", Text, nullable=False),
    )
    Table(
        "review_reservations",
        md,
        Column("queue_id", Id, ForeignKey("review_queues.id", ondelete="CASCADE"), primary_key=True),
        Column("key", Id, primary_key=True),
        Column("reviewer", Text, primary_key=True),
        Column("a_side", Text, nullable=False),
        Column("until", UTCDateTime, nullable=False),
        Column("skipped", Boolean, nullable=False),
    )
    Table(
        "reviews",
        md,
        Column("queue_id", Id, ForeignKey("review_queues.id", ondelete="CASCADE"), primary_key=True),
        Column("key", Id, primary_key=True),
        Column("reviewer", Text, primary_key=True),
        Column("a_side", Text, nullable=False),
        Column("review", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Index("ix_reviews_created_at", "created_at"),
    )
    md.create_all(conn)


@migration(10)
def m010_store_secrets(conn: Connection) -> None:
    """Secrets the store keeps for its writers, e.g. the shadow's user-id salt shared by every replica."""
    md = MetaData()
    Table(
        "store_secrets",
        md,
        Column("name", Text, primary_key=True),
        Column("value", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration(11)
def m011_review_sessions(conn: Connection) -> None:
    """Review screen sessions in the store, so they outlive a restart and every replica sees them: the sha256 of
    the session id (the id itself lives only in the reviewer's cookie), the reviewer and the hash of the token
    they logged in with (a rotated token ends the session), when it started, when it lapses and when it was last
    used (the idle timeout). The form's CSRF token is derived from the session id, so it is not stored."""
    md = MetaData()
    Table(
        "review_sessions",
        md,
        Column("id_hash", Id, primary_key=True),
        Column("reviewer", Text, nullable=False),
        Column("token_hash", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("expires_at", UTCDateTime, nullable=False),
        Column("last_seen", UTCDateTime, nullable=False),
        Index("ix_review_sessions_reviewer", "reviewer"),
        Index("ix_review_sessions_expires_at", "expires_at"),
    )
    md.create_all(conn)


@migration(12)
def m012_judge_versions(conn: Connection) -> None:
    """Judgments of review items keyed by judge version (queue, item key, version; the decision as JSON), so a
    changed judge re-judges only what it has not judged, and calibration snapshots: each judge version's
    agreement with reviewers as computed at a time (n, agreeing, Wilson bounds, kappa, per-tag figures)."""
    md = MetaData()
    Table(
        "review_judgments",
        md,
        Column("queue_id", Id, primary_key=True),
        Column("key", Id, primary_key=True),
        Column("judge_version", Id, primary_key=True),
        Column("judge", Text, nullable=False),
        Column("decision", Text, nullable=False),
        Column("judged_at", UTCDateTime, nullable=False),
        Index("ix_review_judgments_version", "judge_version"),
    )
    Table(
        "calibration_history",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("judge_version", Id, nullable=False),
        Column("judge", Text, nullable=False),
        Column("computed_at", UTCDateTime, nullable=False),
        Column("source", Text, nullable=False),
        Column("since", UTCDateTime, nullable=True),
        Column("n", Integer, nullable=False),
        Column("agree", Integer, nullable=False),
        Column("agreement", Float, nullable=True),
        Column("low", Float, nullable=False),
        Column("high", Float, nullable=False),
        Column("kappa", Float, nullable=True),
        Column("status", Text, nullable=False),
        Column("per_tag", Text, nullable=False),
        Index("ix_calibration_history_version_time", "judge_version", "computed_at"),
    )
    md.create_all(conn)


@migration(13)
def m013_dialogues(conn: Connection) -> None:
    """A conversation's dialogue stored once, not again with every case: ``dialogues`` holds each dialogue (the
    human and AI messages, keyed by the hash of their content) and a case names its dialogue and how many of its
    messages are its history. Cases stored before keep their history in ``data`` (``dialogue_id`` NULL)."""
    md = MetaData()
    Table(
        "dialogues",
        md,
        Column("id", Id, primary_key=True),
        Column("n_messages", Integer, nullable=False),
        Column("data", Text, nullable=False),
    )
    md.create_all(conn)
    collate = ' COLLATE "C"' if conn.dialect.name == "postgresql" else ""  # as every id column (schema.Id)
    conn.execute(text(f"ALTER TABLE cases ADD COLUMN dialogue_id TEXT{collate}"))
    conn.execute(text("ALTER TABLE cases ADD COLUMN history_len INTEGER"))


@migration(14)
def m014_rewrites_per_rewriter(conn: Connection) -> None:
    """A case's pinned question is per rewriter version: ``rewrites`` is keyed by (case_id, rewriter), the
    rewriter being ``name@prompt_version``, so a run with another rewriter rewrites the case itself. Pins made
    before keep the rewriter their rewrite names (``?`` when it names none); a pinned reply that could not be
    read is dropped, so the next run asks again."""
    md = MetaData()
    new = Table(
        "rewrites_v14",
        md,
        Column("case_id", Id, primary_key=True),
        Column("rewriter", Text, primary_key=True),
        Column("data", Text, nullable=False),
        Column("pinned_at", UTCDateTime, nullable=False),
    )
    new.create(conn)
    old = Table(
        "rewrites", MetaData(), Column("case_id", Id), Column("data", Text), Column("pinned_at", UTCDateTime)
    )
    rows = []
    for case_id, data, pinned_at in conn.execute(select(old.c.case_id, old.c.data, old.c.pinned_at)):
        pinned = json.loads(data)
        if str(pinned.get("note", "")).startswith("unreadable rewriter reply"):
            continue
        rewriter = f"{pinned['model']}@{pinned.get('prompt_version')}" if pinned.get("model") else "?"
        rows.append({"case_id": case_id, "rewriter": rewriter, "data": data, "pinned_at": pinned_at})
        if len(rows) >= 1000:
            conn.execute(new.insert(), rows)
            rows = []
    if rows:
        conn.execute(new.insert(), rows)
    old.drop(conn)
    conn.execute(text("ALTER TABLE rewrites_v14 RENAME TO rewrites"))


@migration(15)
def m015_eval_runs(conn: Connection) -> None:
    """`ragreplay eval`: a run per (dataset, judge, prompt version, options) and its rows' scores, saved as each
    row is scored (the payload is the eval layer's JSON), so a killed run resumes where it stopped."""
    md = MetaData()
    Table(
        "eval_runs",
        md,
        Column("id", Id, primary_key=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("finished_at", UTCDateTime),
        Column("status", Text, nullable=False),
        Column("dataset", Text, nullable=False),
        Column("judge", Text, nullable=False),
        Column("prompt_version", Text, nullable=False),
        Column("config", Text, nullable=False),
        Column("config_hash", Text, nullable=False),
        Column("n_rows", Integer, nullable=False),
        Column("summary", Text),
        Index("ix_eval_runs_config_hash", "config_hash"),
    )
    Table(
        "eval_rows",
        md,
        Column("eval_id", Id, primary_key=True),
        Column("row_id", Id, primary_key=True),
        Column("position", Integer, nullable=False),
        Column("error", Boolean, nullable=False),
        Column("payload", Text, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn)


@migration(16)
def m016_golden_sets(conn: Connection) -> None:
    """Golden sets: named, immutable versions (content hash, recipe, counts) and their rows (the golden layer's
    JSON, in order). A version is written once with its rows; a name's versions count up from 1."""
    md = MetaData()
    Table(
        "golden_sets",
        md,
        Column("id", Id, primary_key=True),
        Column("name", Text, nullable=False),
        Column("version", Integer, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("content_hash", Text, nullable=False),
        Column("recipe", Text, nullable=False),
        Column("counts", Text, nullable=False),
        Column("n_rows", Integer, nullable=False),
        Index("ux_golden_sets_name_version", "name", "version", unique=True),
    )
    Table(
        "golden_rows",
        md,
        Column("set_id", Id, ForeignKey("golden_sets.id", ondelete="CASCADE"), primary_key=True),
        Column("position", Integer, primary_key=True),
        Column("row_id", Text, nullable=False),
        Column("payload", Text, nullable=False),
    )
    md.create_all(conn)


@migration(17)
def m017_work_claims(conn: Connection) -> None:
    """Work claims and shared rate buckets: several worker processes (on one machine or many) share one job.

    ``work_claims`` holds the items a worker has claimed and not finished: the queue (the job), the item's id,
    the worker and when its lease ends (seconds since the epoch on the store's clock). ``rate_buckets`` is one
    token bucket per provider, shared by every worker of a job."""
    md = MetaData()
    Table(
        "work_claims",
        md,
        Column("queue", Text, primary_key=True),
        Column("item_id", Id, primary_key=True),
        Column("worker", Text, nullable=False),
        Column("lease_until", Float, nullable=False),
        Index("ix_work_claims_lease", "queue", "lease_until"),
        Index("ix_work_claims_worker", "queue", "worker"),
    )
    Table(
        "rate_buckets",
        md,
        Column("name", Text, primary_key=True),
        Column("tokens", Float, nullable=False),
        Column("rate", Float, nullable=False),
        Column("capacity", Float, nullable=False),
        Column("stamp", Float, nullable=False),
    )
    md.create_all(conn)


@migration(18)
def m018_shadow_rollups(conn: Connection) -> None:
    """Shadow rollups: per UTC hour and challenger the figures of the judged rows (the report's and the
    dashboard's), per hour the requests whose newest judged row is in it; backfilled from the stored rows."""
    md = MetaData()
    Table(
        "shadow_rollups",
        md,
        Column("hour", UTCDateTime, primary_key=True),
        Column("challenger", Text, primary_key=True),
        Column("data", Text, nullable=False),
    )
    Table(
        "shadow_rollup_requests",
        md,
        Column("hour", UTCDateTime, primary_key=True),
        Column("n", Integer, nullable=False),
    )
    md.create_all(conn)
    from ragreplay.store.shadow_rollups import rebuild_all

    rebuild_all(conn)
