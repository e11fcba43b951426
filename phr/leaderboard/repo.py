"""The leaderboard results repo: one JSON per scored submission and a ``leaderboard`` parquet config.

Repo layout (a dataset repo)::

    README.md                              card: ``configs: [leaderboard]`` + the leaderboard as a table
    data/leaderboard.parquet               one row per result JSON, rebuilt from ALL of them on every push
    results/<model-slug>/<run-id>.json     one per scored submission (``phr.eval.results.Result``)
    eval.yaml                              the benchmark's definition (copied from the benchmark repo)

A result JSON is eval's ``results.json`` (schema: ``phr.eval.results``, docs/publishing.md); version-1 results
(toolkit 0.1.0) are read too. ``accuracy_b``, ``accuracy_bt`` and ``accuracy_bh`` are required (fractions in
[0, 1]; ``phr.bench.metrics.REQUIRED``); other metrics and their standard errors are optional; further top-level
keys are kept as they are.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from phr.bench.metrics import LEADERBOARD, label
from phr.cards.eval_yaml import eval_yaml
from phr.config.ops import PushConfig, PushResultsConfig
from phr.core.parquet import write_parquet
from phr.core.report import Rejection, ValidationReport
from phr.core.text import md_code, md_text
from phr.eval.results import (
    ID_PATTERN,
    LOCAL_DATASET,
    SCHEMA_VERSION,
    Result,
    ResultsError,
    UnsafeResultError,
    entry_problems,
    leaderboard_result,
    load_result,
    model_slug,
    normalize,
    read_json,
    read_result,
)
from phr.hub import README, ArtifactKind, PushResult, RepoNotFoundError, hub_dir, push
from phr.hub.card import CardConfig, CardError, card_configs
from phr.hub.local import LocalHub, commit_files, read_tree
from phr.hub.online import add_file_pr_online, read_files_online
from phr.hub.repo import check_repo_id, repo_id_problem
from phr.leaderboard.table import SE_NOTE, TITLE, entries, has_errors, leaderboard_table, ranks
from phr.leaderboard.verify import EVIDENCE_DIR, Datasets, check, evidence_path, samples_near, verify

LEADERBOARD_CONFIG = "leaderboard"
LEADERBOARD_FILE = "data/leaderboard.parquet"
LEADERBOARD_SPLIT = "train"
RESULTS_DIR = "results"
EVAL_YAML = "eval.yaml"


def result_path(rec: Result | Mapping[str, Any]) -> str:
    rec = leaderboard_result(rec)
    return f"{RESULTS_DIR}/{model_slug(rec.model)}/{rec.run_id}.json"


def dump_result(rec: Result | Mapping[str, Any]) -> bytes:
    data = rec.as_json() if isinstance(rec, Result) else rec
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


# ---- collecting --------------------------------------------------------------------------------------------


def _result_files(source: Path) -> tuple[list[Path], bool]:
    """The result JSON files of ``source`` and whether they were found in a folder (else named)."""
    if source.is_file():
        return [source], False
    if not source.is_dir():
        raise ResultsError(f"{source}: no such result JSON file or folder")
    root = source / RESULTS_DIR if (source / RESULTS_DIR).is_dir() else source

    def visible(pattern: str) -> list[Path]:
        return sorted(
            p
            for p in root.rglob(pattern)
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
        )

    # a runs folder (RUN/scores/results.json next to run.json): only the results
    files = visible("results.json") if root is source else []
    files = files or visible("*.json")
    if not files:
        raise ResultsError(f"no result JSON files under {root}")
    return files, True


def result_files(source: Path) -> list[tuple[Path, str]]:
    """The PHRBench result files of a file or folder (as ``collect_results`` reads them), each with the path shown
    for it (relative to a folder)."""
    files, in_folder = _result_files(source)
    out = []
    for path in files:
        if in_folder and not_phrbench(read_json(path)) is not None:
            continue
        out.append((path, path.relative_to(source).as_posix() if in_folder else str(path)))
    return out


def not_phrbench(data: Any) -> str | None:
    """Why ``data`` (a parsed JSON file) is not a PHRBench result at all, or None when it is one (valid or not):
    another benchmark's ``benchmark``, or no ``benchmark`` and no ``metrics`` (e.g. `eval hr1`'s results.json)."""
    if not isinstance(data, Mapping):
        return "not a JSON object"
    bench = data.get("benchmark")
    if bench is not None and bench != "phrbench":
        return f"a result of benchmark {bench!r}"
    if bench is None and "metrics" not in data:
        return "no 'benchmark' and no 'metrics' (not a PHRBench result)"
    return None


def collect_results(
    sources: Iterable[str | Path],
    *,
    allow_partial: bool = False,
    notes: list[str] | None = None,
    datasets: Datasets | None = None,
) -> list[Result]:
    """Load and validate PHRBench result JSONs from files and folders (a folder: ``results/**/*.json`` if it has a
    ``results/`` folder, else every ``**/results.json`` (a runs folder), else ``**/*.json``; hidden paths
    skipped). A file in a folder that is not a PHRBench result (another benchmark's, `eval hr1`'s) is skipped, with
    a line appended to ``notes``; one named on its own is a ``ResultsError``. A partial result is refused
    (``PartialResultError``) unless ``allow_partial`` or it records that it was allowed (``Result.check_complete``).
    Identical duplicates collapse; the same (model, run_id) with other content is a ``ResultsError`` naming both
    files. With ``datasets`` each result is re-derived from its evidence (``phr.leaderboard.verify``) and carries its
    verdict: a result that is not what its evidence gives is shown unverified and unranked. Sorted by (model,
    run_id)."""
    seen: dict[tuple[str, str], tuple[Result, Path]] = {}
    for source in sources:
        files, in_folder = _result_files(Path(source))
        for path in files:
            data = read_json(path)
            other = not_phrbench(data)
            if other is not None:
                if not in_folder:
                    raise ResultsError(f"{path} is not a PHRBench result: {other}")
                if notes is not None:
                    notes.append(f"skipped {path}: {other}")
                continue
            rec = leaderboard_result(data, source=str(path)).check_complete(
                allow_partial=allow_partial, source=str(path)
            )
            key = (rec.model, rec.run_id or "")
            if key in seen:
                other_rec, other_path = seen[key]
                if other_rec != rec:
                    raise ResultsError(
                        f"conflicting results for model {key[0]!r} run_id {key[1]!r}: {other_path} "
                        f"and {path} differ (give the runs distinct run_id)"
                    )
                continue
            seen[key] = (rec, path)
    if datasets is None:
        return [seen[k][0] for k in sorted(seen)]
    return [
        verify(rec, samples_near(rec, path), datasets, path.parent) for rec, path in (seen[k] for k in sorted(seen))
    ]


# ---- the card ----------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return md_text(text)


def _dataset_link(dataset: str) -> str:
    """A Hub link for a dataset repo id; a local name (``local/<folder>``) or anything else (a hand-edited result)
    as escaped text: no link or image is ever made of it."""
    if repo_id_problem(dataset) or dataset.startswith(LOCAL_DATASET):
        return md_text(dataset)
    return f"[{md_text(dataset)}](https://huggingface.co/datasets/{dataset})"


def render_card(
    records: Iterable[Result | Mapping[str, Any]], *, repo_id: str | None = None, title: str = TITLE
) -> str:
    """The results repo's README: YAML (``configs: leaderboard``) and the leaderboard as a Markdown table
    (figures as ``value ± standard error`` where a result has them). Deterministic (no timestamps): the same
    results give the same card."""
    import yaml

    rows = entries(records)
    datasets = sorted({e.dataset for e in rows})
    meta = {
        "pretty_name": title,
        "tags": ["leaderboard", "phrbench", "evaluation-results"],
        "configs": [
            {
                "config_name": LEADERBOARD_CONFIG,
                "default": True,
                "data_files": [{"split": LEADERBOARD_SPLIT, "path": LEADERBOARD_FILE}],
            }
        ],
    }
    cols = ["Model", "Revision", *(label(m) for m in LEADERBOARD), "Date", "Coverage"]
    table = ["| # | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    table += [
        f"| {'—' if rank is None else rank} | "
        + " | ".join(
            [
                _cell(e.model) + "".join(f" {md_code(t)}" for t in e.tags),
                _cell(e.revision),
                *(e.text(m) for m in LEADERBOARD),
                _cell(e.date or ""),
                _cell(e.coverage),
            ]
        )
        + " |"
        for rank, e in zip(ranks(rows), rows)
    ]
    load = repo_id or "ORG/NAME"
    links = ", ".join(_dataset_link(d) for d in datasets)
    body = [
        f"# {title}",
        "",
        (
            f"Scored submissions to {links or 'PHRBench'}: accuracy under T (B+T, truthful premise) and H (B+H, "
            "hallucinated premise), Acc H − T (the paper's accuracy drop, signed) and retention H / T, accuracy under "
            "B (question only) and the differences against it (not the paper's accuracy drop), the trajectory metrics "
            "OL, UI, BUF and BC under H, the resolution proportions and the insightful rate where reported."
        ),
        "",
        *table,
        "",
        *([SE_NOTE, ""] if has_errors(rows) else []),
        "```python",
        "from datasets import load_dataset",
        f'lb = load_dataset("{load}", "{LEADERBOARD_CONFIG}", split="{LEADERBOARD_SPLIT}")',
        "```",
        "",
        (
            f"Each submission is one JSON under `{RESULTS_DIR}/<model>/<run-id>.json` (schema_version "
            f"{SCHEMA_VERSION}: model, revision, dataset id and revision, metrics and their standard errors; version 1 "
            f"is read too). `{LEADERBOARD_FILE}` is rebuilt from all of them on every push by "
            "`phr.leaderboard.repo.push_results`; its `<metric>_se` columns hold the standard errors."
        ),
        "",
    ]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + "\n".join(body)


# ---- folder build and check ------------------------------------------------------------------------------------


def write_results_folder(
    folder: Path,
    results: dict[str, bytes],
    *,
    eval_yaml: bytes | None,
    repo_id: str | None = None,
    evidence: dict[str, bytes] | None = None,
    datasets: Datasets | None = None,
) -> list[Result]:
    """Write the whole results repo content into ``folder`` from ``results`` and ``evidence`` (repo path -> bytes);
    with ``datasets`` every result is re-derived from its evidence and the card and parquet tag the unverified ones.
    Returns the results (with their verdicts)."""

    records = [leaderboard_result(json.loads(b), source=p) for p, b in sorted(results.items())]
    evidence = evidence or {}
    if datasets is not None:
        records = [verify(r, evidence.get(evidence_path(r) or ""), datasets) for r in records]
    for rel, data in {**results, **evidence}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    write_parquet(leaderboard_table(records), folder / LEADERBOARD_FILE)
    (folder / README).write_text(render_card(records, repo_id=repo_id), encoding="utf-8")
    if eval_yaml is not None:
        (folder / EVAL_YAML).write_bytes(eval_yaml)
    return records


def is_results_folder(folder: Path, configs: Mapping[str, CardConfig] | None = None) -> bool:
    folder = Path(folder)
    if configs is None:
        try:
            configs = card_configs(folder)
        except CardError:
            return False
    return LEADERBOARD_CONFIG in configs and (folder / RESULTS_DIR).is_dir()


def _folder_results(folder: Path, report: ValidationReport) -> list[Result]:
    """The valid result JSONs under ``results/``; a file that is not one, does not parse, is partial without
    ``--allow-partial`` or is not at its expected path is a rejection in ``report``."""
    records = []
    for p in sorted((folder / RESULTS_DIR).rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(folder).as_posix()
        if p.suffix != ".json":
            report.extend([Rejection(rel, "results", "only result JSON files belong under results/")])
            continue
        try:
            rec = leaderboard_result(json.loads(p.read_text(encoding="utf-8")), source=rel)
        except (ResultsError, json.JSONDecodeError, UnicodeDecodeError) as e:
            report.extend([Rejection(rel, "results", str(e))])
            continue
        if rec.partial and rec.coverage is not None and not rec.coverage.allow_partial:
            report.extend([Rejection(rel, "results", f"{rec.coverage_text()}, not published with --allow-partial")])
        if result_path(rec) != rel:
            report.extend([Rejection(rel, "results", f"belongs at {result_path(rec)} (model slug / run id)")])
        records.append(rec)
    return records


def _check_leaderboard_file(folder: Path, records: list[Result], report: ValidationReport) -> None:
    """The leaderboard parquet is there and equals the one rebuilt from ``records`` (compared without the tags:
    unverified, ... need the datasets to recompute)."""
    import pyarrow.parquet as pq

    lb = folder / LEADERBOARD_FILE
    if not lb.is_file():
        report.extend([Rejection(LEADERBOARD_FILE, "leaderboard", "missing")])
        return
    if not records:
        return

    def rows(table: list[dict]) -> list[str]:
        return sorted(json.dumps({k: v for k, v in r.items() if k != "tags"}, sort_keys=True) for r in table)

    have = pq.read_table(lb).to_pylist()
    want = leaderboard_table(records).to_pylist()
    if rows(have) != rows(want):
        report.extend(
            [
                Rejection(
                    LEADERBOARD_FILE,
                    "leaderboard",
                    f"does not match the result JSONs ({len(have)} rows, {len(want)} expected): "
                    "rebuild it with push_results",
                )
            ]
        )


def check_results_folder(folder: str | Path) -> ValidationReport:
    """Every result JSON valid and at its expected path, the leaderboard parquet equal to the one rebuilt from
    them, ``eval.yaml`` (if present) a YAML mapping with tasks."""
    import yaml

    folder = Path(folder)
    report = ValidationReport()
    records = _folder_results(folder, report)
    if not records:
        report.extend([Rejection(RESULTS_DIR, "results", "no result JSON files")])
    _check_leaderboard_file(folder, records, report)
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
        try:
            files = read_tree(LocalHub(local), repo_id, "dataset")
        except RepoNotFoundError:
            return {}
    else:
        files = read_files_online(
            repo_id,
            "dataset",
            patterns=[f"{RESULTS_DIR}/**", f"{EVIDENCE_DIR}/**", EVAL_YAML],
            token=token,
            endpoint=endpoint,
        )
    keep = (RESULTS_DIR + "/", EVIDENCE_DIR + "/")
    return {p: b for p, b in files.items() if p.startswith(keep) or p == EVAL_YAML}


def admit(path: Path, cfg: PushResultsConfig, datasets: Datasets) -> tuple[Result, bytes]:
    """A result file taken for publishing, and its evidence: its submitter text safe, every number re-derived from
    its evidence, partial only with ``allow_partial`` and scored in a weak sandbox only with ``allow_weak_sandbox``
    (both the maintainer's, recorded; what the file says about them is not believed). ``ResultsError`` otherwise."""
    loaded = load_result(path)
    if problems := entry_problems(loaded):
        raise UnsafeResultError(f"{path}: refused, its submitter text is not safe to publish: {'; '.join(problems)}")
    samples = samples_near(loaded, path)
    found = check(loaded, samples, datasets, path.parent).problems
    if found:
        raise ResultsError(f"{path}: refused, not what its evidence gives: {'; '.join(found)}")
    assert samples is not None  # check found it
    if loaded.coverage is not None:
        loaded = loaded.model_copy(update={"coverage": loaded.coverage.model_copy(update={"allow_partial": False})})
    loaded = loaded.check_complete(allow_partial=cfg.allow_partial, source=str(path))
    weak = loaded.weak_sandbox  # its record was checked (sandbox_problems): recorded, and one this tool writes
    if weak and not cfg.allow_weak_sandbox:
        box = loaded.sandbox
        raise ResultsError(
            f"{path}: refused, scored under a weak code sandbox ({box.get('isolation')}; only bwrap / unshare "
            "isolate): rescore it where bwrap works (docs/sandbox.md), or pass --allow-weak-sandbox to publish it "
            "tagged 'weak sandbox'"
        )
    return loaded.model_copy(update={"allow_weak_sandbox": True if weak else None}), samples


def push_results(cfg: PushResultsConfig, *, token: str | None = None) -> PushResult:
    """Add scored submissions (``cfg.results``) with their evidence to the leaderboard results repo ``cfg.repo`` (a
    dataset repo) and rebuild its ``leaderboard`` config from all results in the repo, in one commit (none if
    nothing changed).

    Each result is taken by ``admit`` (re-derived from its evidence against ``cfg.datasets`` or the dataset it
    names; refused with every difference named). Its samples file is committed as ``evidence/<sha256>.jsonl``; an
    evidence file that another result of the repo already names is refused. The results already in the repo are
    re-derived too: the card and parquet tag those that are not what their evidence gives (unverified, unranked).
    ``cfg.eval_yaml``: the benchmark's ``eval.yaml`` (default: keep the repo's, else PHRBench's generated one). A
    submission whose path exists with other content is refused unless ``cfg.replace``.
    """
    repo_id, endpoint = cfg.repo, cfg.endpoint
    check_repo_id(repo_id)
    if not cfg.results:
        raise ResultsError("no result JSON files given")
    local = hub_dir(cfg.hub)
    datasets = Datasets(cfg.datasets, hub=local)
    new, evidence = _admitted(cfg, datasets)
    existing = _existing(repo_id, local=local, token=token, endpoint=endpoint)
    results = {p: b for p, b in existing.items() if p.startswith(RESULTS_DIR + "/")}
    for rel, data in new.items():
        if rel in results and not cfg.replace:
            try:
                same = normalize(json.loads(results[rel]), source=rel) == json.loads(data)
            except (ResultsError, json.JSONDecodeError):
                same = False
            if not same:
                raise ResultsError(
                    f"{repo_id} already has {rel} with other content: give the run a new run_id, "
                    "or pass replace=True (--replace) to overwrite it"
                )
            data = results[rel]  # unchanged: keep the stored bytes
        results[rel] = data
    _check_evidence_owners(results, evidence)
    kept = {p: b for p, b in existing.items() if p.startswith(EVIDENCE_DIR + "/")}
    if cfg.eval_yaml is not None:
        eval_bytes = Path(cfg.eval_yaml).read_bytes()
    elif EVAL_YAML in existing:
        eval_bytes = existing[EVAL_YAML]
    else:
        eval_bytes = eval_yaml().encode()
    tmp = Path(tempfile.mkdtemp(prefix="phr-results-"))
    try:
        folder = tmp / repo_id.split("/")[1]
        folder.mkdir()
        write_results_folder(
            folder, results, eval_yaml=eval_bytes, repo_id=repo_id, evidence={**kept, **evidence}, datasets=datasets
        )
        n = len(new)
        message = cfg.message or f"Add {n} result(s); rebuild the leaderboard ({len(results)} results)"
        push_cfg = PushConfig(
            folder=folder, repo=repo_id, create_pr=cfg.create_pr, message=message, hub=local, endpoint=endpoint
        )
        # the rerun is this push-results command: the temporary folder is gone when the user reads it
        return push(push_cfg, token=token, rerun=_results_rerun(cfg, local))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _results_rerun(cfg: PushResultsConfig, hub: Path | None) -> str:
    """The ``push-results`` command that repeats ``cfg`` (its result files made absolute, the hub it went to)."""
    results = [Path(p).expanduser().resolve() for p in cfg.results]
    return cfg.model_copy(update={"results": results, "hub": hub}).rerun()


def _admitted(cfg: PushResultsConfig, datasets: Datasets) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The admitted results (repo path -> JSON bytes) and their evidence files (repo path -> bytes)."""
    new: dict[str, bytes] = {}
    evidence: dict[str, bytes] = {}
    owner: dict[str, str] = {}
    for p in cfg.results:
        admitted, samples = admit(Path(p), cfg, datasets)
        rec = admitted.as_json()
        rel = result_path(rec)
        if rel in new and json.loads(new[rel]) != rec:
            raise ResultsError(f"two submissions map to {rel} with different content: give them distinct run_id")
        new[rel] = dump_result(rec)
        ev = evidence_path(admitted)
        assert ev is not None  # admit checked the evidence
        if owner.setdefault(ev, rel) != rel:
            raise ResultsError(f"{p}: its evidence {ev} is already the evidence of {owner[ev]}")
        evidence[ev] = samples
    return new, evidence


def _check_evidence_owners(results: dict[str, bytes], new_evidence: dict[str, bytes]) -> None:
    """Refuse two results of the repo naming the same new evidence file (content-addressed: one owner each)."""
    owners: dict[str, list[str]] = {}
    for rel, data in results.items():
        try:
            ev = evidence_path(read_result(json.loads(data), source=rel))
        except (ResultsError, json.JSONDecodeError):
            continue
        if ev in new_evidence:
            owners.setdefault(ev, []).append(rel)
    for ev, rels in owners.items():
        if len(rels) > 1:
            raise ResultsError(f"{ev} would be the evidence of {' and '.join(sorted(rels))}: a result has its own")


# ---- the submitting model's repo -------------------------------------------------------------------------------


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


def open_model_pr(
    model_repo: str,
    eval_results_yaml: str | Path,
    *,
    benchmark: str = "phrbench",
    to: str | Path | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    message: str | None = None,
) -> PushResult:
    """Open a pull request on the model repo ``model_repo`` adding ``.eval_results/<benchmark>.yaml``
    (``eval_results_yaml``: the YAML text or a file). Local hub: a branch ``pr/N``. Nothing is opened when main
    already holds the same file."""
    check_repo_id(model_repo)
    if not ID_PATTERN.match(benchmark):
        raise ResultsError(f"invalid benchmark name {benchmark!r}")
    text = (
        Path(eval_results_yaml).read_text(encoding="utf-8")
        if isinstance(eval_results_yaml, Path)
        else eval_results_yaml
    )
    _check_eval_results_text(text)
    path = f".eval_results/{benchmark}.yaml"
    message = message or f"Add {benchmark} evaluation results"
    local = hub_dir(to)
    if local is not None:
        return commit_files(
            LocalHub(local),
            model_repo,
            "model",
            {path: text.encode()},
            message=message,
            replace=False,
            create_pr=True,
            create=False,
        )

    return add_file_pr_online(model_repo, "model", path, text.encode(), message=message, token=token, endpoint=endpoint)


#: Leaderboard results repos for the hub gate (entry point ``phr.hub.kinds``: phrbench-results).
RESULTS = ArtifactKind("phrbench-results", "dataset", is_results_folder, check_results_folder)
