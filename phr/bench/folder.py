"""The PHRBench folder format: ``README.md`` (card with ``configs:``), ``data/<config>-<hash>.parquet`` per
condition, and the extras a build writes beside them. Reading and writing of the data files live here."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from phr.bench.conditions import ALL_CONFIG, CONFIGS
from phr.bench.instance import arrow_schema
from phr.core.parquet import write_parquet_hashed

DATA_DIR = "data"
SPLIT = "test"
MANIFEST = "manifest.json"
CARD_CONFIGS: tuple[str, ...] = (*CONFIGS, ALL_CONFIG)


def data_file(folder: str | Path, config: str) -> Path | None:
    """``data/<config>-<hash>.parquet`` (or ``data/<config>.parquet``) of a built folder."""
    data = Path(folder) / DATA_DIR
    found = sorted(data.glob(f"{config}-*.parquet")) or sorted(data.glob(f"{config}.parquet"))
    return found[0] if found else None


def read_rows(folder: str | Path) -> dict[str, list[dict]]:
    """Rows per config for every config whose data file exists."""
    return {n: pq.read_table(p).to_pylist() for n in CONFIGS if (p := data_file(folder, n)) is not None}


def to_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema())


def write_data(folder: str | Path, rows_by_config: dict[str, list[dict]]) -> dict[str, str]:
    """Write one content-hashed parquet per config under ``folder/data``; returns config -> relative path."""
    data = Path(folder) / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    return {n: f"{DATA_DIR}/{write_parquet_hashed(to_table(r), data, n)}" for n, r in rows_by_config.items()}


def card_configs(files: dict[str, str]) -> list[dict]:
    """The card's ``configs:`` entries: one per condition plus ``all`` (the default), split ``test``."""
    by_config = {
        **{n: [files[n]] for n in CONFIGS if n in files},
        ALL_CONFIG: [files[n] for n in CONFIGS if n in files],
    }
    out = []
    for name, paths in by_config.items():
        entry: dict = {
            "config_name": name,
            "data_files": [{"split": SPLIT, "path": paths if len(paths) > 1 else paths[0]}],
        }
        if name == ALL_CONFIG:
            entry["default"] = True
        out.append(entry)
    return out
