"""`eval phrbench` as an operation: ``plan(cfg)`` resolves a run, ``run(plan)`` generates and scores it.

    from phr.api import plan, run
    from phr.config.ops import EvalPhrbenchConfig

    p = plan(EvalPhrbenchConfig(model="local:smollm2", dataset="phrbench", samples=2, limit=2))
    print("\\n".join(p.lines()))     # what `--dry-run` prints: the preset, the sandbox, the calls and their cache
    done = run(p)                   # the run folder, then (unless --no-score or a shard) its scores

The plan checks every model spec and key, the dataset, the selection (limit, shard, conditions), the output
limit (``max_tokens``: the option, the model's maximum, or the default) and the output folder, and counts the
generation calls with their cached share; nothing is generated before it passed. ``run`` writes the run folder
(``phr.eval.runner.generate_run``) and scores it with the config's scoring settings (``phr.eval.pipeline``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phr.config.ops import EvalPhrbenchConfig
from phr.core.errors import PHRError
from phr.core.launch import Launch
from phr.core.progress import start_heartbeat
from phr.eval.dataset import EvalDataset, Instance, check_conditions, load_eval_dataset
from phr.eval.results import Result, RunSettings
from phr.eval.sandbox import isolation_report
from phr.llm.preflight import Preflight, max_output_of, writable
from phr.ops.plan import Plan

if TYPE_CHECKING:  # pragma: no cover - the client is imported where a run makes it
    from phr.eval.runner import Run
    from phr.llm.client import LLM


@dataclass
class EvalPhrbenchPlan(Plan[EvalPhrbenchConfig]):
    """A run resolved: the model's client (``llm``), the dataset, the generation settings (run.json's
    ``config``), the selected instances, where ``max_tokens`` came from, and the sandbox line of a scored run."""

    llm: Any = None
    dataset: EvalDataset | None = None
    settings: RunSettings | None = None
    instances: list[Instance] = field(default_factory=list)
    max_tokens_source: str = "default"
    sandbox: str | None = None

    def lines(self) -> list[str]:
        """The preset with the values it resolved to (``max_tokens: model`` as the model's maximum) and those
        overridden, the sandbox, then the plan."""
        limit = self.settings.max_tokens if self.settings is not None else None
        shown = {"max_tokens": f"model ({limit})"} if self.max_tokens_source == "model" and limit else {}
        head = [self.config.preset_line(shown=shown)]
        return head + ([self.sandbox] if self.sandbox else []) + super().lines()


@dataclass
class EvalPhrbenchResult:
    """What a run wrote: the run folder (``phr.eval.runner.Run``), and its scores (``result``, in ``scores``)
    unless it was a shard or run with ``score: false``; ``launched``: the launch whose shards it joins."""

    run: Any
    rerun: str
    result: Result | None = None
    scores: Path | None = None
    launched: Launch | None = None

    def lines(self) -> list[str]:
        """The run's one-line account, its rerun command, and for a shard how to join the shards."""
        r = self.run
        out = [
            f"run: {r.path}  ({len(r.responses)} responses, {len(r.failures)} failed calls)",
            f"settings recorded in {r.path / 'run.json'}; rerun: {self.rerun}",
        ]
        if self.launched is not None:
            out.insert(1, f"  joined from the shards of {self.launched.describe()}: {', '.join(r.meta.merged_from)}")
        if r.meta.shard:
            i, n = r.meta.shard
            out.append(
                f"shard {i}/{n} done; when every shard is done: phr-publish eval merge "
                f"{r.path.parent}/{r.meta.run_id}-shard-*-of-{n} --out {r.path.parent / r.meta.run_id}"
            )
        return out


def plan(cfg: EvalPhrbenchConfig) -> EvalPhrbenchPlan:
    """Resolve ``cfg`` without generating: models, dataset, selection, output limit and calls (see the module)."""
    p = EvalPhrbenchPlan(cfg)
    if cfg.score and cfg.shard is None:
        p.sandbox = _sandbox_line(p.preflight)
    # 20 s on a busy CPU; stopped before the plan is printed (pf.check turns every expected error into a problem)
    checking = start_heartbeat("checking the run (models, dataset, selection)")
    try:  # stopped on every path, an unexpected error included
        _resolve(p, cfg)
    finally:
        checking()
    return p


def _sandbox_line(pf: Preflight) -> str | None:
    """The code sandbox the run's code answers will run in: its line, or a warning when it is weak."""
    report = isolation_report()
    if report.weak:
        pf.warn(report.line().removeprefix("WARNING: "))
        return None
    return report.line()


def _resolve(p: EvalPhrbenchPlan, cfg: EvalPhrbenchConfig) -> None:
    pf = p.preflight
    from phr.eval.runner import parse_shard

    shard = pf.check("--shard", lambda: parse_shard(cfg.shard))
    if shard is not None and p.launch is not None:
        pf.problem(f"--shard {cfg.shard} under {p.launch.describe()}: the launch splits the run over its processes "
                   "itself; drop --shard, or run the shard without a launcher")  # fmt: skip
    usable = pf.model("model", cfg.model)
    for role in ("scorer", "judge", "grader"):
        pf.model(role, getattr(cfg, role))
    if usable:
        p.llm = pf.check(cfg.model, lambda: _client(cfg))
    max_tokens, p.max_tokens_source = _max_tokens(cfg, p.llm, pf)
    p.settings = pf.check("settings", lambda: _settings(cfg, max_tokens or 1, shard))
    if p.settings is not None:
        p.dataset = pf.check(
            f"--dataset {cfg.dataset}", lambda: load_eval_dataset(cfg.dataset, revision=cfg.revision, hub=cfg.hub)
        )
        if p.dataset is not None:
            pf.check("selection", lambda: _select(p))
    out = cfg.out
    if out is not None:
        pf.check("--out", lambda: writable(out))
    if p.launch is not None:
        n = p.launch.processes
        folder = f"shard-(r+1)-of-{n}"
        where = f"{out}.shards/{folder}" if out is not None else f"{cfg.runs}/<model>/<run id>-{folder}"
        pf.note(f"rank r (0..{n - 1}) generates shard r+1/{n} (every {_nth(n)} base question) into {where}; rank 0 "
                f"joins the shards into {out if out is not None else 'the run folder'} and scores it")  # fmt: skip


def _nth(n: int) -> str:
    """``2nd``, ``3rd``, ``4th``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _client(cfg: EvalPhrbenchConfig) -> LLM:
    from phr.llm import LLM

    llm = LLM(cfg.model, concurrency=cfg.concurrency, **cfg.llm_kwargs())
    llm.provider.purpose = "as the model under evaluation"
    return llm


def _settings(cfg: EvalPhrbenchConfig, max_tokens: int, shard: tuple[int, int] | None) -> RunSettings:
    """The generation settings of the run (run.json's ``config``; the run id is their hash)."""
    return RunSettings(
        model=cfg.model,
        dataset=cfg.dataset,
        dataset_revision=cfg.revision,
        conditions=list(check_conditions(cfg.conditions)),
        samples=cfg.samples,
        temperature=cfg.temperature,
        max_tokens=max_tokens,
        limit=cfg.limit,
        shard=list(shard) if shard else None,
    )


def _max_tokens(cfg: EvalPhrbenchConfig, llm: LLM | None, pf: Preflight) -> tuple[int | None, str]:
    """The output limit and where it came from: the option, the model's maximum, or the default."""
    if cfg.max_tokens != "model":
        return cfg.max_tokens, "--max-tokens" if "max_tokens" in cfg.model_fields_set else "default"
    from phr.eval.runner import model_max_output

    limit = (model_max_output(llm.provider) if llm is not None else None) or max_output_of(cfg.model)
    if limit is None:
        pf.problem(
            f"max_tokens 'model' ({'--preset ' + cfg.preset if cfg.preset else 'the config'}): the maximum output "
            f"length of {cfg.model} is not known (not reported by the provider, not in phr/llm/model_limits.toml): "
            "give --max-tokens, or add it to a TOML file in $PHR_MODEL_LIMITS"
        )
    return limit, "model"


def _select(p: EvalPhrbenchPlan) -> None:
    """The run's instances and its generation calls (per prompt, ``samples`` each), with their cached share."""
    from phr.eval.runner import run_requests, select_run

    assert p.settings is not None and p.dataset is not None
    p.instances = select_run(p.settings, p.dataset)
    requests = run_requests(p.settings, p.instances)
    p.preflight.note(f"{len(requests)} prompts x {p.settings.samples} samples, max_tokens {p.settings.max_tokens}")
    p.preflight.calls(p.settings.model, requests, provider=p.llm.provider if p.llm is not None else None)


def run(p: EvalPhrbenchPlan) -> EvalPhrbenchResult | None:
    """Generate the planned run into its folder, then score it (not a shard, nor with ``score: false``). Under a
    launcher each rank generates its shard and rank 0 joins and scores them (``_generate_launched``): the same
    files as one process; the other ranks return None."""
    from phr.eval.runner import generate_run

    cfg = p.config
    if p.settings is None or p.dataset is None or p.llm is None:
        raise PHRError("the plan of this run is incomplete (it has problems): nothing to run")
    rerun = p.rerun_command()
    record = {"config": cfg.record(), "max_tokens_source": p.max_tokens_source, "rerun": rerun}
    if p.launch is not None:
        record["launch"] = p.launch.record(shlex.split(cfg.rerun())[1:])
        folder = _generate_launched(p, record)
        if folder is None:
            return None
    else:
        folder = generate_run(
            p.settings, p.dataset, p.llm, instances=p.instances, out=cfg.out, root=cfg.runs, record=record
        )
    done = EvalPhrbenchResult(folder, rerun, launched=p.launch)
    if cfg.score and not p.settings.shard:
        from phr.eval.pipeline import score_run
        from phr.eval.scorers import ScoringRun

        # the generator's weights serve a same-model reference scorer (phr.eval.scorers.trajectory_engine)
        how = ScoringRun(cfg, generator=p.llm, llm_options=cfg.llm_kwargs())
        done.result, done.scores = score_run(
            folder.path, how, hub=cfg.hub, plots=cfg.plots, preset=cfg.preset, max_tokens_source=p.max_tokens_source
        )
    return done


def _generate_launched(p: EvalPhrbenchPlan, record: dict) -> Run | None:
    """Rank r of n generates shard r+1/n (every n-th base question; the folders of ``shard_folders``), the ranks
    wait for each other (a failed shard stops every rank, its message printed once), and rank 0 prints the call
    table of all ranks, joins the shards and writes the run (run.json: the launch and its rerun). None on the
    other ranks."""
    from phr.core.ranks import agree, current, gather, process_group
    from phr.eval.runner import default_run_dir, generate_run, join_shards, select_run, write_joined
    from phr.llm.batch import show_summary
    from phr.llm.summary import RunSummary

    assert p.settings is not None and p.dataset is not None and p.llm is not None and p.launch is not None
    cfg, ranks = p.config, current()
    settings = p.settings.model_copy(update={"shard": [ranks.rank + 1, p.launch.processes]})
    p.llm.progress, p.llm.show_summary = ranks.main, False  # rank 0's bar; one call table, of every rank
    folder, error = None, None
    with process_group():  # ended once every rank has the others' results: rank 0 joins and scores alone
        try:
            out = shard_folders(cfg.out, p.launch.processes)[ranks.rank] if cfg.out is not None else None
            instances = select_run(settings, p.dataset)
            folder = generate_run(
                settings, p.dataset, p.llm, instances=instances, out=out, root=cfg.runs, record=record
            )
        except Exception as e:  # noqa: BLE001  shared below: every rank stops, the failed one says why
            error = e
        agree(error)
        summaries, paths = zip(*gather((p.llm.last_summary, str(folder.path if folder else ""))))
    if not ranks.main:
        return None
    show_summary(RunSummary().merge_all(summaries))
    joined, log_rows = join_shards(paths)
    joined.meta = joined.meta.model_copy(update={"settings": record})  # the launch's, not a shard's
    final = cfg.out if cfg.out is not None else default_run_dir(cfg.runs, cfg.model, joined.meta.run_id, None)
    return write_joined(joined, log_rows, final)


def shard_folders(out: Path, n: int) -> list[Path]:
    """Where the ranks of a launch with ``--out OUT`` write their shards: ``OUT.shards/shard-i-of-n`` (without
    ``--out``, the shard folders of ``--shard i/n``: ``RUNS/<model>/<run id>-shard-i-of-n``)."""
    return [Path(f"{out}.shards") / f"shard-{i}-of-{n}" for i in range(1, n + 1)]
