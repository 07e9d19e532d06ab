"""Load YAML files into pydantic models with errors that name the file, the line and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ragreplay.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> dict[str, Any]:
    """The mapping at the top of a YAML file; a clear :class:`ConfigError` if it is missing or malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found. Fix: check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc}). Fix: save it as UTF-8 text.") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            f"{path}{where}: invalid YAML ({problem}). Fix: check indentation and quoting."
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}."
        )
    return data


def validation_message(source: str, exc: ValidationError, prefix: str = "") -> str:
    """One line per problem: ``file: field 'a.b': message``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in (prefix, *err["loc"]) if p != "")
        lines.append(f"{source}: field '{loc}': {err['msg']}")
    return "\n".join(lines)


def load_model(model: type[M], data: dict[str, Any], source: str, prefix: str = "") -> M:
    """Validate ``data`` as ``model``; a :class:`ConfigError` naming each bad field otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(source, exc, prefix)) from None


def yaml_line_of(yaml_text: str, path: list[str]) -> int | None:
    """1-based line of the node at ``path`` in the YAML text (or of its deepest existing parent)."""
    try:
        node = yaml.compose(yaml_text)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            line = node.start_mark.line + 1
        else:
            break
    return line
