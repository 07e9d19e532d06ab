"""The store's tables as the queries see them, and the column types they share with the migrations.

These definitions describe the schema *after* every migration has run. The DDL that creates and changes
tables lives, frozen, in :mod:`ragreplay.store.migrations`; a test checks that both agree.
"""

from __future__ import annotations

import json
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


# Ids compare byte-wise on both backends ("C" collation on PostgreSQL, SQLite's default BINARY), so every
# ORDER BY on ids gives the same order everywhere and prefix searches can use the index.
Id = Text().with_variant(Text(collation="C"), "postgresql")


def to_json(model: BaseModel | None) -> str | None:
    """Canonical JSON text of a pydantic model (``None`` stays ``None``)."""
    return None if model is None else canonical_json(model.model_dump(mode="json"))


def dumps(value: Any) -> str:
    """Canonical JSON text of plain data."""
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
    Column("name", Text, nullable=False),
    Column("applied_at", UTCDateTime, nullable=False),
)

sources = Table(
    "sources",
    metadata,
    Column("id", Id, primary_key=True),
    Column("path", Text, nullable=False),
    Column("format", Text, nullable=False),
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
    Column("user_id", Text),
    Column("n_messages", Integer, nullable=False),
    Column("data", Text, nullable=False),
)

cases = Table(
    "cases",
    metadata,
    Column("id", Id, primary_key=True),
    Column("source_id", Id, nullable=False),
    Column("conversation_id", Id, nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("feedback", Text, nullable=False),
    Column("data", Text, nullable=False),
)

skips = Table(
    "skips",
    metadata,
    Column("source_id", Id, primary_key=True),
    Column("conversation_id", Id, primary_key=True),
    Column("message_index", Integer, primary_key=True, autoincrement=False),
    Column("reason", Text, nullable=False),
)

rewrites = Table(
    "rewrites",
    metadata,
    Column("case_id", Id, primary_key=True),
    Column("data", Text, nullable=False),
    Column("pinned_at", UTCDateTime, nullable=False),
)

runs = Table(
    "runs",
    metadata,
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
)

results = Table(
    "results",
    metadata,
    Column("run_id", Id, primary_key=True),
    Column("case_id", Id, primary_key=True),
    Column("status", Text, nullable=False),
    Column("rewrite", Text),
    Column("answer", Text),
    Column("judgment", Text),
    Column("verdict", Text),
    Column("error", Text),
    Column("updated_at", UTCDateTime, nullable=False),
)

llm_cache = Table(
    "llm_cache",
    metadata,
    Column("key", Id, primary_key=True),
    Column("model", Text, nullable=False),
    Column("request", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

comparisons = Table(
    "comparisons",
    metadata,
    Column("id", Id, primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("status", Text, nullable=False),
    Column("config", Text, nullable=False),
    Column("config_hash", Text, nullable=False),
    Column("dataset_hash", Text, nullable=False),
    Column("n_cases", Integer, nullable=False),
)

comparison_rows = Table(
    "comparison_rows",
    metadata,
    Column("comparison_id", Id, primary_key=True),
    Column("case_id", Id, primary_key=True),
    Column("challenger", Text, primary_key=True),
    Column("payload", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

shadow_rows = Table(
    "shadow_rows",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ts", UTCDateTime, nullable=False),
    Column("request_id", Id, nullable=False),
    Column("challenger", Text, nullable=False),
    Column("query", Text, nullable=False),
    Column("user_hash", Text),
    Column("tags", Text, nullable=False),
    Column("champion_answer", Text, nullable=False),
    Column("challenger_answer", Text, nullable=False),
    Column("judged_at", UTCDateTime),
)

shadow_judgments = Table(
    "shadow_judgments",
    metadata,
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
)

shadow_feedback = Table(
    "shadow_feedback",
    metadata,
    Column("request_id", Id, primary_key=True),
    Column("ts", UTCDateTime, nullable=False),
    Column("feedback", Text, nullable=False),
    Column("comment", Text),
    Column("source", Text, nullable=False),
)

gates = Table(
    "gates",
    metadata,
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
)

gate_items = Table(
    "gate_items",
    metadata,
    Column("gate_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("stratum", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

regsets = Table(
    "regsets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("recipe", Text, nullable=False),
    Column("inputs_digest", Text, nullable=False),
    Column("counts", Text, nullable=False),
    Column("parent_id", Id),
    Column("note", Text, nullable=False),
)

regset_items = Table(
    "regset_items",
    metadata,
    Column("set_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("stratum", Text, nullable=False),
    Column("cluster", Integer, nullable=False),
    Column("inclusion_probability", Float, nullable=False),
    Column("count", Integer, nullable=False),
    Column("weight", Float, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("payload", Text, nullable=False),
)

regset_overrides = Table(
    "regset_overrides",
    metadata,
    Column("key", Id, primary_key=True),
    Column("action", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

reviewers = Table(
    "reviewers",
    metadata,
    Column("name", Text, primary_key=True),
    Column("token_hash", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("disabled", Boolean, nullable=False),
)

review_queues = Table(
    "review_queues",
    metadata,
    Column("id", Id, primary_key=True),
    Column("kind", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("k", Integer, nullable=False),
    Column("recipe", Text, nullable=False),
)

review_queue_items = Table(
    "review_queue_items",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("payload", Text, nullable=False),
)

review_reservations = Table(
    "review_reservations",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("reviewer", Text, primary_key=True),
    Column("a_side", Text, nullable=False),
    Column("until", UTCDateTime, nullable=False),
    Column("skipped", Boolean, nullable=False),
)

reviews = Table(
    "reviews",
    metadata,
    Column("queue_id", Id, primary_key=True),
    Column("key", Id, primary_key=True),
    Column("reviewer", Text, primary_key=True),
    Column("a_side", Text, nullable=False),
    Column("review", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)
