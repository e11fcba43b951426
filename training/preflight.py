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


def _section(raw: dict, name: str) -> dict:
    value = raw.get(name)
    return value if isinstance(value, dict) else {}


def check_raw(raw: dict, source: str, pf: Preflight | None = None) -> Preflight:
    """Add a recipe's problems and plan to ``pf`` (a new one by default), from the recipe as read (no heavy
    imports): what it needs on disk (``prerequisite_problems``), the reward models' specs and keys, the extras
    its trainer section asks for; the plan (rows, steps, completions, judge calls)."""
    from phr.training.config import prerequisite_problems

    pf = pf or Preflight()
    for problem in prerequisite_problems(raw, source):
        pf.problem(problem)
    method, stage = raw.get("method"), raw.get("stage")
    reward, trainer, data = _section(raw, "reward"), _section(raw, "trainer"), _section(raw, "data")
    given = reward.get("settings")
    settings: dict = given if isinstance(given, dict) else {}
    if method == "grpo" and reward.get("name", "hr1") == "hr1":
        if not settings.get("judge"):
            pf.problem(f"{source}: reward.settings.judge is required by the hr1 reward")
        pf.model("reward.settings.judge", settings.get("judge"))
        from phr.training.rewards import settings_problems

        for problem in settings_problems(settings):
            pf.problem(f"{source}: {problem}")
        if stage == 2 and not settings.get("qa_model"):
            pf.problem(f"{source}: stage 2 needs reward.settings.qa_model (the QA model of R_halluc)")
        pf.model("reward.settings.qa_model", settings.get("qa_model"))
    if trainer.get("use_vllm"):
        vllm_problem = _vllm_problem()
        if vllm_problem:
            pf.problem(f"{source}: {vllm_problem}")
    if trainer.get("deepspeed") and importlib.util.find_spec("deepspeed") is None:
        pf.problem(f"{source}: trainer.deepspeed: the deepspeed extra is not installed")
    path = data.get("path")
    rows = _rows(Path(path)) if isinstance(path, str) and Path(path).is_dir() else None
    limit = data.get("limit")
    n = min(rows, limit) if rows is not None and limit else (rows if rows is not None else limit)
    steps, gens = trainer.get("max_steps"), trainer.get("num_generations")
    pf.note(f"{method} recipe {source}" + (f", stage {stage}" if stage else ""))
    pf.note(f"corpus rows: {n if n is not None else 'unknown'}; max_steps: {steps if steps else 'by epochs'}")
    if method == "grpo" and gens and n:
        epochs = trainer.get("num_train_epochs", 1)
        pf.note(f"completions: about {n * gens * epochs:,} ({n} prompts x {gens} generations x {epochs} epoch(s))")
        if settings.get("judge"):
            pf.note(f"judge calls: about {n * gens * epochs:,} consistency verdicts at most (cached ones are free)")
    return pf
