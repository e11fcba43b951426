"""Generate a model's responses to PHRBench: B, B+T and B+H, N samples per prompt, cached and resumable.

    from phr.api import plan, run
    result = run(plan(EvalPhrbenchConfig(model="local:smollm2", samples=2, limit=5)))   # phr.ops.eval_phrbench

``phr.ops.eval_phrbench`` plans a run (its ``RunSettings``: the generation record of run.json, the instances, the
requests) and ``generate_run`` here executes it.

A run folder holds

    run.json          what was run: model spec and revision, dataset id/revision/file hashes, conditions,
                      sampling parameters, samples, limit, shard; the instance ids it covers
    responses.jsonl   one line per response, {"instance_id", "sample", "response"}: itself a valid
                      leaderboard submission, scored by the same code (phr.eval.scoring)
    generations.jsonl per sample: finish reason, token counts, latency, cached, or the failure

Every call goes through the LLM layer's cache, so an interrupted run resumes where it stopped and a rerun
makes no calls. ``--shard i/n`` takes every n-th base question (i = 1..n, the dataset's question order), so
shards are disjoint, cover the dataset together and keep each question's conditions together;
``merge_runs`` joins them into one run folder.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phr.core.errors import PHRError, UsageError
from phr.core.fs import atomic_dir, atomic_write
from phr.eval.dataset import EvalDataset, Instance, check_conditions, load_eval_dataset
from phr.eval.results import (
    RUN_SCHEMA_VERSION,
    Generation,
    RunDataset,
    RunManifest,
    RunSettings,
    model_slug,
    read_run_manifest,
)
from phr.eval.submission import write_submission
from phr.llm.types import ChatRequest, GenerationParams, RequestResult, Sample, as_messages

if TYPE_CHECKING:  # pragma: no cover - the caller makes the client
    from phr.llm.client import LLM
    from phr.llm.providers.base import Provider

RUN_FILE = "run.json"
RESPONSES_FILE = "responses.jsonl"
GENERATIONS_FILE = "generations.jsonl"


class RunError(UsageError):
    pass


def model_max_output(provider: Provider) -> int | None:
    """The model's maximum output length: a provider's ``max_output_tokens`` (an int or a method; in-process
    models give their context capacity), or None when the provider does not say (then ``--max-tokens``)."""
    value = getattr(provider, "max_output_tokens", None)
    value = value() if callable(value) else value
    return int(value) if isinstance(value, int) and value > 0 else None


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4); i in 1..n."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise RunError(f"--shard {text!r}: expected i/n, e.g. 1/4")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= i <= n:
        raise RunError(f"--shard {text!r}: i must be in 1..n")
    return i, n


def select_instances(
    dataset: EvalDataset, conditions: Sequence[str], limit: int | None = None, shard: tuple[int, int] | None = None
) -> list[Instance]:
    """The instances of the first ``limit`` base questions (dataset order), then shard i of n of those
    questions (every n-th, starting at the i-th), in the chosen conditions, in dataset order."""
    conditions = check_conditions(conditions)
    qids: list[str] = []
    seen: set[str] = set()
    for inst in dataset.instances:
        if inst.question_id not in seen:
            seen.add(inst.question_id)
            qids.append(inst.question_id)
    if limit is not None:
        qids = qids[:limit]
    if shard is not None:
        i, n = shard
        qids = qids[i - 1 :: n]
    keep = set(qids)
    return [x for x in dataset.instances if x.question_id in keep and x.condition in conditions]


def model_revision(provider: Provider) -> str:
    return provider.revision or getattr(provider, "content_revision", None) or "unspecified"


def _messages(settings: RunSettings, inst: Instance) -> list[dict]:
    msgs = [{"role": "system", "content": settings.system_prompt}] if settings.system_prompt else []
    return msgs + [{"role": "user", "content": inst.prompt}]


def run_id_of(settings: RunSettings, revision: str, dataset: EvalDataset) -> str:
    """A stable id for the (model, revision, dataset revision, settings) run, shard excluded."""
    key = settings.model_dump(exclude={"shard"})
    key.update(model_revision=revision, dataset_revision_resolved=dataset.revision)
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass
class Run:
    """A run folder's content (``meta``: its run.json)."""

    path: Path
    meta: RunManifest
    responses: dict[tuple[str, int], str] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)

    @property
    def instance_ids(self) -> list[str]:
        return self.meta.instance_ids


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("phr-toolkit", "transformers", "torch", "openai", "anthropic", "google-genai", "vllm"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def run_requests(settings: RunSettings, instances: Sequence[Instance]) -> list[ChatRequest]:
    """The generation requests of a run: one per instance, ``samples`` each (what ``generate_run`` sends)."""
    s = settings
    params = GenerationParams(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=s.seed)
    return [ChatRequest(as_messages(_messages(s, i)), params, n=s.samples, tag=i.id) for i in instances]


def select_run(settings: RunSettings, dataset: EvalDataset) -> list[Instance]:
    """The instances a run's settings select (limit, shard, conditions); a ``RunError`` when none."""
    shard = (settings.shard[0], settings.shard[1]) if settings.shard else None
    instances = select_instances(dataset, settings.conditions, settings.limit, shard)
    if not instances:
        raise RunError("nothing to run: the limit / shard / conditions select no instance")
    return instances


def default_run_dir(root: str | Path, model: str, run_id: str, shard: tuple[int, int] | None) -> Path:
    name = run_id if shard is None else f"{run_id}-shard-{shard[0]}-of-{shard[1]}"
    return Path(root) / model_slug(model) / name


def generate_run(
    settings: RunSettings,
    dataset: EvalDataset,
    llm: LLM,
    *,
    instances: Sequence[Instance] | None = None,
    out: str | Path | None = None,
    root: str | Path = "runs",
    record: dict | None = None,
) -> Run:
    """Generate every response of a run (``settings``, the generation record of run.json; ``instances``:
    ``select_run``'s, selected again when None) with ``llm`` and write the run folder (``out``, default
    ``ROOT/<model>/<run id>[-shard-i-of-n]``); ``record``: the config the run was started with (run.json's
    ``settings``). Failed calls are listed in generations.jsonl and left out of responses.jsonl; rerunning
    retries them (successes come from the cache)."""
    instances = list(instances) if instances is not None else select_run(settings, dataset)
    revision = model_revision(llm.provider)
    run_id = run_id_of(settings, revision, dataset)
    shard = (settings.shard[0], settings.shard[1]) if settings.shard else None
    path = Path(out) if out is not None else default_run_dir(root, settings.model, run_id, shard)
    requests = run_requests(settings, instances)
    results = llm.generate(requests, desc=f"{settings.model} on {len(instances)} prompts x {settings.samples}")
    responses, log_rows, failures = _collect(instances, results)
    meta = RunManifest(
        schema_version=RUN_SCHEMA_VERSION,
        run_id=run_id,
        model=settings.model,
        model_revision=revision,
        dataset=RunDataset.model_validate({**dataset.ref(), "path": str(dataset.path), "files": dataset.files}),
        config=settings,
        generation=Generation.of(settings),
        samples=settings.samples,
        conditions=list(settings.conditions),
        shard=settings.shard,
        instance_ids=[i.id for i in instances],
        responses=len(responses),
        failures=len(failures),
        date=_dt.date.today().isoformat(),
        versions=_versions(),
        settings=record,
    )
    _install(path, meta, responses, log_rows, write_submission)
    return Run(path, meta, responses, failures)


def _collect(
    instances: Sequence[Instance], results: Sequence[RequestResult]
) -> tuple[dict[tuple[str, int], str], list[dict], list[dict]]:
    """The responses, the generation log rows and the failed calls of ``llm.generate``'s results."""
    responses: dict[tuple[str, int], str] = {}
    log_rows: list[dict] = []
    failures: list[dict] = []
    for inst, res in zip(instances, results):
        for k, s in enumerate(res.samples):
            if isinstance(s, Sample):
                responses[(inst.id, k)] = s.text
                log_rows.append(
                    {
                        "instance_id": inst.id,
                        "sample": k,
                        "finish_reason": s.finish_reason,
                        "prompt_tokens": s.prompt_tokens,
                        "completion_tokens": s.completion_tokens,
                        "latency_s": round(s.latency_s, 4),
                        "cached": s.cached,
                    }
                )
            else:
                row = {
                    "instance_id": inst.id,
                    "sample": k,
                    "failure": s.reason,
                    "message": s.message,
                    "attempts": s.attempts,
                }
                failures.append(row)
                log_rows.append(row)
    return responses, log_rows, failures


def _install(
    path: Path,
    meta: RunManifest,
    responses: dict,
    log_rows: list,
    write_submission: Callable[[Path, Iterable[tuple[str, int, str]]], object],
) -> None:
    """Write the run folder's files into a temporary folder, then swap it in."""
    with atomic_dir(path) as tmp:
        order = {iid: n for n, iid in enumerate(meta.instance_ids)}
        keys = sorted(responses, key=lambda k: (order[k[0]], k[1]))
        write_submission(tmp / RESPONSES_FILE, ((i, s, responses[(i, s)]) for i, s in keys))
        _write_jsonl(tmp / GENERATIONS_FILE, log_rows)
        _write_json(tmp / RUN_FILE, meta.as_json())


def load_run(path: str | Path) -> Run:
    """Read a run folder written by generate_run or merge_runs."""
    path = Path(path)
    try:
        meta = read_run_manifest(json.loads((path / RUN_FILE).read_text(encoding="utf-8")), source=str(path / RUN_FILE))
    except FileNotFoundError:
        raise RunError(f"{path} is not a run folder (no {RUN_FILE})") from None
    except json.JSONDecodeError as e:
        raise RunError(f"{path / RUN_FILE}: not JSON ({e})") from None
    except ValueError as e:
        raise RunError(str(e)) from None
    responses: dict[tuple[str, int], str] = {}
    rerun = (meta.settings or {}).get("rerun") or "the command that wrote the run"
    for r in _read_jsonl(path / RESPONSES_FILE, rerun):
        try:
            responses[(r["instance_id"], r["sample"])] = r["response"]
        except (KeyError, TypeError):
            raise RunError(f"{path / RESPONSES_FILE}: a line is not an (instance_id, sample, response) row") from None
    gen = path / GENERATIONS_FILE
    failures = [r for r in _read_jsonl(gen, rerun) if isinstance(r, dict) and "failure" in r] if gen.exists() else []
    return Run(path, meta, responses, failures)


def _read_jsonl(path: Path, rerun: str) -> list:
    """The rows of a run folder's JSONL file; a line that is not JSON (a truncated file) is a ``RunError``
    naming the file, the line and the command that writes it again (``rerun``)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise RunError(
                    f"{path}: line {n} is not JSON ({e.msg}): the file is truncated or damaged: write the run again "
                    f"with {rerun} (answers come from the call cache)"
                ) from None
    return rows


_SHARD_FREE = ("run_id", "model", "model_revision", "dataset", "samples", "conditions", "generation")


def merge_runs(shards: Sequence[str | Path], out: str | Path) -> Run:
    """Join the run folders of shards 1..n of one run into ``out``. Refused unless every shard is there
    exactly once and all shards ran the same model revision, dataset revision and settings."""
    return write_joined(*join_shards(shards), out)


def write_joined(joined: Run, log_rows: list[dict], out: str | Path) -> Run:
    """Write shards joined by ``join_shards`` as the run folder ``out``."""
    out = Path(out)
    _install(out, joined.meta, joined.responses, log_rows, write_submission)
    return Run(out, joined.meta, joined.responses, joined.failures)


def join_shards(shards: Sequence[str | Path]) -> tuple[Run, list[dict]]:
    """The shards of one run joined in memory (checked as ``merge_runs`` does; nothing written): the merged
    run (its ``path``: the first shard's) and the generation log rows."""
    runs = [load_run(p) for p in shards]
    if not runs:
        raise RunError("no shard folders given")
    first = runs[0].meta
    for r in runs[1:]:
        for k in _SHARD_FREE:
            if getattr(r.meta, k) != getattr(first, k):
                raise RunError(f"{r.path} differs from {runs[0].path} in {k!r}: not shards of one run")
    _check_shards(runs)
    mine = _unsharded_settings(first.settings)
    for r in runs[1:]:
        if _unsharded_settings(r.meta.settings) != mine:
            raise RunError(f"{r.path} was started with other settings than {runs[0].path}: not shards of one run")
    runs.sort(key=lambda r: r.meta.shard[0] if r.meta.shard else 0)
    # the dataset order, as the unsharded run would have it
    ds = load_eval_dataset_from_meta(first)
    wanted = {iid for r in runs for iid in r.instance_ids}
    ids = [i.id for i in ds.instances if i.id in wanted] if ds else [i for r in runs for i in r.instance_ids]
    responses: dict[tuple[str, int], str] = {}
    log_rows: list[dict] = []
    for r in runs:
        responses.update(r.responses)
        gen = r.path / GENERATIONS_FILE
        if gen.exists():
            log_rows += [json.loads(line) for line in gen.read_text(encoding="utf-8").splitlines() if line.strip()]
    meta = first.model_copy(
        update={
            "shard": None,
            "merged_from": [str(r.path) for r in runs],
            "instance_ids": ids,
            "responses": len(responses),
            "failures": sum(len(r.failures) for r in runs),
            "config": first.config.model_copy(update={"shard": None}),
            "settings": mine,
        }
    )
    return Run(runs[0].path, meta, responses, [f for r in runs for f in r.failures]), log_rows


def _check_shards(runs: Sequence[Run]) -> None:
    """Every run a shard, of one split, each shard once, none missing (a ``RunError`` naming what is wrong)."""
    unsharded = [r.path for r in runs if not r.meta.shard]
    if unsharded:
        raise RunError(f"{unsharded[0]} is not a shard (it was run without --shard)")
    shard_ids = [(r.meta.shard[0], r.meta.shard[1]) for r in runs if r.meta.shard]
    n = shard_ids[0][1]
    if any(s[1] != n for s in shard_ids):
        raise RunError(f"shards of different splits: {sorted(set(shard_ids))}")
    dupes = sorted({s for s in shard_ids if shard_ids.count(s) > 1})
    if dupes:
        raise RunError(f"shard(s) {', '.join(f'{i}/{n}' for i, _ in dupes)} given twice")
    missing = sorted(set(range(1, n + 1)) - {s[0] for s in shard_ids})
    if missing:
        raise RunError(f"missing shard(s) {', '.join(f'{i}/{n}' for i in missing)}")


#: the settings that differ between the shards of one run (where each shard went, which shard it is)
_PER_SHARD = ("shard", "out", "rerun")


def _unsharded_settings(settings: dict | None) -> dict | None:
    """A shard's stored settings as the unsharded run's: no shard, no output folder of its own."""
    if settings is None:
        return None
    config = {k: (None if k in _PER_SHARD else v) for k, v in (settings.get("config") or {}).items()}
    return {k: v for k, v in settings.items() if k not in _PER_SHARD} | {"config": config}


def load_eval_dataset_from_meta(meta: RunManifest) -> EvalDataset | None:
    """The dataset a run used, when it is still where the run found it (same file hashes)."""
    try:
        ds = load_eval_dataset(meta.dataset.path)
    except (PHRError, OSError):
        return None
    return ds if ds.files == meta.dataset.files else None
