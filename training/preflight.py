"""The preflight of a training recipe: what `train grpo|sft` checks before it loads a model or calls a judge.

Reward models (each spec resolves, its key is set: a hosted judge without its key would make every reward
missing), the corpus folder, the optional extras the trainer section asks for (vLLM in the range the installed
TRL supports, DeepSpeed), and the plan (rows, steps, generations, reward calls).
"""

from __future__ import annotations

import importlib.util
import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

from phr.config.types import eval_set_parts
from phr.core.ranks import current
from phr.hr1.corpora import MANIFEST
from phr.llm.preflight import Preflight


def _vllm_problem() -> str | None:
    """None when vLLM is installed in a version the installed TRL supports, else why not (TRL's own words)."""
    if importlib.util.find_spec("vllm") is None:
        return (
            "trainer.use_vllm: the vllm extra is not installed (on a GPU machine: pip install -c constraints.txt "
            "-e '.[vllm]'), or generate with transformers: --set trainer.use_vllm=false"
        )
    from trl.import_utils import is_vllm_available

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ok = is_vllm_available()
    unsupported = [str(w.message) for w in seen if "supports vLLM" in str(w.message)]
    if unsupported:
        return f"trainer.use_vllm: {unsupported[0]}"
    return None if ok else "trainer.use_vllm: vllm is installed but cannot be imported"


def _train_files(folder: Path) -> list[Path]:
    """A corpus folder's train-split parquet files (every parquet file when none is named train-*)."""
    return sorted(folder.glob("**/train-*.parquet")) or sorted(folder.glob("**/*.parquet"))


def _rows(folder: Path) -> int | None:
    """The row count of a corpus folder's train split (parquet metadata only), or None when unknown."""
    files = _train_files(folder)
    if not files:
        return None
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _section(raw: dict, name: str) -> dict:
    value = raw.get(name)
    return value if isinstance(value, dict) else {}


#: TRL's GRPOConfig defaults the plan needs, read without importing TRL (a test keeps them equal to TRL's)
TRL_DEFAULTS: dict[str, float] = {
    "num_generations": 8,
    "num_train_epochs": 3.0,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
}


def _trainer_value(trainer: dict, key: str) -> float:
    """A trainer setting as the recipe gives it, else TRL's default."""
    value = trainer.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else TRL_DEFAULTS[key]


def _per_step(trainer: dict) -> int:
    """Completions per optimizer step of one process: per_device_train_batch_size x gradient_accumulation_steps."""
    return int(
        _trainer_value(trainer, "per_device_train_batch_size") * _trainer_value(trainer, "gradient_accumulation_steps")
    )


def _completions(trainer: dict, rows: int | None) -> int | None:
    """The most completions a GRPO run samples (all processes of a launch together): the corpus's prompts x
    num_generations x epochs, capped by max_steps x the global batch (TRL counts completions)."""
    gens, epochs = _trainer_value(trainer, "num_generations"), _trainer_value(trainer, "num_train_epochs")
    by_rows = math.ceil(rows * gens * epochs) if rows else None
    steps, per_step = trainer.get("max_steps"), _per_step(trainer) * current().world  # the global batch
    if isinstance(steps, int) and steps > 0:
        return min(by_rows or steps * per_step, steps * per_step)
    return by_rows


def _reward_calls(pf: Preflight, settings: dict, stage: object, completions: int, corpus: Path | None) -> None:
    """The hr1 reward's calls, estimated (the paraphrases are written during training): one B.2 verdict per
    completion; in stage 2 also one QA answer and one B.3 grade each (upper bounds: no completion malformed or
    inconsistent, no re-ask). Prompts stand in by the corpus's questions, paraphrase = question."""
    from phr.hr1.pipeline import Judges, consistency_items, qa_requests
    from phr.hr1.settings import QADecoding
    from phr.llm.judge import JudgeItem
    from phr.training.rewards import RewardConfig

    questions = _questions(corpus) or ["What is the capital of France?"]
    texts = [questions[i % len(questions)] for i in range(completions)]
    defaults = RewardConfig(judge="none")
    judges = Judges(max_tokens=int(settings.get("judge_max_tokens", defaults.judge_max_tokens)))
    judge, qa = settings.get("judge"), settings.get("qa_model")
    items = consistency_items([(str(i), t, t) for i, t in enumerate(texts)])
    pf.calls(str(judge), judges.consistency.requests(items), estimated=True)
    if stage == 2 and qa:
        decoding = QADecoding(max_tokens=int(settings.get("qa_max_tokens", defaults.qa_max_tokens)))
        pf.calls(str(qa), qa_requests([(str(i), t) for i, t in enumerate(texts)], decoding), estimated=True)
        graded = [JudgeItem({"ground_truth": "x", "response": t}, tag=str(i)) for i, t in enumerate(texts)]
        pf.calls(str(judge), judges.factual.requests(graded), estimated=True)


def _questions(folder: Path | None) -> list[str]:
    """The ``question`` column of a corpus folder's parquet files ([] when there is none)."""
    if folder is None or not folder.is_dir():
        return []
    import pyarrow.parquet as pq

    out: list[str] = []
    for f in _train_files(folder):
        table = pq.read_table(f)
        if "question" in table.column_names:
            out += [str(q) for q in table.column("question").to_pylist() if q]
    return out


#: corpus presets built for the smoke model and the offline checks, not for training a real model
SMALL_PRESETS = ("mini", "smoke")


def corpus_preset(folder: Path) -> str | None:
    """The preset a corpus folder was built with (its manifest's ``preset``, else its build config's), or None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    config = manifest.get("config")
    preset = manifest.get("preset") or (config.get("preset") if isinstance(config, dict) else None)
    return str(preset) if preset else None


def corpus_mismatch(raw: dict) -> list[str]:
    """How the recipe's corpus (``data.path``) is smaller than the recipe asks for: a ``mini`` / ``smoke`` corpus
    under a recipe that trains a real model (not ``model.tiny``), fewer train rows than ``data.limit``. Empty when it
    fits, or when the folder is not there (``prerequisite_problems`` says so)."""
    data, model = _section(raw, "data"), _section(raw, "model")
    path = data.get("path")
    if not isinstance(path, str) or not Path(path).is_dir():
        return []
    folder, out = Path(path), []
    rows = _rows(folder)
    preset = corpus_preset(folder)
    trains = model.get("name_or_path")
    if preset in SMALL_PRESETS and model.get("tiny") is None and trains:
        out.append(
            f"data.path {path}: a '{preset}' corpus ({MANIFEST} preset; {rows if rows is not None else 'unknown'} "
            f"rows) for the smoke model, under a recipe that trains {trains}"
        )
    limit = data.get("limit")
    if isinstance(limit, int) and rows is not None and rows < limit:
        out.append(f"data.path {path}: {rows} train rows, fewer than the recipe's data.limit {limit}")
    return out


def _check_base_model(pf: Preflight, model: dict, source: str) -> None:
    """The model a recipe trains (``model.name_or_path``, unless stage 2 starts from ``init_from`` or the recipe
    builds the tiny smoke model): a local folder, in the Hugging Face cache, or served by the Hub now."""
    name = model.get("name_or_path")
    if not isinstance(name, str) or not name or model.get("tiny") is not None or model.get("init_from"):
        return
    from phr.llm.providers.hf_local import weights_problem

    revision = model.get("revision")
    missing = weights_problem(name, revision if isinstance(revision, str) else None)
    if missing:
        pf.problem(f"{source}: model.name_or_path {name}: {missing}")


def check_corpus_fit(pf: Preflight, raw: dict, source: str) -> None:
    """``corpus_mismatch`` as problems, each saying how to go on; with ``data.allow_smaller: true`` as warnings."""
    from phr.training.config import CORPUS_OF

    mismatch = corpus_mismatch(raw)
    if _section(raw, "data").get("allow_smaller") is True:
        for text in mismatch:
            pf.warn(f"{text} (data.allow_smaller: true; recorded in training_manifest.json)")
        return
    kind = CORPUS_OF.get(str(raw.get("method")), "hr1-grpo")
    for text in mismatch:
        pf.problem(
            f"{source}: {text}: build the corpus the recipe needs (`phr-publish build {kind} --preset paper "
            f'--source simplequestions=PATH ...`, docs/hr1.md "Corpora"), or pass --set data.allow_smaller=true '
            "to train on this one (recorded)"
        )


def screen_leakage(pf: Preflight, folder: Path, kind: str, eval_sets: Sequence[str] = ()) -> None:
    """The split-leakage screen of a training corpus (docs/hr1.md, "Split leakage"): with ``eval_sets``
    (NAME=PATH), its training rows are checked against those evaluation sets now, each overlap a problem; without,
    the screen its build recorded in manifest.json: a corpus built without it is a problem (one whose manifest does
    not say is noted)."""
    if eval_sets:
        from phr.builders.hr1_sources import load_hr1_source
        from phr.hr1.names import SOURCES
        from phr.validation.hr1_leakage import check_corpus_folder

        sets = {}
        for item in eval_sets:
            name, where = eval_set_parts(item)
            if name not in SOURCES or not where:
                pf.problem(f"--eval-set {item}: give NAME=PATH with NAME one of {', '.join(SOURCES)}")
                continue
            loaded = pf.check(f"--eval-set {item}", lambda: load_hr1_source(name, where))
            if loaded is not None:
                sets[name] = [(q.id, q.question) for q in loaded.questions]
        if not sets:
            return
        report = check_corpus_folder(folder, kind, sets)
        if report.ok:
            pf.note(f"split-leakage screen: no training row of {folder} overlaps {', '.join(sets)}")
            return
        found = report.rejections
        shown = "; ".join(f"{r.row_id}: {r.reason}" for r in found[:3]) + (" ..." if len(found) > 3 else "")
        pf.problem(
            f"data.path {folder}: split leakage: {len(found)} training row(s) overlap {', '.join(sets)}: {shown}"
        )
        return
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pf.note(f"split-leakage screen: {folder} has no readable {MANIFEST}; pass --eval-set NAME=PATH to screen it")
        return
    if "leakage_checked" not in manifest:
        pf.note(f"split-leakage screen: not recorded in {folder}/{MANIFEST}; pass --eval-set NAME=PATH to screen it")
        return
    if not manifest["leakage_checked"]:
        pf.problem(
            f"data.path {folder}: its {MANIFEST} says the corpus was built without the split-leakage screen: "
            "pass --eval-set NAME=PATH to screen it against the evaluation sets, or rebuild it with --eval-set"
        )
        return
    dropped = len(manifest.get("dropped_for_leakage") or [])
    against = ", ".join(manifest.get("eval_sets") or []) or "no set named"
    pf.note(f"split-leakage screen: passed when {folder} was built (against {against}; {dropped} row(s) dropped)")


def check_raw(raw: dict, source: str, pf: Preflight | None = None, eval_sets: Sequence[str] = ()) -> Preflight:
    """Add a recipe's problems and plan to ``pf`` (a new one by default), from the recipe as read (no heavy
    imports): what it needs on disk (``prerequisite_problems``), the split-leakage screen of its corpus
    (``screen_leakage`` with ``eval_sets``), the reward models' specs and keys, the extras its trainer section
    asks for; the plan (rows, steps, completions, judge calls)."""
    from phr.training.config import CORPUS_OF, prerequisite_problems

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
    check_corpus_fit(pf, raw, source)
    _check_base_model(pf, _section(raw, "model"), source)
    path = data.get("path")
    rows = _rows(Path(path)) if isinstance(path, str) and Path(path).is_dir() else None
    limit = data.get("limit")
    n = min(rows, limit) if rows is not None and limit else (rows if rows is not None else limit)
    steps = trainer.get("max_steps")
    pf.note(f"{method} recipe {source}" + (f", stage {stage}" if stage else ""))
    pf.note(f"corpus rows: {n if n is not None else 'unknown'}; max_steps: {steps if steps else 'by epochs'}")
    completions = _completions(trainer, n) if method == "grpo" else None
    if completions:
        gens, epochs = int(_trainer_value(trainer, "num_generations")), _trainer_value(trainer, "num_train_epochs")
        per_step, processes = _per_step(trainer) * current().world, current().world
        pf.note(
            f"completions: at most {completions:,} ({gens} generations per prompt, {epochs:g} epoch(s)), "
            f"{-(-completions // per_step):,} optimizer step(s) of {per_step} completions (the global batch: "
            + (f"{processes} processes x {per_step // processes})" if processes > 1 else "one process)")
        )
        if reward.get("name", "hr1") == "hr1" and not pf.problems:
            _reward_calls(pf, settings, stage, completions, Path(path) if isinstance(path, str) else None)
    if isinstance(path, str) and Path(path).is_dir():
        screen_leakage(pf, Path(path), CORPUS_OF.get(str(method), "hr1-grpo"), eval_sets)
    return pf
