"""The preflight of a training recipe: what `train grpo|sft` checks before it loads a model or calls a judge.

Reward models (each spec resolves, its key is set: a hosted judge without its key would make every reward
missing), the corpus folder, the optional extras the trainer section asks for (vLLM in the range the installed
TRL supports, DeepSpeed), and the plan (rows, steps, generations, reward calls).
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

from phr.llm.preflight import Preflight
from phr.training.config import Recipe


def _vllm_problem() -> str | None:
    """None when vLLM is installed in a version the installed TRL supports, else why not (TRL's own words)."""
    if importlib.util.find_spec("vllm") is None:
        return "trainer.use_vllm: the vllm extra is not installed (pip install -e '.[vllm]')"
    from trl.import_utils import is_vllm_available

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ok = is_vllm_available()
    unsupported = [str(w.message) for w in seen if "supports vLLM" in str(w.message)]
    if unsupported:
        return f"trainer.use_vllm: {unsupported[0]}"
    return None if ok else "trainer.use_vllm: vllm is installed but cannot be imported"


def _rows(folder: Path) -> int | None:
    """The row count of a corpus folder's train split (parquet metadata only), or None when unknown."""
    files = sorted(folder.glob("**/train-*.parquet")) or sorted(folder.glob("**/*.parquet"))
    if not files:
        return None
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def check_recipe(recipe: Recipe, pf: Preflight | None = None) -> Preflight:
    """Add a recipe's problems and plan to ``pf`` (a new one by default) and return it."""
    pf = pf or Preflight()
    settings = dict(recipe.reward.settings) if recipe.reward else {}
    if recipe.method == "grpo" and recipe.reward is not None and recipe.reward.name == "hr1":
        if not settings.get("judge"):
            pf.problem(f"{recipe.source}: reward.settings.judge is required by the hr1 reward")
        pf.model("reward.settings.judge", settings.get("judge"))
        if recipe.stage == 2 and not settings.get("qa"):
            pf.problem(f"{recipe.source}: stage 2 needs reward.settings.qa (the QA model of R_halluc)")
        pf.model("reward.settings.qa", settings.get("qa"))
    rows = None
    if recipe.data.path:
        folder = Path(recipe.data.path)
        if not folder.is_dir():
            pf.problem(f"{recipe.source}: data.path {folder} is not a folder (build it with phr-publish build hr1-*)")
        else:
            rows = _rows(folder)
    trainer = recipe.trainer
    if trainer.get("use_vllm"):
        problem = _vllm_problem()
        if problem:
            pf.problem(f"{recipe.source}: {problem}")
    if trainer.get("deepspeed") and importlib.util.find_spec("deepspeed") is None:
        pf.problem(f"{recipe.source}: trainer.deepspeed: the deepspeed extra is not installed")
    if recipe.model.init_from and not Path(recipe.model.init_from).is_dir():
        pf.problem(f"{recipe.source}: model.init_from {recipe.model.init_from} is not a folder")
    limit = recipe.data.limit
    n = min(rows, limit) if rows is not None and limit else (rows if rows is not None else limit)
    steps = trainer.get("max_steps")
    gens = trainer.get("num_generations")
    pf.note(f"{recipe.method} recipe {recipe.source}" + (f", stage {recipe.stage}" if recipe.stage else ""))
    pf.note(f"corpus rows: {n if n is not None else 'unknown'}; max_steps: {steps if steps else 'by epochs'}")
    if recipe.method == "grpo" and gens and n:
        epochs = trainer.get("num_train_epochs", 1)
        pf.note(f"completions: about {n * gens * epochs:,} ({n} prompts x {gens} generations x {epochs} epoch(s))")
        if settings.get("judge"):
            pf.note(f"judge calls: about {n * gens * epochs:,} consistency verdicts at most (cached ones are free)")
    return pf
