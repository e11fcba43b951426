"""Deterministic parquet files, and data files named by their content hash."""

from __future__ import annotations

import hashlib
import os
import re
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from phr.core.fs import sha256_file, temp_sibling

HASH_CHARS = 12
_HASHED = re.compile(rf"^(?P<stem>.+)-(?P<hash>[0-9a-f]{{{HASH_CHARS}}})\.parquet$")


def write_parquet(table: pa.Table, path: str | Path) -> None:
    """Deterministic parquet: one row group, zstd, no statistics that vary, no pandas metadata."""
    table = table.replace_schema_metadata(None)
    pq.write_table(
        table,
        path,
        compression="zstd",
        row_group_size=max(1, table.num_rows),
        use_dictionary=True,
        write_statistics=True,
        store_schema=True,
    )


def content_hash(data: bytes | str | Path) -> str:
    """The hash a data file's name carries: the first 12 hex digits of the SHA-256 of its bytes (or of a file's)."""
    if isinstance(data, bytes):
        return hashlib.sha256(data).hexdigest()[:HASH_CHARS]
    return sha256_file(data)[:HASH_CHARS]


def write_parquet_hashed(table: pa.Table, folder: str | Path, name: str) -> str:
    """Write ``<name>-<content hash>.parquet`` in ``folder`` and return the file name.

    The content hash in the name makes a rebuilt dataset with different rows a different set of data files,
    so `datasets`' cache (keyed by the card's data file paths, not their contents) never serves stale rows.
    """
    folder = Path(folder)
    tmp = temp_sibling(folder / f"{name}.parquet")
    try:
        write_parquet(table, tmp)
        final = f"{name}-{content_hash(tmp.read_bytes())}.parquet"
        os.replace(tmp, folder / final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def hashed_name_mismatch(path: str | Path) -> tuple[str, str] | None:
    """``(hash in the name, hash of the content)`` when a ``<stem>-<hash>.parquet`` file's content does not match
    its name; ``None`` when it matches or the name carries no hash."""
    path = Path(path)
    m = _HASHED.match(path.name)
    if not m:
        return None
    actual = content_hash(path)
    return None if actual == m["hash"] else (m["hash"], actual)


def arrow_type(
    annotation: Any,
    name: str = "",
    overrides: Mapping[str, pa.DataType] | None = None,
    exclude: Iterable[str] = (),
) -> pa.DataType:
    """The Arrow type of a record field's annotation: ``str`` and ``Literal`` of strings -> string, ``int`` ->
    int64, ``float`` -> float64, ``bool``, ``X | None`` -> X (nullable), ``tuple[X, ...]``/``list[X]`` -> list,
    a pydantic record -> struct of its fields, ``dict[str, str]`` -> list of ``{key, value}`` structs (as the
    Hub's datasets store maps). ``overrides`` names fields (at any depth) with a narrower type, e.g. int8;
    ``exclude`` names fields left out (at any depth)."""
    if overrides and name in overrides:
        return overrides[name]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"field {name!r}: no Arrow type for the union {annotation!r}")
        return arrow_type(rest[0], name, overrides, exclude)
    if origin is typing.Literal:
        kinds = {type(a) for a in args}
        return pa.string() if kinds == {str} else pa.int64() if kinds == {int} else _no_type(name, annotation)
    if origin in (tuple, list):
        return pa.list_(arrow_type(args[0], name, overrides, exclude))
    if origin is dict and args == (str, str):
        return pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(list(arrow_schema_of(annotation, exclude=exclude, overrides=overrides)))
    simple = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    return simple[annotation] if annotation in simple else _no_type(name, annotation)


def _no_type(name: str, annotation: Any) -> pa.DataType:
    raise TypeError(f"field {name!r}: no Arrow type for {annotation!r}")


def arrow_schema_of(
    *records: type[BaseModel], exclude: Iterable[str] = (), overrides: Mapping[str, pa.DataType] | None = None
) -> pa.Schema:
    """The Arrow schema of rows made of ``records``' fields, in declaration order (``exclude``: fields left out,
    at any depth)."""
    skip = set(exclude)
    return pa.schema(
        [
            (n, arrow_type(f.annotation, n, overrides, skip))
            for record in records
            for n, f in record.model_fields.items()
            if n not in skip
        ]
    )
