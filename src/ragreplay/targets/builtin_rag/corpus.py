"""Loading the corpus: a folder of .md/.txt documents with YAML front matter, or a .jsonl file.

Front matter fields: ``id`` (default: the file stem), ``title`` (default: the first heading, else the id),
``language``, ``department``, ``policy`` (family key), ``effective_date`` (YYYY-MM-DD) and ``supersedes``
(an id or a list of ids). Any other scalar or list-of-scalars field is kept as metadata for filters.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from ragreplay.errors import ConfigError, InputProblem

DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^(---|\.\.\.)\s*$")
_RESERVED = ("id", "title", "text")


class _FrontMatterLoader(yaml.SafeLoader):
    """Safe YAML that leaves dates as text, so a bad date is reported on its field (not as a crash)."""


_FrontMatterLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class Document:
    """One document of the corpus with its metadata (values as text, lists as tuples of text)."""

    id: str
    title: str
    text: str
    metadata: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    effective_date: date | None = None
    source: str = ""

    @property
    def policy(self) -> str | None:
        """The family key shared by the versions of one policy, if any."""
        value = self.metadata.get("policy")
        return value if isinstance(value, str) else None

    @property
    def supersedes(self) -> tuple[str, ...]:
        """Ids of the documents this one replaces."""
        value = self.metadata.get("supersedes")
        if value is None:
            return ()
        return (value,) if isinstance(value, str) else value


@dataclass(frozen=True)
class Corpus:
    """The documents, in a stable order, and a digest of the bytes of every file they came from."""

    documents: tuple[Document, ...]
    digest: str


Problem = Callable[[str | None, str, str], ConfigError]


def load_corpus(path: Path, source: str) -> Corpus:
    """Read the corpus at ``path``; every problem is a :class:`ConfigError` naming the file and line.

    ``source`` is the target file, named when the corpus path itself is wrong.
    """
    fix = "point 'corpus:' at a folder of .md/.txt documents or a .jsonl file, relative to the target file"
    if not path.exists():
        raise ConfigError(str(InputProblem(source, None, "target.corpus", f"{path} does not exist", fix)))
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)
        if not files:
            raise ConfigError(
                str(InputProblem(source, None, "target.corpus", f"{path} holds no .md/.txt files", fix))
            )
        blobs = [(p.relative_to(path).as_posix(), _read_bytes(p, source)) for p in files]
        docs = [parse_document(_decode(b, p), p.stem, str(p)) for p, (_, b) in zip(files, blobs, strict=True)]
    elif path.suffix.lower() == ".jsonl":
        blobs = [(path.name, _read_bytes(path, source))]
        docs = parse_jsonl(_decode(blobs[0][1], path), str(path))
    else:
        raise ConfigError(
            str(InputProblem(source, None, "target.corpus", f"{path} is neither a folder nor .jsonl", fix))
        )
    _check_unique(docs)
    digest = hashlib.sha256()
    for name, data in blobs:
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(data).digest())
    return Corpus(tuple(docs), digest.hexdigest()[:16])


def parse_document(text: str, default_id: str, file: str) -> Document:
    """A document from a .md/.txt file's text, with its optional YAML front matter."""
    lines = text.splitlines(keepends=True)
    fields: dict[str, Any] = {}
    body_start = 0
    node: yaml.Node | None = None
    if lines and _FENCE.match(lines[0]) and lines[0].startswith("---"):
        close = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i])), None)
        if close is None:
            raise ConfigError(
                str(
                    InputProblem(
                        file,
                        1,
                        None,
                        "front matter opens with '---' but is never closed",
                        "end the front matter with a line holding only '---'",
                    )
                )
            )
        block = "".join(lines[1:close])
        try:
            loaded = yaml.load(block, Loader=_FrontMatterLoader)
            node = yaml.compose(block)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 2 if mark is not None else 1
            raise ConfigError(
                str(
                    InputProblem(
                        file,
                        line,
                        None,
                        f"invalid YAML in front matter: {getattr(exc, 'problem', exc)}",
                        "check indentation and quote values containing ': '",
                    )
                )
            ) from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(
                str(InputProblem(file, 2, None, "front matter is not a mapping", "write 'key: value' lines"))
            )
        fields = loaded or {}
        body_start = close + 1

    def problem(key: str | None, message: str, fix: str) -> ConfigError:
        return ConfigError(str(InputProblem(file, _key_line(node, key), key, message, fix)))

    body = "".join(lines[body_start:]).strip()
    return document_from_fields(fields, body, default_id, file, problem)


def parse_jsonl(text: str, file: str) -> list[Document]:
    """Documents from a JSONL file: one ``{id, title, text, ...metadata}`` object per line."""
    docs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue

        def problem(key: str | None, message: str, fix: str, number: int = number) -> ConfigError:
            return ConfigError(str(InputProblem(file, number, key, message, fix)))

        try:
            record = json.loads(line)
        except ValueError as exc:
            raise problem(None, f"not valid JSON ({exc})", "write one JSON object per line") from None
        if not isinstance(record, dict):
            raise problem(None, "not a JSON object", "write one {id, title, text, ...} object per line")
        record = dict(record)
        nested = record.pop("metadata", None) or {}
        if not isinstance(nested, dict):
            raise problem("metadata", "must be an object", 'write metadata as {"key": "value"}')
        text_value = record.pop("text", None)
        if not isinstance(text_value, str):
            raise problem("text", "missing or not a string", "give each document its text in 'text'")
        if "id" not in record:
            raise problem("id", "missing", "give each document a unique 'id'")
        docs.append(document_from_fields({**nested, **record}, text_value.strip(), "", file, problem))
    return docs


def document_from_fields(
    fields: Mapping[str, Any], text: str, default_id: str, file: str, problem: Problem
) -> Document:
    """Validate front matter / JSONL fields and build the :class:`Document`."""
    doc_id = fields.get("id", default_id)
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip() or "#" in doc_id or doc_id != doc_id.strip():
        raise problem(
            "id", f"invalid document id {doc_id!r}", "use a non-empty id without '#' or spaces at the ends"
        )
    title = fields.get("title")
    if title is None:
        heading = _HEADING.search(text)
        title = heading.group(1) if heading else doc_id
    if not isinstance(title, str | int | float):
        raise problem("title", "must be text", "write the title as a plain string")
    effective = fields.get("effective_date")
    if effective is not None:
        effective = _as_date(effective)
        if effective is None:
            raise problem(
                "effective_date", f"{fields['effective_date']!r} is not a date", "write it as YYYY-MM-DD"
            )
    metadata: dict[str, str | tuple[str, ...]] = {}
    for key, value in fields.items():
        if key in _RESERVED or value is None:
            continue
        if isinstance(value, list) and all(_is_scalar(v) for v in value):
            metadata[str(key)] = tuple(_as_text(v) for v in value)
        elif _is_scalar(value):
            metadata[str(key)] = _as_text(value)
        else:
            raise problem(str(key), "must be a single value or a list of values", "flatten nested fields")
    return Document(doc_id, str(title).strip(), text, metadata, effective, file)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool | date)


def _as_text(value: Any) -> str:
    if isinstance(value, date):
        return value.isoformat()[:10]
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip()


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        return None


def _key_line(node: yaml.Node | None, key: str | None) -> int | None:
    """1-based file line of ``key`` in the front matter (which starts on line 2), else the line of '---'."""
    if node is None or not isinstance(node, yaml.MappingNode):
        return 1
    for k, _ in node.value:
        if getattr(k, "value", None) == key:
            return int(k.start_mark.line) + 2
    return 1


def _check_unique(docs: list[Document]) -> None:
    seen: dict[str, Document] = {}
    for doc in docs:
        first = seen.setdefault(doc.id, doc)
        if first is not doc:
            raise ConfigError(
                str(
                    InputProblem(
                        doc.source,
                        None,
                        "id",
                        f"document id {doc.id!r} is also used by {first.source}",
                        "give each document a unique 'id:' in its front matter",
                    )
                )
            )


def _read_bytes(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            str(InputProblem(str(path), None, None, f"cannot read: {exc}", "check permissions"))
        ) from None


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(InputProblem(str(path), None, None, f"not UTF-8 text ({exc.reason})", "save it as UTF-8"))
        ) from None
