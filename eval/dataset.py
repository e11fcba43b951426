"""The PHRBench instances an evaluation runs on: a built folder, a local hub repo or a Hub dataset.

    ds = load_eval_dataset("phrbench")                 # a folder written by `phr-publish build phrbench`
    ds = load_eval_dataset("ORG/phrbench", revision="v0.1.0")   # $PHR_HUB_DIR's repo, else the Hub

``EvalDataset`` carries what a result must name: the dataset id, the revision evaluated (a commit for a repo,
``sha256:<12 hex>`` of the data files for a plain folder) and the SHA-256 of every data file.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import ValidationError

from phr.bench.conditions import CONDITION_VALUES, UnknownConditionError, condition_spec, select
from phr.bench.folder import data_file
from phr.bench.instance import Instance
from phr.core.errors import UsageError
from phr.core.fs import sha256_file
from phr.core.settings import phr_home
from phr.hub import RepoNotFoundError, RevisionNotFoundError, hub_dir
from phr.hub.local import LocalHub, pull_local, resolve_revision

CONDITIONS = CONDITION_VALUES


class DatasetError(UsageError):
    pass


@dataclass
class EvalDataset:
    id: str
    revision: str
    path: Path
    instances: list[Instance]
    files: dict[str, str] = field(default_factory=dict)  # data file (relative) -> sha256

    def by_id(self) -> dict[str, Instance]:
        return {i.id: i for i in self.instances}

    def select(self, conditions: str | Iterable[str] = CONDITIONS) -> list[Instance]:
        wanted = set(check_conditions(conditions))
        return [i for i in self.instances if i.condition in wanted]

    def ref(self) -> dict:
        return {"id": self.id, "revision": self.revision}


def check_conditions(conditions: str | Iterable[str]) -> tuple[str, ...]:
    """Normalise condition names ("B", "B+T", "B+H", or the config names baseline/truthful/hallucinated)."""
    try:
        return select(conditions)
    except UnknownConditionError as e:
        raise DatasetError(str(e)) from None


def _read_folder(folder: Path) -> tuple[list[Instance], dict[str, str]]:
    instances: list[Instance] = []
    files: dict[str, str] = {}
    for cond in CONDITIONS:
        config = condition_spec(cond).config
        path = data_file(folder, config)
        if path is None:
            raise DatasetError(
                f"{folder} has no data/{config}-*.parquet: not a built PHRBench folder "
                "(make one with `phr-publish build phrbench`)"
            )
        rel = path.relative_to(folder).as_posix()
        files[rel] = sha256_file(path)
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as e:  # noqa: BLE001 - any unreadable parquet
            raise DatasetError(f"cannot read {rel}: {e}") from None
        for n, row in enumerate(rows):
            if row.get("condition") != cond:
                raise DatasetError(
                    f"{rel} row {n} ({row.get('id')!r}): condition {row.get('condition')!r}, expected {cond!r}"
                )
            try:
                instances.append(Instance.from_row(row))
            except ValidationError as e:
                err = e.errors()[0]
                raise DatasetError(
                    f"{rel} row {n} ({row.get('id')!r}): field {'.'.join(map(str, err['loc']))}: {err['msg']}"
                ) from None
    seen: set[str] = set()
    for i in instances:
        if not i.id or not i.prompt:
            raise DatasetError(f"instance {i.id!r} has no id or prompt")
        if i.id in seen:
            raise DatasetError(f"duplicate instance id {i.id!r}")
        seen.add(i.id)
    return instances, files


def _git_head(path: Path) -> str | None:
    if not (path / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], check=False, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def load_eval_dataset(
    spec: str | os.PathLike,
    *,
    revision: str | None = None,
    hub: str | os.PathLike | None = None,
    dataset_id: str | None = None,
) -> EvalDataset:
    """Load PHRBench from a folder, a local hub (``hub`` or ``$PHR_HUB_DIR``) or the Hub (``ORG/NAME``).

    ``dataset_id`` names a plain folder in results (default: ``local/<folder name>``)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if revision is not None:
            raise DatasetError("--revision applies to a repo id, not to a folder")
        instances, files = _read_folder(path)
        rev = _git_head(path)
        if rev is None:
            digest = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(files.items())).encode()).hexdigest()
            rev = f"sha256:{digest[:12]}"
        return EvalDataset(dataset_id or f"local/{path.resolve().name}", rev, path, instances, files)
    spec = str(spec)
    if spec.count("/") != 1 or spec.startswith((".", "/")):
        raise DatasetError(f"{spec!r} is neither a folder nor a repo id ORG/NAME")

    local = hub_dir(hub)
    if local is not None:
        return _from_local_hub(spec, revision, local, dataset_id)
    return _from_hub(spec, revision, dataset_id)


def _from_local_hub(repo_id: str, revision: str | None, hub: Path, dataset_id: str | None) -> EvalDataset:
    """Export the repo's revision once into $PHR_HOME/eval-datasets/<org>--<name>/<commit> and read it."""

    lh = LocalHub(hub)
    try:
        if not lh.exists(repo_id, "dataset"):  # the hub's own message: "no dataset repo ..."
            pull_local(repo_id, repo_type="dataset", revision=revision, dest=_eval_cache() / ".absent", hub=hub)
        # the commit first, then that commit's files: a push in between cannot mix them
        commit = resolve_revision(lh.repo_path(repo_id, "dataset"), revision)
        dest = _eval_cache() / repo_id.replace("/", "--") / commit
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            pull_local(repo_id, repo_type="dataset", revision=commit, dest=dest, hub=hub)  # atomic install
    except (RepoNotFoundError, RevisionNotFoundError) as e:
        raise DatasetError(str(e)) from None
    instances, files = _read_folder(dest)
    return EvalDataset(dataset_id or repo_id, commit, dest, instances, files)


def _eval_cache() -> Path:
    cache = phr_home() / "eval-datasets"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def _from_hub(repo_id: str, revision: str | None, dataset_id: str | None) -> EvalDataset:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        local = Path(
            snapshot_download(
                repo_id, repo_type="dataset", revision=revision, allow_patterns=["README.md", "data/*", "manifest.json"]
            )
        )
    except (RepositoryNotFoundError, RevisionNotFoundError) as e:
        raise DatasetError(f"dataset {repo_id}@{revision or 'main'} not found: {type(e).__name__}") from None
    except LocalEntryNotFoundError:
        raise DatasetError(
            f"dataset {repo_id} is not in the local Hub cache and the Hub cannot be reached "
            "(offline): build it locally and pass the folder, or set PHR_HUB_DIR"
        ) from None
    except HfHubHTTPError as e:
        raise DatasetError(f"cannot download {repo_id}: {e}") from None
    instances, files = _read_folder(local)
    commit = local.name if len(local.name) == 40 else (revision or "main")
    return EvalDataset(dataset_id or repo_id, commit, local, instances, files)
