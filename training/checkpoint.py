"""What a training run writes beside the weights: ``training_manifest.json``, the curves (``curves.json`` +
``curves.png``, raw and smoothed) and the model card (``README.md`` via ``phr.cards.model_card``).

Each ``checkpoint-N`` folder TRL saves gets the three (``ArtifactsCallback.on_save``); the final model folder too.

Smoothing (like the paper's Figures 4-5, which show a raw and a smoothed reward curve): an exponential moving
average ``s_t = w * s_(t-1) + (1 - w) * x_t`` with ``s_0 = x_0`` over the logged points in step order, weight
``w = EMA_WEIGHT`` (0.9). The raw values are kept beside it.
"""

from __future__ import annotations

import json
import platform
import subprocess
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from phr.cards.model_card import write_model_card
from phr.cards.model_usage import usage_section
from phr.core.errors import UsageError
from phr.core.fs import atomic_write, json_text, sha256_file
from phr.training.objective import OBJECTIVE

if TYPE_CHECKING:  # pragma: no cover - imported where a bar is made
    from phr.core.progress import ProgressDisplay

MANIFEST = "training_manifest.json"
CURVES_JSON = "curves.json"
CURVES_PNG = "curves.png"
EMA_WEIGHT = 0.9
# Curves drawn when logged: GRPO's reward (and per-function means), KL, completion length; the loss for both.
CURVE_KEYS = ("reward", "reward_std", "kl", "loss", "completions/mean_length", "entropy", "mean_token_accuracy")
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers", "phr-toolkit")


def ema(values: Sequence[float], weight: float = EMA_WEIGHT) -> list[float]:
    """Exponential moving average, first value as the start."""
    out: list[float] = []
    for v in values:
        out.append(v if not out else weight * out[-1] + (1 - weight) * v)
    return out


def curves(log_history: list[dict], weight: float = EMA_WEIGHT) -> dict:
    """``{metric: {"step": [...], "raw": [...], "smoothed": [...]}}`` from ``trainer.state.log_history``."""
    series: dict[str, list[tuple[int, float]]] = {}
    for entry in log_history:
        step = entry.get("step")
        if step is None:
            continue
        for key, value in entry.items():
            wanted = key in CURVE_KEYS or (key.startswith("rewards/") and key.endswith("/mean"))
            if wanted and isinstance(value, (int, float)):
                series.setdefault(key, []).append((int(step), float(value)))
    out = {}
    for key, points in sorted(series.items()):
        steps, raw = [p[0] for p in points], [p[1] for p in points]
        out[key] = {"step": steps, "raw": raw, "smoothed": ema(raw, weight)}
    return {"ema_weight": weight, "metrics": out}


def write_curves(folder: Path, log_history: list[dict]) -> dict:
    """``curves.json`` and ``curves.png`` (one panel per metric: raw thin, smoothed thick)."""
    from phr.core.figures import save_png, subplots

    data = curves(log_history)
    atomic_write(folder / CURVES_JSON, json_text(data))
    metrics = data["metrics"]
    n = max(1, len(metrics))
    fig, axes = subplots(n, 1, figsize=(6, 2.2 * n), squeeze=False)
    for ax, (key, c) in zip(axes[:, 0], metrics.items()):
        ax.plot(c["step"], c["raw"], alpha=0.35, linewidth=1, label="raw")
        ax.plot(c["step"], c["smoothed"], linewidth=2, label=f"EMA {data['ema_weight']}")
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.legend(fontsize=7)
    if not metrics:
        axes[0, 0].text(0.5, 0.5, "nothing logged yet", ha="center")
    fig.tight_layout()
    tmp = folder / f".{CURVES_PNG}.tmp"
    save_png(fig, tmp, dpi=100)
    tmp.replace(folder / CURVES_PNG)
    return data


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = None
    return out


def git_commit(start: Path | None = None) -> str | None:
    """The commit of the git checkout holding this code (None outside git)."""
    here = start or Path(__file__).resolve().parent
    try:
        res = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (res.stdout.strip() or None) if res.returncode == 0 else None


def git_state(start: Path | None = None) -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` of the git checkout holding this code. ``dirty``: a
    tracked file differs from the commit (``git status --porcelain --untracked-files=no``); None outside git."""
    here = start or Path(__file__).resolve().parent
    commit = git_commit(here)
    if commit is None:
        return {"commit": None, "dirty": None}
    try:
        res = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": commit, "dirty": None}
    return {"commit": commit, "dirty": bool(res.stdout.strip()) if res.returncode == 0 else None}


def start_checkpoint(folder: Path, *, allow_missing_manifest: bool = False) -> dict | None:
    """What a run records about the checkpoint it starts from (stage 2: the stage-1 model): its path, the
    SHA-256 of its ``training_manifest.json``, its step, stage, base model and code commit. A folder without a
    manifest is refused unless ``allow_missing_manifest`` (recipe ``model.init_without_manifest: true``); then
    the record says so (``manifest_sha256`` None)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        if not allow_missing_manifest:
            raise UsageError(
                f"model.init_from {folder}: no {MANIFEST}, so the run could not say which checkpoint it started "
                "from (point at a final/ or checkpoint-N/ folder of a training run, or set "
                "model.init_without_manifest: true, e.g. --set model.init_without_manifest=true)"
            )
        return {"path": str(folder.resolve()), "manifest_sha256": None, "global_step": None, "untracked": True}
    try:
        m = json.loads(manifest.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UsageError(f"model.init_from {folder}: {MANIFEST} is not valid JSON: {e}") from None
    git = m.get("git") or {"commit": m.get("git_commit")}
    return {
        "path": str(folder.resolve()),
        "manifest_sha256": sha256_file(manifest),
        "global_step": m.get("global_step"),
        "method": m.get("method"),
        "stage": m.get("stage"),
        "base_model": m.get("base_model"),
        "git": git,
    }


def corpus_provenance(folder: Path) -> dict:
    """A local corpus folder as the manifest and card name it: folder name, path, SHA-256 of its
    ``manifest.json`` (None when it has none) and of its data files + manifest (``folder_hash``)."""
    manifest = folder / "manifest.json"
    return {
        "name": folder.resolve().name,
        "path": str(folder.resolve()),
        "manifest_sha256": sha256_file(manifest) if manifest.is_file() else None,
        "folder_sha256": folder_hash(folder),
    }


def folder_hash(folder: Path) -> str:
    """SHA-256 over the sorted ``(relative path, file SHA-256)`` of a corpus folder's data files and manifest."""
    import hashlib

    h = hashlib.sha256()
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and (p.suffix == ".parquet" or p.name == "manifest.json")
    )
    for p in files:
        h.update(f"{p.relative_to(folder).as_posix()}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def trainer_settings(args: TrainingArguments) -> dict:
    """The TRL config as JSON-safe values (``to_dict`` with non-JSON values as strings)."""
    return json.loads(json.dumps(args.to_dict(), default=str))


class Artifacts:
    """The manifest, curves and card of one run; ``write(folder, ...)`` fills a checkpoint folder."""

    def __init__(
        self,
        *,
        manifest: dict,
        base_model: str,
        datasets: list,
        description: str,
        method: str,
        local_datasets: list[dict] | None = None,
        lora: dict | None = None,
    ):
        self.manifest = manifest
        self.base_model = base_model
        self.datasets = datasets
        self.description = description
        self.method = method
        self.local_datasets = local_datasets or []
        self.lora = lora

    def write(
        self,
        folder: Path,
        log_history: list[dict],
        global_step: int,
        *,
        name: str | None = None,
        location: Path | None = None,
    ) -> None:
        """Fill ``folder``; ``name``: the model name on the card (default: the folder's name); ``location``: where
        the folder will live (the usage snippet loads it from there; default: ``folder``)."""
        folder = Path(folder)
        manifest = {**self.manifest, "global_step": global_step}
        atomic_write(folder / MANIFEST, json_text(manifest))
        write_curves(folder, log_history)
        hp = {k: manifest["trainer"].get(k) for k in HYPERPARAMETERS[self.method] if k in manifest["trainer"]}
        adapter = (folder / "adapter_config.json").is_file()
        write_model_card(
            folder,
            base_model=self.base_model,
            datasets=self.datasets,
            local_datasets=self.local_datasets,
            hyperparameters={**hp, "global_step": global_step},
            reward_config=manifest.get("reward") if self.method == "grpo" else None,
            lora=self.lora,
            usage=usage_section(self.method, str(Path(location or folder).resolve()), adapter=adapter),
            description=self.description,
            model_name=name or folder.name,
            tags=["hallucination-r1", self.method],
        )
        meta = json.loads((folder / "phr_training.json").read_text(encoding="utf-8"))
        meta.update({"method": self.method.upper(), "library": "trl", "manifest": MANIFEST})
        atomic_write(folder / "phr_training.json", json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


# The card's hyperparameter table: batch and length settings, then every objective setting (phr.training.objective).
_BATCH = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_train_epochs", "max_steps")
HYPERPARAMETERS = {
    "grpo": _BATCH + OBJECTIVE["grpo"] + ("use_vllm", "vllm_mode"),
    "sft": _BATCH + OBJECTIVE["sft"],
}


class ArtifactsCallback(TrainerCallback):
    """After TRL saves ``checkpoint-N``: add the manifest, curves and card to it (main process only)."""

    def __init__(self, artifacts: Artifacts):
        self.artifacts = artifacts

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"  # type: ignore[arg-type]  # set by TRL
            if folder.is_dir():
                self.artifacts.write(
                    folder,
                    state.log_history,
                    state.global_step,
                    name=f"{Path(args.output_dir).name}-{folder.name}",  # type: ignore[arg-type]  # set by TRL
                )
        return control


class StepProgress(TrainerCallback):
    """In a log, where tqdm's bars are off (``phr.core.progress.quiet_third_party_bars``): a ``[progress]``
    line for the training steps (``bar``: where the lines go; default ``progress_bar()``)."""

    def __init__(self, bar: ProgressDisplay | None = None) -> None:
        self.bar = bar
        self.task: int | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero:
            from phr.core.progress import progress_bar

            self.bar = (self.bar or progress_bar()).__enter__()  # in a log: a line every 10 s, within a step too
            self.task = self.bar.add_task("training steps", total=state.max_steps, completed=state.global_step)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        if self.task is not None:
            self.bar.update(self.task, completed=state.global_step)  # type: ignore[union-attr]  # a task: a bar

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the display (its 10-second lines stop); once."""
        if self.task is not None:
            self.bar.__exit__(None, None, None)  # type: ignore[union-attr]  # a task: a bar
            self.task = None


@contextmanager
def progress_closed(trainer: Any) -> Iterator[None]:
    """Around ``trainer.train()``: a training stopped by an exception (an interrupt, a failed save) never reaches
    ``on_train_end``, so its ``[progress]`` line would go on every 10 s for as long as the process lives (a
    notebook, a test session); the displays are closed on every way out."""
    try:
        yield
    finally:
        for cb in trainer.callback_handler.callbacks:
            if isinstance(cb, StepProgress):
                cb.close()


def progress_callbacks() -> list:
    """``[StepProgress()]`` where stderr is not a terminal (there tqdm's bar is off); none on a terminal."""
    from phr.core.progress import is_terminal

    return [] if is_terminal() else [StepProgress()]


@contextmanager
def known_warnings_filtered() -> Iterator[None]:
    """Training with TRL 1.16 on transformers 5: TRL reads ``model.is_gradient_checkpointing``, which transformers
    deprecated (``is_activation_checkpointing``), at every generation step and saving, so each run printed the
    FutureWarning about TRL's own code, which neither we nor the user can act on. Filtered here, for the training
    only; remove once TRL reads the new name."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield
