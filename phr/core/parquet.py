"""Deterministic parquet files, and data files named by their content hash."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

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
