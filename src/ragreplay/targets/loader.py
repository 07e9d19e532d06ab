"""Build the RAG under test from a target YAML file or an already validated target configuration."""

from __future__ import annotations

from pathlib import Path

from ragreplay.ports import Target
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.config import (
    FakeTargetConfig,
    HttpTargetConfig,
    LoggedTargetConfig,
    PythonTargetConfig,
    TargetConfig,
    read_target_file,
)
from ragreplay.targets.fake import fake_target_from_config
from ragreplay.targets.logged import logged_target_from_config
from ragreplay.targets.python import python_target_from_config


def load_target(path: Path) -> Target:
    """Read a target YAML file and build its target; the name defaults to the file stem.

    Raises :class:`~ragreplay.errors.ConfigError` for any problem in the file or what it points to.
    """
    path = Path(path)
    spec = read_target_file(path)
    return target_from_config(spec.target, path.parent, spec.name or path.stem, source=str(path))


def target_from_config(cfg: TargetConfig, base_dir: Path, name: str, source: str | None = None) -> Target:
    """Build a target from its configuration; relative paths in it are resolved against ``base_dir``.

    ``source`` names the file the configuration came from in error messages.
    """
    where = source or f"target '{name}'"
    if isinstance(cfg, PythonTargetConfig):
        return python_target_from_config(cfg, base_dir, name, where)
    if isinstance(cfg, HttpTargetConfig):
        # Imported here: httpx, which only an HTTP target needs, takes a tenth of a second to import.
        from ragreplay.targets.http import http_target_from_config

        return http_target_from_config(cfg, name, where)
    if isinstance(cfg, LoggedTargetConfig):
        return logged_target_from_config(cfg, base_dir, name, where)
    if isinstance(cfg, FakeTargetConfig):
        return fake_target_from_config(cfg, base_dir, name, where)
    if isinstance(cfg, BuiltinTargetConfig):
        # Imported here: the built-in RAG pulls in numpy and bm25s, which other targets do not need.
        from ragreplay.targets.builtin_rag.target import builtin_target_from_config

        return builtin_target_from_config(cfg, base_dir, name, where)
    raise TypeError(
        f"unknown target configuration {type(cfg).__name__}"
    )  # unreachable: pydantic checked kind
