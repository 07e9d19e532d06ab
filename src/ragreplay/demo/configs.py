"""The shipped champion and challenger configurations, made runnable from anywhere."""

from __future__ import annotations

from pathlib import Path

import yaml


def demo_config(data: Path, name: str, out: Path, generator: str | None = None) -> Path:
    """The shipped config ``name`` (champion or challenger) pointed at the shipped corpus, written to ``out``;
    with ``generator`` (a ``provider:model`` spec) a model writes its answers."""
    config = yaml.safe_load((data / f"{name}.yaml").read_text(encoding="utf-8"))
    config["target"]["corpus"] = str((data / config["target"]["corpus"]).resolve())
    if generator:
        config["target"]["answer"] = {"mode": "generate", "model": generator}
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path
