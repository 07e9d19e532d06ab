"""Read a rubric YAML file (:class:`~ragreplay.core.rubric.Rubric`): every mistake named by file, line and field,
with its fix, and nothing returned unless the whole file is right.

```yaml
name: hr-answers
criteria:
  - name: completeness
    description: Does the answer cover everything the question asks?
    scores: {1: misses the point, 3: the main point only, 5: every part of the question}
    weight: 2          # optional, default 1: its share of rubric.overall
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ragreplay.core.rubric import MAX_CRITERIA, MAX_DESCRIPTION, MAX_LEVEL, Rubric
from ragreplay.errors import InputError, InputProblem
from ragreplay.ingest.yaml_files import yaml_line_of

MAX_RUBRIC_BYTES = 64 * 1024
"""A rubric file larger than this is refused before it is parsed."""

_EXAMPLE = "criteria: [{name: completeness, description: ..., scores: {1: ..., 3: ..., 5: ...}}]"
_FIXES = {
    "missing": "add it",
    "extra_forbidden": "remove it or check its spelling (a criterion has name, description, scores, weight)",
    "string_pattern_mismatch": "use lowercase letters, digits and _ (at most 40, starting with a letter)",
    "string_too_long": f"shorten it (descriptions: {MAX_DESCRIPTION} characters, score levels: {MAX_LEVEL})",
    "string_too_short": "write the text",
    "too_short": f"list at least one criterion, e.g. {_EXAMPLE}",
    "too_long": f"keep at most {MAX_CRITERIA} criteria (all are scored in one judge call)",
    "greater_than": "use a weight above 0",
    "less_than_equal": "use a weight of at most 100",
    "int_parsing": "score levels are the numbers 1 to 5",
    "dict_type": "write the levels as a mapping, e.g. scores: {1: ..., 3: ..., 5: ...}",
}


def _field(loc: list[str]) -> str | None:
    """``criteria[1].scores.3``: list positions in brackets, as the dataset's errors write them."""
    out = ""
    for i, part in enumerate(loc):
        out += f"[{part}]" if part.isdigit() and i > 0 and loc[i - 1] == "criteria" else f".{part}"
    return out.lstrip(".") or None


def _problem(path: Path, text: str, err: Any) -> InputProblem:
    loc = [str(p) for p in err["loc"] if p != "[key]"]
    message = str(err["msg"]).removeprefix("Value error, ")
    fix = _FIXES.get(err["type"], "")
    if not fix and err["type"] == "value_error":
        fix = "see docs/eval.md#rubric-judge"
    return InputProblem(str(path), yaml_line_of(text, loc), _field(loc), message, fix)


def parse_rubric(text: str, path: Path) -> Rubric:
    """The rubric in ``text`` (read from ``path``); :class:`InputError` naming every problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(
            [
                InputProblem(
                    str(path),
                    mark.line + 1 if mark is not None else None,
                    None,
                    f"invalid YAML: {problem}",
                    "check indentation and quoting near this line",
                )
            ]
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            [InputProblem(str(path), 1, None, "is not a mapping with 'criteria'", f"write {_EXAMPLE}")]
        )
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # a list whose every item is wrong is also "too short": say only what is wrong with the items
        items_wrong = any(len(e["loc"]) > 1 and e["loc"][0] == "criteria" for e in errors)
        errors = [e for e in errors if not (items_wrong and e["type"] == "too_short")]
        raise InputError([_problem(path, text, err) for err in errors]) from None


def read_rubric(path: Path) -> Rubric:
    """The rubric in the YAML file at ``path`` (UTF-8, at most :data:`MAX_RUBRIC_BYTES`)."""
    try:
        size = path.stat().st_size
        if size > MAX_RUBRIC_BYTES:
            raise InputError(
                [
                    InputProblem(
                        str(path),
                        None,
                        None,
                        f"is {size} bytes, more than a rubric may be ({MAX_RUBRIC_BYTES})",
                        "keep the criteria short: they are sent with every row",
                    )
                ]
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError([InputProblem(str(path), None, None, "file not found", "check the path")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            [InputProblem(str(path), None, None, f"cannot be read ({exc})", "save it as UTF-8 text")]
        ) from None
    return parse_rubric(text, path)
