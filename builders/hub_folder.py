"""Write a dataset as a Hub-layout folder, atomically: README.md (card + YAML configs), data/*.parquet, extras.

The folder is written to a temporary sibling and moved into place at the end, so a failed or interrupted
build never leaves a half-written folder; an existing folder is refused unless ``overwrite=True``.
Parquet is written with fixed settings so two builds of the same rows are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from phr.errors import PHRError


class OutputExistsError(PHRError):
    pass


def write_parquet(table: pa.Table, path: Path) -> None:
    """Deterministic parquet: one row group, zstd, no statistics that vary, no pandas metadata."""
    table = table.replace_schema_metadata(None)
    pq.write_table(table, path, compression="zstd", row_group_size=max(1, table.num_rows),
                   use_dictionary=True, write_statistics=True, store_schema=True)


def write_parquet_hashed(table: pa.Table, folder: Path, name: str) -> str:
    """Write ``<name>-<content hash>.parquet`` in ``folder`` and return the file name.

    The content hash in the name makes a rebuilt dataset with different rows a different set of data files,
    so `datasets`' cache (keyed by the card's data file paths, not their contents) never serves stale rows.
    """
    tmp = folder / f".{name}.parquet.tmp"
    write_parquet(table, tmp)
    final = f"{name}-{content_hash(tmp)}.parquet"
    os.replace(tmp, folder / final)
    return final


HASH_LEN = 12
HASHED_NAME = re.compile(rf"^(?P<name>.+)-(?P<digest>[0-9a-f]{{{HASH_LEN}}})\.parquet$")


def content_hash(path: Path) -> str:
    """The hash a data file's name carries: the first 12 hex digits of the SHA-256 of its bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:HASH_LEN]


def hashed_name_mismatch(path: Path) -> tuple[str, str] | None:
    """``(hash in the name, hash of the content)`` when ``<name>-<hash>.parquet`` no longer holds the bytes it was
    named after (edited in place); ``None`` when they agree or the name carries no hash."""
    m = HASHED_NAME.match(path.name)
    if m is None:
        return None
    actual = content_hash(path)
    return None if actual == m["digest"] else (m["digest"], actual)


def configs_yaml(configs: dict[str, list[str]], default: str | None = None) -> list[dict]:
    """The README ``configs:`` entries: one split ``test`` per config, paths relative to the folder."""
    out = []
    for name, paths in configs.items():
        entry: dict = {"config_name": name, "data_files": [{"split": "test", "path": paths if len(paths) > 1 else paths[0]}]}
        if name == default:
            entry["default"] = True
        out.append(entry)
    return out


def write_folder(out: str | Path, fill: Callable[[Path], None], *, overwrite: bool = False) -> Path:
    """Create ``out`` by calling ``fill(tmpdir)``, then move it into place atomically."""
    out = Path(out).resolve()
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists: pass --overwrite to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        fill(tmp)
        os.chmod(tmp, 0o755)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def dump_json(obj, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
