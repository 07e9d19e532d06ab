"""Flat tables written out: CSV (the standard library), Parquet (pyarrow, the ``[parquet]`` extra) or a pandas
DataFrame (the ``[pandas]`` extra). Every format types a column by its :class:`TableShape` kind, so an empty or
all-missing column has the same type as a full one.

Files are written beside their target and renamed into place, so a failed or interrupted export leaves the old
file (or none), never half of one. CSV text cells that a spreadsheet would run as a formula (starting with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return) get a leading apostrophe; Parquet and DataFrames keep the text as
stored.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from ragreplay.core.flat_tables import ColumnKind, TableShape
from ragreplay.errors import ConfigError, import_extra

EXPORT_FORMATS = ("csv", "parquet")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_BATCH = 1000


def write_table(shape: TableShape, rows: Iterable[Mapping[str, Any]], fmt: str, path: Path) -> int:
    """Write ``rows`` to ``path`` as ``fmt`` (``csv`` or ``parquet``), whole or not at all; the rows written."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "parquet":
        import_extra("pyarrow", "Parquet export")  # before anything is written
        return _write_aside(path, lambda tmp: _parquet(shape, rows, tmp))
    return _write_aside(path, lambda tmp: _csv(shape, rows, tmp))


def to_dataframe(shape: TableShape, rows: Iterable[Mapping[str, Any]]) -> Any:
    """``rows`` as a :class:`pandas.DataFrame` with ``shape``'s columns and nullable dtypes by kind."""
    pandas = import_extra("pandas", "to_dataframe()")
    frame = pandas.DataFrame.from_records(list(rows), columns=list(shape.columns))
    dtypes = {"int": "Int64", "float": "Float64", "bool": "boolean", "text": "string"}
    return frame.astype({column: dtypes[shape.kind(column)] for column in shape.columns})


def csv_cell(value: Any, kind: ColumnKind) -> str:
    """One CSV cell: empty for a missing value, ``true``/``false`` for a boolean, text guarded against formulas."""
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    if kind != "text":
        return str(value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv(shape: TableShape, rows: Iterable[Mapping[str, Any]], path: Path) -> int:
    kinds = [shape.kind(c) for c in shape.columns]
    n = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(shape.columns)
        for row in rows:
            writer.writerow([csv_cell(row.get(c), k) for c, k in zip(shape.columns, kinds, strict=True)])
            n += 1
    return n


def _parquet(shape: TableShape, rows: Iterable[Mapping[str, Any]], path: Path) -> int:
    pa = import_extra("pyarrow", "Parquet export")
    parquet = import_extra("pyarrow.parquet", "Parquet export")
    types = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "text": pa.string()}
    schema = pa.schema([(c, types[shape.kind(c)]) for c in shape.columns])
    n = 0
    with parquet.ParquetWriter(str(path), schema) as writer:
        for batch in _batches(rows):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


def _batches(rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Mapping[str, Any]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, _BATCH)):
        yield batch


def _write_aside(path: Path, write: Callable[[Path], int]) -> int:
    """Run ``write`` on a file beside ``path``, then rename it into place; a :class:`ConfigError` naming the path
    when it cannot be written (the file beside it removed)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        n = write(tmp)
        tmp.replace(path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}. Fix: check the path.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return n
