"""The store's tables as the queries see them, and the column types they share with the migrations.

These definitions describe the schema *after* every migration has run. The DDL that creates and changes
tables lives, frozen, in :mod:`ragreplay.store.migrations`; a test checks that both agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    Integer,
    MetaData,
    Row,
    Table,
    Text,
    TypeDecorator,
)

from ragreplay.core.ids import canonical_json
from ragreplay.core.storable import storable_text

RecordT = TypeVar("RecordT", bound=BaseModel)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime, stored in UTC; naive values are taken to be UTC already.

    PostgreSQL keeps it as ``timestamptz``; SQLite as fixed-width text, so it still sorts correctly.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert to UTC before storing."""
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return an aware UTC datetime whatever the backend gave back."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class StorableText(TypeDecorator[str]):
    """Text with the characters no backend stores (NUL, lone surrogates) replaced on the way in: the last
    line of defence, so one odd request can never fail a whole write."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        """Replace what cannot be stored."""
        if value is None or (value.isascii() and "\x00" not in value):
            return value  # the common case, without a call: this runs for every text parameter written
        return storable_text(value)[0]


# Ids compare byte-wise on both backends ("C" collation on PostgreSQL, SQLite's default BINARY), so every
# ORDER BY on ids gives the same order everywhere and prefix searches can use the index.
Id = StorableText().with_variant(StorableText(collation="C"), "postgresql")


def to_json(model: BaseModel | None) -> str | None:
    """Canonical JSON text of a pydantic model (``None`` stays ``None``)."""
    return None if model is None else canonical_json(model.model_dump(mode="json"))


def dumps(value: Any) -> str:
    """Canonical JSON text of plain data (any mapping is written as a dict)."""
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    return canonical_json(value)


def status_config_row(record: BaseModel) -> dict[str, Any]:
    """The table row of a record with a ``status`` enum and a ``config`` mapping (runs, comparisons)."""
    row = record.model_dump(mode="python")
    row["status"] = str(row["status"].value)
    row["config"] = dumps(record.model_dump(mode="json")["config"])
    return row


def status_config_record(model: type[RecordT], row: Row[Any]) -> RecordT:
    """The record of ``model`` read back from a row written by :func:`status_config_row`."""
    data = row._asdict()
    data["config"] = json.loads(data["config"])
    return model.model_validate(data)


metadata = MetaData()

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("name", StorableText, nullable=False),
    Column("applied_at", UTCDateTime, nullable=False),
)

sources = Table(
    "sources",
    metadata,
    Column("id", Id, primary_key=True),
    Column("path", StorableText, nullable=False),
    Column("format", StorableText, nullable=False),
    Column("ingested_at", UTCDateTime, nullable=False),
    Column("n_conversations", Integer, nullable=False),
    Column("n_cases", Integer, nullable=False),
    Column("n_skipped", Integer, nullable=False),
)

conversations = Table(
    "conversations",
    metadata,
    Column("id", Id, primary_key=True),
    Column("source_id", Id, nullable=False),
    Column("user_id", StorableText),
    Column("n_messages", Integer, nullable=False),
    Column("data", StorableText, nullable=False),
)

cases = Table(
    "cases",
    metadata,
    Column("id", Id, primary_key=True),
    Column("source_id", Id, nullable=False),
    Column("conversation_id", Id, nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("feedback", StorableText, nullable=False),
    Column("data", StorableText, nullable=False),
    Column("dialogue_id", Id),
    Column("history_len", Integer),
)

dialogues = Table(
    "dialogues",
    metadata,
    Column("id", Id, primary_key=True),
    Column("n_messages", Integer, nullable=False),
    Column("data", StorableText, nullable=False),
)

skips = Table(
    "skips",
    metadata,
    Column("source_id", Id, primary_key=True),
    Column("conversation_id", Id, primary_key=True),
    Column("message_index", Integer, primary_key=True, autoincrement=False),
    Column("reason", StorableText, nullable=False),
)

rewrites = Table(
    "rewrites",
    metadata,
    Column("case_id", Id, primary_key=True),
    Column("rewriter", StorableText, primary_key=True),  # name@prompt_version: pins are per rewriter version
    Column("data", StorableText, nullable=False),
    Column("pinned_at", UTCDateTime, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("status", StorableText, nullable=False),
    Column("target_name", StorableText, nullable=False),
    Column("target_version", StorableText, nullable=False),
    Column("judge_name", StorableText, nullable=False),
    Column("judge_prompt_version", StorableText, nullable=False),
    Column("rewriter_name", StorableText),
    Column("rewrite_prompt_version", StorableText),
    Column("config_hash", StorableText, nullable=False),
    Column("dataset_hash", StorableText, nullable=False),
    Column("n_cases", Integer, nullable=False),
    Column("config", StorableText, nullable=False),
)

results = Table(
    "results",
    metadata,
    Column("run_id", Id, primary_key=True),
    Column("case_id", Id, primary_key=True),
    Column("status", StorableText, nullable=False),
    Column("rewrite", StorableText),
    Column("answer", StorableText),
    Column("judgment", StorableText),
    Column("verdict", StorableText),
    Column("error", StorableText),
    Column("updated_at", UTCDateTime, nullable=False),
)

llm_cache = Table(
    "llm_cache",
    metadata,
    Column("key", Id, primary_key=True),
    Column("model", StorableText, nullable=False),
    Column("request", StorableText, nullable=False),
    Column("response", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

comparisons = Table(
    "comparisons",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("status", StorableText, nullable=False),
    Column("config", StorableText, nullable=False),
    Column("config_hash", StorableText, nullable=False),
    Column("dataset_hash", StorableText, nullable=False),
    Column("n_cases", Integer, nullable=False),
)

comparison_rows = Table(
    "comparison_rows",
    metadata,
    Column("comparison_id", Id, primary_key=True),
    Column("case_id", Id, primary_key=True),
    Column("challenger", StorableText, primary_key=True),
    Column("payload", StorableText, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

shadow_rows = Table(
    "shadow_rows",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ts", UTCDateTime, nullable=False),
    Column("request_id", Id, nullable=False),
    Column("challenger", StorableText, nullable=False),
    Column("query", StorableText, nullable=False),
    Column("user_hash", StorableText),
    Column("tags", StorableText, nullable=False),
    Column("champion_answer", StorableText, nullable=False),
    Column("challenger_answer", StorableText, nullable=False),
    Column("judged_at", UTCDateTime),
)

shadow_judgments = Table(
    "shadow_judgments",
    metadata,
    Column("row_id", Id, primary_key=True),
    Column("challenger", StorableText, nullable=False),
    Column("judged_at", UTCDateTime, nullable=False),
    Column("fit", StorableText),
    Column("winner", StorableText),
    Column("consistent", Boolean),
    Column("judge", StorableText, nullable=False),
    Column("judge_prompt_version", StorableText, nullable=False),
    Column("fit_judge", StorableText, nullable=False),
    Column("fit_judge_prompt_version", StorableText, nullable=False),
    Column("error", StorableText),
    Column("payload", StorableText, nullable=False),
)

shadow_feedback = Table(
    "shadow_feedback",
    metadata,
    Column("request_id", Id, primary_key=True),
    Column("ts", UTCDateTime, nullable=False),
    Column("feedback", StorableText, nullable=False),
    Column("comment", StorableText),
    Column("source", StorableText, nullable=False),
)

shadow_rollups = Table(
    "shadow_rollups",
    metadata,
    Column("hour", UTCDateTime, primary_key=True),
    Column("challenger", StorableText, primary_key=True),
    Column("data", Text, nullable=False),
)
"""Per UTC hour and challenger, the figures of its judged shadow rows (``core/shadow_rollup.Rollup`` JSON)."""

shadow_rollup_requests = Table(
    "shadow_rollup_requests",
    metadata,
    Column("hour", UTCDateTime, primary_key=True),
    Column("n", Integer, nullable=False),
)
"""Per UTC hour, the requests whose newest judged shadow row falls in it."""

gates = Table(
    "gates",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("status", StorableText, nullable=False),
    Column("set_id", Id, nullable=False),
    Column("challenger", StorableText, nullable=False),
    Column("config", StorableText, nullable=False),
    Column("config_hash", StorableText, nullable=False),
    Column("n_items", Integer, nullable=False),
    Column("decision", StorableText),
    Column("verdict", StorableText),
)

gate_items = Table(
    "gate_items",
    metadata,
    Column("gate_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("stratum", StorableText, nullable=False),
    Column("payload", StorableText, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

eval_runs = Table(
    "eval_runs",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("status", StorableText, nullable=False),
    Column("dataset", StorableText, nullable=False),
    Column("judge", StorableText, nullable=False),
    Column("prompt_version", StorableText, nullable=False),
    Column("config", StorableText, nullable=False),
    Column("config_hash", StorableText, nullable=False),
    Column("n_rows", Integer, nullable=False),
    Column("summary", StorableText),
)

eval_rows = Table(
    "eval_rows",
    metadata,
    Column("eval_id", Id, primary_key=True),
    Column("row_id", Id, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("error", Boolean, nullable=False),
    Column("payload", StorableText, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

regsets = Table(
    "regsets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("recipe", StorableText, nullable=False),
    Column("inputs_digest", StorableText, nullable=False),
    Column("counts", StorableText, nullable=False),
    Column("parent_id", Id),
    Column("note", StorableText, nullable=False),
)

regset_items = Table(
    "regset_items",
    metadata,
    Column("set_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("stratum", StorableText, nullable=False),
    Column("cluster", Integer, nullable=False),
    Column("inclusion_probability", Float, nullable=False),
    Column("count", Integer, nullable=False),
    Column("weight", Float, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("payload", StorableText, nullable=False),
)

regset_overrides = Table(
    "regset_overrides",
    metadata,
    Column("key", Id, primary_key=True),
    Column("action", StorableText, nullable=False),
    Column("reason", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

reviewers = Table(
    "reviewers",
    metadata,
    Column("name", StorableText, primary_key=True),
    Column("token_hash", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("disabled", Boolean, nullable=False),
)

review_queues = Table(
    "review_queues",
    metadata,
    Column("id", Id, primary_key=True),
    Column("kind", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("k", Integer, nullable=False),
    Column("recipe", StorableText, nullable=False),
)

review_queue_items = Table(
    "review_queue_items",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("payload", StorableText, nullable=False),
)

review_reservations = Table(
    "review_reservations",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("reviewer", StorableText, primary_key=True),
    Column("a_side", StorableText, nullable=False),
    Column("until", UTCDateTime, nullable=False),
    Column("skipped", Boolean, nullable=False),
)

reviews = Table(
    "reviews",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("reviewer", StorableText, primary_key=True),
    Column("a_side", StorableText, nullable=False),
    Column("review", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

store_secrets = Table(
    "store_secrets",
    metadata,
    Column("name", StorableText, primary_key=True),
    Column("value", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

review_sessions = Table(
    "review_sessions",
    metadata,
    Column("id_hash", Id, primary_key=True),
    Column("reviewer", StorableText, nullable=False),
    Column("token_hash", StorableText, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
)

review_judgments = Table(
    "review_judgments",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("judge_version", Id, primary_key=True),
    Column("judge", StorableText, nullable=False),
    Column("decision", StorableText, nullable=False),
    Column("judged_at", UTCDateTime, nullable=False),
)

calibration_history = Table(
    "calibration_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("judge_version", Id, nullable=False),
    Column("judge", StorableText, nullable=False),
    Column("computed_at", UTCDateTime, nullable=False),
    Column("source", StorableText, nullable=False),
    Column("since", UTCDateTime, nullable=True),
    Column("n", Integer, nullable=False),
    Column("agree", Integer, nullable=False),
    Column("agreement", Float, nullable=True),
    Column("low", Float, nullable=False),
    Column("high", Float, nullable=False),
    Column("kappa", Float, nullable=True),
    Column("status", StorableText, nullable=False),
    Column("per_tag", StorableText, nullable=False),
)

golden_sets = Table(
    "golden_sets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("name", StorableText, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("content_hash", StorableText, nullable=False),
    Column("recipe", StorableText, nullable=False),
    Column("counts", StorableText, nullable=False),
    Column("n_rows", Integer, nullable=False),
)

golden_rows = Table(
    "golden_rows",
    metadata,
    Column("set_id", Id, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("row_id", StorableText, nullable=False),
    Column("payload", StorableText, nullable=False),
)

work_claims = Table(
    "work_claims",
    metadata,
    Column("queue", StorableText, primary_key=True),
    Column("item_id", Id, primary_key=True),
    Column("worker", StorableText, nullable=False),
    Column("lease_until", Float, nullable=False),
)

rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("name", StorableText, primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("rate", Float, nullable=False),
    Column("capacity", Float, nullable=False),
    Column("stamp", Float, nullable=False),
)
