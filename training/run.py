"""What GRPO and SFT runs share: the corpus, the starting model, the output folder and resume rules, the final
checkpoint (weights + manifest + curves + card, written atomically) and the run summary.

Output layout under ``trainer.output_dir``::

    tiny-base/        the CPU smoke model (recipes with model.tiny), built once per run folder
    checkpoint-N/     TRL's checkpoints, each with training_manifest.json, curves.{json,png} and README.md;
                      complete once TRL wrote trainer_state.json (its last file): ``--resume`` removes an
                      incomplete one (a run killed while saving) and continues from the last complete one
    final/            the trained model (or LoRA adapter) with the same three files
    merged/           LoRA runs with merge: the adapter merged into a full model

On several ranks (``accelerate launch`` / ``torchrun``, docs/scaling.md) rank 0 alone builds the smoke model,
removes incomplete checkpoints, writes the manifest, curves and card and moves ``final/`` into place; every rank
takes part in TRL's saves (``save_model`` gathers sharded weights; each rank writes its RNG state, and rank 0
writes ``trainer_state.json`` only once every rank has written its own: ``RanksSave``), so a checkpoint with a
readable ``trainer_state.json`` is complete for all ranks.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phr.core.errors import UsageError
from phr.core.fs import atomic_dir, replace_path
from phr.core.ranks import barrier, decided_alike, is_main
from phr.core.threads import use_cpu_threads
from phr.training.checkpoint import (
    CURVES_JSON,
    CURVES_PNG,
    MANIFEST,
    Artifacts,
    corpus_provenance,
    git_state,
    start_checkpoint,
    trainer_settings,
    versions,
)
from phr.training.config import Recipe, RecipeError, prerequisite_problems
from phr.training.tiny import TinySettings, build_tiny_model

if TYPE_CHECKING:  # pragma: no cover - the training libraries are imported where a run starts (heavy)
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PreTrainedModel

log = logging.getLogger("phr.training")

FINAL = "final"
MERGED = "merged"
TINY_BASE = "tiny-base"
TRAINER_STATE = "trainer_state.json"  # what TRL writes last into a checkpoint (transformers Trainer._save_checkpoint)
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
ARTIFACT_FILES = (MANIFEST, CURVES_JSON, CURVES_PNG, "README.md")  # what ArtifactsCallback adds to a checkpoint


@dataclass
class RunResult:
    """What a finished run reports (the CLI prints ``lines()``)."""

    method: str
    output_dir: Path
    final_dir: Path
    global_step: int
    metrics: dict = field(default_factory=dict)  # last logged value of each curve metric, means over the run
    reward_stats: dict | None = None
    merged_dir: Path | None = None
    resumed_from: str | None = None
    rerun: str | None = None  # the command that repeats the run (under a launcher: the launch)

    def lines(self) -> list[str]:
        out = [
            f"{self.method} finished: {self.global_step} steps"
            + (f" (resumed from {self.resumed_from})" if self.resumed_from else "")
        ]
        for key, value in self.metrics.items():
            out.append(f"  {key}: {value:.4f}")
        if self.reward_stats:
            out.append("  reward stats: " + ", ".join(f"{k} {v}" for k, v in self.reward_stats.items()))
        out.append(f"final model: {self.final_dir}")
        if self.merged_dir:
            out.append(f"merged model: {self.merged_dir}")
        if self.rerun:
            out.append(f"rerun: {self.rerun}")
        return out


def load_corpus(recipe: Recipe) -> tuple[Dataset, dict]:
    """The corpus as a ``datasets.Dataset`` (first ``limit`` rows) and its provenance for the manifest."""
    from datasets import load_dataset

    d = recipe.data
    if d.path:
        folder = Path(d.path).expanduser()
        if not folder.is_dir():
            raise UsageError(f"{recipe.source}: data.path {folder} is not a folder")
        ds = load_dataset(str(folder), split=d.split)
        provenance = corpus_provenance(folder)
    else:
        ds = load_dataset(d.repo_id, revision=d.revision, split=d.split)
        provenance = {"repo_id": d.repo_id, "revision": d.revision}
    if d.limit is not None:
        ds = ds.select(range(min(d.limit, len(ds))))
    return ds, {**provenance, "split": d.split, "rows": len(ds)}


def corpus_texts(ds: Dataset) -> list[str]:
    """Every text of a GRPO / SFT corpus (for the smoke tokenizer)."""
    col = "prompt" if "prompt" in ds.column_names else "messages"
    texts = [m["content"] for row in ds[col] for m in row]
    for extra in ("question", "answer"):
        if extra in ds.column_names:
            texts += [t for t in ds[extra] if t]
    return texts


def start_of(recipe: Recipe, output_dir: Path) -> str:
    """The folder or id the policy is loaded from (nothing built or checked: ``start_model`` does that)."""
    m = recipe.model
    if m.init_from:
        return str(Path(m.init_from).expanduser())
    if m.tiny is not None:
        return str(output_dir / TINY_BASE)
    return m.name_or_path  # type: ignore[return-value]


def cpu_threads(recipe: Recipe, model: Any) -> None:
    """A run on the CPU (no GPU, or ``trainer.use_cpu``) uses no more torch threads than its model (the trainer's
    policy) can use and the machine has idle (phr.core.threads: ``OMP_NUM_THREADS`` and the launch respected)."""
    import torch

    if recipe.trainer.get("use_cpu") or not torch.cuda.is_available():
        use_cpu_threads(model.num_parameters())


def start_model(recipe: Recipe, ds: Dataset, output_dir: Path) -> tuple[str, str]:
    """(folder or id the policy is loaded from, base model name for the card). On several ranks rank 0 builds the
    smoke model while the others wait (the process group must be up: ``launch_record``)."""
    m = recipe.model
    start = start_of(recipe, output_dir)
    if m.init_from:
        src = Path(start)
        if not (src / "config.json").is_file():
            raise UsageError(f"{recipe.source}: model.init_from {src} is not a model folder (no config.json)")
        start_checkpoint(src, allow_missing_manifest=m.init_without_manifest)  # refuses an untracked start
        base = _base_of(src) or m.name_or_path or str(src)
        return start, base
    if m.tiny is not None:
        dest = Path(start)
        if is_main() and not (dest / "config.json").is_file():
            build_tiny_model(corpus_texts(ds), dest, TinySettings(**m.tiny))
        barrier()
        return start, "phr/tiny-random-llama"
    return start, start


def _base_of(checkpoint: Path) -> str | None:
    import json

    p = checkpoint / "phr_training.json"
    return json.loads(p.read_text(encoding="utf-8")).get("base_model") if p.is_file() else None


def checkpoint_problem(folder: Path) -> str | None:
    """Why ``checkpoint-N`` cannot be resumed from (None: it is complete). TRL writes the weights, optimizer,
    scheduler and RNG states first and ``trainer_state.json`` last, so a readable ``trainer_state.json`` whose
    ``global_step`` is N marks a finished save."""
    state = folder / TRAINER_STATE
    if not state.is_file():
        return f"no {TRAINER_STATE}"
    try:
        step = json.loads(state.read_text(encoding="utf-8"))["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{TRAINER_STATE} is cut short"
    m = CHECKPOINT.match(folder.name)
    if m is None:
        return "not a checkpoint-N folder"
    return None if step == int(m[1]) else f"{TRAINER_STATE} is for step {step}"


def checkpoints(output_dir: Path) -> list[tuple[int, Path, str | None]]:
    """The ``checkpoint-N`` folders of a run folder by step: (N, folder, why it is incomplete or None)."""
    if not output_dir.is_dir():
        return []
    found = [(int(m[1]), p) for p in output_dir.iterdir() if (m := CHECKPOINT.match(p.name)) and p.is_dir()]
    return [(n, p, checkpoint_problem(p)) for n, p in sorted(found)]


def resume_point(output_dir: Path, resume: bool) -> str | None:
    """The checkpoint to resume from (``--resume``), refusing to mix a fresh run into an old run folder. With
    ``--resume``, incomplete checkpoints (a run killed while saving) are removed and the run continues from the
    last complete one, or from the start when there is none; both are said (warnings of ``phr.training``)."""
    found = checkpoints(output_dir)
    if not resume:
        if found:
            raise UsageError(
                f"{output_dir} already holds {found[-1][1].name}: pass resume=True to continue it, or choose another "
                "trainer.output_dir"
            )
        return None
    if not found:
        raise UsageError(f"--resume: no checkpoint-N folder in {output_dir} to resume from")
    for _n, folder, why in found:
        if why is not None and is_main():  # the other ranks decide alike without it (it is not complete)
            shutil.rmtree(folder)
            log.warning("%s is incomplete (%s: the run stopped while saving it): removed", folder, why)
    complete = [folder for _n, folder, why in found if why is None]
    if not complete:
        log.warning("--resume: no complete checkpoint in %s: training starts from step 0", output_dir)
        return None
    log.warning("resuming from %s", complete[-1])
    return str(complete[-1])


def repair_artifacts(arts: Artifacts, checkpoint: str | None, output_dir: Path) -> None:
    """Write the manifest, curves and card into the checkpoint a run resumes from when the run was killed after
    TRL's save but before they were written (``ArtifactsCallback``)."""
    if not is_main() or checkpoint is None or all((Path(checkpoint) / name).is_file() for name in ARTIFACT_FILES):
        return
    state = json.loads((Path(checkpoint) / TRAINER_STATE).read_text(encoding="utf-8"))
    folder = Path(checkpoint)
    arts.write(folder, state["log_history"], state["global_step"], name=f"{output_dir.name}-{folder.name}")


@contextmanager
def run_folder(output_dir: Path) -> Iterator[None]:
    """Nothing half-written: when a run fails before its first checkpoint, the run folder it created (holding at
    most the smoke model) is removed."""
    created = not output_dir.exists()
    try:
        yield
    except BaseException:
        if created and is_main() and output_dir.is_dir() and not checkpoints(output_dir):
            shutil.rmtree(output_dir, ignore_errors=True)
        raise


def check_prerequisites(recipe: Recipe) -> None:
    """The corpus folder and the stage-1 checkpoint exist (``RecipeError`` naming the command that makes them), and
    the corpus is not smaller than the recipe asks for unless ``data.allow_smaller``."""
    from phr.training.preflight import corpus_mismatch

    raw = recipe.as_dict()
    problems = prerequisite_problems(raw, recipe.source)
    if not recipe.data.allow_smaller:
        problems += [
            f"{recipe.source}: {text} (pass --set data.allow_smaller=true to train on it)"
            for text in corpus_mismatch(raw)
        ]
    if problems:
        raise RecipeError("\n".join(problems))


def launch_record(args: Any, rerun: str | None = None) -> dict:  # transformers' TrainingArguments (TRL's config)
    """How the run was launched, for the manifest: the world size, accelerate's distributed type and backend, the
    accelerate settings the launcher passed (``ACCELERATE_*``), the launcher's ranks layout, and under a launcher
    its name and the launch command that repeats the run (``rerun``: phr.core.launch). Starts the process
    group (transformers' ``TrainingArguments`` set-up, as the trainer would) so that the ranks can wait for
    each other from here on."""
    args.device  # noqa: B018  transformers' device set-up: accelerate's PartialState, the process group on ranks
    state = getattr(args, "distributed_state", None)
    kind = getattr(state, "distributed_type", None)
    env = os.environ
    return {
        "world_size": args.world_size,
        "distributed_type": getattr(kind, "value", str(kind) if kind is not None else "NO"),
        "backend": getattr(state, "backend", None),
        "accelerate": {k: env[k] for k in sorted(env) if k.startswith("ACCELERATE_")},
        "launcher": {k: env[k] for k in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "NNODES", "MASTER_ADDR") if k in env},
        **({"command": rerun} if rerun is not None and args.world_size > 1 else {}),
    }


@dataclass(frozen=True)
class _Inputs:
    """What a run's manifest and card describe besides its recipe (see :func:`artifacts`)."""

    base_model: str
    start_from: str
    data: dict
    reward: dict | None
    args: Any  # transformers' TrainingArguments (TRL's GRPOConfig / SFTConfig)
    launch: dict | None


def _manifest(recipe: Recipe, run: _Inputs) -> dict:
    """The run's ``training_manifest.json``: the recipe, the model and checkpoint started from, the reference
    policy, data, reward, trainer settings (with the objective settings left to TRL's defaults, which are also
    logged), seeds, launch, package versions and git state."""
    args = run.args
    from phr.training.objective import unpinned
    from phr.training.preflight import corpus_mismatch

    git = git_state()
    init = (
        start_checkpoint(
            Path(recipe.model.init_from).expanduser(), allow_missing_manifest=recipe.model.init_without_manifest
        )
        if recipe.model.init_from
        else None
    )
    defaults = unpinned(recipe.method, recipe.trainer)
    if defaults:
        log.warning(
            "%s leaves %d objective setting(s) to TRL's defaults (recorded as objective_defaults): %s",
            recipe.source,
            len(defaults),
            ", ".join(defaults),
        )
    return {
        "schema_version": 1,
        "method": recipe.method,
        "stage": recipe.stage,
        "recipe": recipe.as_dict(),
        **({"smaller_corpus": corpus_mismatch(recipe.as_dict())} if recipe.data.allow_smaller else {}),
        "base_model": run.base_model,
        "start_from": run.start_from,
        "start_checkpoint": init,  # init_from: path, manifest SHA-256, step, stage of the checkpoint started from
        "reference_policy": (
            {
                "setting": recipe.reference_policy,
                "model": run.start_from,
                "revision": (args.model_init_kwargs or {}).get("revision"),
                "beta": args.beta,
            }
            if recipe.method == "grpo"
            else None
        ),
        "data": run.data,
        "reward": run.reward,
        "trainer": trainer_settings(args),
        "objective_defaults": defaults,  # objective settings left to TRL (docs/training.md, "Objective settings")
        "seeds": {"seed": args.seed, "data_seed": args.data_seed},
        "launch": run.launch if run.launch is not None else launch_record(args),  # world size, accelerate config
        "versions": versions(),
        "git_commit": git["commit"],
        "git": git,
    }


def _card_description(recipe: Recipe, run: _Inputs) -> str:
    """The model card's description: what was trained on what, intended use, limitations, and notes for the
    smoke-test model and the smoke reward stand-in."""
    base_model, start_from, data, reward = run.base_model, run.start_from, run.data, run.reward
    what = "GRPO stage %s" % recipe.stage if recipe.method == "grpo" else "LoRA SFT" if recipe.lora else "SFT"
    corpus = (
        data.get("repo_id")
        or f"the local corpus folder `{Path(data['path']).name}` (sha256 {data['folder_sha256'][:16]})"
    )
    description = "\n".join(
        [
            f"{what} of `{base_model}` (started from `{start_from}`) on {corpus}, {data['rows']} rows, with TRL.",
            "",
            "## Intended use",
            "",
            (
                "A question paraphraser for robustness testing (Hallucination-R1: paraphrases that keep the "
                "meaning of a factual question and expose answer instability of a QA model)."
                if recipe.method == "grpo"
                else "A QA model fine-tuned to answer paraphrased factual questions (Hallucination-R1, §7)."
            ),
            "",
            "## Limitations",
            "",
            (
                "Trained on SimpleQuestions-style single-fact questions; not evaluated outside that form. The "
                "rewards depend on LLM judges, whose errors the model can learn. Full settings, seeds and package "
                "versions: `training_manifest.json`; reward/loss curves: `curves.png` / `curves.json`."
                if recipe.method == "grpo"
                else "Trained on SimpleQuestions-style single-fact questions paired with their gold answers; not "
                "evaluated outside that form. Full settings, seeds and package versions: `training_manifest.json`; "
                "loss curves: `curves.png` / `curves.json`."
            ),
        ]
    )
    if base_model == "phr/tiny-random-llama":
        description += "\n\n**Smoke-test model**: a tiny random Llama built in-process; its outputs are meaningless."
    if any("stand_in" in f for f in (reward or {}).get("functions", [])):
        description += (
            "\n\n**Smoke reward stand-in**: trained with `smoke_consistency_stand_in` (MiniLM cosine of question and "
            'paraphrase, no judge), not the paper\'s reward (docs/training.md, "Offline training smoke").'
        )
    return description


def artifacts(
    recipe: Recipe,
    *,
    base_model: str,
    start_from: str,
    data: dict,
    reward: dict | None,
    args: Any,  # transformers' TrainingArguments (TRL's GRPOConfig / SFTConfig)
    launch: dict | None = None,
) -> Artifacts:
    """What a run writes next to its model: the manifest, and the model card's datasets, description, method,
    local corpus folders and LoRA settings."""
    run = _Inputs(base_model, start_from, data, reward, args, launch)
    manifest = _manifest(recipe, run)
    datasets = [(data["repo_id"], data.get("revision"))] if data.get("repo_id") else []
    local = (
        [{k: data.get(k) for k in ("name", "manifest_sha256", "folder_sha256", "split", "rows")}]
        if data.get("path")
        else []
    )
    description = _card_description(recipe, run)
    return Artifacts(
        manifest=manifest,
        base_model=base_model,
        datasets=datasets,
        description=description,
        method=recipe.method,
        local_datasets=local,
        lora=dict(recipe.as_dict()["lora"]) if recipe.lora else None,
    )


def save_final(trainer: Any, arts: Artifacts, output_dir: Path) -> Path:  # trainer: TRL's
    """Write the trained model (or adapter) with its manifest, curves and card to ``output_dir/final``. On several
    ranks every rank takes part in ``save_model`` (sharded weights are gathered) into one agreed folder, and rank 0
    alone adds the tokenizer and the artifacts and moves it into place."""
    dest = output_dir / FINAL
    if trainer.args.world_size > 1:
        return _save_final_ranks(trainer, arts, output_dir, dest)
    with atomic_dir(dest) as tmp:
        _fill_final(trainer, arts, output_dir, tmp, dest)
    return dest


def _fill_final(trainer: Any, arts: Artifacts, output_dir: Path, tmp: Path, dest: Path) -> None:
    trainer.save_model(str(tmp))
    if trainer.processing_class is not None:
        trainer.processing_class.save_pretrained(str(tmp))
    arts.write(tmp, trainer.state.log_history, trainer.state.global_step, name=output_dir.name, location=dest)


def _save_final_ranks(trainer: Any, arts: Artifacts, output_dir: Path, dest: Path) -> Path:
    tmp = output_dir / f".{FINAL}.ranks"  # one name on every rank (atomic_dir's is random)
    main = trainer.accelerator.is_main_process
    if main:
        shutil.rmtree(tmp, ignore_errors=True)  # left by a killed run
        tmp.mkdir(parents=True)
    trainer.accelerator.wait_for_everyone()
    trainer.save_model(str(tmp))  # every rank: rank 0 writes
    trainer.accelerator.wait_for_everyone()
    if main:
        if trainer.processing_class is not None:
            trainer.processing_class.save_pretrained(str(tmp))
        arts.write(tmp, trainer.state.log_history, trainer.state.global_step, name=output_dir.name, location=dest)
        replace_path(tmp, dest)
    trainer.accelerator.wait_for_everyone()
    return dest


class RanksSave:
    """Mixin for TRL's trainers on several ranks: after each rank wrote its RNG state into ``checkpoint-N``, the
    ranks wait for each other, so rank 0's ``trainer_state.json`` (written next, and last) marks a checkpoint
    complete for every rank (``checkpoint_problem``); without it a kill could leave a checkpoint that looks
    complete but lacks another rank's RNG state."""

    accelerator: Any  # the trainer's (accelerate's Accelerator)

    def _save_rng_state(self, output_dir: str) -> None:
        super()._save_rng_state(output_dir)  # type: ignore[misc]  # the trainer's (a mixin)
        self.accelerator.wait_for_everyone()


def summary_metrics(log_history: list[dict]) -> dict:
    """Means over the run of the reward / loss entries (``reward``, ``rewards/<f>/mean``, ``loss``, ``kl``)."""
    sums: dict[str, list[float]] = {}
    for entry in log_history:
        for key, value in entry.items():
            if key in ("reward", "loss", "kl") or (key.startswith("rewards/") and key.endswith("/mean")):
                if isinstance(value, (int, float)):
                    sums.setdefault(key, []).append(float(value))
    return {f"mean {k}": sum(v) / len(v) for k, v in sums.items()}


def prepare_output(recipe: Recipe, resume: bool) -> tuple[Path, str | None]:
    """The run folder (not created here: the trainer's first write creates it) and the checkpoint to resume
    from; the recipe's prerequisites are checked first."""
    with decided_alike():  # the same files on every rank: rank 0 prints a refusal
        check_prerequisites(recipe)
        output_dir = Path(recipe.trainer["output_dir"]).expanduser().resolve()
        return output_dir, resume_point(output_dir, resume)


def load_model(recipe: Recipe, start: str) -> PreTrainedModel:
    """The policy, loaded from ``start`` (the recipe's revision applies to its hub id only)."""
    from transformers import AutoModelForCausalLM

    revision = recipe.model.revision if start == recipe.model.name_or_path else None
    return AutoModelForCausalLM.from_pretrained(start, revision=revision, dtype=recipe.model.dtype)


def model_init_kwargs(recipe: Recipe, start: str) -> dict:
    """TRL's ``model_init_kwargs`` for the policy loaded from ``start``: the recipe's own, plus ``dtype`` and the
    ``revision`` of a hub id. Given the model *name*, GRPOTrainer / SFTTrainer load the policy, its tokenizer and
    (GRPO, beta > 0, no LoRA) the KL reference model with these keywords: all from the same revision. (Given a
    model *object*, TRL 1.16 loads the tokenizer and the reference from ``config._name_or_path`` without the
    revision, i.e. from the default branch.)"""
    kw = dict(recipe.trainer.get("model_init_kwargs") or {})
    kw.setdefault("dtype", recipe.model.dtype)
    if start == recipe.model.name_or_path and recipe.model.revision:
        kw["revision"] = recipe.model.revision
    return kw


def peft_config(recipe: Recipe) -> LoraConfig | None:
    """peft ``LoraConfig`` of the recipe's ``lora`` section (None: full fine-tuning)."""
    if recipe.lora is None:
        return None
    from peft import LoraConfig

    lo = recipe.lora
    return LoraConfig(
        r=lo.r,
        lora_alpha=lo.lora_alpha,
        lora_dropout=lo.lora_dropout,
        target_modules=lo.target_modules,
        task_type="CAUSAL_LM",
    )
