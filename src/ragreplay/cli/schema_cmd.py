"""`ragreplay schema`: the JSON Schema of the settings file or of a target file, for editors and CI checks."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import BaseModel

from ragreplay.errors import ConfigError
from ragreplay.settings import Settings
from ragreplay.shadow.config import ShadowServeConfig
from ragreplay.targets.config import TargetFile

SCHEMAS: dict[str, type[BaseModel]] = {
    "settings": Settings,
    "target": TargetFile,
    "shadow": ShadowServeConfig,
}


def schema(
    kind: Annotated[
        str, typer.Argument(help="settings (ragreplay.yaml), target (candidate.yaml) or shadow (shadow.yaml)")
    ] = "settings",
) -> None:
    """Print the JSON Schema of a configuration file."""
    model = SCHEMAS.get(kind)
    if model is None:
        raise ConfigError(f"unknown schema {kind!r}; choose one of {', '.join(SCHEMAS)}")
    typer.echo(json.dumps(model.model_json_schema(), indent=2))
