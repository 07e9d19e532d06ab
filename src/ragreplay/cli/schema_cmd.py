"""`ragreplay schema`: the JSON Schema of the settings file or of a target file, for editors and CI checks."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import BaseModel

from ragreplay.errors import ConfigError
from ragreplay.settings import Settings
from ragreplay.targets.config import TargetFile

SCHEMAS: dict[str, type[BaseModel]] = {"settings": Settings, "target": TargetFile}


def schema(
    kind: Annotated[
        str, typer.Argument(help="settings (ragreplay.yaml) or target (candidate.yaml)")
    ] = "settings",
) -> None:
    """Print the JSON Schema of a configuration file."""
    model = SCHEMAS.get(kind)
    if model is None:
        raise ConfigError(f"unknown schema {kind!r}; choose one of {', '.join(SCHEMAS)}")
    typer.echo(json.dumps(model.model_json_schema(), indent=2))
