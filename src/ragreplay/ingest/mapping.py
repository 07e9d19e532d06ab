"""How the fields of a user's log map onto ragreplay's names, and the extra spellings it accepts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ragreplay.core.types import Feedback, Role
from ragreplay.errors import ConfigError

#: Names a source field can be mapped to. Conversation level: ``id`` (alias ``conversation_id``),
#: ``user_id``, ``tags``, ``messages``. Message level: ``role``, ``content``, ``feedback``, ``ts``,
#: ``retrieved``, ``latency_ms``, ``tokens``. Flat rows only: ``conversation_id``, ``turn``,
#: ``retrieved_ids``, ``tokens_in``, ``tokens_out``.
CANONICAL_FIELDS = frozenset(
    {
        "id",
        "conversation_id",
        "user_id",
        "tags",
        "messages",
        "role",
        "content",
        "feedback",
        "ts",
        "retrieved",
        "retrieved_ids",
        "latency_ms",
        "tokens",
        "tokens_in",
        "tokens_out",
        "turn",
    }
)


class FieldMapping(BaseModel):
    """Field renames and value spellings for one log format.

    ``fields`` maps a name in the user's file to a canonical name, e.g. ``{"session": "conversation_id",
    "speaker": "role", "rating": "feedback"}``. Unmapped fields keep their names. In flat files, every column
    named ``<tag_prefix><name>`` becomes tag ``<name>``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fields: dict[str, str] = Field(default_factory=dict)
    tag_prefix: str = "tag_"
    feedback_synonyms: dict[str, Feedback | None] = Field(default_factory=dict)
    role_synonyms: dict[str, Role] = Field(default_factory=dict)
    rating_threshold: float | None = None
    list_separator: str = ";"
    feedback_names: list[str] = Field(default_factory=list)
    """Trace formats only: the score, feedback or annotation names read as the user's feedback (empty: the usual
    names, see :data:`ragreplay.ingest.trace_feedback.FEEDBACK_NAMES`)."""

    @field_validator("fields")
    @classmethod
    def _known_targets(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value.values()) - CANONICAL_FIELDS)
        if unknown:
            raise ValueError(
                f"cannot map to {', '.join(unknown)}; known names: {', '.join(sorted(CANONICAL_FIELDS))}"
            )
        return value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "field mapping") -> FieldMapping:
        """Validate a mapping read from config; raises :class:`ConfigError` naming the bad key."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(
                f"{origin}: invalid field mapping: {details}. Fix: keys are fields, tag_prefix, "
                "feedback_synonyms (spelling -> good|bad|null), "
                "role_synonyms (spelling -> human|ai|system|tool), "
                "rating_threshold (number), list_separator, feedback_names (score names, trace formats)."
            ) from None

    @classmethod
    def from_yaml(cls, path: Path) -> FieldMapping:
        """Read a mapping from a YAML file; raises :class:`ConfigError` if it is missing or invalid."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"{path}: field mapping file not found. Fix: check the path.") from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc}). Fix: correct the syntax.") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a field mapping must be a YAML mapping. Fix: use 'key: value' lines.")
        return cls.from_dict(data, origin=str(path))

    def for_flat_rows(self) -> FieldMapping:
        """This mapping as flat rows read it: their conversation id is the ``conversation_id`` column, so a field
        mapped to ``id`` (a conversation's id in canonical logs, e.g. ``fields: {session: id}``) maps to it."""
        if "id" not in self.fields.values():
            return self
        fields = {src: "conversation_id" if dst == "id" else dst for src, dst in self.fields.items()}
        return self.model_copy(update={"fields": fields})

    def canonical(self, name: str) -> str:
        """The canonical name of source field ``name``."""
        return self.fields.get(name, name)

    def source(self, canonical: str) -> str:
        """The name the user's file uses for ``canonical`` (for messages that point at the file)."""
        for src, dst in self.fields.items():
            if dst == canonical:
                return src
        return canonical

    def rename(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with its keys renamed to canonical names (``obj`` itself, not a copy, without renames)."""
        if not self.fields:
            return obj
        return {self.fields.get(k, k): v for k, v in obj.items()}
