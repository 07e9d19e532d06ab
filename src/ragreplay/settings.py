"""Run settings: one YAML file validated by pydantic; CLI flags > environment > file. Secrets only from env."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.ingest.yaml_files import load_model, read_yaml
from ragreplay.providers.cache import CacheMode
from ragreplay.providers.config import ModelSettings, ProviderConfig
from ragreplay.providers.pricing import Price

DEFAULT_CONFIG_FILE = "ragreplay.yaml"
DEFAULT_DB = "ragreplay.db"

ENV_VARS = {
    "db": "RAGREPLAY_DB",
    "judge": "RAGREPLAY_JUDGE",
    "rewriter": "RAGREPLAY_REWRITER",
    "concurrency": "RAGREPLAY_CONCURRENCY",
    "cache": "RAGREPLAY_CACHE",
}


class ReviewSettings(BaseModel):
    """Human review and judge calibration (``review:`` in ``ragreplay.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    failure_tags: list[str] = Field(
        default_factory=list, description="The team's failure tags, besides the four built in"
    )
    alert_overall: float = Field(
        0.80, gt=0, lt=1, description="Alert when overall agreement's lower bound is under"
    )
    alert_per_tag: float = Field(
        0.70, gt=0, lt=1, description="Alert when a tag's agreement's lower bound is under"
    )
    min_labels_overall: int | None = Field(
        None,
        ge=1,
        description="Labels before the overall figure can alert [default: where 100% would clear it]",
    )
    min_labels_tag: int | None = Field(
        None, ge=1, description="Labels before a tag's figure can alert [default: where 100% would clear it]"
    )
    session_hours: float = Field(12.0, gt=0, description="A review screen login lasts this long")
    session_idle_minutes: float | None = Field(
        120.0, gt=0, description="A review screen login unused this long ends (null: no idle timeout)"
    )
    min_overlap: int = Field(
        10, ge=1, description="Items two reviewers share before their agreement (kappa, alpha) is shown"
    )


class Settings(BaseModel):
    """Everything a run needs besides the target: where to store, which models judge and rewrite, limits."""

    model_config = ConfigDict(extra="forbid")

    db: str = Field(DEFAULT_DB, description="SQLite file path, sqlite:///path or postgresql://user@host/db")
    judge: str | None = Field(
        None, description="FIT judge model spec, provider:model (e.g. openai:gpt-4.1-mini)"
    )
    rewriter: str | None = Field(None, description="Follow-up rewriter spec; defaults to the judge's")
    concurrency: int = Field(16, ge=1, le=1024, description="Cases replayed at once")
    cache: CacheMode = Field("read-write", description="Model-call cache: read-write, read-only or off")
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per million tokens, by model spec"
    )
    review: ReviewSettings = Field(default_factory=lambda: ReviewSettings())

    def model_settings(self) -> ModelSettings:
        """The part of the settings the provider layer needs."""
        return ModelSettings(providers=self.providers, prices=self.prices, cache_mode=self.cache)

    @property
    def rewriter_spec(self) -> str | None:
        """The rewriter spec, falling back to the judge's."""
        return self.rewriter or self.judge


def load_settings(
    config_path: Path | None,
    env: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings from ``config_path`` (or ./ragreplay.yaml), then the environment, then non-None ``overrides``."""
    data: dict[str, Any] = {}
    source = "settings"
    path = config_path or (Path(DEFAULT_CONFIG_FILE) if Path(DEFAULT_CONFIG_FILE).exists() else None)
    if path is not None:
        data = read_yaml(path)
        source = str(path)
    for key, var in ENV_VARS.items():
        if env.get(var):
            data[key] = env[var]
            source = f"{source} + ${var}"
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    return load_model(Settings, data, source)
