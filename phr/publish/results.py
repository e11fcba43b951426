"""The leaderboard results repo: one JSON per scored submission and a ``leaderboard`` parquet config.

Repo layout (a dataset repo)::

    README.md                              card: ``configs: [leaderboard]`` + the leaderboard as a table
    data/leaderboard.parquet               one row per result JSON, rebuilt from ALL of them on every push
    results/<model-slug>/<run-id>.json     one per scored submission (schema below, docs/publishing.md)
    eval.yaml                              the benchmark's definition (copied from the benchmark repo)

Result JSON (``schema_version`` 1)::

    {"schema_version": 1, "benchmark": "phrbench",
     "model": "ORG/model", "revision": "<model commit or tag>", "run_id": "<optional; default: content hash>",
     "dataset": {"id": "ORG/phrbench", "revision": "v0.1.0"},
     "metrics": {"accuracy_b": 0.71, "accuracy_bt": 0.74, "accuracy_bh": 0.42, "OL": ..., "UI": ..., "BUF": ...,
                 "BC": ...},
     "date": "2025-06-01", "source_url": "...", "submitted_by": "...", "notes": "..."}

``accuracy_b``, ``accuracy_bt`` and ``accuracy_bh`` are required (fractions in [0, 1]); other metrics are optional;
further top-level keys (e.g. ``generation`` settings) are kept as they are.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from phr.publish import README, PublishError, PushResult, check_repo_id, hub_dir

SCHEMA_VERSION = 1
LEADERBOARD_CONFIG = "leaderboard"
LEADERBOARD_FILE = "data/leaderboard.parquet"
LEADERBOARD_SPLIT = "train"
RESULTS_DIR = "results"
EVAL_YAML = "eval.yaml"
REQUIRED_METRICS = ("accuracy_b", "accuracy_bt", "accuracy_bh")
TRAJECTORY_METRICS = ("OL", "UI", "BUF", "BC")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

COLUMNS: tuple[tuple[str, str], ...] = (
    ("model", "string"), ("revision", "string"), ("run_id", "string"),
    ("dataset", "string"), ("dataset_revision", "string"),
    ("accuracy_b", "float64"), ("accuracy_bt", "float64"), ("accuracy_bh", "float64"),
    ("delta_bt", "float64"), ("delta_bh", "float64"),
    ("OL", "float64"), ("UI", "float64"), ("BUF", "float64"), ("BC", "float64"),
    ("date", "string"), ("source_url", "string"),
)


class ResultsError(PublishError):
    pass


class DatasetRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=3)
    revision: str = Field(min_length=1)


class ResultRecord(BaseModel):
    """One scored submission (see the module docstring)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = SCHEMA_VERSION
    benchmark: str = "phrbench"
    model: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    run_id: str | None = None
    dataset: DatasetRef
    metrics: dict[str, float]
    date: str | None = None
    source_url: str | None = None
    submitted_by: str | None = None
    notes: str | None = None

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"unsupported schema_version {v} (this toolkit reads {SCHEMA_VERSION})")
        return v

    @field_validator("run_id", "benchmark")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        if v is not None and not _ID.match(v):
            raise ValueError("letters, digits, '.', '_', '-' only (at most 128)")
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, m: dict[str, float]) -> dict[str, float]:
        missing = [k for k in REQUIRED_METRICS if k not in m]
        if missing:
            raise ValueError(f"missing required metric(s) {missing}")
        bad = [k for k, v in m.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"metric(s) {bad} are not finite numbers")
        out = [k for k in REQUIRED_METRICS if not 0.0 <= m[k] <= 1.0]
        if out:
            raise ValueError(f"accuracy metric(s) {out} must be fractions in [0, 1]")
        return m


def model_slug(model: str) -> str:
    """``ORG/name`` -> ``ORG--name`` (a folder name)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "--", model).strip("-.") or "model"
    return slug[:96]


def _canonical(data: dict) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def normalize(data: dict[str, Any], *, source: str = "result") -> dict[str, Any]:
    """Validate one result dict and return it normalized (``run_id`` filled in: a hash of the content when the
    submission has none)."""
    try:
        rec = ResultRecord.model_validate(data)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(map(str, er['loc'])) or '(top)'}: {er['msg']}" for er in e.errors())
        raise ResultsError(f"{source} is not a valid result JSON (docs/publishing.md): {errs}") from None
    out = rec.model_dump(exclude_none=True)
    if "run_id" not in out:
        out["run_id"] = hashlib.sha256(_canonical(out).encode()).hexdigest()[:12]
    return out


def load_result(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ResultsError(f"cannot read result JSON {path}: {e}") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path} is not a JSON object")
    return normalize(data, source=str(path))


def result_path(rec: dict) -> str:
    return f"{RESULTS_DIR}/{model_slug(rec['model'])}/{rec['run_id']}.json"


def dump_result(rec: dict) -> bytes:
    return (json.dumps(rec, indent=2, ensure_ascii=False) + "\n").encode()


# ---- the leaderboard -------------------------------------------------------------------------------------------

def leaderboard_rows(records: list[dict]) -> list[dict]:
    """One row per record (columns ``COLUMNS``), best ``accuracy_bh`` first (ties: model, run id)."""
    rows = []
    for r in records:
        m = r["metrics"]
        row = {
            "model": r["model"], "revision": r["revision"], "run_id": r["run_id"],
            "dataset": r["dataset"]["id"], "dataset_revision": r["dataset"]["revision"],
            "accuracy_b": m["accuracy_b"], "accuracy_bt": m["accuracy_bt"], "accuracy_bh": m["accuracy_bh"],
            "delta_bt": round(m["accuracy_bt"] - m["accuracy_b"], 6),
            "delta_bh": round(m["accuracy_bh"] - m["accuracy_b"], 6),
            **{k: m.get(k) for k in TRAJECTORY_METRICS},
            "date": r.get("date"), "source_url": r.get("source_url"),
        }
        rows.append(row)
    rows.sort(key=lambda x: (-x["accuracy_bh"], x["model"], x["run_id"]))
    return rows


def leaderboard_table(records: list[dict]):
    import pyarrow as pa

    schema = pa.schema([(name, getattr(pa, typ)()) for name, typ in COLUMNS])
    return pa.Table.from_pylist(leaderboard_rows(records), schema=schema)


def _fmt(v, signed: bool = False) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:+.3f}" if signed else f"{v:.3f}"
    return str(v).replace("|", "\\|")


def render_card(records: list[dict], *, repo_id: str | None = None, title: str = "PHRBench leaderboard") -> str:
    """The results repo's README: YAML (``configs: leaderboard``) and the leaderboard as a Markdown table.
    Deterministic (no timestamps): the same results give the same card."""
    import yaml

    datasets = sorted({r["dataset"]["id"] for r in records})
    meta = {
        "pretty_name": title,
        "tags": ["leaderboard", "phrbench", "evaluation-results"],
        "configs": [{"config_name": LEADERBOARD_CONFIG, "default": True,
                     "data_files": [{"split": LEADERBOARD_SPLIT, "path": LEADERBOARD_FILE}]}],
    }
    rows = leaderboard_rows(records)
    cols = ["model", "revision", "accuracy_b", "accuracy_bt", "accuracy_bh", "delta_bt", "delta_bh",
            *TRAJECTORY_METRICS, "date"]
    table = ["| # | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    table += [f"| {i} | " + " | ".join(_fmt(row[c], c.startswith("delta")) for c in cols) + " |"
              for i, row in enumerate(rows, 1)]
    load = repo_id or "ORG/NAME"
    links = ", ".join(f"[{d}](https://huggingface.co/datasets/{d})" for d in datasets)
    body = [
        f"# {title}", "",
        (f"Scored submissions to {links or 'PHRBench'}: accuracy under B (question only), B+T (truthful premise) "
         "and B+H (hallucinated premise), the deltas B+T - B and B+H - B, and the trajectory metrics OL, UI, BUF "
         "and BC where reported."), "",
        *table, "",
        "```python", "from datasets import load_dataset",
        f'lb = load_dataset("{load}", "{LEADERBOARD_CONFIG}", split="{LEADERBOARD_SPLIT}")', "```", "",
        (f"Each submission is one JSON under `{RESULTS_DIR}/<model>/<run-id>.json` (schema_version "
         f"{SCHEMA_VERSION}: model, revision, dataset id and revision, metrics). `{LEADERBOARD_FILE}` is rebuilt "
         "from all of them on every push by `phr.publish.results.push_results`."), "",
    ]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + "\n".join(body)


# ---- folder build and check ------------------------------------------------------------------------------------

def write_results_folder(folder: Path, results: dict[str, bytes], *, eval_yaml: bytes | None,
                         repo_id: str | None = None) -> None:
    """Write the whole results repo content into ``folder`` from ``results`` (repo path -> JSON bytes)."""
    from phr.core.parquet import write_parquet

    records = [normalize(json.loads(b), source=p) for p, b in sorted(results.items())]
    for rel, data in results.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    write_parquet(leaderboard_table(records), folder / LEADERBOARD_FILE)
    (folder / README).write_text(render_card(records, repo_id=repo_id), encoding="utf-8")
    if eval_yaml is not None:
        (folder / EVAL_YAML).write_bytes(eval_yaml)


def is_results_folder(folder: Path, configs=None) -> bool:
    folder = Path(folder)
    if configs is None:
        try:
            from datasets.utils.metadata import MetadataConfigs
            from huggingface_hub import DatasetCard

            configs = MetadataConfigs.from_dataset_card_data(DatasetCard.load(folder / README).data)
        except Exception:
            return False
    return LEADERBOARD_CONFIG in configs and (folder / RESULTS_DIR).is_dir()


def check_results_folder(folder: str | Path):
    """Every result JSON valid and at its expected path, the leaderboard parquet equal to the one rebuilt from
    them, ``eval.yaml`` (if present) a YAML mapping with tasks."""
    import pyarrow.parquet as pq
    import yaml

    from phr.core.report import Rejection, ValidationReport

    folder = Path(folder)
    report = ValidationReport()
    records = []
    for p in sorted((folder / RESULTS_DIR).rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(folder).as_posix()
        if p.suffix != ".json":
            report.extend([Rejection(rel, "results", "only result JSON files belong under results/")])
            continue
        try:
            rec = normalize(json.loads(p.read_text(encoding="utf-8")), source=rel)
        except (ResultsError, json.JSONDecodeError, UnicodeDecodeError) as e:
            report.extend([Rejection(rel, "results", str(e))])
            continue
        if result_path(rec) != rel:
            report.extend([Rejection(rel, "results", f"belongs at {result_path(rec)} (model slug / run id)")])
        records.append(rec)
    if not records:
        report.extend([Rejection(RESULTS_DIR, "results", "no result JSON files")])
    lb = folder / LEADERBOARD_FILE
    if not lb.is_file():
        report.extend([Rejection(LEADERBOARD_FILE, "leaderboard", "missing")])
    elif records:
        have = pq.read_table(lb).to_pylist()
        want = leaderboard_table(records).to_pylist()
        if have != want:
            report.extend([Rejection(LEADERBOARD_FILE, "leaderboard",
                                     f"does not match the result JSONs ({len(have)} rows, {len(want)} expected): "
                                     "rebuild it with push_results")])
    if (folder / EVAL_YAML).exists():
        try:
            cfg = yaml.safe_load((folder / EVAL_YAML).read_text(encoding="utf-8"))
            if not isinstance(cfg, dict) or not isinstance(cfg.get("tasks"), list):
                raise ValueError("expected a mapping with a 'tasks' list")
        except Exception as e:
            report.extend([Rejection(EVAL_YAML, "eval_yaml", f"does not parse: {e}")])
    report.rows = {"results": len(records)}
    return report


# ---- push ------------------------------------------------------------------------------------------------------

def _existing(repo_id: str, *, local: Path | None, token: str | None, endpoint: str | None) -> dict[str, bytes]:
    """The results repo's current ``results/*`` and ``eval.yaml`` ({} for a repo that does not exist yet)."""
    if local is not None:
        from phr.publish import RepoNotFoundError
        from phr.publish.local_hub import LocalHub, read_tree

        try:
            files = read_tree(LocalHub(local), repo_id, "dataset")
        except RepoNotFoundError:
            return {}
    else:
        from phr.publish.hub import read_files_online

        files = read_files_online(repo_id, "dataset", patterns=[f"{RESULTS_DIR}/**", EVAL_YAML], token=token,
                                  endpoint=endpoint)
    return {p: b for p, b in files.items() if p.startswith(RESULTS_DIR + "/") or p == EVAL_YAML}


def push_results(result_json_paths: list[str | Path], repo_id: str, *, benchmark_eval_yaml: str | Path | None = None,
                 to: str | Path | None = None, token: str | None = None, endpoint: str | None = None,
                 message: str | None = None, tag: str | None = None, create_pr: bool = False,
                 private: bool = False, replace: bool = False) -> PushResult:
    """Add scored submissions to the leaderboard results repo ``repo_id`` (a dataset repo) and rebuild its
    ``leaderboard`` config from all results in the repo, in one commit (none if nothing changed).

    ``benchmark_eval_yaml``: the benchmark's ``eval.yaml`` (default: keep the repo's, else PHRBench's generated
    one). A submission whose path exists with other content is refused unless ``replace``.
    """
    from phr.publish import push

    check_repo_id(repo_id)
    if not result_json_paths:
        raise ResultsError("no result JSON files given")
    local = hub_dir(to)
    new = {}
    for p in result_json_paths:
        rec = load_result(p)
        rel = result_path(rec)
        if rel in new and json.loads(new[rel]) != rec:
            raise ResultsError(f"two submissions map to {rel} with different content: give them distinct run_id")
        new[rel] = dump_result(rec)
    existing = _existing(repo_id, local=local, token=token, endpoint=endpoint)
    results = {p: b for p, b in existing.items() if p.startswith(RESULTS_DIR + "/")}
    for rel, data in new.items():
        if rel in results and not replace:
            try:
                same = normalize(json.loads(results[rel]), source=rel) == json.loads(data)
            except (ResultsError, json.JSONDecodeError):
                same = False
            if not same:
                raise ResultsError(f"{repo_id} already has {rel} with other content: give the run a new run_id, "
                                   "or pass replace=True (--replace) to overwrite it")
            data = results[rel]  # unchanged: keep the stored bytes
        results[rel] = data
    if benchmark_eval_yaml is not None:
        eval_bytes = Path(benchmark_eval_yaml).read_bytes()
    elif EVAL_YAML in existing:
        eval_bytes = existing[EVAL_YAML]
    else:
        from phr.cards.eval_yaml import eval_yaml

        eval_bytes = eval_yaml().encode()
    tmp = Path(tempfile.mkdtemp(prefix="phr-results-"))
    try:
        folder = tmp / repo_id.split("/")[1]
        folder.mkdir()
        write_results_folder(folder, results, eval_yaml=eval_bytes, repo_id=repo_id)
        n = len(new)
        return push(folder, repo_id, repo_type="dataset", tag=tag, private=private, create_pr=create_pr,
                    message=message or f"Add {n} result(s); rebuild the leaderboard ({len(results)} results)",
                    to=local, token=token, endpoint=endpoint)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the submitting model's repo -------------------------------------------------------------------------------

def model_eval_results_yaml(rec: dict, *, source_url: str | None = None, source_name: str | None = None) -> str:
    """``.eval_results/phrbench.yaml`` for the model of result ``rec`` (its metrics known to PHRBench's
    ``eval.yaml``)."""
    from phr.cards.eval_yaml import METRICS, eval_results_yaml

    rec = normalize(rec) if "run_id" not in rec else rec
    known = {m for m, *_ in METRICS}
    scores = {k: v for k, v in rec["metrics"].items() if k in known}
    return eval_results_yaml(rec["dataset"]["id"], scores, revision=rec["dataset"]["revision"], date=rec.get("date"),
                             source_url=source_url or rec.get("source_url"), source_name=source_name,
                             notes=rec.get("notes"))


def _check_eval_results_text(text: str) -> None:
    import yaml

    try:
        data = yaml.safe_load(text)
        if not isinstance(data, list) or not data:
            raise ValueError("expected a non-empty YAML list")
        try:
            from huggingface_hub import parse_eval_result_entries
        except ImportError:
            for item in data:
                item["dataset"]["id"], item["value"]
        else:
            parse_eval_result_entries(data)
    except Exception as e:
        raise ResultsError(f"the .eval_results YAML does not parse: {e!r}") from None


def open_model_pr(model_repo: str, eval_results_yaml: str | Path, *, benchmark: str = "phrbench",
                  to: str | Path | None = None, token: str | None = None, endpoint: str | None = None,
                  message: str | None = None) -> PushResult:
    """Open a pull request on the model repo ``model_repo`` adding ``.eval_results/<benchmark>.yaml``
    (``eval_results_yaml``: the YAML text or a file). Local hub: a branch ``pr/N``. Nothing is opened when main
    already holds the same file."""
    check_repo_id(model_repo)
    if not _ID.match(benchmark):
        raise ResultsError(f"invalid benchmark name {benchmark!r}")
    text = Path(eval_results_yaml).read_text(encoding="utf-8") if isinstance(eval_results_yaml, Path) \
        else eval_results_yaml
    _check_eval_results_text(text)
    path = f".eval_results/{benchmark}.yaml"
    message = message or f"Add {benchmark} evaluation results"
    local = hub_dir(to)
    if local is not None:
        from phr.publish.local_hub import LocalHub, commit_files

        return commit_files(LocalHub(local), model_repo, "model", {path: text.encode()}, message=message,
                            replace=False, create_pr=True, create=False)
    from phr.publish.hub import add_file_pr_online

    return add_file_pr_online(model_repo, "model", path, text.encode(), message=message, token=token,
                              endpoint=endpoint)
